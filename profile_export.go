// Exporting tools through a profile: each definition's schema converted to
// the provider's shape, with what it loses.

package actions

import (
	"fmt"
	"sort"
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

// exportSees reports whether the export for p shows d: what opts.Caller
// may see, or without one what is offered on mcp (ProfileMCP, as
// [Registry.Tools]) or on ai (the provider profiles).
func exportSees(p Profile, o *toolOptions, d *Definition) bool {
	if o.caller != nil || p == ProfileMCP {
		return o.sees(d)
	}
	return d.Offers(SurfaceAI)
}

// exportSource is what one tool is exported from: the definition and the
// compiled schemas, which the export never changes.
type exportSource struct {
	def    Definition
	doc    map[string]any
	output *ParameterSchema
}

// exportAll exports the sources, sorted by id.
func exportAll(rules *profileRules, sources []exportSource, o toolOptions) (*Export, error) {
	out := &Export{Profile: rules.profile, Tools: make([]map[string]any, 0, len(sources)), Losses: []Loss{}}
	var budget *strictBudget
	if rules.caps != nil {
		budget = &strictBudget{}
	}
	for i := range sources {
		src := &sources[i]
		t, err := exportOne(rules, &src.def, src.doc, src.output, budget, o)
		if err != nil {
			return nil, fmt.Errorf("actions: exporting %s: %w", src.def.ID, err)
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
	// the pointers of nullable lead into.
	source map[string]any
}

// exportOne builds one tool for rules from its definition and compiled
// schema document.
func exportOne(rules *profileRules, def *Definition, doc map[string]any, output *ParameterSchema, budget *strictBudget, o toolOptions) (*exported, error) {
	name := ToolName(def.ID)
	if err := rules.checkName(def.ID, name); err != nil {
		return nil, err
	}
	// Output schemas are not part of the profiles' exports yet (issue 12
	// adds them to Registry.Tools and mcpserver only).
	if rules.profile != ProfileMCP {
		output = nil // no provider shape has a place for it
	}
	mcp := toolOf(def, doc, output, o)
	base := []Loss{}
	if _, ok := doc["$schema"]; ok {
		base = append(base, Loss{def.ID, "", "$schema", "left out: MCP and the providers assume JSON Schema 2020-12"})
	}
	base = append(base, rootLosses(def.ID, doc)...)
	t := &exported{source: mcp.InputSchema}
	if rules.profile == ProfileMCP {
		wire, err := jsonValue(&mcp)
		if err != nil {
			return nil, err
		}
		t.wire = wire.(map[string]any)
		t.losses = base
		sortLosses(t.losses)
		return t, nil
	}
	in := mcp.InputSchema
	if rules.checkKeys != nil {
		if err := rules.checkKeys(in); err != nil {
			return nil, err
		}
	}
	if all, ok := doc["allOf"]; ok && (rules.profile == ProfileGemini || rules.profile == ProfileGeminiOpenAPI) {
		// Gemini refuses a required name that no property declares: the
		// root allOf the MCP export leaves out goes to the converter,
		// which merges it when it can and records the loss otherwise.
		in, base = withRootAllOf(mcp.InputSchema, all, base)
		t.source = in
	}
	desc := mcp.Description
	if desc == "" {
		desc = def.Title
	}
	s, c, err := convertFor(rules, def.ID, in, budget, t)
	if err != nil {
		return nil, err
	}
	if rules.maxDescription > 0 {
		var cut *Loss
		if desc, cut = fitDescription(def.ID, desc, rules.maxDescription); cut != nil {
			base = append(base, *cut)
		}
	}
	t.losses = append(base, c.losses...)
	sortLosses(t.losses)
	t.wire = rules.wire(name, desc, s, t.strict)
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
		if kw == "anyOf" && len(atLeastOneOf(doc[kw])) > 0 {
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
	case ProfileMCP:
		return &profileRules{profile: p, maxName: MaxToolNameLength}, nil
	case ProfileOpenAIChat, ProfileOpenAIResponses:
		return openAIRules(p), nil
	case ProfileAnthropic, ProfileAnthropicStrict:
		return anthropicRules(p), nil
	case ProfileGemini, ProfileGeminiOpenAPI:
		return geminiRules(p), nil
	}
	return nil, refusef(CodeConstraintViolation, "unknown export profile",
		Issue{Path: "", Keyword: "profile", Message: "the profile is not one of those Profiles lists"})
}
