package schema

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
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
	Keyword string // the keyword at fault; see KeywordOf
	Reason  string
}

// errorAt is an Error whose keyword is the last keyword of ptr.
func errorAt(ptr, reason string) *Error {
	return &Error{Pointer: ptr, Keyword: KeywordOf(ptr), Reason: reason}
}

// KeywordOf returns the last token of the schema pointer ptr that stands
// where a keyword stands (not a property name under properties, an index
// of allOf, or a token inside a keyword's value such as enum's): the
// keyword at fault when ptr points at a keyword, a subschema or a value
// inside a keyword. It returns "" for the root.
func KeywordOf(ptr string) string {
	if ptr == "" {
		return ""
	}
	kw := ""
	expect := single // what the next token is: a keyword (single), a name or index (map/arr), or inside a value (leaf)
	for _, tok := range strings.Split(ptr, "/")[1:] {
		tok = unescapeToken(tok)
		switch expect {
		case single:
			kw = tok
			sh, known := keywords[tok]
			if !known {
				sh = leaf
			}
			switch sh {
			case single:
				expect = single
			case schemaMap, schemaArr:
				expect = schemaMap
			default:
				expect = leaf
			}
		case schemaMap:
			expect = single
		}
	}
	return kw
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
	// References counts its $ref keywords: without one, no subschema is
	// shared, and none can apply twice or recurse.
	References int
	// Reached maps the location of each schema object (as Refs) that has a
	// default but is not directly under properties to the pointer of that
	// default: Build accepts it only if a $ref under properties leads to it.
	Reached map[string]string
}

// Check walks a schema document (as decoded by ijson: map[string]any,
// []any, json.Number...) whose base URI is base, and refuses what the
// registry does not accept:
//   - a root that is not an object schema with "type": "object";
//   - a keyword outside JSON Schema 2020-12 and ref, at any depth;
//   - a $schema other than 2020-12;
//   - a $ref that leaves the document, and an $id that repeats another
//     or claims a json-schema.org address;
//   - a $dynamicRef, whose target is only known while validating;
//   - a ref that is not a non-empty string, or that sits where no value
//     of the parameters can reach it;
//   - a default at the root or where it can never be filled (one outside
//     properties is reported in Report.Reached, for Build to judge);
//   - nesting deeper than maxDepth schema objects.
//
// objectRoot false lifts the first rule (for test suites whose schemas
// judge any value).
func Check(doc any, base string, maxDepth int, objectRoot bool) (*Report, error) {
	root, ok := doc.(map[string]any)
	if !ok {
		return nil, &Error{"", "type", "the parameters schema must be an object"}
	}
	if objectRoot {
		if t, ok := root["type"]; !ok {
			return nil, &Error{"/type", "type", `the root must declare "type": "object"`}
		} else if s, ok := t.(string); !ok || s != "object" {
			return nil, &Error{"/type", "type", `the root must be "type": "object"`}
		}
	}
	if _, ok := root["default"]; ok {
		return nil, &Error{"/default", "default", "a default at the root can never be filled"}
	}
	c := &checker{doc: root, maxDepth: maxDepth, ids: map[string]string{}, report: Report{Refs: map[string]string{}, Reached: map[string]string{}}}
	baseURL, err := url.Parse(base)
	if err != nil {
		return nil, &Error{"", "$id", "invalid base URI"}
	}
	c.ids[stripFragment(baseURL)] = ""
	if err := c.walk(root, baseURL, 0, 0, place{}); err != nil {
		return nil, err
	}
	// References are checked once every resource of the document is
	// known, whatever their order.
	for _, r := range c.refs {
		if err := c.checkRef(r); err != nil {
			return nil, err
		}
	}
	c.report.References = len(c.refs)
	return &c.report, nil
}

// pendingRef is a $ref met by the walk.
type pendingRef struct {
	value any
	base  *url.URL
	ptr   string
}

// checker walks a document keeping the reference tokens of the current
// schema object on a stack, so that a pointer is written only when an
// error or a ref needs one.
type checker struct {
	doc      map[string]any
	maxDepth int
	ids      map[string]string // resource URL (no fragment) -> pointer of its $id
	report   Report
	toks     []string
	refs     []pendingRef
}

// at returns the pointer of the current schema object, extended by more.
func (c *checker) at(more ...string) string {
	return ijson.Pointer(append(c.toks[:len(c.toks):len(c.toks)], more...))
}

