// Exporting tools through a profile: each definition's schema converted to
// the provider's shape, with what it loses.

package profiles

import (
	"github.com/actionreg/actions/internal/portable"
	"github.com/actionreg/actions/internal/tooltext"

	"fmt"
	"sort"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
)

// Export is the result of exporting tools for one profile.
type Export struct {
	// Profile is the profile exported for.
	Profile Profile `json:"profile"`
	// Tools are the tool definitions in the provider's wire shape, in
	// JSON's Go types (map[string]any, []any, string, bool, nil), numbers
	// as int64 or float64 where one holds the value exactly and as
	// json.RawMessage otherwise, sorted by name: put each as it is into
	// the request's tools array, or hand it to the provider's Go SDK (both
	// official SDKs write a json.Number as a JSON string, never these).
	// They are the caller's own copies.
	Tools []map[string]any `json:"tools"`
	// Losses lists every keyword dropped or rewritten, by tool name, then
	// pointer, then keyword. It is empty, not nil, when nothing was lost.
	Losses []Loss `json:"losses"`
}

// exportAll exports tools, which Registry.Tools gave sorted by name, each
// with the parameters schema of its action (docs, by id), leaving out the
// app-only ones (actions.Definition.AppOnly), which no model is offered.
func exportAll(rules *profileRules, tools []actions.Tool, docs map[string]map[string]any) (*Export, error) {
	out := &Export{Profile: rules.profile, Tools: make([]map[string]any, 0, len(tools)), Losses: []Loss{}}
	var budget *strictBudget
	if rules.caps != nil {
		budget = &strictBudget{}
	}
	for i := range tools {
		if tools[i].AppOnly() {
			continue // a view's helper (MCP Apps): never offered to a model
		}
		id, err := actions.ActionID(tools[i].Name)
		if err != nil {
			return nil, fmt.Errorf("profiles: exporting the tool %s: %w", tools[i].Name, err)
		}
		t, err := exportOne(rules, id, &tools[i], docs[id], budget)
		if err != nil {
			return nil, fmt.Errorf("profiles: exporting %s: %w", id, err)
		}
		out.Tools = append(out.Tools, plainNumbers(t.wire).(map[string]any))
		out.Losses = append(out.Losses, t.losses...)
	}
	return out, nil
}

// exported is one tool's export.
type exported struct {
	wire   map[string]any
	losses []Loss
	strict bool
	// nullable holds, for a strict tool whose optional properties became
	// required and nullable, "pointer\x00name" of each such property.
	nullable map[string]bool
	// keptNull holds the optional properties listed as required that
	// accepted null already, keyed as nullable.
	keptNull map[string]bool
	// source is the MCP inputSchema the tool was converted from, which
	// the pointers of nullable and renamed lead into (under Anthropic,
	// with its keys renamed).
	source map[string]any
	// renamed holds, for a tool whose property keys the provider
	// refuses, "pointer\x00new name" → the key's name in the action's
	// schema.
	renamed map[string]string
}

// exportOne builds the tool of action id for rules from its MCP tool
// (Registry.Tools gave it, the caller's own copy) and its parameters
// schema doc, which it never changes. No provider shape has a place for
// the output schema: only MCP keeps it.
func exportOne(rules *profileRules, id string, mcp *actions.Tool, doc map[string]any, budget *strictBudget) (*exported, error) {
	if err := rules.checkName(id, mcp.Name); err != nil {
		return nil, err
	}
	base := []Loss{}
	if _, ok := doc["$schema"]; ok {
		base = append(base, Loss{id, "", "$schema", "left out: MCP and the providers assume JSON Schema 2020-12"})
	}
	base = append(base, rootLosses(id, doc)...)
	t := &exported{source: mcp.InputSchema}
	if rules.profile == MCP {
		wire, err := jsonValue(mcp)
		if err != nil {
			return nil, err
		}
		t.wire = wire.(map[string]any)
		t.losses = base
		sortLosses(t.losses)
		return t, nil
	}
	in := mcp.InputSchema
	var renames []keyRename
	if rules.renamesKeys {
		in, t.renamed, renames = renameKeys(in)
		t.source = in
	}
	if all, ok := doc["allOf"]; ok && (rules.profile == Gemini || rules.profile == GeminiOpenAPI) {
		// Gemini refuses a required name that no property declares: the
		// root allOf the MCP export leaves out goes to the converter,
		// which merges it when it can and records the loss otherwise.
		in, base = withRootAllOf(mcp.InputSchema, all, base)
		t.source = in
	}
	desc := mcp.Description
	if desc == "" {
		desc = mcp.Title
	}
	s, c, err := convertFor(rules, id, in, budget, t)
	if err != nil {
		return nil, err
	}
	if rules.maxDescription > 0 {
		var cut *Loss
		if desc, cut = fitDescription(id, desc, rules.maxDescription); cut != nil {
			base = append(base, *cut)
		}
	}
	for i := range c.losses {
		c.losses[i].Pointer = sourcePointer(c.losses[i].Pointer, renames)
	}
	t.losses = append(append(base, renameLosses(id, renames)...), c.losses...)
	sortLosses(t.losses)
	t.wire = rules.wire(mcp.Name, desc, s, t.strict)
	return t, nil
}

