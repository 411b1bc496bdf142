package profiles

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/actionreg/actions/internal/ijson"
	"github.com/actionreg/actions/internal/schema"
)

// OpenAI function tools (Chat Completions and Responses). Sources, checked
// 2026-12-01: the Structured Outputs guide, "Supported schemas" (OpenAI
// platform docs) and the function name rule of the API reference; see
// docs/profiles.md.

// The keywords OpenAI structured outputs (strict) accept.
var openAIStrictKeys = setOf(
	"type", "properties", "required", "additionalProperties", "items", "anyOf",
	"enum", "const", "$defs", "$ref", "description", "title",
	"pattern", "format",
	"multipleOf", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
	"minItems", "maxItems",
)

// The string formats OpenAI strict mode supports.
var openAIFormats = setOf("date-time", "time", "date", "duration", "email",
	"hostname", "ipv4", "ipv6", "uuid")

// OpenAI's limits on one strict schema.
const (
	openAIMaxProperties  = 5000
	openAIMaxDepth       = 10
	openAIMaxEnumValues  = 1000
	openAIMaxStringChars = 120000
	openAIBigEnum        = 250
	openAIBigEnumChars   = 15000
	// openAIMaxDescription is the longest function description, in
	// characters, the API accepts.
	openAIMaxDescription = 1024
)

func openAIRules(p Profile) *profileRules {
	return &profileRules{
		profile:        p,
		maxName:        64,
		maxDescription: openAIMaxDescription,
		plain:          nil, // a non-strict tool takes the schema as it is
		strictKeys:     openAIStrictKeys,
		why:            "left out: the provider does not take it",
		formats:        openAIFormats,
		strict:         strictOpenAI,
		strictObject:   (*converter).openAIStrictObject,
		wire: func(name, desc string, s map[string]any, strict bool) map[string]any {
			fn := map[string]any{"name": name, "parameters": s, "strict": strict}
			if desc != "" {
				fn["description"] = desc
			}
			if p == OpenAIChat {
				return map[string]any{"type": "function", "function": fn}
			}
			fn["type"] = "function"
			return fn
		},
	}
}

// openAIStrictObject applies strict mode's rules to one converted schema
// object: a type is needed, every object is closed and lists all its
// properties in required, an optional property becomes nullable.
func (c *converter) openAIStrictObject(s map[string]any, ptr string) {
	if ptr == "" {
		defer func() {
			c.refSiblings(s)
			c.openAILimits(s)
		}()
	}
	_, hasType := s["type"]
	_, hasAnyOf := s["anyOf"]
	_, hasRef := s["$ref"]
	_, hasEnum := s["enum"]
	_, hasConst := s["const"]
	if !hasType && !hasAnyOf && !hasRef && !hasEnum && !hasConst {
		c.cannot(ptr, "type", "a schema without a type accepts any value")
		return
	}
	if !isObjectSchema(s) {
		return
	}
	if !c.closeObject(s, ptr) {
		return
	}
	props, _ := s["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
		s["properties"] = props
	}
	// A required property with a default may be left out too: the
	// registry fills the default before it checks required.
	req := requiredSet(s)
	names := sortedKeys(props)
	var optional []string
	all := make([]any, 0, len(names))
	if old, ok := s["required"].([]any); ok {
		all = append(all, old...)
	}
	for _, n := range names {
		if !req[n] {
			optional = append(optional, n)
			all = append(all, n)
		} else if c.hasDefault(ijson.AppendToken(ijson.AppendToken(ptr, "properties"), n)) {
			optional = append(optional, n)
		}
	}
	s["required"] = all
	if len(optional) == 0 {
		return
	}
	var nulled, already []string
	for _, n := range optional {
		if acceptsNull(c.root, props[n]) {
			already = append(already, n)
			c.keptNull[ptr+"\x00"+n] = true
			continue
		}
		props[n] = orNull(props[n])
		c.nullable[ptr+"\x00"+n] = true
		nulled = append(nulled, n)
	}
	if len(nulled) > 0 {
		c.lose(ptr, "required", "optional properties listed as required and made nullable ("+joinNames(nulled)+"): a null sent for one is taken as left out")
	}
	if len(already) > 0 {
		c.lose(ptr, "required", "optional properties that accept null listed as required ("+joinNames(already)+"): the model must send null to leave one out, and the null is kept")
	}
}

