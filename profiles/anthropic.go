package profiles

import (
	"fmt"
	"regexp"
	"sort"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/internal/ijson"
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

// anthropicKey is the rule Anthropic sets on input_schema property keys:
// a request with one key outside it is refused whole.
var anthropicKey = regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,64}$`)

// checkAnthropicKeys refuses a schema declaring a property whose key
// Anthropic refuses, naming the first such key's place in the schema
// (keys are the schema's own, never a submitted value).
func checkAnthropicKeys(s map[string]any) error {
	var bad []string
	var walk func(v any, ptr string, depth int)
	walk = func(v any, ptr string, depth int) {
		if depth > 64 {
			return
		}
		switch x := v.(type) {
		case map[string]any:
			if ps, ok := x["properties"].(map[string]any); ok {
				for n := range ps {
					if !anthropicKey.MatchString(n) {
						bad = append(bad, ijson.AppendToken(ijson.AppendToken(ptr, "properties"), n))
					}
				}
			}
			for k, e := range x {
				walk(e, ijson.AppendToken(ptr, k), depth+1)
			}
		case []any:
			for i, e := range x {
				walk(e, ijson.AppendIndex(ptr, i), depth+1)
			}
		}
	}
	walk(s, "", 0)
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	return refusef(actions.CodeConstraintViolation, "the profile cannot express the schema",
		actions.Issue{Path: "/parameters" + bad[0], Keyword: "properties", Message: fmt.Sprintf("Anthropic refuses a request whose tool schema has a property key outside ^[a-zA-Z0-9_.-]{1,64}$; %d such key(s), the first at this path", len(bad))})
}

func anthropicRules(p Profile) *profileRules {
	r := &profileRules{
		profile:   p,
		maxName:   64,
		checkKeys: checkAnthropicKeys,
		plain:     nil, // a plain input_schema takes JSON Schema as it is
		why:       "left out: the provider does not take it",
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