func (c *checker) fail(reason string, more ...string) error {
	return errorAt(c.at(more...), reason)
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

// resource records the $id of obj, if any, and returns obj's base URI.
func (c *checker) resource(obj map[string]any, base *url.URL) (*url.URL, bool, error) {
	b, has, err := rebase(obj, base)
	if err != nil {
		return nil, false, c.fail("$id is not a URI reference", "$id")
	}
	if !has {
		return base, false, nil
	}
	key := stripFragment(b)
	if strings.HasPrefix(key, "https://json-schema.org/") || strings.HasPrefix(key, "http://json-schema.org/") {
		return nil, false, c.fail("$id must not claim a json-schema.org address", "$id")
	}
	if prev, dup := c.ids[key]; dup && len(c.toks) > 0 {
		return nil, false, c.fail("$id repeats the resource at "+orRoot(prev), "$id")
	}
	c.ids[key] = c.at()
	return b, true, nil
}

func orRoot(p string) string {
	if p == "" {
		return "the root"
	}
	return p
}

// subKeywords lists the keywords holding subschemas, sorted, so that a
// walk visits them in a stable order without sorting each object.
var subKeywords = func() []string {
	var out []string
	for k, sh := range keywords {
		if sh != leaf {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}()

// eachSub calls fn for every subschema of obj, in a stable order, with
// the tokens of its location pushed on the stack and the keyword holding
// it.
func (c *checker) eachSub(obj map[string]any, fn func(sub any, kw string) error) error {
	for _, kw := range subKeywords {
		v, ok := obj[kw]
		if !ok {
			continue
		}
		c.toks = append(c.toks, kw)
		var err error
		switch keywords[kw] {
		case single:
			err = fn(v, kw)
		case schemaMap:
			m, _ := v.(map[string]any)
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				c.toks = append(c.toks, k)
				err = fn(m[k], kw)
				c.toks = c.toks[:len(c.toks)-1]
				if err != nil {
					break
				}
			}
		case schemaArr:
			a, _ := v.([]any)
			for i, s := range a {
				c.toks = append(c.toks, strconv.Itoa(i))
				err = fn(s, kw)
				c.toks = c.toks[:len(c.toks)-1]
				if err != nil {
					break
				}
			}
		}
		c.toks = c.toks[:len(c.toks)-1]
		if err != nil {
			return err
		}
	}
	return nil
}

// walk checks the schema object v at nesting depth depth; resDepth is the
// number of tokens of the resource (the root or the nearest $id) that v
// belongs to.
func (c *checker) walk(v any, base *url.URL, depth, resDepth int, at place) error {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil // true/false, or a malformed value the engine's metaschema refuses
	}
	if depth > c.maxDepth {
		return c.fail(fmt.Sprintf("schema nesting deeper than %d levels", c.maxDepth))
	}
	base, moved, err := c.resource(obj, base)
	if err != nil {
		return err
	}
	if moved {
		resDepth = len(c.toks)
	}
	// Of several faults, report the one of the first keyword in byte
	// order, whatever the map's order.
	var first error
	firstKw := ""
	for k, kv := range obj {
		if first != nil && k > firstKw {
			continue
		}
		if err := c.keyword(k, kv, base, resDepth, at); err != nil {
			first, firstKw = err, k
		}
	}
	if first != nil {
		return first
	}
	if err := strict(obj, c.at()); err != nil {
		return err
	}
	return c.eachSub(obj, func(sub any, kw string) error {
		next := place{opaque: at.opaque, branch: at.branch, property: kw == "properties"}
		if o, ok := opaque[kw]; ok && next.opaque == "" {
			next.opaque = o
		}
		if (kw == "anyOf" || kw == "oneOf") && next.branch == "" {
			next.branch = opaqueName(kw)
		}
		return c.walk(sub, base, depth+1, resDepth, next)
	})
}

// keyword checks one keyword of the current schema object.
func (c *checker) keyword(k string, v any, base *url.URL, resDepth int, at place) error {
	if _, known := keywords[k]; !known {
		return c.fail("unknown keyword (JSON Schema 2020-12 keywords and ref only)", k)
	}
	switch k {
	case "$schema":
		if s, _ := v.(string); strings.TrimSuffix(s, "#") != Draft {
			return c.fail("$schema must be "+Draft, k)
		}
	case "$ref":
		c.refs = append(c.refs, pendingRef{v, base, c.at(k)})
	case "pattern":
		// Checked here rather than by the engine, whose metaschema check
		// of a patternProperties name loses the pointer.
		if p, ok := v.(string); ok {
			if _, err := regexp.Compile(p); err != nil {
				return c.fail(reRefusal, k)
			}
		}
	case "patternProperties":
		if m, ok := v.(map[string]any); ok {
			for _, p := range slices.Sorted(maps.Keys(m)) {
				if _, err := regexp.Compile(p); err != nil {
					return &Error{c.at(k, p), k, reRefusal}
				}
			}
		}
	case "$dynamicRef":
		// Its target is chosen while validating, from the dynamic scope:
		// the plans of defaults and refs and the cost analysis, built from
		// the schema at registration, could not follow it.
		return c.fail("$dynamicRef is not supported (its target is only known while validating); use $ref", k)
	case "ref":
		s, ok := v.(string)
		if !ok || s == "" {
			return c.fail("ref must be a non-empty string naming a model schema", k)
		}
		if at.opaque != "" {
			return c.fail("a ref inside "+at.opaque+" can never be resolved", k)
		}
		c.report.Refs[location(base, c.toks[resDepth:])] = s
	case "default":
		switch {
		case at.opaque != "":
			return c.fail("a default inside "+at.opaque+" can never be filled", k)
		case at.branch != "":
			return c.fail("a default inside "+at.branch+" can never be filled", k)
		case !at.property:
			// Filled only if a $ref under properties leads here, which
			// only the compiled schema tells.
			if len(c.toks) == 0 {
				return c.fail("a default at the root can never be filled", k)
			}
			c.report.Reached[location(base, c.toks[resDepth:])] = c.at(k)
		}
		c.report.Defaults++
	}
	return nil
}

// reRefusal says why a pattern is refused.
const reRefusal = "the pattern is not RE2 syntax (Go regexp: no lookaround, no back-references)"

func opaqueName(kw string) string { return "a branch of " + kw }

// location writes a schema location the way the engine does: the resource
// URL, "#", and the pointer with each token escaped (RFC 6901) then
// path-escaped.
func location(base *url.URL, toks []string) string {
	var b strings.Builder
	b.WriteString(stripFragment(base))
	b.WriteByte('#')
	for _, tok := range toks {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(escapeToken(tok)))
	}
	return b.String()
}

