package profiles

import (
	"fmt"
)

// Anthropic Messages tools. Sources, checked 2026-12-01: "Strict tool
// use" and "Structured outputs: JSON Schema limitations" (Claude platform
// docs); see docs/profiles.md.

// The keywords Anthropic strict tool use accepts.
var anthropicStrictKeys = setOf(
	"type", "properties", "required", "additionalProperties", "items", "anyOf",
	"allOf", "enum", "const", "default", "$defs", "$ref", "description", "title",
	"pattern", "format", "minItems",
)

// The string formats Anthropic strict tool use supports.
var anthropicFormats = setOf("date-time", "time", "date", "duration", "email",
	"hostname", "uri", "ipv4", "ipv6", "uuid")

// Anthropic's per-request caps on strict tool use.
var anthropicCaps = strictCaps{tools: 20, optional: 24, unions: 16}

func anthropicRules(p Profile) *profileRules {
	r := &profileRules{
		profile:     p,
		maxName:     64,
		renamesKeys: true,
		plain:       nil, // a plain input_schema takes JSON Schema as it is
		why:         "left out: the provider does not take it",
		wire: func(name, desc string, s map[string]any, strict bool) map[string]any {
			t := map[string]any{"name": name, "input_schema": s}
			if desc != "" {
				t["description"] = desc
			}
			if strict {
				t["strict"] = true
			}
			return t
		},
	}
	if p == AnthropicStrict {
		r.strictKeys = anthropicStrictKeys
		r.formats = anthropicFormats
		r.strict = strictAnthropic
		r.strictObject = (*converter).anthropicStrictObject
		r.caps = &anthropicCaps
	}
	return r
}

// anthropicStrictObject applies strict tool use's rules to one converted
// schema object: objects closed, minItems 0 or 1 only, enums of
// primitives only.
func (c *converter) anthropicStrictObject(s map[string]any, ptr string) {
	if n, ok := s["minItems"]; ok && !isZeroOrOne(n) {
		delete(s, "minItems")
		c.lose(ptr, "minItems", "left out in strict mode: strict tool use takes minItems 0 or 1 only; the registry checks it when the call comes back")
	}
	if e, ok := s["enum"].([]any); ok {
		for _, v := range e {
			switch v.(type) {
			case map[string]any, []any:
				c.cannot(ptr, "enum", "an enum holding an object or an array")
			}
		}
	}
	if !isObjectSchema(s) {
		return
	}
	c.closeObject(s, ptr)
}

func isZeroOrOne(v any) bool {
	s := fmt.Sprint(v)
	return s == "0" || s == "1"
}
