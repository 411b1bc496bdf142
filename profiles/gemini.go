package profiles

import (
	"strings"

	"github.com/actionreg/actions/internal/ijson"
)

// Gemini function declarations. Sources, checked 2026-12-01: the Gemini
// API reference for FunctionDeclaration (name, parameters,
// parametersJsonSchema) and Schema (the OpenAPI 3.0 subset); see
// docs/profiles.md.

// The keywords Gemini documents for parametersJsonSchema.
var geminiJSONKeys = setOf(
	"$id", "$defs", "$ref", "$anchor", "type", "format", "title", "description",
	"enum", "items", "prefixItems", "minItems", "maxItems", "minimum", "maximum",
	"anyOf", "oneOf", "properties", "additionalProperties", "required",
)

// The fields of Gemini's OpenAPI Schema object that a JSON Schema keyword
// maps onto as it is. nullable is added by the conversion.
var geminiOpenAPIKeys = setOf(
	"type", "format", "title", "description", "enum", "minItems", "maxItems",
	"properties", "required", "minProperties", "maxProperties", "minLength",
	"maxLength", "pattern", "anyOf", "default", "items", "minimum", "maximum",
)

func geminiRules(p Profile) *profileRules {
	r := &profileRules{
		profile:     p,
		maxName:     64,
		plain:       geminiJSONKeys,
		why:         "left out: outside the JSON Schema subset Gemini documents; the registry checks it when the call comes back",
		constAsEnum: true,
		hook:        geminiRequired,
		wire: func(name, desc string, s map[string]any, _ bool) map[string]any {
			t := map[string]any{"name": name, "parametersJsonSchema": s}
			if desc != "" {
				t["description"] = desc
			}
			return t
		},
	}
	if p == GeminiOpenAPI {
		r.plain = geminiOpenAPIKeys
		r.openAPI = true
		r.why = "left out: Gemini's parameters form (OpenAPI 3.0 subset) has no such field; the registry checks it when the call comes back"
		r.hook = geminiOpenAPI
		r.wire = func(name, desc string, s map[string]any, _ bool) map[string]any {
			t := map[string]any{"name": name}
			// An OBJECT without properties is refused: a declaration
			// that takes no arguments has no parameters at all.
			delete(s, geminiDrop)
			if props, _ := s["properties"].(map[string]any); len(props) > 0 {
				t["parameters"] = s
			}
			if desc != "" {
				t["description"] = desc
			}
			return t
		}
	}
	return r
}

// geminiRequired leaves out of required each name the schema's
// properties do not declare, which Gemini refuses ("property is not
// defined"): a required without properties, or naming a property that
// only a combinator the export left out declared.
func geminiRequired(c *converter, s map[string]any, ptr string) {
	req, ok := s["required"].([]any)
	if !ok {
		return
	}
	props, _ := s["properties"].(map[string]any)
	kept := make([]any, 0, len(req))
	var dropped []string
	for _, n := range req {
		name, _ := n.(string)
		if _, ok := props[name]; ok {
			kept = append(kept, n)
		} else {
			dropped = append(dropped, name)
		}
	}
	if len(dropped) == 0 {
		return
	}
	if len(kept) == 0 {
		delete(s, "required")
	} else {
		s["required"] = kept
	}
	c.lose(ptr, "required", "left out of required ("+joinNames(dropped)+"): Gemini refuses a required name its properties do not declare; the registry checks it when the call comes back")
}

// geminiOpenAPI turns a converted schema object into Gemini's OpenAPI
// subset: one type (upper case, as the API's Type enum spells it) plus
// nullable, enums of strings, required names declared.
func geminiOpenAPI(c *converter, s map[string]any, ptr string) {
	defer geminiRequired(c, s, ptr)
	if t, ok := s["type"].([]any); ok {
		var types []string
		null := false
		for _, e := range t {
			if e == "null" {
				null = true
			} else if n, ok := e.(string); ok {
				types = append(types, n)
			}
		}
		switch {
		case len(types) == 1:
			s["type"] = types[0]
		case len(types) == 0:
			delete(s, "type")
		default:
			delete(s, "type")
			if _, taken := s["anyOf"]; !taken {
				branches := make([]any, len(types))
				for i, n := range types {
					branches[i] = map[string]any{"type": strings.ToUpper(n)}
				}
				s["anyOf"] = branches
			}
		}
		if null {
			s["nullable"] = true
		}
		c.lose(ptr, "type", "a list of types written as one type (or anyOf of types) with nullable")
	}
	if t, ok := s["type"].(string); ok {
		if t == "null" {
			delete(s, "type")
			s["nullable"] = true
			c.lose(ptr, "type", "the type null written as nullable")
		} else {
			s["type"] = strings.ToUpper(t)
		}
	}
	defer c.geminiShapes(s, ptr)
	if e, ok := s["enum"].([]any); ok {
		var kept []any
		dropped := false
		for _, v := range e {
			switch v.(type) {
			case string:
				kept = append(kept, v)
			case nil:
				s["nullable"] = true
			default:
				dropped = true
			}
		}
		switch {
		case dropped:
			delete(s, "enum")
			c.lose(ptr, "enum", "left out: Gemini's parameters form takes enums of strings only; the registry checks it when the call comes back")
		case len(kept) != len(e):
			s["enum"] = kept
			c.lose(ptr, "enum", "null in the enum written as nullable")
		}
	}
}

