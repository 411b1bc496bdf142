package actions

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/actionreg/actions/internal/ijson"
	"github.com/actionreg/actions/internal/schema"
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
	// tool could not be made strict, or "name" for a tool's name.
	Keyword string `json:"keyword"`
	// Why says what was done and why, in lower case.
	Why string `json:"why"`
}

// Export is the result of exporting tools for one profile.
type Export struct {
	// Profile is the profile exported for.
	Profile Profile `json:"profile"`
	// Tools are the tool definitions in the provider's wire shape, in
	// JSON's Go types (map[string]any, []any, string, bool, nil,
	// json.Number), sorted by name: put each as it is into the request's
	// tools array. They are the caller's own copies.
	Tools []map[string]any `json:"tools"`
	// Losses lists every keyword dropped or rewritten, by tool name, then
	// pointer, then keyword. It is empty, not nil, when nothing was lost.
	Losses []Loss `json:"losses"`
}

// Export exports the visible registered actions for profile p, sorted
// by tool name, from the schemas compiled at Register: nothing is
// compiled again. opts may be nil; its Languages describe localized text
// parameters as [Registry.Tools] does. The tools are the caller's own
// copies. See docs/profiles.md for each profile's rules.
//
// Errors (*Refusal, constraint_violation, wrapped with the action's id):
// an unknown profile; a tool name the provider refuses (longer than 64
// characters, for every profile but ProfileMCP; see
// [Options].PortableNames to refuse such ids at Register); a schema the
// profile cannot express at all (a recursive schema, or a $ref that is
// not a JSON Pointer, under ProfileGeminiOpenAPI, which inlines them).
// A keyword a profile drops is no error: it is a [Loss].
func (r *Registry[C]) Export(p Profile, opts *ToolOptions) (*Export, error) {
	rules, err := rulesOf(p)
	if err != nil {
		return nil, err
	}
	var regs []*registered[C]
	r.actions.Range(func(_, v any) bool {
		if reg := v.(*registered[C]); reg.action.IsVisible() {
			regs = append(regs, reg)
		}
		return true
	})
	sort.Slice(regs, func(i, j int) bool { return regs[i].action.ID < regs[j].action.ID })
	defs := make([]Definition, len(regs))
	docs := make([]map[string]any, len(regs))
	for i, reg := range regs {
		defs[i], docs[i] = reg.action.Definition, reg.params.doc
	}
	return exportAll(rules, defs, docs, toolOptionsOf(opts))
}