func (c *checker) checkRef(r pendingRef) error {
	s, ok := r.value.(string)
	if !ok {
		return &Error{r.ptr, "$ref", "must be a string"}
	}
	u, err := url.Parse(s)
	if err != nil {
		return &Error{r.ptr, "$ref", "not a URI reference"}
	}
	target := r.base.ResolveReference(u)
	res, inside := c.ids[stripFragment(target)]
	if !inside {
		return &Error{r.ptr, "$ref", "a reference must stay inside the schema (no file, URL or relative document)"}
	}
	if frag := target.Fragment; strings.HasPrefix(frag, "/") && !c.exists(res+frag) {
		return &Error{r.ptr, "$ref", "the reference points at nothing in the schema"}
	}
	return nil
}

// exists reports whether the JSON Pointer ptr names a value of the
// document.
func (c *checker) exists(ptr string) bool {
	var v any = c.doc
	for _, tok := range strings.Split(ptr, "/")[1:] {
		tok = unescapeToken(tok)
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
		return errorAt(ptr+"/then", "then without if does nothing")
	case hasElse && !hasIf:
		return errorAt(ptr+"/else", "else without if does nothing")
	case hasIf && !hasThen && !hasElse:
		return errorAt(ptr+"/if", "if without then or else does nothing")
	}
	for _, kw := range []string{"minContains", "maxContains"} {
		if _, ok := obj[kw]; ok && !hasContains {
			return &Error{ptr + "/" + kw, kw, kw + " without contains does nothing"}
		}
	}
	if n, ok := obj["minContains"].(json.Number); ok && string(n) == "0" && !hasMax {
		return &Error{ptr + "/minContains", "minContains", "minContains 0 without maxContains makes contains void"}
	}
	if e, ok := obj["enum"].([]any); ok && len(e) == 0 {
		return errorAt(ptr+"/enum", "an empty enum accepts nothing")
	}
	return nil
}

// escapeToken escapes a reference token (RFC 6901 §3).
func escapeToken(t string) string {
	if !strings.ContainsAny(t, "~/") {
		return t
	}
	return strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")
}

// unescapeToken undoes escapeToken (RFC 6901 §4: ~1 first, then ~0).
func unescapeToken(t string) string {
	if !strings.Contains(t, "~") {
		return t
	}
	return strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
}
