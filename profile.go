package actions

import (
	"fmt"
)

// Profile names a target that tool definitions are exported for: a wire
// shape and the subset of JSON Schema its consumer accepts. See
// docs/profiles.md for each profile's rules.
type Profile string

// The export profiles.
const (
	// ProfileMCP gives MCP tool definitions (the [Tool] shape): the
	// parameters schema less its root combinators and $schema.
	ProfileMCP Profile = "mcp"
	// ProfileOpenAIChat gives OpenAI Chat Completions function tools,
	// {"type":"function","function":{name,description,parameters,strict}},
	// strict whenever the schema can be made strict.
	ProfileOpenAIChat Profile = "openai-chat"
	// ProfileOpenAIResponses gives OpenAI Responses function tools, the
	// flat {"type":"function",name,description,parameters,strict}, with
	// the same schemas as ProfileOpenAIChat.
	ProfileOpenAIResponses Profile = "openai-responses"
	// ProfileAnthropic gives Anthropic Messages tools
	// {name,description,input_schema}.
	ProfileAnthropic Profile = "anthropic"
	// ProfileAnthropicStrict gives Anthropic tools with "strict": true
	// where the schema and the per-request caps allow it.
	ProfileAnthropicStrict Profile = "anthropic-strict"
	// ProfileGemini gives Gemini function declarations with
	// parametersJsonSchema.
	ProfileGemini Profile = "gemini"
	// ProfileGeminiOpenAPI gives Gemini function declarations with the
	// older parameters field (an OpenAPI 3.0 schema subset).
	ProfileGeminiOpenAPI Profile = "gemini-openapi"
)

// Profiles lists every export profile, in a fixed order.
func Profiles() []Profile {
	return []Profile{ProfileMCP, ProfileOpenAIChat, ProfileOpenAIResponses,
		ProfileAnthropic, ProfileAnthropicStrict, ProfileGemini, ProfileGeminiOpenAPI}
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
// profile accepts (OpenAI, Anthropic and Gemini all take 64 characters).
const MaxPortableToolNameLength = 64

// CheckPortableName reports whether the tool name of id is portable: it
// matches ^[A-Za-z_][A-Za-z0-9_-]{0,63}$, which every export profile
// accepts. An id that is not namespace/name with both parts identifiers
// is refused as [Registry.Register] refuses it.
//
// Errors (*Refusal, constraint_violation): an invalid id; a tool name
// longer than [MaxPortableToolNameLength].
func CheckPortableName(id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	if n := len(ToolName(id)); n > MaxPortableToolNameLength {
		return idRefusal(fmt.Sprintf("the tool name has %d characters, more than the %d AI providers accept", n, MaxPortableToolNameLength))
	}
	return nil
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