// refSiblings rewrites, in the strict schema root, each $ref that has
// sibling keywords, which strict mode refuses: in a schema that is not
// recursive the target is inlined, the siblings merged into it (a
// sibling the target also holds with another value is left out); in a
// recursive one, title and description move beside an anyOf holding the
// bare $ref and the other siblings are left out. The registry checks
// what is left out when the call comes back.
func (c *converter) refSiblings(root map[string]any) {
	rec := recursive(root)
	var walk func(v any, ptr string, depth int) any
	walk = func(v any, ptr string, depth int) any {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok && len(x) > 1 && depth < 32 {
				v = c.refWithoutSiblings(root, x, ref, ptr, rec)
				if m, ok := v.(map[string]any); ok {
					x = m
				}
			}
			for _, k := range sortedKeys(x) {
				x[k] = walk(x[k], ijson.AppendToken(ptr, k), depth+1)
			}
			return x
		case []any:
			for i, e := range x {
				x[i] = walk(e, ijson.AppendIndex(ptr, i), depth+1)
			}
		}
		return v
	}
	walk(root, "", 0)
}

// refWithoutSiblings returns the schema that replaces s, a $ref to ref
// with siblings, at ptr of the converted schema root.
func (c *converter) refWithoutSiblings(root, s map[string]any, ref, ptr string, rec bool) any {
	target, _, ok := resolveLocal(root, ref)
	tm, isMap := target.(map[string]any)
	if !rec && ok && isMap {
		out := schema.Copy(tm).(map[string]any)
		for _, k := range sortedKeys(s) {
			v := s[k]
			switch old, taken := out[k]; {
			case k == "$ref":
			case !taken || annotation[k]:
				out[k] = v
			case !jsonEqual(old, v):
				c.lose(ptr, k, "left out: strict mode refuses keywords beside $ref, and the target inlined here holds its own; the registry checks it when the call comes back")
			}
		}
		c.lose(ptr, "$ref", "inlined: strict mode refuses keywords beside $ref")
		return out
	}
	out := map[string]any{"anyOf": []any{map[string]any{"$ref": ref}}}
	for _, k := range sortedKeys(s) {
		switch {
		case k == "$ref":
		case k == "title" || k == "description":
			out[k] = s[k]
		default:
			c.lose(ptr, k, "left out: strict mode refuses keywords beside $ref; the registry checks it when the call comes back")
		}
	}
	c.lose(ptr, "$ref", "written as an anyOf of the $ref alone, title and description beside it: strict mode refuses keywords beside $ref")
	return out
}

// hasDefault reports whether the property schema at ptr gives a default:
// its own, or one along its $ref chain (the registry fills those too).
func (c *converter) hasDefault(ptr string) bool {
	if c.defaults[ptr] {
		return true
	}
	src := c.sourceAt(ptr)
	for range 32 {
		if _, ok := src["default"]; ok {
			return true
		}
		ref, ok := src["$ref"].(string)
		if !ok {
			return false
		}
		t, _, ok := resolveLocal(c.root, ref)
		m, isMap := t.(map[string]any)
		if !ok || !isMap {
			return false
		}
		src = m
	}
	return false
}

// orNull returns a schema that accepts what s accepts and null.
func orNull(s any) any {
	m, ok := s.(map[string]any)
	if !ok {
		return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
	}
	_, hasConst := m["const"]
	_, hasRef := m["$ref"]
	_, hasAnyOf := m["anyOf"]
	if !hasConst && !hasRef && !hasAnyOf {
		switch t := m["type"].(type) {
		case string:
			m["type"] = []any{t, "null"}
			addNullToEnum(m)
			return m
		case []any:
			m["type"] = append(append([]any{}, t...), "null")
			addNullToEnum(m)
			return m
		}
	}
	if hasAnyOf && !hasConst && !hasRef {
		if _, typed := m["type"]; !typed {
			branches := m["anyOf"].([]any)
			m["anyOf"] = append(append([]any{}, branches...), map[string]any{"type": "null"})
			addNullToEnum(m)
			return m
		}
	}
	inner := make(map[string]any, len(m))
	out := map[string]any{}
	for k, v := range m {
		if k == "description" || k == "title" {
			out[k] = v
			continue
		}
		inner[k] = v
	}
	out["anyOf"] = []any{inner, map[string]any{"type": "null"}}
	return out
}

