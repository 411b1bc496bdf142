package profiles

// The rule engine of the export profiles: one walk over a tool's schema
// that keeps, drops or rewrites each keyword as the profile's tables say
// (openai.go, anthropic.go, gemini.go), and reports each drop or rewrite
// as a Loss.

import (
	"github.com/actionreg/actions/internal/tooltext"

	"fmt"
	"strings"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/internal/ijson"
	"github.com/actionreg/actions/internal/schema"
)

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
	// inlined counts the $refs inlined, bounded by maxInlines.
	inlined int
	// defaults holds the pointer of each schema that had a default, which
	// strict mode leaves out but a required property's optionality needs.
	defaults map[string]bool
}

// maxInlines bounds the $refs one tool inlines (Gemini's OpenAPI form):
// references that fan out (each definition using the next twice) would
// otherwise grow the export exponentially.
const maxInlines = 1000

func newConverter(rules *profileRules, action string, root map[string]any, strict bool) *converter {
	return &converter{rules: rules, action: action, root: root, strict: strict, nullable: map[string]bool{}, keptNull: map[string]bool{}, defaults: map[string]bool{}}
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
	if c.rules.profile != MCP {
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
	if _, ok := s["default"]; ok {
		c.defaults[ptr] = true
	}
	if c.strict {
		c.strictFormat(s, ptr)
	}
	if v, ok := s["const"]; ok && c.rules.constAsEnum && !c.keeps("const") {
		if _, taken := s["enum"]; !taken && (!c.rules.openAPI || isString(v)) {
			s["enum"] = []any{v}
			delete(s, "const")
			c.lose(ptr, "const", "rewritten as an enum of one value")
		}
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
	if c.strict && c.rules.strictObject != nil {
		c.rules.strictObject(c, s, ptr)
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
	// The MCP tool already says what a ref takes where a value can be;
	// the sentence here is for a place it did not describe.
	if d, _ := s["description"].(string); !strings.Contains(d, tooltext.Ref(name)) {
		s["description"] = tooltext.Append(d, "Names one "+name+", by id or by name.")
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

// refIn reports whether v holds a $ref at any depth.
func refIn(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if _, ok := e.(string); ok && k == "$ref" {
				return true
			}
			if refIn(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if refIn(e) {
				return true
			}
		}
	}
	return false
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
// not hold them, and title, description and default always.
func (c *converter) inline(in map[string]any, ref, ptr string) (any, error) {
	target, tptr, ok := resolveLocal(c.root, ref)
	if !ok {
		return nil, refusef(codes.ConstraintViolation, "the profile cannot express the schema",
			actions.Issue{Path: ptr, Keyword: "$ref", Message: "a $ref that is not a JSON Pointer into the schema cannot be inlined for " + string(c.rules.profile)})
	}
	for _, t := range c.inlining {
		if t == tptr {
			return nil, refusef(codes.ConstraintViolation, "the profile cannot express the schema",
				actions.Issue{Path: ptr, Keyword: "$ref", Message: "a recursive schema cannot be inlined for " + string(c.rules.profile)})
		}
	}
	if c.inlined++; c.inlined > maxInlines {
		return nil, refusef(codes.ConstraintViolation, "the profile cannot express the schema",
			actions.Issue{Path: ptr, Keyword: "$ref", Message: fmt.Sprintf("inlining the references would copy more than %d schemas", maxInlines)})
	}
	if len(c.inlining) >= 32 {
		return nil, refusef(codes.ConstraintViolation, "the profile cannot express the schema",
			actions.Issue{Path: ptr, Keyword: "$ref", Message: "references nest too deep to inline"})
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
		if _, taken := m[k]; !taken || annotation[k] {
			m[k] = v
		}
	}
	return m, nil
}

// annotation lists the keywords whose value beside a $ref wins over the
// target's when the $ref is inlined: they describe the place, and the
// registry fills the default beside a $ref first. A validation keyword
// both hold keeps the target's.
var annotation = map[string]bool{"title": true, "description": true, "default": true}

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

// strictKind says which provider's strict mode a profile aims at.
type strictKind uint8

// profileRules is what the engine needs to know of one profile. The
// provider files (openai.go, anthropic.go, gemini.go) fill it; the
// engine below applies it.
type profileRules struct {
	profile Profile
	// maxName is the longest tool name the provider accepts.
	maxName int
	// renamesKeys renames the property keys the provider refuses
	// (Anthropic), and names them back when a call comes in.
	renamesKeys bool
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
	// strictObject, set with strict, applies the provider's strict rules
	// to one converted schema object of a strict tool, after hook.
	strictObject func(c *converter, s map[string]any, ptr string)
	// wire builds the tool in the provider's shape.
	wire func(name, desc string, s map[string]any, strict bool) map[string]any
}

// sourceAt returns the schema object of the MCP schema at ptr, or an
// empty map.
func (c *converter) sourceAt(ptr string) map[string]any {
	v, _, ok := resolveLocal(c.root, "#"+ptr)
	if m, isMap := v.(map[string]any); ok && isMap {
		return m
	}
	return map[string]any{}
}

const (
	strictNone strictKind = iota
	strictOpenAI
	strictAnthropic
)

// checkName refuses a tool name the profile's provider refuses. Tools
// checked the name against MCP's rule, and a valid id's name matches
// [A-Za-z_][A-Za-z0-9_-]*, so only the length can break a provider's
// rule.
func (r *profileRules) checkName(id, name string) error {
	if len(name) > r.maxName {
		return refusef(codes.ConstraintViolation, "the tool name is too long for the profile",
			actions.Issue{Path: "/id", Keyword: "id", Message: fmt.Sprintf("the tool name of %s has %d characters, more than the %d the profile %s accepts", id, len(name), r.maxName, r.profile)})
	}
	return nil
}
