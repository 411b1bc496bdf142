package actions

import (
	"slices"

	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/internal/tooltext"

	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/actionreg/actions/codes"
)

// Tool is an MCP tool definition (MCP schema $defs/Tool, versions
// 2025-11-25 and 2026-07-28). Its JSON form is what a tools/list result
// holds; mcpserver hands it to the official SDK.
type Tool struct {
	// Name is the action id with its slash replaced by a hyphen (see
	// [ToolName]): 1 to 128 characters of [A-Za-z0-9_.-].
	Name string `json:"name"`
	// Title is the action's title, as it is.
	Title string `json:"title,omitempty"`
	// Description is the action's description, followed by the sentence
	// that states a top-level "at least one of" rule, if any.
	Description string `json:"description,omitempty"`
	// InputSchema is the action's parameters schema in JSON's Go types
	// (map[string]any, []any, string, bool, nil, json.Number), root
	// "type": "object", without anyOf, oneOf or allOf at its root. It is
	// the caller's own copy.
	InputSchema map[string]any `json:"inputSchema"`
	// OutputSchema is the action's output schema (see
	// [Definition].OutputSchema) in JSON's Go types, or nil for an action
	// without one. Its root may be any schema object: MCP 2025-11-25
	// accepts only "type": "object" there, 2026-07-28 any schema, so a
	// connector leaves it out for a client of the older version
	// (mcpserver does). It is the caller's own copy.
	OutputSchema map[string]any `json:"outputSchema,omitempty"`
	// Annotations are the hints MCP clients read; all four are always
	// written.
	Annotations ToolAnnotations `json:"annotations"`
	// Meta is the tool's _meta: {"io.actionreg/idempotency-key":
	// "required"} for an action that needs an idempotency key, and {"ui": {"visibility":
	// ["app"]}} for an app-only one ([Definition].AppOnly; MCP Apps), nil
	// for neither. The caller's own copy.
	Meta map[string]any `json:"_meta,omitempty"`
}

// AppOnly reports whether t is an app-only tool of an MCP Apps view: its
// Meta's ui.visibility lists "app" and not "model" (the extension's
// default, when absent, is both). A connector offering tools to a model
// leaves such a tool out.
func (t Tool) AppOnly() bool {
	ui, _ := t.Meta["ui"].(map[string]any)
	v, ok := ui["visibility"].([]any)
	return ok && slices.Contains(v, any("app")) && !slices.Contains(v, any("model"))
}

// ToolAnnotations are the behaviour hints of a tool (MCP schema
// $defs/ToolAnnotations). All four fields are always written: MCP reads a
// missing destructiveHint as true, which would mark every tool that does
// not say otherwise as destructive.
type ToolAnnotations struct {
	// ReadOnlyHint is true when the action's effect is read.
	ReadOnlyHint bool `json:"readOnlyHint"`
	// DestructiveHint is [Definition.IsDestructive]: a delete, or a write
	// that is not additive.
	DestructiveHint bool `json:"destructiveHint"`
	// IdempotentHint is the action's Idempotent flag (MCP reads a missing
	// one as false).
	IdempotentHint bool `json:"idempotentHint"`
	// OpenWorldHint is the action's OpenWorld flag (MCP reads a missing
	// one as true).
	OpenWorldHint bool `json:"openWorldHint"`
}

// ToolOptions configures an export to tools. The zero value (or nil)
// exports the schemas as they are.
type ToolOptions struct {
	// Languages are the ordered languages of the dataset, the source
	// language first (BCP 47 tags such as "en", "fr"; written as given).
	// Each localized text parameter of the exported schemas then has a
	// description naming them (see docs/tools.md). Empty strings and
	// repeats are left out.
	//
	// A localized text parameter is a schema whose anyOf holds exactly
	// two branches: one of "type": "string", and one of "type": "object"
	// whose additionalProperties is a schema of "type": "string" (a map
	// from language to text). A branch reached only through $ref is not
	// recognised. The schema forbids nothing more than before: the
	// languages are a hint.
	Languages []string
	// Caller, when set, exports only the actions the caller may see:
	// those offered on its surface (protected personal data never on mcp
	// or ai) whose capability it holds, as the gate would let it call
	// them (docs/gate.md). Scopes, serving and read-only mode are decided
	// per call, not in the list. Without it, every action offered on mcp.
	Caller *identity.Caller
}

