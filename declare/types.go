// From a JSON Schema to a TypeScript type.

package declare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// maxDepth bounds how deep a schema is followed; deeper parts are
// unknown. Registered schemas are bounded well below it.
const maxDepth = 32

// writer turns the schemas of one action's input or output into types.
type writer struct {
	ns     string
	prefix string         // the action's type name prefix: <Name> or <Name>Result
	root   map[string]any // the schema local $refs point into
	output bool
}

// typeOf is the type of schema s, written at indent (levels of two
// spaces) for the lines of an object type.
func (w *writer) typeOf(s any, indent, depth int) string {
	if depth > maxDepth {
		return "unknown"
	}
	m, ok := s.(map[string]any)
	if !ok {
		if s == false {
			return "never"
		}
		return "unknown"
	}
	var parts []string
	if ref, ok := m["$ref"].(string); ok {
		parts = append(parts, w.refType(ref))
	}
	if c, ok := m["const"]; ok {
		parts = append(parts, literal(c))
	} else if e, ok := m["enum"].([]any); ok {
		lits := make([]string, 0, len(e))
		for _, v := range e {
			lits = appendOnce(lits, literal(v))
		}
		parts = append(parts, union(lits))
	} else if base := w.baseType(m, indent, depth); base != "" {
		parts = append(parts, base)
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		if bs, ok := m[kw].([]any); ok {
			var alts []string
			for _, b := range bs {
				alts = appendOnce(alts, w.typeOf(b, indent, depth+1))
			}
			if u := union(alts); u != "unknown" {
				parts = append(parts, u)
			}
		}
	}
	if bs, ok := m["allOf"].([]any); ok {
		for _, b := range bs {
			if t := w.typeOf(b, indent, depth+1); t != "unknown" {
				parts = append(parts, t)
			}
		}
	}
	switch len(parts) {
	case 0:
		return "unknown"
	case 1:
		return parts[0]
	}
	for i, p := range parts {
		parts[i] = paren(p)
	}
	return strings.Join(parts, " & ")
}

// refType is the named type a local $ref leads to: the root's type, or
// the type of a $defs entry; any other pointer is unknown.
func (w *writer) refType(ref string) string {
	if ref == "#" {
		if w.output {
			return w.prefix
		}
		return w.prefix + "Params"
	}
	name, ok := strings.CutPrefix(ref, "#/$defs/")
	if !ok || strings.Contains(name, "/") {
		return "unknown"
	}
	name = strings.NewReplacer("~1", "/", "~0", "~").Replace(name)
	defs, _ := w.root["$defs"].(map[string]any)
	if _, ok := defs[name]; !ok {
		return "unknown"
	}
	return w.prefix + "_" + identPart(name)
}

// baseType is the type the type keyword (or, without it, the keywords
// of one type) gives; "" when nothing says.
func (w *writer) baseType(m map[string]any, indent, depth int) string {
	var types []string
	switch t := m["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		for _, e := range t {
			if s, ok := e.(string); ok {
				types = append(types, s)
			}
		}
	default:
		for _, kw := range []string{"properties", "additionalProperties", "patternProperties", "required"} {
			if _, ok := m[kw]; ok {
				types = []string{"object"}
				break
			}
		}
		if _, ok := m["items"]; ok && types == nil {
			types = []string{"array"}
		} else if _, ok := m["prefixItems"]; ok && types == nil {
			types = []string{"array"}
		}
	}
	if len(types) == 0 {
		return ""
	}
	var out []string
	for _, t := range types {
		switch t {
		case "string":
			if kind, ok := m["ref"].(string); ok {
				out = appendOnce(out, "Ref<"+literal(kind)+">")
			} else {
				out = appendOnce(out, "string")
			}
		case "integer", "number":
			out = appendOnce(out, "number")
		case "boolean":
			out = appendOnce(out, "boolean")
		case "null":
			out = appendOnce(out, "null")
		case "array":
			out = appendOnce(out, w.arrayType(m, indent, depth))
		case "object":
			out = appendOnce(out, w.objectType(m, indent, depth))
		}
	}
	return union(out)
}

// arrayType is T[] for items, or a tuple for prefixItems (its members
// optional past minItems on the way in).
func (w *writer) arrayType(m map[string]any, indent, depth int) string {
	item := "unknown"
	if it, ok := m["items"]; ok {
		item = w.typeOf(it, indent, depth+1)
	}
	prefix, ok := m["prefixItems"].([]any)
	if !ok {
		return arrayOf(item)
	}
	min := 0
	if n, ok := m["minItems"].(json.Number); ok {
		if i, err := n.Int64(); err == nil {
			min = int(i)
		}
	} else if f, ok := m["minItems"].(float64); ok {
		min = int(f)
	}
	elems := make([]string, 0, len(prefix)+1)
	for i, p := range prefix {
		e := w.typeOf(p, indent, depth+1)
		if i >= min {
			e = paren(e) + "?"
		}
		elems = append(elems, e)
	}
	if m["items"] != false {
		elems = append(elems, "..."+arrayOf(item))
	}
	return "[" + strings.Join(elems, ", ") + "]"
}

