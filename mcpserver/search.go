package mcpserver

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/declare"
)

// ToolSearch lists a small set of tools and lets the model find the rest
// on demand, for registries too large to list whole (every listed tool
// costs the model context on each turn). With it, tools/list shows only
// the Pinned tools the caller may see, the batch tool when there is one,
// the app-only tools of MCP Apps views (actions.Definition.AppOnly:
// listed for their view, which the client keeps from the model, and
// never found nor described by the two tools below),
// and two tools of this package:
//
//   - tool_search {"query": string, "limit"?: integer} finds the caller's
//     tools by words: each word of the query (letters and digits,
//     matched case-insensitively as a prefix of a word) scores a tool
//     3 when it is in the tool's name, 2 in its title or a parameter's
//     name, 1 in its description, twice that when the whole word
//     matches, the best of these per query word; the tools scoring most
//     come first
//     (ties by name), at most limit of them (default and bound:
//     MaxResults). Each is given as tools/list gives it (name, title,
//     description, input schema, annotations);
//   - tool_describe {"name": string} gives one tool of the caller's as
//     tools/list gives it, output schema included, and its TypeScript
//     declaration (package declare: the function and the types of its
//     parameters and result, for a model that writes a program), as
//     structured content {"tool": Tool, "declaration": string} and as
//     two text blocks, the tool's JSON and the declaration.
//
// Every other tool stays callable by name: a tools/call of a tool the
// caller may see runs whether it was listed, found or neither, since
// clients today call any name a model writes. Both tools answer from
// the gate as tools/list does: a tool the caller may not see is never
// found, described or hinted, and tool_describe answers a hidden tool
// exactly as a missing one (isError, the same text).
type ToolSearch struct {
	// Pinned are the tools always listed, by tool name or action id.
	Pinned []string
	// MaxResults bounds how many tools one search gives (0: 8; at most
	// 50).
	MaxResults int
}

// The names of the search tools.
const (
	searchToolName   = "tool_search"
	describeToolName = "tool_describe"
)

// maxQueryBytes bounds a query: longer ones are refused by the tool's
// schema (maxLength) before any search.
const maxQueryBytes = 512

// searcher serves tool_search and tool_describe over the tools AddTools
// added.
type searcher struct {
	srv    *server
	max    int
	pinned map[string]bool         // tool names
	tools  []searchable            // sorted by name
	byName map[string]*mcp.Tool    // every tool, by name
	source map[string]actions.Tool // every tool as the registry gave it, for its declaration
}

// searchable is one tool with the words a query is matched against, each
// with its weight.
type searchable struct {
	id    string
	tool  *mcp.Tool
	words map[string]int
}

// newSearcher indexes the tools of one AddTools; ids pairs each with its
// action id, and source with the tool the registry gave.
func newSearcher(srv *server, ts *ToolSearch, tools []*mcp.Tool, ids []string, source []actions.Tool) *searcher {
	s := &searcher{srv: srv, max: ts.MaxResults, pinned: map[string]bool{}, byName: map[string]*mcp.Tool{},
		source: make(map[string]actions.Tool, len(source))}
	for _, t := range source {
		s.source[t.Name] = t
	}
	if s.max <= 0 {
		s.max = 8
	}
	s.max = min(s.max, 50)
	for i, t := range tools {
		s.byName[t.Name] = t
		if s.source[t.Name].AppOnly() {
			// A view's helper: always listed (the client keeps it
			// from the model), never found nor described to one.
			s.pinned[t.Name] = true
			continue
		}
		if slices.Contains(ts.Pinned, t.Name) || slices.Contains(ts.Pinned, ids[i]) {
			s.pinned[t.Name] = true
		}
		words := map[string]int{}
		add := func(text string, weight int) {
			for _, w := range wordsOf(text) {
				words[w] = max(words[w], weight)
			}
		}
		add(t.Name, 3)
		add(t.Title, 2)
		add(t.Description, 1)
		for _, p := range parameterNames(t.InputSchema) {
			add(p, 2)
		}
		s.tools = append(s.tools, searchable{id: ids[i], tool: t, words: words})
	}
	slices.SortFunc(s.tools, func(a, b searchable) int { return strings.Compare(a.tool.Name, b.tool.Name) })
	return s
}