// toolOptions are ToolOptions checked once per export.
type toolOptions struct {
	languages []string
	caller    *identity.Caller
}

// sees reports whether the export shows d.
func (o *toolOptions) sees(d *Definition) bool {
	if o.caller == nil {
		return d.offers(identity.SurfaceMCP)
	}
	return d.offers(o.caller.Surface) && o.caller.Can(d.Capability)
}

func toolOptionsOf(opts *ToolOptions) toolOptions {
	var o toolOptions
	if opts == nil {
		return o
	}
	o.caller = opts.Caller
	seen := map[string]bool{}
	for _, l := range opts.Languages {
		if l != "" && !seen[l] {
			seen[l] = true
			o.languages = append(o.languages, l)
		}
	}
	return o
}

// ToolName returns the tool name of an action id: "ns/name" gives
// "ns-name". It does not check id; [Registry.Register] does, and refuses a name MCP
// would not accept.
func ToolName(id string) string {
	return strings.Replace(id, "/", "-", 1)
}

// ActionID returns the action id a tool name comes from: "ns-name"
// gives "ns/name". An identifier never holds a hyphen, so the mapping is
// one to one. A name that no valid id gives (no hyphen, several, or a side
// that is not an identifier [A-Za-z_][A-Za-z0-9_]*) is a *Refusal with
// code unknown_action, which a connector reports as an unknown tool. The
// name's length is not checked: a name is looked up, never exported, here.
func ActionID(name string) (string, error) {
	ns, rest, ok := strings.Cut(name, "-")
	if !ok || strings.Contains(rest, "-") || !isIdentifier(ns) || !isIdentifier(rest) {
		return "", refusef(codes.UnknownAction, "the tool name does not come from an action id",
			Issue{Path: "", Keyword: "name", Message: "a tool name is namespace-name with both parts identifiers"})
	}
	return ns + "/" + rest, nil
}

// checkToolName refuses a name outside MCP's rule for tool names: 1 to 128
// characters of [A-Za-z0-9_.-].
func checkToolName(id, name string) error {
	if name == "" {
		return refusef(codes.ConstraintViolation, "the tool name is empty", Issue{Path: "/id", Keyword: "id", Message: "the id is empty"})
	}
	if len(name) > maxToolNameLength {
		return refusef(codes.ConstraintViolation, "the tool name is too long",
			Issue{Path: "/id", Keyword: "id", Message: fmt.Sprintf("the tool name of %s has %d characters, more than the %d MCP accepts", id, len(name), maxToolNameLength)})
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c == '_', c == '.', c == '-', 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		default:
			return refusef(codes.ConstraintViolation, "the tool name has a character MCP refuses",
				Issue{Path: "/id", Keyword: "id", Message: "a tool name holds only A-Z, a-z, 0-9, _, . and -"})
		}
	}
	return nil
}

func sortTools(tools []Tool) {
	sort.Slice(tools, func(i, j int) bool { return tools[i].Name < tools[j].Name })
}

