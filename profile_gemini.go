package actions

import (
	"strings"
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
	if p == ProfileGeminiOpenAPI {
		r.plain = geminiOpenAPIKeys
		r.openAPI = true
		r.why = "left out: Gemini's parameters form (OpenAPI 3.0 subset) has no such field; the registry checks it when the call comes back"
		r.hook = geminiOpenAPI
		r.wire = func(name, desc string, s map[string]any, _ bool) map[string]any {
			t := map[string]any{"name": name, "parameters": s}
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

func isString(v any) bool { _, ok := v.(string); return ok }

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