// withRootAllOf gives a Gemini profile the root allOf that the MCP export
// leaves out: Gemini refuses a required name that no property declares, so
// the converter merges it when it can and records the loss otherwise. The
// loss the MCP export reported for that allOf is dropped from base.
func withRootAllOf(source map[string]any, all any, base []Loss) (map[string]any, []Loss) {
	in := make(map[string]any, len(source)+1)
	for k, v := range source {
		in[k] = v
	}
	in["allOf"] = all
	kept := base[:0]
	for _, l := range base {
		if l.Keyword != "allOf" || l.Pointer != "" {
			kept = append(kept, l)
		}
	}
	return in, kept
}

// convertFor converts in for the profile: strictly when the profile has a
// strict mode and the schema and the budget allow it (t is then marked
// strict), and loosely otherwise, with the reason strict failed among the
// losses.
func convertFor(rules *profileRules, id string, in map[string]any, budget *strictBudget, t *exported) (map[string]any, *converter, error) {
	var (
		s   map[string]any
		c   *converter
		err error
	)
	if rules.strict != strictNone {
		c = newConverter(rules, id, in, true)
		s, err = c.convert()
		if err != nil {
			return nil, nil, err
		}
		if c.fail == nil && budget != nil {
			if why := budget.take(rules.caps, s); why != "" {
				c.fail = &Loss{id, "", "strict", why}
			}
		}
		if c.fail == nil {
			t.strict, t.nullable, t.keptNull = true, c.nullable, c.keptNull
		}
	}
	if !t.strict {
		var fail *Loss
		if c != nil {
			fail = c.fail
		}
		c = newConverter(rules, id, in, false)
		if s, err = c.convert(); err != nil {
			return nil, nil, err
		}
		if fail != nil {
			c.losses = append(c.losses, *fail)
		}
	}
	return s, c, nil
}

// rootLosses reports the root combinators the MCP export leaves out.
func rootLosses(id string, doc map[string]any) []Loss {
	var out []Loss
	for _, kw := range rootCompositions {
		if _, ok := doc[kw]; !ok {
			continue
		}
		why := "left out: providers refuse a combinator at a tool schema's root; the registry checks it when the call comes back"
		if kw == "anyOf" && tooltext.AtLeastOneOf(doc[kw]) != nil {
			why = "rewritten as a sentence at the end of the description (at least one of the properties); the registry checks it when the call comes back"
		}
		out = append(out, Loss{id, "", kw, why})
	}
	return out
}

func sortLosses(ls []Loss) {
	sort.SliceStable(ls, func(i, j int) bool {
		if ls[i].Pointer != ls[j].Pointer {
			return ls[i].Pointer < ls[j].Pointer
		}
		return ls[i].Keyword < ls[j].Keyword
	})
}

func rulesOf(p Profile) (*profileRules, error) {
	switch p {
	case MCP:
		return &profileRules{profile: p, maxName: portable.MCPToolNameLength}, nil
	case OpenAIChat, OpenAIResponses:
		return openAIRules(p), nil
	case Anthropic, AnthropicStrict:
		return anthropicRules(p), nil
	case Gemini, GeminiOpenAPI:
		return geminiRules(p), nil
	}
	return nil, fmt.Errorf("profiles: %w", refusef(codes.ConstraintViolation, "unknown export profile",
		actions.Issue{Path: "", Keyword: "profile", Message: "the profile is not one of those All lists"}))
}

// rootCompositions are the keywords providers refuse at a tool schema's
// root, which the MCP tool already leaves out.
var rootCompositions = [...]string{"allOf", "anyOf", "not", "oneOf"}
