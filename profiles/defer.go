// Deferred loading: a large tool list sent with most tools held back
// until the provider's tool search tool finds them.

package profiles

import (
	"fmt"
	"slices"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
)

// Search names a provider's own tool search tool, which an export with
// deferred tools must carry (and one without must not).
type Search string

// The tool search tools. Sources, checked 2026-12-02: OpenAI's "Tool
// search" guide (Responses API; gpt-5.4 and later) and Anthropic's "Tool
// search tool" page (Messages API), with the param types of openai-go
// v3.98.0 (responses.ToolSearchToolParam) and anthropic-sdk-go v2.15.0
// (ToolSearchToolRegex20251119Param, ToolSearchToolBm25_20251119Param).
const (
	// SearchNone is no search tool: then no tool may be deferred.
	SearchNone Search = ""
	// SearchOpenAI is OpenAI's hosted tool search, {"type":
	// "tool_search"}, run by the provider over the deferred tools' names
	// and descriptions. OpenAIResponses only.
	SearchOpenAI Search = "openai-tool-search"
	// SearchAnthropicRegex is Anthropic's regex tool search tool,
	// {"type": "tool_search_tool_regex_20251119", "name":
	// "tool_search_tool_regex"}: the model writes a Python regular
	// expression matched against the tools' names, descriptions and
	// argument names. Anthropic and AnthropicStrict.
	SearchAnthropicRegex Search = "anthropic-regex"
	// SearchAnthropicBM25 is Anthropic's BM25 tool search tool,
	// {"type": "tool_search_tool_bm25_20251119", "name":
	// "tool_search_tool_bm25"}: the model writes words in natural
	// language. Anthropic and AnthropicStrict.
	SearchAnthropicBM25 Search = "anthropic-bm25"
)

// Deferral says which tools of an export the model sees from the start
// and how it finds the others.
type Deferral struct {
	// Pinned are the tools loaded up front, by action id or tool name;
	// every other tool of the export is deferred ("defer_loading":
	// true). An entry the export does not show (an action the caller may
	// not see, or none at all) is ignored, so that one list serves every
	// caller.
	Pinned []string
	// Search is the provider's tool search tool, added after the tools.
	Search Search
}

// ExportDeferred exports as [Adapter.Export] does, then marks every tool
// not in d.Pinned with "defer_loading": true and appends d.Search's tool
// as the last element of Tools, in the shape the provider's SDK builds
// (see [Search]). Losses are Export's. A deferred tool is still called by
// its name, and its call comes back through [Adapter.RunToolCall] as any
// other: the search tool itself is run by the provider and never reaches
// the adapter. Action tool names always hold a hyphen, so none can take
// the search tool's name.
//
// The export is refused whole, never sent half right, when the deferral
// is inconsistent, since the provider would refuse the whole request:
// deferred tools without a search tool; a search tool with no tool left
// to defer (every tool shown is pinned); a search tool of another
// provider than the profile's; or a profile with no deferred loading
// (MCP, OpenAIChat, Gemini, GeminiOpenAPI).
//
// Errors: Export's; the inconsistencies above are a *actions.Refusal
// constraint_violation wrapped as "profiles: ...", its one issue keyword
// "defer_loading" (no search tool, or nothing to defer) or "search" (the
// search tool or the profile), path "".
func (a *Adapter) ExportDeferred(opts *actions.ToolOptions, d Deferral) (*Export, error) {
	search, err := searchTool(a.rules.profile, d.Search)
	if err != nil {
		return nil, err
	}
	e, err := a.Export(opts)
	if err != nil {
		return nil, err
	}
	deferred := 0
	for _, t := range e.Tools {
		name, _ := t["name"].(string)
		id, _ := actions.ActionID(name)
		if slices.Contains(d.Pinned, name) || (id != "" && slices.Contains(d.Pinned, id)) {
			continue
		}
		t["defer_loading"] = true
		deferred++
	}
	switch {
	case deferred > 0 && search == nil:
		return nil, deferralRefusal("defer_loading", "deferred tools need a tool search tool: set Search, or pin every tool")
	case deferred == 0 && search != nil:
		return nil, deferralRefusal("defer_loading", "a tool search tool needs at least one deferred tool: every tool shown is pinned")
	}
	if search != nil {
		e.Tools = append(e.Tools, search)
	}
	return e, nil
}

// searchTool returns the wire shape of search under profile p, nil for
// SearchNone.
func searchTool(p Profile, search Search) (map[string]any, error) {
	switch p {
	case OpenAIResponses, Anthropic, AnthropicStrict:
	default:
		return nil, deferralRefusal("search", "the profile has no deferred loading: use OpenAIResponses, Anthropic or AnthropicStrict")
	}
	anthropic := p == Anthropic || p == AnthropicStrict
	switch {
	case search == SearchNone:
		return nil, nil
	case search == SearchOpenAI && !anthropic:
		return map[string]any{"type": "tool_search"}, nil
	case search == SearchAnthropicRegex && anthropic:
		return map[string]any{"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"}, nil
	case search == SearchAnthropicBM25 && anthropic:
		return map[string]any{"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}, nil
	}
	return nil, deferralRefusal("search", "the search tool is not one the profile's provider has")
}

func deferralRefusal(keyword, msg string) error {
	return fmt.Errorf("profiles: %w", refusef(codes.ConstraintViolation, "inconsistent deferred loading",
		actions.Issue{Path: "", Keyword: keyword, Message: msg}))
}