// objectType is an object type with one member per property: optional
// unless required, with its JSDoc. Other properties are allowed by an
// index signature where the schema allows them and names none.
func (w *writer) objectType(m map[string]any, indent, depth int) string {
	props, _ := m["properties"].(map[string]any)
	req := map[string]bool{}
	if r, ok := m["required"].([]any); ok {
		for _, n := range r {
			if s, ok := n.(string); ok {
				req[s] = true
			}
		}
	}
	ap, hasAP := m["additionalProperties"]
	_, hasPP := m["patternProperties"]
	index := ""
	switch {
	case len(props) == 0 && hasAP && ap != false && ap != true && !hasPP:
		index = w.typeOf(ap, indent+1, depth+1)
	case len(props) == 0 && ap != false:
		index = "unknown"
	case len(props) > 0 && ((hasAP && ap != false) || hasPP):
		index = "unknown"
	}
	if len(props) == 0 && index == "" {
		return "Record<string, never>"
	}
	pad := strings.Repeat("  ", indent+1)
	var b strings.Builder
	b.WriteString("{\n")
	for _, k := range sortedKeys(props) {
		writeDoc(&b, pad, docOf(props[k]))
		opt := "?"
		if req[k] {
			opt = ""
		}
		fmt.Fprintf(&b, "%s%s%s: %s;\n", pad, propKey(k), opt, w.typeOf(props[k], indent+1, depth+1))
	}
	if index != "" {
		fmt.Fprintf(&b, "%s[key: string]: %s;\n", pad, index)
	}
	b.WriteString(strings.Repeat("  ", indent) + "}")
	return b.String()
}

// docOf is a schema's comment: its description (or title), its format
// and its default.
func docOf(s any) string {
	m, ok := s.(map[string]any)
	if !ok {
		return ""
	}
	var parts []string
	if d, ok := m["description"].(string); ok && d != "" {
		parts = append(parts, d)
	} else if t, ok := m["title"].(string); ok && t != "" {
		parts = append(parts, t)
	}
	if f, ok := m["format"].(string); ok {
		parts = append(parts, "Format: "+f+".")
	}
	if d, ok := m["default"]; ok {
		parts = append(parts, "@default "+compactJSON(d))
	}
	return strings.Join(parts, "\n")
}

// literal is v as a TypeScript literal type: a string, number, boolean
// or null; unknown for an object or an array.
func literal(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool, json.Number, float64, int64, int:
		return compactJSON(x)
	case string:
		return compactJSON(x)
	}
	return "unknown"
}

func compactJSON(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return "null"
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// union joins alternatives; unknown absorbs the others.
func union(alts []string) string {
	if len(alts) == 0 {
		return "never"
	}
	for _, a := range alts {
		if a == "unknown" {
			return "unknown"
		}
	}
	return strings.Join(alts, " | ")
}

func appendOnce(list []string, s string) []string {
	for _, e := range list {
		if e == s {
			return list
		}
	}
	return append(list, s)
}

// arrayOf is T[], or Array<T> when T is a union or an intersection.
func arrayOf(t string) string {
	if strings.ContainsAny(t, "|&\n") {
		return "Array<" + t + ">"
	}
	return t + "[]"
}

// paren wraps a union or an intersection in parentheses.
func paren(t string) string {
	if strings.Contains(t, " | ") || strings.Contains(t, " & ") {
		return "(" + t + ")"
	}
	return t
}

// propKey is a property name as an object member: as it is when it is
// an identifier, quoted otherwise.
func propKey(k string) string {
	if isIdent(k) {
		return k
	}
	return compactJSON(k)
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		letter := r == '_' || r == '$' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
		if !letter && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// ident is an action id part as a TypeScript binding name: a reserved
// word, or a global a program relies on, gets a trailing underscore.
func ident(s string) string {
	if reserved[s] {
		return s + "_"
	}
	return s
}

// identPart is s with every character outside [A-Za-z0-9_] made "_".
func identPart(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
			b[i] = '_'
		}
	}
	return string(b)
}

// pascal is list_actors as ListActors.
func pascal(s string) string {
	var b strings.Builder
	up := true
	for _, r := range s {
		if r == '_' {
			up = true
			continue
		}
		if up && r >= 'a' && r <= 'z' {
			r -= 'a' - 'A'
		}
		up = false
		b.WriteRune(r)
	}
	if b.Len() == 0 {
		return "T"
	}
	return b.String()
}

// reserved are the words TypeScript (strict mode) refuses as a binding
// name, and the globals of the ECMAScript library a program needs.
var reserved = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`break case catch class const continue debugger default delete do else enum
		export extends false finally for function if import in instanceof new null return super switch this throw
		true try typeof var void while with implements interface let package private protected public static yield
		await arguments eval any boolean number string symbol type declare namespace module never unknown object
		undefined NaN Infinity globalThis Ref Promise Array Object JSON Math Date Error String Number Boolean Symbol
		Map Set Record RegExp BigInt`) {
		reserved[w] = true
	}
}
