package schema

import (
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/actionreg/actions/internal/ijson"
)

// Error is a fault of a schema, at the RFC 6901 JSON Pointer of the
// keyword (or subschema) at fault. Reason never quotes the schema's
// strings beyond keyword names.
type Error struct {
	Pointer string
	Reason  string
}

func (e *Error) Error() string {
	if e.Pointer == "" {
		return "schema: " + e.Reason
	}
	return "schema at " + e.Pointer + ": " + e.Reason
}

// Report is what Check learned about a schema document.
type Report struct {
	// Refs maps the location of each schema object holding a ref, as the
	// engine writes it (resource URL, "#", escaped JSON Pointer), to the
	// model schema it names.
	Refs map[string]string
	// Defaults counts the defaults of the document.
	Defaults int
}

// Check walks a schema document (as decoded by ijson: map[string]any,
// []any, json.Number...) whose base URI is base, and refuses what the
// registry does not accept:
//   - a root that is not an object schema with "type": "object";
//   - a keyword outside JSON Schema 2020-12 and ref, at any depth;
//   - a $schema other than 2020-12;
//   - a $ref or $dynamicRef that leaves the document, and an $id that
//     repeats another or claims a json-schema.org address;
//   - a ref that is not a non-empty string, or that sits where no value
//     of the parameters can reach it;
//   - a default at the root or where it can never be filled;
//   - nesting deeper than maxDepth schema objects.
//
// objectRoot false lifts the first rule (for test suites whose schemas
// judge any value).
func Check(doc any, base string, maxDepth int, objectRoot bool) (*Report, error) {
	root, ok := doc.(map[string]any)
	if !ok {
		return nil, &Error{"", "the parameters schema must be an object"}
	}
	if objectRoot {
		if t, ok := root["type"]; !ok {
			return nil, &Error{"", `the root must declare "type": "object"`}
		} else if s, ok := t.(string); !ok || s != "object" {
			return nil, &Error{"/type", `the root must be "type": "object"`}
		}
	}
	if _, ok := root["default"]; ok {
		return nil, &Error{"/default", "a default at the root can never be filled"}
	}
	c := &checker{doc: root, maxDepth: maxDepth, ids: map[string]string{}, report: Report{Refs: map[string]string{}}}
	baseURL, err := url.Parse(base)
	if err != nil {
		return nil, &Error{"", "invalid base URI"}
	}
	// First pass: every resource of the document, so that a $ref can be
	// checked against them whatever their order.
	c.ids[stripFragment(baseURL)] = ""
	if err := c.collectIDs(root, "", baseURL, 0); err != nil {
		return nil, err
	}
	if err := c.walk(root, "", baseURL, "", 0, place{}); err != nil {
		return nil, err
	}
	return &c.report, nil
}

type checker struct {
	doc      map[string]any
	maxDepth int
	ids      map[string]string // resource URL (no fragment) -> pointer of its $id
	report   Report
}

// place says what encloses a schema object.
type place struct {
	property bool   // the object is properties/<name>
	opaque   string // the nearest enclosing opaque keyword, if any
	branch   string // the nearest enclosing anyOf/oneOf, if any
}

func stripFragment(u *url.URL) string {
	v := *u
	v.Fragment = ""
	v.RawFragment = ""
	return v.String()
}

func rebase(obj map[string]any, base *url.URL) (*url.URL, bool, error) {
	id, ok := obj["$id"].(string)
	if !ok {
		return base, false, nil
	}
	u, err := url.Parse(id)
	if err != nil {
		return nil, true, err
	}
	return base.ResolveReference(u), true, nil
}

func (c *checker) collectIDs(v any, ptr string, base *url.URL, depth int) error {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	if depth > c.maxDepth {
		return &Error{ptr, fmt.Sprintf("schema nesting deeper than %d levels", c.maxDepth)}
	}
	b, has, err := rebase(obj, base)
	if err != nil {
		return &Error{ptr + "/$id", "$id is not a URI reference"}
	}
	if has {
		key := stripFragment(b)
		if strings.HasPrefix(key, "https://json-schema.org/") || strings.HasPrefix(key, "http://json-schema.org/") {
			return &Error{ptr + "/$id", "$id must not claim a json-schema.org address"}
		}
		if prev, dup := c.ids[key]; dup && ptr != "" {
			return &Error{ptr + "/$id", "$id repeats the resource at " + orRoot(prev)}
		}
		c.ids[key] = ptr
	}
	return eachSub(obj, ptr, func(sub any, subPtr, _ string) error {
		return c.collectIDs(sub, subPtr, b, depth+1)
	})
}

func orRoot(p string) string {
	if p == "" {
		return "the root"
	}
	return p
}