func addNullToEnum(m map[string]any) {
	if e, ok := m["enum"].([]any); ok && !containsValue(e, nil) {
		m["enum"] = append(append([]any{}, e...), nil)
	}
}

// openAILimits checks the limits on a whole strict schema.
func (c *converter) openAILimits(root map[string]any) {
	if c.fail != nil {
		return
	}
	var props, enums, chars, maxDepth int
	var bigEnum bool
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		if isObjectSchema(m) {
			depth++
			if depth > maxDepth {
				maxDepth = depth
			}
		}
		if p, ok := m["properties"].(map[string]any); ok {
			props += len(p)
			for _, n := range sortedKeys(p) {
				chars += utf8.RuneCountInString(n)
				walk(p[n], depth)
			}
		}
		if d, ok := m["$defs"].(map[string]any); ok {
			for _, n := range sortedKeys(d) {
				chars += utf8.RuneCountInString(n)
				walk(d[n], 0)
			}
		}
		if e, ok := m["enum"].([]any); ok {
			enums += len(e)
			n := 0
			for _, x := range e {
				if s, ok := x.(string); ok {
					n += utf8.RuneCountInString(s)
				}
			}
			chars += n
			if len(e) > openAIBigEnum && n > openAIBigEnumChars {
				bigEnum = true
			}
		}
		if s, ok := m["const"].(string); ok {
			chars += utf8.RuneCountInString(s)
		}
		walk(m["items"], depth)
		if a, ok := m["anyOf"].([]any); ok {
			for _, b := range a {
				walk(b, depth)
			}
		}
	}
	walk(root, 0)
	switch {
	case props > openAIMaxProperties:
		c.cannot("", "properties", "more than 5000 properties in all")
	case maxDepth > openAIMaxDepth:
		c.cannot("", "properties", "objects nest more than 10 levels deep")
	case enums > openAIMaxEnumValues:
		c.cannot("", "enum", "more than 1000 enum values in all")
	case chars > openAIMaxStringChars:
		c.cannot("", "enum", "names, enum values and consts pass 120,000 characters")
	case bigEnum:
		c.cannot("", "enum", "a string enum of more than 250 values passes 15,000 characters")
	}
}

// fitDescription cuts desc to at most max characters for a provider that
// refuses a longer description: after the last sentence end that fits
// (., ! or ? before a space), or else at the last word boundary, where an
// ellipsis marks the cut. It returns the loss of a cut, or nil.
func fitDescription(id, desc string, max int) (string, *Loss) {
	if utf8.RuneCountInString(desc) <= max {
		return desc, nil
	}
	runes := []rune(desc)
	head := runes[:max]
	for i := len(head) - 1; i > 0; i-- {
		if (head[i-1] == '.' || head[i-1] == '!' || head[i-1] == '?') && (i == len(runes) || unicode.IsSpace(runes[i])) {
			return string(head[:i]), &Loss{id, "", "description", fmt.Sprintf("cut after its last sentence within %d characters, the most the provider takes", max)}
		}
	}
	head = runes[:max-1] // room for the ellipsis
	end := len(head)
	for i := len(head); i > 0; i-- {
		if unicode.IsSpace(runes[i]) {
			end = i
			break
		}
	}
	short := strings.TrimRightFunc(string(head[:end]), unicode.IsSpace) + "…"
	return short, &Loss{id, "", "description", fmt.Sprintf("cut at a word within %d characters, the most the provider takes, and ended with an ellipsis", max)}
}