// geminiDrop marks, for the schema holding it, a converted schema that
// Gemini's parameters form cannot express; the holder leaves it out.
const geminiDrop = "\x00drop"

// geminiShapes makes a converted schema object one that Gemini's
// parameters form takes: an untyped string enum gets "type": "STRING";
// a null branch of anyOf becomes nullable on the holder; an ARRAY gets
// typed items; an untyped subschema that accepts any value is written
// as STRING (what the model can still send, and the registry takes); a
// subschema with no form (an OBJECT without properties, a lone null) is
// left out of properties and required, or of anyOf. Each change is a
// loss.
func (c *converter) geminiShapes(s map[string]any, ptr string) {
	if _, typed := s["type"]; !typed {
		if _, ok := s["enum"]; ok {
			s["type"] = "STRING"
			c.lose(ptr, "type", "added as STRING: Gemini's parameters form needs a type beside an enum of strings")
		}
	}
	if bs, ok := s["anyOf"].([]any); ok {
		var kept []any
		for i, b := range bs {
			bm, _ := b.(map[string]any)
			at := ijson.AppendIndex(ijson.AppendToken(ptr, "anyOf"), i)
			switch {
			case bm != nil && bm["nullable"] == true && bm["type"] == nil && bm["anyOf"] == nil:
				s["nullable"] = true
				c.lose(at, "type", "the null branch written as nullable on the anyOf's holder: Gemini's parameters form needs a type in each branch")
			case c.geminiUntyped(bm, at):
				c.lose(at, "anyOf", "branch left out: Gemini's parameters form cannot express it; the registry checks it when the call comes back")
			default:
				kept = append(kept, b)
			}
		}
		_, typed := s["type"]
		switch {
		case len(kept) == 1 && !typed:
			delete(s, "anyOf")
			for k, v := range kept[0].(map[string]any) {
				if _, taken := s[k]; !taken {
					s[k] = v
				}
			}
		case len(kept) == 0:
			delete(s, "anyOf")
		default:
			s["anyOf"] = kept
		}
	}
	if s["type"] == "ARRAY" {
		it, _ := s["items"].(map[string]any)
		at := ijson.AppendToken(ptr, "items")
		if it == nil {
			s["items"] = map[string]any{"type": "STRING"}
			c.lose(ptr, "items", "added as STRING items: Gemini's parameters form needs typed items; the registry checks each item when the call comes back")
		} else if c.geminiUntyped(it, at) {
			s[geminiDrop] = true
		}
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for _, n := range sortedKeys(props) {
			pm, _ := props[n].(map[string]any)
			at := ijson.AppendToken(ijson.AppendToken(ptr, "properties"), n)
			if !c.geminiUntyped(pm, at) {
				continue
			}
			delete(props, n)
			why := "property left out: Gemini's parameters form cannot express its schema (an object without properties, or a lone null)"
			if requiredSet(s)[n] {
				why += "; it is required, so the registry refuses every call until the model can send it"
			}
			c.lose(at, "properties", why)
		}
	}
	if s["type"] == "OBJECT" && ptr != "" {
		if props, _ := s["properties"].(map[string]any); len(props) == 0 {
			s[geminiDrop] = true
		}
	}
}

// geminiUntyped reports whether the converted schema m, found at ptr,
// has no form Gemini's parameters form takes, after writing an untyped
// schema that accepts any value as STRING.
func (c *converter) geminiUntyped(m map[string]any, ptr string) bool {
	if m == nil {
		return true
	}
	if m[geminiDrop] == true {
		return true
	}
	_, typed := m["type"]
	_, anyOf := m["anyOf"]
	if typed || anyOf {
		return false
	}
	if !c.acceptsAny(ptr) {
		return true
	}
	m["type"] = "STRING"
	c.lose(ptr, "type", "added as STRING: Gemini's parameters form needs a type, and a schema that takes any value takes text; the registry checks the value when the call comes back")
	return false
}

// acceptsAny reports whether the source schema at ptr (its $ref chain
// followed) restricts neither type nor value.
func (c *converter) acceptsAny(ptr string) bool {
	v, _, ok := resolveLocal(c.root, "#"+ptr)
	for range 32 {
		if !ok {
			return false
		}
		switch x := v.(type) {
		case bool:
			return x
		case map[string]any:
			for _, k := range []string{"type", "enum", "const", "not", "properties", "items", "prefixItems", "anyOf", "oneOf", "allOf"} {
				if _, has := x[k]; has {
					return false
				}
			}
			ref, isRef := x["$ref"].(string)
			if !isRef {
				return true
			}
			v, _, ok = resolveLocal(c.root, ref)
		default:
			return false
		}
	}
	return false
}
