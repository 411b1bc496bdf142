package actions

import (
	"fmt"
	"sort"
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

// strictKind says which provider's strict mode a profile aims at.
type strictKind uint8

const (
	strictNone strictKind = iota
	strictOpenAI
	strictAnthropic
)

// profileRules is what the engine needs to know of one profile. The
// provider files (profile_openai.go, profile_anthropic.go,
// profile_gemini.go) fill it; the engine below applies it.
type profileRules struct {
	profile Profile
	// maxName is the longest tool name the provider accepts.
	maxName int
	// checkKeys, if set, refuses a schema whose property keys the
	// provider refuses.
	checkKeys func(s map[string]any) error
	// maxDescription is the longest tool description, in characters,
	// the provider accepts (0: no limit).
	maxDescription int
	// plain lists the keywords kept as they are when the tool is not
	// strict (their subschemas still converted); nil keeps every keyword.
	plain map[string]bool
	// strictKeys lists the keywords kept in a strict tool.
	strictKeys map[string]bool
	// why is the reason given for a keyword left out.
	why string
	// formats lists the format values kept in a strict tool (nil: all).
	formats map[string]bool
	// strict is the strict mode aimed at, if any.
	strict strictKind
	// caps are per-request caps on strict tools (Anthropic).
	caps *strictCaps
	// constAsEnum writes a const the profile does not keep as an enum of
	// one value (of a string only, with openAPI).
	constAsEnum bool
	// openAPI turns the schema into Gemini's OpenAPI 3.0 subset: $ref
	// inlined, one type plus nullable, string enums only.
	openAPI bool
	// hook, if set, is called on each schema object after its keywords
	// are converted, for the provider's own rules.
	hook func(c *converter, s map[string]any, ptr string)
	// wire builds the tool in the provider's shape.
	wire func(name, desc string, s map[string]any, strict bool) map[string]any
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

// checkName refuses a tool name the profile's provider refuses. A valid
// id's name matches [A-Za-z_][A-Za-z0-9_-]*, so only the length can
// break a provider's rule.
func (r *profileRules) checkName(id, name string) error {
	if err := checkToolName(id, name); err != nil {
		return err
	}
	if len(name) > r.maxName {
		return refusef(CodeConstraintViolation, "the tool name is too long for the profile",
			Issue{Path: "/id", Keyword: "id", Message: fmt.Sprintf("the tool name of %s has %d characters, more than the %d the profile %s accepts", id, len(name), r.maxName, r.profile)})
	}
	return nil
}
