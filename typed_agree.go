package actions

import (
	"fmt"
	"sort"
	"strings"

	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/internal/ijson"
)

// agreeWith checks that a given parameters schema doc and the Go type planned
// by dec describe the same values: every required property has a field,
// every field a property, and each property's type fits its field's. It
// returns a *Refusal constraint_violation with one issue per
// disagreement, at the schema pointer, naming the field.
func agreeWith(doc map[string]any, dec *decoder) error {
	a := agreement{doc: doc}
	a.walk(doc, dec, "", dec.t.String(), 0)
	if len(a.issues) == 0 {
		return nil
	}
	msg, issues := capIssues("the parameters schema and the Go type disagree", sortIssues(a.issues))
	return refusef(codes.ConstraintViolation, msg, issues...)
}

type agreement struct {
	doc    map[string]any
	issues []Issue
}

func (a *agreement) add(ptr, kw, msg string) {
	a.issues = append(a.issues, Issue{Path: ptr, Keyword: kw, Message: msg})
}

// maxAgreeDepth bounds the walk through $ref chains and nesting; the
// compile bounds real schemas well below it.
const maxAgreeDepth = 64

// walk compares the schema s at ptr with dec, reached as field.
func (a *agreement) walk(s map[string]any, dec *decoder, ptr, field string, depth int) {
	if depth > maxAgreeDepth {
		return
	}
	for dec.kind == decPointer {
		dec = dec.elem
	}
	// Follow a local $ref that stands alone, to compare its target.
	if ref, ok := s["$ref"].(string); ok && len(s) <= 2 {
		if target, ok := a.resolve(ref); ok {
			a.walk(target, dec, strings.TrimPrefix(ref, "#"), field, depth+1)
		}
		return
	}
	types := schemaTypes(s)
	if types != nil {
		held := false
		for _, t := range types {
			if t == "null" {
				continue
			}
			if fits(t, dec) {
				held = true
			} else {
				a.add(ptr+"/type", "type", fmt.Sprintf("the schema allows %s, which %s (%s) cannot hold", t, field, dec.t))
			}
		}
		if !held {
			return // the parts below would only repeat the fault
		}
	}
	switch dec.kind {
	case decStruct:
		a.walkStruct(s, dec, ptr, depth)
	case decSlice, decArray:
		if items, ok := s["items"].(map[string]any); ok {
			a.walk(items, dec.elem, ptr+"/items", field+"[]", depth+1)
		}
	case decMap:
		if ap, ok := s["additionalProperties"].(map[string]any); ok {
			a.walk(ap, dec.elem, ptr+"/additionalProperties", field+"[]", depth+1)
		}
	}
}

func (a *agreement) walkStruct(s map[string]any, dec *decoder, ptr string, depth int) {
	props, _ := s["properties"].(map[string]any)
	if props == nil && s["type"] == nil {
		return // a schema that says nothing of objects here (anyOf, ...)
	}
	req, _ := s["required"].([]any)
	for i, r := range req {
		name, _ := r.(string)
		if _, ok := dec.byName[name]; !ok {
			a.add(fmt.Sprintf("%s/required/%d", ptr, i), "required",
				fmt.Sprintf("the required property %s has no field in %s", name, dec.t))
		}
	}
	for _, f := range dec.fields {
		at := ijson.AppendToken(ptr+"/properties", f.name)
		p, ok := props[f.name]
		if !ok {
			a.add(at, "properties", fmt.Sprintf("field %s (JSON name %s) has no property in the schema", f.goName, f.name))
			continue
		}
		ps, ok := p.(map[string]any)
		if !ok {
			if p == false {
				a.add(at, "properties", fmt.Sprintf("the schema forbids the property of field %s", f.goName))
			}
			continue
		}
		if f.ref != "" {
			ref, _ := ps["ref"].(string)
			if items, ok := ps["items"].(map[string]any); ok && ref == "" {
				ref, _ = items["ref"].(string)
			}
			if ref != f.ref {
				a.add(at, "ref", fmt.Sprintf("field %s is tagged ref=%s but its property has no such ref", f.goName, f.ref))
			}
		}
		a.agreeTag(ps, &f, at)
		a.walk(ps, f.dec, at, "field "+f.goName, depth+1)
	}
	var extra []string
	for name := range props {
		if _, ok := dec.byName[name]; !ok {
			extra = append(extra, name)
		}
	}
	sort.Strings(extra)
	for _, name := range extra {
		a.add(ijson.AppendToken(ptr+"/properties", name), "properties",
			fmt.Sprintf("the property %s has no field in %s", name, dec.t))
	}
}

// resolve follows a $ref of the form #/... inside the document.
func (a *agreement) resolve(ref string) (map[string]any, bool) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, false
	}
	var cur any = a.doc
	if frag == "" {
		return a.doc, true
	}
	if !strings.HasPrefix(frag, "/") {
		return nil, false // an anchor: not followed
	}
	for _, tok := range strings.Split(frag[1:], "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		cur = m[tok]
	}
	m, ok := cur.(map[string]any)
	return m, ok
}

// schemaTypes returns the JSON types a schema's type keyword allows, or
// nil when it has none.
func schemaTypes(s map[string]any) []string {
	switch t := s["type"].(type) {
	case string:
		return []string{t}
	case []any:
		out := make([]string, 0, len(t))
		for _, e := range t {
			if str, ok := e.(string); ok {
				out = append(out, str)
			}
		}
		return out
	}
	return nil
}

// fits reports whether every value of JSON type t fits a Go value that
// dec fills.
func fits(t string, dec *decoder) bool {
	switch dec.kind {
	case decAny, decUnmarshal, decRaw:
		return true
	case decBool:
		return t == "boolean"
	case decString, decTime, decBytes:
		return t == "string"
	case decInt, decUint, decBigInt:
		return t == "integer"
	case decFloat, decNumber:
		return t == "integer" || t == "number"
	case decSlice, decArray:
		return t == "array"
	case decMap, decJSONMap, decStruct:
		return t == "object"
	}
	return false
}

// agreeTag checks that a given property schema p says the tag's enum and
// default, at the property's pointer at.
func (a *agreement) agreeTag(p map[string]any, f *goField, at string) {
	if f.tag.hasDef && !sameJSON(p["default"], f.tag.def) {
		a.add(at, "default", fmt.Sprintf("field %s is tagged with a default its property does not have", f.goName))
	}
	if f.tag.enum == nil {
		return
	}
	s := p
	if f.tag.items {
		s, _ = p["items"].(map[string]any)
	}
	var given any
	if s != nil {
		given = s["enum"]
	}
	if !sameJSON(given, any(f.tag.enum)) {
		a.add(at, "enum", fmt.Sprintf("field %s is tagged with an enum its property does not have", f.goName))
	}
}