// toolOf builds the tool of def from in, a fresh decoding of its compiled
// parameters schema that the tool then owns, and its compiled output
// schema (nil for none), of which the tool gets its own decoding.
func toolOf(def *Definition, in map[string]any, output *ParameterSchema, o toolOptions) Tool {
	delete(in, "$schema") // MCP reads a schema without $schema as 2020-12
	rule := tooltext.AtLeastOneOf(in["anyOf"])
	keepReferenced(in)
	objectProperties(in)
	if len(o.languages) > 0 {
		describeLocalized(in, o.languages)
	}
	describeRefs(in)
	var out map[string]any
	if output != nil {
		out = output.schema()
		objectProperties(out)
	}
	desc := def.Description
	if len(rule) > 0 {
		desc = tooltext.Append(desc, "Give at least one of: "+strings.Join(rule, ", ")+".")
	}
	if s := refusalsSentence(def.Refusals); s != "" {
		desc = tooltext.Append(desc, s)
	}
	var meta map[string]any
	if def.NeedsIdempotencyKey {
		desc = tooltext.Append(desc, keySentence)
		meta = map[string]any{idempotencyKeyMeta: "required"}
	}
	if def.AppOnly {
		if meta == nil {
			meta = map[string]any{}
		}
		meta["ui"] = map[string]any{"visibility": []any{"app"}}
	}
	return Tool{
		Meta:         meta,
		Name:         ToolName(def.ID),
		Title:        def.Title,
		Description:  desc,
		InputSchema:  in,
		OutputSchema: out,
		Annotations: ToolAnnotations{ReadOnlyHint: def.EffectOf() == EffectRead, DestructiveHint: def.IsDestructive(),
			IdempotentHint: def.Idempotent, OpenWorldHint: def.OpenWorld},
	}
}

// rootCompositions are the keywords providers refuse at a tool schema's
// root.
var rootCompositions = [...]string{"allOf", "anyOf", "not", "oneOf"}

// keepReferenced removes the root anyOf, oneOf, allOf and not. A branch
// (or not's one schema) that the rest of the schema still reaches, by a
// $ref pointer into it or by an $anchor, $dynamicAnchor or $id declared
// in it, moves to $defs instead ("allOf.0", ..., "not"), and the pointers
// that led into it are rewritten, so that the exported schema never
// holds a reference to nothing.
func keepReferenced(in map[string]any) {
	moved := map[string]string{} // "#/allOf/0" → "#/$defs/allOf.0"
	for _, kw := range rootCompositions {
		branches, _ := in[kw].([]any)
		suffix := func(i int) string { return "/" + strconv.Itoa(i) }
		if sub, ok := in[kw]; ok && kw == "not" {
			// not holds one schema, reached as "#/not".
			branches, suffix = []any{sub}, func(int) string { return "" }
		}
		delete(in, kw)
		for i, b := range branches {
			from := "#/" + kw + suffix(i)
			if !declaresIdentifier(b) && !refersInto(in, from) && !refersIntoAny(branches, from) {
				continue
			}
			defs, _ := in["$defs"].(map[string]any)
			if defs == nil {
				defs = map[string]any{}
				in["$defs"] = defs
			}
			name := kw + strings.ReplaceAll(suffix(i), "/", ".")
			for defs[name] != nil {
				name += "_"
			}
			defs[name] = b
			moved[from] = "#/$defs/" + name
		}
	}
	if len(moved) > 0 {
		rewriteRefs(in, moved)
	}
}

// eachRef calls fn with each $ref value under v, and sets it to what fn
// returns.
func eachRef(v any, fn func(string) string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && k == "$ref" {
				x[k] = fn(s)
				continue
			}
			eachRef(e, fn)
		}
	case []any:
		for _, e := range x {
			eachRef(e, fn)
		}
	}
}

// pointsInto reports whether the $ref value ref leads to from or below it.
func pointsInto(ref, from string) bool {
	return ref == from || strings.HasPrefix(ref, from+"/")
}

func refersInto(v any, from string) (found bool) {
	eachRef(v, func(ref string) string {
		found = found || pointsInto(ref, from)
		return ref
	})
	return found
}

// refersIntoAny reports whether another branch of the same keyword leads
// into from.
func refersIntoAny(branches []any, from string) bool {
	for _, b := range branches {
		if refersInto(b, from) {
			return true
		}
	}
	return false
}

// declaresIdentifier reports whether v declares an $anchor,
// $dynamicAnchor or $id, which a $ref elsewhere may name.
func declaresIdentifier(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if k == "$anchor" || k == "$dynamicAnchor" || k == "$id" || declaresIdentifier(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if declaresIdentifier(e) {
				return true
			}
		}
	}
	return false
}