// exportAll exports defs (sorted by id, visible) with their compiled
// schema documents, which it never changes.
func exportAll(rules *profileRules, defs []Definition, docs []map[string]any, o toolOptions) (*Export, error) {
	out := &Export{Profile: rules.profile, Tools: make([]map[string]any, 0, len(defs)), Losses: []Loss{}}
	var budget *strictBudget
	if rules.caps != nil {
		budget = &strictBudget{}
	}
	for i := range defs {
		t, err := exportOne(rules, &defs[i], docs[i], budget, o)
		if err != nil {
			return nil, fmt.Errorf("actions: exporting %s: %w", defs[i].ID, err)
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
func exportOne(rules *profileRules, def *Definition, doc map[string]any, budget *strictBudget, o toolOptions) (*exported, error) {
	name := ToolName(def.ID)
	if err := rules.checkName(def.ID, name); err != nil {
		return nil, err
	}
	// Output schemas are not part of the profiles' exports yet (issue 12
	// adds them to Registry.Tools and mcpserver only).
	mcp := toolOf(def, doc, nil, o)
	base := []Loss{}
	if _, ok := doc["$schema"]; ok {
		base = append(base, Loss{def.ID, "", "$schema", "left out: MCP and the providers assume JSON Schema 2020-12"})
	}
	base = append(base, rootLosses(def.ID, doc)...)
	t := &exported{source: mcp.InputSchema}
	if rules.profile == ProfileMCP {
		t.wire = mcpWire(&mcp)
		t.losses = base
		sortLosses(t.losses)
		return t, nil
	}
	in := mcp.InputSchema
	desc := mcp.Description
	if desc == "" {
		desc = def.Title
	}
	var (
		s   map[string]any
		c   *converter
		err error
	)
	if rules.strict != strictNone {
		c = newConverter(rules, def.ID, in, true)
		s, err = c.convert()
		if err != nil {
			return nil, err
		}
		if c.fail == nil && budget != nil {
			if why := budget.take(rules.caps, s); why != "" {
				c.fail = &Loss{def.ID, "", "strict", why}
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
		c = newConverter(rules, def.ID, in, false)
		if s, err = c.convert(); err != nil {
			return nil, err
		}
		if fail != nil {
			c.losses = append(c.losses, *fail)
		}
	}
	t.losses = append(base, c.losses...)
	sortLosses(t.losses)
	t.wire = rules.wire(name, desc, s, t.strict)
	return t, nil
}

// mcpWire is the Tool's JSON form as a map, numbers as json.Number.
func mcpWire(t *Tool) map[string]any {
	v, err := jsonValue(t)
	if err != nil { // a Tool always marshals: its schema was decoded from JSON
		panic(err)
	}
	return v.(map[string]any)
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

// Subschema positions (JSON Schema 2020-12), as the engine walks them.
var (
	singleKeys = map[string]bool{"not": true, "if": true, "then": true, "else": true, "items": true,
		"contains": true, "additionalProperties": true, "propertyNames": true,
		"unevaluatedItems": true, "unevaluatedProperties": true, "contentSchema": true}
	mapKeys   = map[string]bool{"$defs": true, "properties": true, "patternProperties": true, "dependentSchemas": true}
	arrayKeys = map[string]bool{"allOf": true, "anyOf": true, "oneOf": true, "prefixItems": true}
)

// converter converts one tool's schema for a profile, collecting losses.
type converter struct {
	rules  *profileRules
	action string
	root   map[string]any // the MCP inputSchema, never changed
	strict bool           // aiming at strict mode in this pass
	losses []Loss
	// fail is the first reason the schema cannot be strict.
	fail *Loss
	// nullable: "pointer\x00name" of each optional property made
	// required and nullable (OpenAI strict).
	nullable map[string]bool
	// keptNull: "pointer\x00name" of each optional property listed as
	// required that accepted null already (its null is kept).
	keptNull map[string]bool
	// inlining is the stack of $ref targets being inlined (OpenAPI).
	inlining []string
}

func newConverter(rules *profileRules, action string, root map[string]any, strict bool) *converter {
	return &converter{rules: rules, action: action, root: root, strict: strict, nullable: map[string]bool{}, keptNull: map[string]bool{}}
}

func (c *converter) lose(ptr, kw, why string) {
	c.losses = append(c.losses, Loss{c.action, ptr, kw, why})
}

// cannot records that the tool cannot be strict.
func (c *converter) cannot(ptr, kw, why string) {
	if c.fail == nil {
		c.fail = &Loss{c.action, ptr, "strict", "not strict: " + why + " (at " + kw + ")"}
	}
}

func (c *converter) keeps(kw string) bool {
	set := c.rules.plain
	if c.strict {
		set = c.rules.strictKeys
	}
	return set == nil || set[kw]
}

// convert returns the converted copy of the root schema.
func (c *converter) convert() (map[string]any, error) {
	if c.strict && c.rules.strict == strictAnthropic && recursive(c.root) {
		c.cannot("", "$ref", "the schema is recursive, which strict tool use refuses")
	}
	out, err := c.schema(c.root, "")
	if err != nil {
		return nil, err
	}
	m, _ := out.(map[string]any)
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

// schema converts the subschema s found at ptr.
func (c *converter) schema(s any, ptr string) (any, error) {
	switch x := s.(type) {
	case bool:
		return c.boolean(x, ptr), nil
	case map[string]any:
		return c.object(x, ptr)
	}
	return s, nil
}

// boolean converts a boolean schema: kept as it is (additionalProperties
// false is what every provider wants), but written as an object where
// Gemini's OpenAPI form needs one, and never strict where it stands for
// "anything" (OpenAI) or "nothing" (outside additionalProperties).
func (c *converter) boolean(x bool, ptr string) any {
	closing := strings.HasSuffix(ptr, "/additionalProperties") || strings.HasSuffix(ptr, "/unevaluatedProperties") ||
		strings.HasSuffix(ptr, "/items") || strings.HasSuffix(ptr, "/unevaluatedItems")
	if c.strict {
		switch {
		case x && c.rules.strict == strictOpenAI:
			c.cannot(ptr, "true", "a schema that any value passes has no type")
		case !x && !closing:
			c.cannot(ptr, "false", "a schema that nothing passes cannot be written")
		}
	}
	if c.rules.openAPI {
		if !x {
			c.lose(ptr, "false", "a schema that nothing passes written as {}: Gemini's parameters form cannot say it; the registry checks it when the call comes back")
		}
		return map[string]any{}
	}
	return x
}

func (c *converter) object(in map[string]any, ptr string) (any, error) {
	if c.rules.openAPI {
		if ref, ok := in["$ref"].(string); ok {
			return c.inline(in, ref, ptr)
		}
	}
	s := make(map[string]any, len(in))
	for k, v := range in {
		s[k] = v
	}
	if c.rules.profile != ProfileMCP {
		c.refKeyword(s, ptr)
	}
	if _, ok := s["allOf"]; ok && (c.strict || !c.keeps("allOf")) {
		if !c.mergeAllOf(s, ptr) && c.strict && c.keeps("allOf") && refIn(s["allOf"]) {
			c.cannot(ptr, "allOf", "an allOf holding $ref, which strict tool use refuses, cannot be merged")
		}
	}
	from := map[string]string{} // a keyword renamed → its name in the source
	if _, ok := s["oneOf"]; ok && !c.keeps("oneOf") && c.keeps("anyOf") {
		if _, taken := s["anyOf"]; !taken {
			s["anyOf"] = s["oneOf"]
			delete(s, "oneOf")
			from["anyOf"] = "oneOf"
			c.lose(ptr, "oneOf", "rewritten as anyOf: a value that passes several branches is refused by the registry when the call comes back")
		}
	}
	if c.strict {
		c.strictFormat(s, ptr)
	}
	if _, ok := s["prefixItems"]; ok && !c.keeps("prefixItems") {
		if _, ok := s["items"]; ok {
			delete(s, "items")
			c.lose(ptr, "items", "left out with prefixItems: alone it would apply to every element")
		}
		if c.strict {
			c.cannot(ptr, "prefixItems", "an array whose elements have their own schemas by position")
		}
	}
	for _, k := range sortedKeys(s) {
		v := s[k]
		if !c.keeps(k) {
			delete(s, k)
			c.dropped(k, ptr)
			continue
		}
		src := k
		if f, ok := from[k]; ok {
			src = f
		}
		conv, err := c.children(k, v, ijson.AppendToken(ptr, src))
		if err != nil {
			return nil, err
		}
		s[k] = conv
	}
	if c.rules.hook != nil {
		c.rules.hook(c, s, ptr)
	}
	if c.strict && c.rules.strict == strictOpenAI {
		c.openAIStrictObject(s, ptr)
	}
	if c.strict && c.rules.strict == strictAnthropic {
		c.anthropicStrictObject(s, ptr)
	}
	return s, nil
}

// dropped reports a keyword left out, and whether that stops strict mode.
func (c *converter) dropped(k, ptr string) {
	why := c.rules.why
	if c.strict {
		switch k {
		case "patternProperties":
			c.cannot(ptr, k, "properties matched by pattern cannot be listed in a closed object")
		case "dependentSchemas":
			c.cannot(ptr, k, "dependentSchemas may admit properties a closed object cannot list")
		case "allOf":
			c.cannot(ptr, k, "an allOf whose branches cannot be merged into one schema")
		}
		why = "left out in strict mode: " + strictWhy(c.rules.strict)
	}
	c.lose(ptr, k, why)
}

func strictWhy(k strictKind) string {
	if k == strictOpenAI {
		return "OpenAI structured outputs do not support it; the registry checks it when the call comes back"
	}
	return "Anthropic strict tool use does not support it; the registry checks it when the call comes back"
}

// children converts the subschemas held by keyword k, found at at.
func (c *converter) children(k string, v any, at string) (any, error) {
	switch {
	case singleKeys[k]:
		return c.schema(v, at)
	case mapKeys[k]:
		m, ok := v.(map[string]any)
		if !ok {
			return v, nil
		}
		out := make(map[string]any, len(m))
		for _, name := range sortedKeys(m) {
			sub, err := c.schema(m[name], ijson.AppendToken(at, name))
			if err != nil {
				return nil, err
			}
			out[name] = sub
		}
		return out, nil
	case arrayKeys[k]:
		a, ok := v.([]any)
		if !ok {
			return v, nil
		}
		out := make([]any, len(a))
		for i, e := range a {
			sub, err := c.schema(e, ijson.AppendIndex(at, i))
			if err != nil {
				return nil, err
			}
			out[i] = sub
		}
		return out, nil
	}
	return schema.Copy(v), nil
}

// refKeyword turns the registry's ref keyword, which no provider knows,
// into a sentence of the description.
func (c *converter) refKeyword(s map[string]any, ptr string) {
	name, ok := s["ref"].(string)
	if !ok {
		return
	}
	delete(s, "ref")
	// The MCP export (toolOf) already says what a ref takes; the sentence
	// here is for a schema that reached the converter without it.
	if d, _ := s["description"].(string); !strings.Contains(d, refSentence(name)) {
		s["description"] = appendSentence(d, "Names one "+name+", by id or by name.")
	}
	c.lose(ptr, "ref", "rewritten as a sentence of the description; the registry resolves the value when the call comes back")
}

// mergeAllOf folds the branches of an allOf into s when no keyword of a
// branch collides with another's (properties and required are unioned),
// so that the profiles without allOf keep what it says. A branch that is
// not an object, or holds $ref or $defs, is never merged. It reports
// whether it merged.
func (c *converter) mergeAllOf(s map[string]any, ptr string) bool {
	branches, ok := s["allOf"].([]any)
	if !ok {
		return false
	}
	if c.keeps("allOf") && !refIn(branches) {
		return false // Anthropic strict takes allOf, not with $ref
	}
	merged := make(map[string]any, len(s))
	for k, v := range s {
		if k != "allOf" {
			merged[k] = v
		}
	}
	for _, b := range branches {
		m, ok := b.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range m {
			switch {
			case k == "$ref" || k == "$defs" || k == "$anchor" || k == "$id" || k == "$dynamicAnchor":
				return false
			case k == "required":
				merged[k] = unionStrings(merged[k], v)
			case k == "properties":
				props, ok := mergeProperties(merged[k], v)
				if !ok {
					return false
				}
				merged[k] = props
			default:
				if old, taken := merged[k]; taken && !jsonEqual(old, v) {
					return false
				}
				merged[k] = v
			}
		}
	}
	for k := range s {
		delete(s, k)
	}
	for k, v := range merged {
		s[k] = v
	}
	c.lose(ptr, "allOf", "merged into the schema that holds it")
	return true
}

func refIn(v any) (found bool) {
	eachRef(schema.Copy(v), func(r string) string { found = true; return r })
	return found
}

func unionStrings(a, b any) any {
	var out []any
	seen := map[string]bool{}
	for _, l := range []any{a, b} {
		arr, _ := l.([]any)
		for _, e := range arr {
			if s, ok := e.(string); ok && !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	return out
}

func mergeProperties(a, b any) (map[string]any, bool) {
	out := map[string]any{}
	am, _ := a.(map[string]any)
	bm, ok := b.(map[string]any)
	if !ok {
		return nil, false
	}
	for k, v := range am {
		out[k] = v
	}
	for k, v := range bm {
		if old, taken := out[k]; taken && !jsonEqual(old, v) {
			return nil, false
		}
		out[k] = v
	}
	return out, true
}

func jsonEqual(a, b any) bool {
	x, err1 := CanonicalJSON(a)
	y, err2 := CanonicalJSON(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// strictFormat leaves out a format the strict mode does not know.
func (c *converter) strictFormat(s map[string]any, ptr string) {
	f, ok := s["format"].(string)
	if !ok || c.rules.formats == nil || c.rules.formats[f] {
		return
	}
	delete(s, "format")
	c.lose(ptr, "format", "left out in strict mode: the provider does not support this format; the registry checks it when the call comes back")
}

// inline replaces a $ref by a converted copy of its target (OpenAPI has
// no references). Keywords beside the $ref are kept when the target does
// not hold them.
func (c *converter) inline(in map[string]any, ref, ptr string) (any, error) {
	target, tptr, ok := resolveLocal(c.root, ref)
	if !ok {
		return nil, refusef(CodeConstraintViolation, "the profile cannot express the schema",
			Issue{Path: ptr, Keyword: "$ref", Message: "a $ref that is not a JSON Pointer into the schema cannot be inlined for " + string(c.rules.profile)})
	}
	for _, t := range c.inlining {
		if t == tptr {
			return nil, refusef(CodeConstraintViolation, "the profile cannot express the schema",
				Issue{Path: ptr, Keyword: "$ref", Message: "a recursive schema cannot be inlined for " + string(c.rules.profile)})
		}
	}
	if len(c.inlining) >= 32 {
		return nil, refusef(CodeConstraintViolation, "the profile cannot express the schema",
			Issue{Path: ptr, Keyword: "$ref", Message: "references nest too deep to inline"})
	}
	c.inlining = append(c.inlining, tptr)
	defer func() { c.inlining = c.inlining[:len(c.inlining)-1] }()
	conv, err := c.schema(target, tptr)
	if err != nil {
		return nil, err
	}
	c.lose(ptr, "$ref", "inlined: Gemini's parameters form has no references")
	m, ok := conv.(map[string]any)
	if !ok {
		return conv, nil
	}
	if len(in) == 1 {
		return m, nil
	}
	rest := make(map[string]any, len(in))
	for k, v := range in {
		if k != "$ref" {
			rest[k] = v
		}
	}
	restConv, err := c.object(rest, ptr)
	if err != nil {
		return nil, err
	}
	for k, v := range restConv.(map[string]any) {
		if _, taken := m[k]; !taken {
			m[k] = v
		}
	}
	return m, nil
}

// resolveLocal finds the target of a $ref that is a JSON Pointer
// fragment ("#", "#/$defs/x") in root.
func resolveLocal(root map[string]any, ref string) (any, string, bool) {
	if !strings.HasPrefix(ref, "#") {
		return nil, "", false
	}
	ptr := ref[1:]
	if ptr != "" && ptr[0] != '/' {
		return nil, "", false
	}
	var cur any = root
	if ptr == "" {
		return cur, "", true
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := cur.(type) {
		case map[string]any:
			v, ok := x[tok]
			if !ok {
				return nil, "", false
			}
			cur = v
		case []any:
			i := 0
			if _, err := fmt.Sscanf(tok, "%d", &i); err != nil || i < 0 || i >= len(x) {
				return nil, "", false
			}
			cur = x[i]
		default:
			return nil, "", false
		}
	}
	return cur, ptr, true
}

// recursive reports whether following the $refs of root from root can
// come back to a schema being expanded.
func recursive(root map[string]any) bool {
	done := map[string]bool{}
	var visit func(v any, stack []string) bool
	visit = func(v any, stack []string) bool {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok {
				target, tptr, ok := resolveLocal(root, ref)
				if !ok {
					return false
				}
				for _, s := range stack {
					if s == tptr || strings.HasPrefix(s, tptr+"/") || tptr == "" {
						return true
					}
				}
				if !done[tptr] {
					if visit(target, append(stack, tptr)) {
						return true
					}
					done[tptr] = true
				}
			}
			for k, e := range x {
				if k != "$defs" && visit(e, stack) {
					return true
				}
			}
		case []any:
			for _, e := range x {
				if visit(e, stack) {
					return true
				}
			}
		}
		return false
	}
	return visit(root, []string{""})
}

// acceptsNull reports whether s (resolved in root) lets null through, as
// far as its type, enum, const and combinators tell; a schema that says
// nothing about the type accepts null.
func acceptsNull(root map[string]any, s any, hops int) bool {
	m, ok := s.(map[string]any)
	if !ok {
		return s != false
	}
	if hops > 32 {
		return true
	}
	if ref, ok := m["$ref"].(string); ok {
		if t, _, ok := resolveLocal(root, ref); ok && !acceptsNull(root, t, hops+1) {
			return false
		}
	}
	switch t := m["type"].(type) {
	case string:
		if t != "null" {
			return false
		}
	case []any:
		if !containsValue(t, "null") {
			return false
		}
	}
	if e, ok := m["enum"].([]any); ok && !containsValue(e, nil) {
		return false
	}
	if v, ok := m["const"]; ok && v != nil {
		return false
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		if bs, ok := m[kw].([]any); ok {
			some := false
			for _, b := range bs {
				some = some || acceptsNull(root, b, hops+1)
			}
			if !some {
				return false
			}
		}
	}
	if bs, ok := m["allOf"].([]any); ok {
		for _, b := range bs {
			if !acceptsNull(root, b, hops+1) {
				return false
			}
		}
	}
	return true
}

func containsValue(a []any, v any) bool {
	for _, e := range a {
		if e == v {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// closeObject makes the object schema s closed, as both strict modes
// need, or records why it cannot be: an object that declares properties
// and says nothing of others gets additionalProperties false (the model
// learns of no other property anyway); one that accepts others
// (additionalProperties true or a schema, patternProperties) or declares
// none stays open, and the tool is not strict. It reports whether s is
// closed.
func (c *converter) closeObject(s map[string]any, ptr string) bool {
	ap, has := s["additionalProperties"]
	src := c.sourceAt(ptr)
	_, patterns := src["patternProperties"]
	_, props := s["properties"]
	switch {
	case ap == false:
		return true
	case has:
		c.cannot(ptr, "additionalProperties", "an object that accepts properties it does not name")
	case patterns:
		c.cannot(ptr, "patternProperties", "an object that accepts properties by pattern")
	case !props:
		c.cannot(ptr, "additionalProperties", "an object that names no property accepts any")
	case namesOthers(src, s["properties"]):
		c.cannot(ptr, "properties", "the schema names properties outside its properties (in required, a branch, then or else), which a closed object would refuse")
	default:
		s["additionalProperties"] = false
		c.lose(ptr, "additionalProperties", "added as false, which strict mode needs: the call may hold no property the schema does not name")
		return true
	}
	return false
}

// namesOthers reports whether the object schema src names, in required,
// dependentRequired or the properties and required of its combinator
// branches (allOf, anyOf, oneOf, if, then, else, dependentSchemas,
// transitively), a property that props does not declare.
func namesOthers(src map[string]any, props any) bool {
	declared, _ := props.(map[string]any)
	var other func(m map[string]any, depth int) bool
	other = func(m map[string]any, depth int) bool {
		if depth > 32 {
			return true
		}
		for n := range requiredSet(m) {
			if _, ok := declared[n]; !ok {
				return true
			}
		}
		if depth > 0 {
			if ps, ok := m["properties"].(map[string]any); ok {
				for n := range ps {
					if _, ok := declared[n]; !ok {
						return true
					}
				}
			}
		}
		if dr, ok := m["dependentRequired"].(map[string]any); ok {
			for k, v := range dr {
				if _, ok := declared[k]; !ok {
					return true
				}
				for _, n := range unionStrings(v, nil).([]any) {
					if _, ok := declared[n.(string)]; !ok {
						return true
					}
				}
			}
		}
		var subs []any
		for _, kw := range []string{"allOf", "anyOf", "oneOf"} {
			if a, ok := m[kw].([]any); ok {
				subs = append(subs, a...)
			}
		}
		for _, kw := range []string{"if", "then", "else"} {
			subs = append(subs, m[kw])
		}
		if ds, ok := m["dependentSchemas"].(map[string]any); ok {
			for _, v := range ds {
				subs = append(subs, v)
			}
		}
		for _, sub := range subs {
			if sm, ok := sub.(map[string]any); ok && other(sm, depth+1) {
				return true
			}
		}
		return false
	}
	return other(src, 0)
}

// isObjectSchema reports whether s describes objects: "type": "object"
// (alone or in a list) or properties.
func isObjectSchema(s map[string]any) bool {
	switch t := s["type"].(type) {
	case string:
		if t == "object" {
			return true
		}
	case []any:
		if containsValue(t, "object") {
			return true
		}
	}
	_, ok := s["properties"]
	return ok
}

// requiredSet returns the names s lists in required.
func requiredSet(s map[string]any) map[string]bool {
	out := map[string]bool{}
	req, _ := s["required"].([]any)
	for _, r := range req {
		if n, ok := r.(string); ok {
			out[n] = true
		}
	}
	return out
}

// plainNumbers replaces, in place, each json.Number under v by an int64
// (an integer in its range) or a float64 (a number it holds exactly, as
// canonical JSON tells), and returns v. The providers' Go SDKs (OpenAI
// v3, Anthropic v2) write a json.Number as a JSON string, which would
// turn "minimum": 1 into "minimum": "1"; a number neither type holds
// exactly stays a json.Number.
func plainNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = plainNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = plainNumbers(e)
		}
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		if f, err := x.Float64(); err == nil {
			a, err1 := CanonicalJSON(x)
			b, err2 := CanonicalJSON(f)
			if err1 == nil && err2 == nil && string(a) == string(b) {
				return f
			}
		}
	}
	return v
}

// jsonValue turns a Go value into JSON's Go types, numbers as
// json.Number (for the golden fixtures and the SDK comparisons).
func jsonValue(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return ijson.Decode(b, 0)
}
