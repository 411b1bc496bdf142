// Package profiles exports the actions of an [*actions.Registry] as the tool
// definitions of a model provider's API (OpenAI, Anthropic, Gemini) or of
// MCP, each schema cut to the JSON Schema subset its consumer accepts
// with every keyword lost reported, and runs the tool calls a model makes
// with them through the same registry. See docs/profiles.md for each
// profile's rules and their sources.
//
// The registry keeps checking the full schema when a call comes back: a
// profile only decides what the model is told.
package profiles

import (
	"fmt"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/internal/portable"
)

// Profile names a target that tool definitions are exported for: a wire
// shape and the subset of JSON Schema its consumer accepts.
type Profile string

// The export profiles.
const (
	// MCP gives MCP tool definitions (the [actions.Tool] shape): the
	// parameters schema less its root combinators and $schema.
	MCP Profile = "mcp"
	// OpenAIChat gives OpenAI Chat Completions function tools,
	// {"type":"function","function":{name,description,parameters,strict}},
	// strict whenever the schema can be made strict.
	OpenAIChat Profile = "openai-chat"
	// OpenAIResponses gives OpenAI Responses function tools, the flat
	// {"type":"function",name,description,parameters,strict}, with the
	// same schemas as OpenAIChat.
	OpenAIResponses Profile = "openai-responses"
	// Anthropic gives Anthropic Messages tools
	// {name,description,input_schema}.
	Anthropic Profile = "anthropic"
	// AnthropicStrict gives Anthropic tools with "strict": true where
	// the schema and the per-request caps allow it.
	AnthropicStrict Profile = "anthropic-strict"
	// Gemini gives Gemini function declarations with
	// parametersJsonSchema.
	Gemini Profile = "gemini"
	// GeminiOpenAPI gives Gemini function declarations with the older
	// parameters field (an OpenAPI 3.0 schema subset).
	GeminiOpenAPI Profile = "gemini-openapi"
)

// All lists every export profile, in a fixed order.
func All() []Profile {
	return []Profile{MCP, OpenAIChat, OpenAIResponses, Anthropic, AnthropicStrict, Gemini, GeminiOpenAPI}
}

// Loss is one keyword an export dropped or rewrote: the tool the
// provider receives says less than, or something else than, the action's
// schema. The registry still checks the full schema when the call comes
// back, so a call the provider let through may be refused with
// invalid_parameters.
type Loss struct {
	// Action is the action id.
	Action string `json:"action"`
	// Pointer is the RFC 6901 JSON Pointer of the schema object holding
	// the keyword, into the action's parameters schema ("" is the root).
	// A root combinator branch kept under $defs (see docs/tools.md) is
	// found at its new place.
	Pointer string `json:"pointer"`
	// Keyword is the keyword dropped or rewritten, or "strict" when a
	// tool could not be made strict, or "name" for a tool's name, or
	// "description" (at pointer "") for a tool description cut short.
	Keyword string `json:"keyword"`
	// Why says what was done and why, in lower case.
	Why string `json:"why"`
}

// MaxPortableToolNameLength is the longest tool name every provider
// profile accepts (OpenAI, Anthropic and Gemini all take 64 characters;
// MCP takes 128).
const MaxPortableToolNameLength = 64

// CheckPortableName reports whether the tool name of id is portable: it
// matches ^[A-Za-z_][A-Za-z0-9_-]{0,63}$, which every profile accepts. A
// host checks its ids with it before it registers them, or sets
// [actions.Options].PortableNames, which applies the same rule at
// Register.
//
// Errors (*actions.Refusal, constraint_violation, its issue at "/id"): id
// is not namespace/name with both parts identifiers; its tool name is
// longer than [MaxPortableToolNameLength].
func CheckPortableName(id string) error {
	if back, err := actions.ActionID(actions.ToolName(id)); err != nil || back != id {
		return idRefusal("the id must be namespace/name with both parts identifiers ([A-Za-z_][A-Za-z0-9_]*)")
	}
	if why := portable.Fault(actions.ToolName(id)); why != "" {
		return idRefusal(why)
	}
	return nil
}

func idRefusal(msg string) error {
	return refusef(codes.ConstraintViolation, "invalid action id", actions.Issue{Path: "/id", Keyword: "id", Message: msg})
}

// refusef builds a refusal as the root package does: code, message,
// issues, and the code's delivery policy.
func refusef(code codes.Code, message string, issues ...actions.Issue) *actions.Refusal {
	r := actions.NewRefusal(code, message)
	r.Issues = issues
	return r
}

// strictCaps are the per-request caps on strict tools.
type strictCaps struct {
	tools    int // strict tools
	optional int // optional properties, over all strict tools
	unions   int // properties whose schema is an anyOf or a type list
}

// strictBudget counts what the strict tools of one export used.
type strictBudget struct {
	tools, optional, unions int
}

// take admits the strict schema s under caps, or says why it cannot:
// the tools are taken in name order, and a tool past a cap is exported
// without strict.
func (b *strictBudget) take(caps *strictCaps, s map[string]any) string {
	opt, uni := countParams(s)
	switch {
	case b.tools+1 > caps.tools:
		return fmt.Sprintf("not strict: a request takes at most %d strict tools, and the tools before this one in name order used them", caps.tools)
	case b.optional+opt > caps.optional:
		return fmt.Sprintf("not strict: a request takes at most %d optional parameters over its strict tools; this tool has %d and the tools before it used %d", caps.optional, opt, b.optional)
	case b.unions+uni > caps.unions:
		return fmt.Sprintf("not strict: a request takes at most %d parameters with anyOf or a type list over its strict tools; this tool has %d and the tools before it used %d", caps.unions, uni, b.unions)
	}
	b.tools++
	b.optional += opt
	b.unions += uni
	return ""
}

// countParams counts, at any depth of s (its $defs included), the
// optional properties and the properties whose schema is a union (anyOf
// or a list of types).
func countParams(s any) (optional, unions int) {
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if props, ok := x["properties"].(map[string]any); ok {
				req := requiredSet(x)
				for n, p := range props {
					if !req[n] {
						optional++
					}
					if pm, ok := p.(map[string]any); ok {
						_, union := pm["anyOf"]
						_, list := pm["type"].([]any)
						if union || list {
							unions++
						}
					}
				}
			}
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(s)
	return optional, unions
}