// wordsOf splits text into lower-case words of letters and digits
// ("supply-list_actors" is supply, list, actors).
func wordsOf(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// parameterNames are the names of a tool's top-level parameters.
func parameterNames(schema any) []string {
	raw, ok := schema.(json.RawMessage)
	if !ok {
		return nil
	}
	var doc struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(raw, &doc) != nil {
		return nil
	}
	names := make([]string, 0, len(doc.Properties))
	for n := range doc.Properties {
		names = append(names, n)
	}
	return names
}

// lists reports whether tools/list shows the tool name when search is on.
func (s *searcher) lists(name string) bool {
	return s.pinned[name] || name == searchToolName || name == describeToolName
}

// add adds the two search tools to server.
func (s *searcher) add(server *mcp.Server) {
	readOnly, closed := true, false
	ann := &mcp.ToolAnnotations{ReadOnlyHint: readOnly, DestructiveHint: &closed, IdempotentHint: true, OpenWorldHint: &closed}
	server.AddTool(&mcp.Tool{
		Name:  searchToolName,
		Title: "Find tools",
		Description: "Finds the tools that are not listed, by words of their names, titles, descriptions and parameters, best first. " +
			"Call a tool found by its name, with arguments its input schema accepts.",
		InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["query"],"properties":{` +
			`"query":{"type":"string","minLength":1,"maxLength":512,"description":"Words to look for."},` +
			`"limit":{"type":"integer","minimum":1,"maximum":` + itoa(s.max) + `,"description":"At most this many tools."}}}`),
		Annotations: ann,
	}, s.search)
	server.AddTool(&mcp.Tool{
		Name:        describeToolName,
		Title:       "Describe a tool",
		Description: "Gives one tool's whole definition: its input and output schemas and annotations, and its TypeScript declaration for a program that calls it.",
		InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["name"],"properties":{` +
			`"name":{"type":"string","minLength":1,"maxLength":128,"description":"The tool's name."}}}`),
		Annotations: ann,
	}, s.describe)
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// search answers tool_search.
func (s *searcher) search(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct {
		Query string `json:"query"`
		Limit int    `json:"limit"`
	}
	if err := json.Unmarshal(rawArguments(req), &in); err != nil || in.Query == "" || len(in.Query) > maxQueryBytes || in.Limit < 0 || in.Limit > s.max {
		return toolError("the arguments are not a query this tool takes: {\"query\": words, \"limit\": 1 to " + itoa(s.max) + "}"), nil
	}
	limit := s.max
	if in.Limit > 0 {
		limit = in.Limit
	}
	query := wordsOf(in.Query)
	caller := s.srv.callerNow(ctx, req)
	type hit struct {
		tool  *mcp.Tool
		score int
	}
	var hits []hit
	for _, t := range s.tools {
		score := 0
		for _, q := range query {
			best := 0
			for w, weight := range t.words {
				if w == q {
					weight *= 2
				}
				if weight > best && strings.HasPrefix(w, q) {
					best = weight
				}
			}
			score += best
		}
		if score > 0 && s.srv.sees(t.id, caller) {
			hits = append(hits, hit{t.tool, score})
		}
	}
	slices.SortStableFunc(hits, func(a, b hit) int { return b.score - a.score }) // s.tools is sorted by name
	found := make([]*mcp.Tool, 0, min(limit, len(hits)))
	for _, h := range hits[:min(limit, len(hits))] {
		found = append(found, summary(h.tool))
	}
	return structured(map[string]any{"tools": found, "matched": len(hits)})
}

// describe answers tool_describe.
func (s *searcher) describe(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(rawArguments(req), &in)
	t := s.byName[in.Name]
	if t != nil && s.source[t.Name].AppOnly() {
		t = nil // described to no model, as a missing tool is not
	}
	if t != nil {
		id, err := actions.ActionID(t.Name)
		if err != nil || !s.srv.sees(id, s.srv.callerNow(ctx, req)) {
			t = nil
		}
	}
	if t == nil {
		return toolError("no tool of that name"), nil
	}
	decl, err := declare.TypeScript([]actions.Tool{s.source[t.Name]})
	if err != nil {
		return nil, err
	}
	res, err := structured(map[string]any{"tool": t, "declaration": decl})
	if err != nil {
		return nil, err
	}
	res.Content = append(res.Content, &mcp.TextContent{Text: decl})
	return res, nil
}

// summary is a tool as a search gives it: without its output schema and
// meta, which tool_describe gives.
func summary(t *mcp.Tool) *mcp.Tool {
	return &mcp.Tool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema, Annotations: t.Annotations}
}

// rawArguments is a call's arguments as JSON text ({} when absent).
func rawArguments(req *mcp.CallToolRequest) json.RawMessage {
	if req == nil || req.Params == nil || len(req.Params.Arguments) == 0 {
		return json.RawMessage(`{}`)
	}
	return req.Params.Arguments
}

// structured is a result holding v as structured content and as its JSON
// text.
func structured(v map[string]any) (*mcp.CallToolResult, error) {
	text, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(text)}}, StructuredContent: v}, nil
}

// toolError is an isError result with a text that quotes nothing sent.
func toolError(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}