// eachSub calls fn for every subschema of obj with its pointer and the
// keyword holding it, in a stable order.
func eachSub(obj map[string]any, ptr string, fn func(sub any, subPtr, kw string) error) error {
	names := make([]string, 0, len(obj))
	for k := range obj {
		if sh := keywords[k]; sh != leaf {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, kw := range names {
		kwPtr := ijson.AppendToken(ptr, kw)
		switch keywords[kw] {
		case single:
			if err := fn(obj[kw], kwPtr, kw); err != nil {
				return err
			}
		case schemaMap:
			m, _ := obj[kw].(map[string]any)
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if err := fn(m[k], ijson.AppendToken(kwPtr, k), kw); err != nil {
					return err
				}
			}
		case schemaArr:
			a, _ := obj[kw].([]any)
			for i, s := range a {
				if err := fn(s, kwPtr+"/"+itoa(i), kw); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func itoa(i int) string { return fmt.Sprint(i) }

// walk checks the schema object v at ptr; resPtr is the pointer of the
// resource (the root or the nearest $id) that v belongs to.
func (c *checker) walk(v any, ptr string, base *url.URL, resPtr string, depth int, at place) error {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil // true/false, or a malformed value the engine's metaschema refuses
	}
	if depth > c.maxDepth {
		return &Error{ptr, fmt.Sprintf("schema nesting deeper than %d levels", c.maxDepth)}
	}
	base, moved, _ := rebase(obj, base)
	if moved {
		resPtr = ptr
	}
	names := make([]string, 0, len(obj))
	for k := range obj {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		kwPtr := ijson.AppendToken(ptr, k)
		if _, known := keywords[k]; !known {
			return &Error{kwPtr, "unknown keyword (JSON Schema 2020-12 keywords and ref only)"}
		}
		switch k {
		case "$schema":
			if s, _ := obj[k].(string); strings.TrimSuffix(s, "#") != Draft {
				return &Error{kwPtr, "$schema must be " + Draft}
			}
		case "$ref", "$dynamicRef":
			if err := c.checkRef(obj[k], kwPtr, base); err != nil {
				return err
			}
		case "ref":
			s, ok := obj[k].(string)
			if !ok || s == "" {
				return &Error{kwPtr, "ref must be a non-empty string naming a model schema"}
			}
			if at.opaque != "" {
				return &Error{kwPtr, "a ref inside " + at.opaque + " can never be resolved"}
			}
			c.report.Refs[location(base, ptr[len(resPtr):])] = s
		case "default":
			switch {
			case at.opaque != "":
				return &Error{kwPtr, "a default inside " + at.opaque + " can never be filled"}
			case at.branch != "":
				return &Error{kwPtr, "a default inside " + at.branch + " can never be filled"}
			case !at.property:
				return &Error{kwPtr, "a default is filled only in a schema under properties"}
			}
			c.report.Defaults++
		}
	}
	if err := strict(obj, ptr); err != nil {
		return err
	}
	return eachSub(obj, ptr, func(sub any, subPtr, kw string) error {
		next := place{opaque: at.opaque, branch: at.branch, property: kw == "properties"}
		if o, ok := opaque[kw]; ok && next.opaque == "" {
			next.opaque = o
		}
		if (kw == "anyOf" || kw == "oneOf") && next.branch == "" {
			next.branch = opaqueName(kw)
		}
		return c.walk(sub, subPtr, base, resPtr, depth+1, next)
	})
}

func opaqueName(kw string) string { return "a branch of " + kw }

// location writes a schema location the way the engine does: the resource
// URL, "#", and the pointer with each token path-escaped.
func location(base *url.URL, ptr string) string {
	var b strings.Builder
	b.WriteString(stripFragment(base))
	b.WriteByte('#')
	for i, tok := range strings.Split(ptr, "/") {
		if i > 0 {
			b.WriteByte('/')
		}
		b.WriteString(url.PathEscape(tok))
	}
	return b.String()
}

func (c *checker) checkRef(v any, ptr string, base *url.URL) error {
	s, ok := v.(string)
	if !ok {
		return &Error{ptr, "must be a string"}
	}
	u, err := url.Parse(s)
	if err != nil {
		return &Error{ptr, "not a URI reference"}
	}
	target := base.ResolveReference(u)
	res, inside := c.ids[stripFragment(target)]
	if !inside {
		return &Error{ptr, "a reference must stay inside the schema (no file, URL or relative document)"}
	}
	if frag := target.Fragment; strings.HasPrefix(frag, "/") && !c.exists(res+frag) {
		return &Error{ptr, "the reference points at nothing in the schema"}
	}
	return nil
}

// exists reports whether the JSON Pointer ptr names a value of the
// document.
func (c *checker) exists(ptr string) bool {
	var v any = c.doc
	for _, tok := range strings.Split(ptr, "/")[1:] {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		switch t := v.(type) {
		case map[string]any:
			next, ok := t[tok]
			if !ok {
				return false
			}
			v = next
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(t) {
				return false
			}
			v = t[i]
		default:
			return false
		}
	}
	return true
}

// strict refuses keyword combinations that do nothing, as Ajv's strict
// mode does: they are almost always a mistake in the schema.
func strict(obj map[string]any, ptr string) error {
	_, hasIf := obj["if"]
	_, hasThen := obj["then"]
	_, hasElse := obj["else"]
	_, hasContains := obj["contains"]
	_, hasMax := obj["maxContains"]
	switch {
	case hasThen && !hasIf:
		return &Error{ptr + "/then", "then without if does nothing"}
	case hasElse && !hasIf:
		return &Error{ptr + "/else", "else without if does nothing"}
	case hasIf && !hasThen && !hasElse:
		return &Error{ptr + "/if", "if without then or else does nothing"}
	}
	for _, kw := range []string{"minContains", "maxContains"} {
		if _, ok := obj[kw]; ok && !hasContains {
			return &Error{ptr + "/" + kw, kw + " without contains does nothing"}
		}
	}
	if n, ok := obj["minContains"].(json.Number); ok && string(n) == "0" && !hasMax {
		return &Error{ptr + "/minContains", "minContains 0 without maxContains makes contains void"}
	}
	if e, ok := obj["enum"].([]any); ok && len(e) == 0 {
		return &Error{ptr + "/enum", "an empty enum accepts nothing"}
	}
	return nil
}
