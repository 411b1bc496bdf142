package profiles

// Helpers of the export profiles that read a schema: local $refs,
// recursion, what accepts null, object schemas, numbers for the SDKs.

import (
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/internal/ijson"
)

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
func acceptsNull(root map[string]any, s any) bool {
	budget := 256
	return acceptsNullWithin(root, s, &budget)
}

// acceptsNullWithin is acceptsNull spending one of *budget per schema it
// reads: references that fan out cannot make it slow. With the budget
// spent, it answers true, which keeps a null as it is (the safe side).
func acceptsNullWithin(root map[string]any, s any, budget *int) bool {
	m, ok := s.(map[string]any)
	if !ok {
		return s != false
	}
	if *budget--; *budget < 0 {
		return true
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
	if ref, ok := m["$ref"].(string); ok {
		if t, _, ok := resolveLocal(root, ref); ok && !acceptsNullWithin(root, t, budget) {
			return false
		}
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		if bs, ok := m[kw].([]any); ok {
			some := false
			for _, b := range bs {
				some = some || acceptsNullWithin(root, b, budget)
			}
			if !some {
				return false
			}
		}
	}
	if bs, ok := m["allOf"].([]any); ok {
		for _, b := range bs {
			if !acceptsNullWithin(root, b, budget) {
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
// (an integer in its range), a float64 (when the shortest text of the
// float64 has the number's exact value: 0.1 and 1.50 convert), or else
// a json.RawMessage of its text (12345678901234567890), and returns v.
// The providers' Go SDKs (OpenAI v3, Anthropic v2) write a json.Number
// as a JSON string, which would turn "minimum": 1 into "minimum": "1";
// they write these three types as numbers, the text as it is.
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
		if f, err := x.Float64(); err == nil && sameNumber(string(x), strconv.FormatFloat(f, 'g', -1, 64)) {
			return f
		}
		return json.RawMessage(x)
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

// sameNumber reports whether two JSON number texts have the same exact
// value.
func sameNumber(a, b string) bool {
	x, ok1 := new(big.Rat).SetString(a)
	y, ok2 := new(big.Rat).SetString(b)
	return ok1 && ok2 && x.Cmp(y) == 0
}

func isString(v any) bool { _, ok := v.(string); return ok }

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

func jsonEqual(a, b any) bool {
	x, err1 := actions.CanonicalJSON(a)
	y, err2 := actions.CanonicalJSON(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

func setOf(keys ...string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

func joinNames(names []string) string {
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out
}