// rewriteRefs points each $ref that led into a moved branch at its new
// place.
func rewriteRefs(in map[string]any, moved map[string]string) {
	eachRef(in, func(ref string) string {
		for from, to := range moved {
			if pointsInto(ref, from) {
				return to + ref[len(from):]
			}
		}
		return ref
	})
}

// objectProperties writes each boolean schema of the root properties as
// the object schema that means the same (true as {}, false as
// {"not": {}}): MCP 2025-11-25 wants an object for each root property.
func objectProperties(in map[string]any) {
	props, ok := in["properties"].(map[string]any)
	if !ok {
		return
	}
	for k, v := range props {
		switch v {
		case true:
			props[k] = map[string]any{}
		case false:
			props[k] = map[string]any{"not": map[string]any{}}
		}
	}
}

// Keywords whose value is one subschema, an object of subschemas or an
// array of subschemas (JSON Schema 2020-12). not, if and propertyNames are
// missing on purpose: what they hold is never a parameter's value.
var (
	oneSubschema = []string{"then", "else", "items", "contains", "additionalProperties",
		"unevaluatedItems", "unevaluatedProperties", "contentSchema"}
	subschemaMaps   = []string{"$defs", "properties", "patternProperties", "dependentSchemas"}
	subschemaArrays = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
)

// eachValueSubschema calls fn on each object subschema directly under s
// that may judge a parameter's value (the keywords above).
func eachValueSubschema(s map[string]any, fn func(map[string]any)) {
	visit := func(v any) {
		if m, ok := v.(map[string]any); ok {
			fn(m)
		}
	}
	for _, k := range oneSubschema {
		visit(s[k])
	}
	for _, k := range subschemaMaps {
		if m, ok := s[k].(map[string]any); ok {
			for _, sub := range m {
				visit(sub)
			}
		}
	}
	for _, k := range subschemaArrays {
		if a, ok := s[k].([]any); ok {
			for _, sub := range a {
				visit(sub)
			}
		}
	}
}

// describeLocalized adds the languages sentence to each localized text
// schema under s, s included. s is the export's own copy. Depth is bounded
// by the schema limits checked at compile time.
func describeLocalized(s map[string]any, languages []string) {
	if isLocalizedText(s) {
		d, _ := s["description"].(string)
		s["description"] = tooltext.Append(d, languagesSentence(languages))
	}
	eachValueSubschema(s, func(m map[string]any) { describeLocalized(m, languages) })
}

// describeRefs adds, to each schema under s (s included) whose ref
// keyword names a model schema, a sentence saying what the value may be:
// the instance's id or its exact display name. s is the export's own
// copy; the ref keyword stays.
func describeRefs(s map[string]any) {
	if ref, ok := s["ref"].(string); ok && ref != "" {
		d, _ := s["description"].(string)
		s["description"] = tooltext.Append(d, tooltext.Ref(ref))
	}
	eachValueSubschema(s, describeRefs)
}

func languagesSentence(languages []string) string {
	return "Localized text in " + strings.Join(languages, ", ") +
		": a string, or an object from language to string; the source language is " + languages[0] + "."
}

// isLocalizedText reports whether s is an anyOf of a string and a map of
// language to string.
func isLocalizedText(s map[string]any) bool {
	branches, ok := s["anyOf"].([]any)
	if !ok || len(branches) != 2 {
		return false
	}
	a, _ := branches[0].(map[string]any)
	b, _ := branches[1].(map[string]any)
	return isStringSchema(a) && isStringMap(b) || isStringSchema(b) && isStringMap(a)
}

func isStringSchema(s map[string]any) bool {
	return s != nil && s["type"] == "string"
}

func isStringMap(s map[string]any) bool {
	if s == nil || s["type"] != "object" {
		return false
	}
	ap, _ := s["additionalProperties"].(map[string]any)
	return isStringSchema(ap)
}
