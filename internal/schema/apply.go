package schema

import (
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/actionreg/actions/internal/ijson"
)

// Fill sets, in place, every absent property that has a default, wherever
// the object holding it is present: under properties, through $ref and
// allOf, in the then or else that applies, in a dependentSchemas whose
// property is present, in the values of additionalProperties and
// patternProperties, and in the entries of arrays. A property's default
// is the one of its schema, or else of the first schema along its chain of
// $ref that has one. A property filled with a default object then gets
// that object's own defaults. A present null is
// kept. Defaults are deep-copied, so v owns everything it holds.
//
// v must hold only JSON's Go types (map[string]any, []any, string, bool,
// nil, json.Number). budget bounds the weight of what is filled (a
// string counts its length, a member its name's length, any other value
// 8): past it, Fill stops and returns false, so that a default repeated in
// every entry of a large array cannot multiply a call's memory. A budget
// of 0 or less means no bound.
func (p *Plan) Fill(v any, budget int) bool {
	if !p.hasDefaults {
		return true
	}
	f := filler{p: p, budget: budget}
	f.run(v, p.root)
	return !f.over
}

// run fills v with n. When an if decides what is filled, the walk is
// repeated while it adds members: an if sees the value before the
// defaults of its own object and of later subschemas, and a default filled
// after it may change its answer. Filling is then idempotent: the filled
// value, checked again (as a replay does), gains nothing more. Filling
// only adds members, so the rounds end.
func (f *filler) run(v any, n *node) {
	for {
		if f.p.memo {
			f.seen = map[visit]bool{}
		}
		before := f.spent
		f.fill(v, n, 0)
		if f.over || !f.p.conditional || f.spent == before {
			return
		}
	}
}

// fillDependent fills the dependentSchemas whose property v holds, again
// and again while a default of one adds the property of another: the
// order in which the schema lists them does not matter.
func (f *filler) fillDependent(v map[string]any, n *node, hops int) {
	if len(n.dependent) == 0 {
		return
	}
	done := make([]bool, len(n.dependent))
	for again := true; again; {
		again = false
		for i, c := range n.dependent {
			if _, ok := v[c.name]; ok && !done[i] {
				done[i], again = true, true
				f.fill(v, c.n, hops+1)
			}
		}
	}
}

// visit is a node applied to a value: an object or array by identity, or
// a scalar by its place, a member or entry (key, index) of the container
// at (place set, so that entry 0 or member "" is not taken for the
// container itself).
type visit struct {
	n     *node
	at    unsafe.Pointer
	key   string
	index int
	place bool
}

// identity returns what tells one object or array from another.
func identity(v any) unsafe.Pointer {
	switch x := v.(type) {
	case map[string]any:
		return reflect.ValueOf(x).UnsafePointer()
	case []any:
		return unsafe.Pointer(unsafe.SliceData(x))
	}
	return nil
}

type filler struct {
	p      *Plan
	seen   map[visit]bool // nil when the plan needs no memo
	budget int            // what may still be filled, if positive
	spent  int
	over   bool

	// Set only while Build tries the defaults together (see contradict):
	// every fill is logged with the member's location, members are walked
	// in name order, and past limit fills (if positive) the walk stops.
	log   *fillLog
	path  []string
	limit int
}

// fillLog is what a logged fill did, in order.
type fillLog struct {
	fills   []filled
	endless bool // a default was met inside its own value
}

type filled struct {
	path string             // the member's pointer
	from *jsonschema.Schema // the schema whose default filled it
}

// child walks into a member or entry of the current value.
func (f *filler) child(v any, n *node, tok string) {
	if f.log == nil {
		f.fill(v, n, 0)
		return
	}
	f.path = append(f.path, tok)
	f.fill(v, n, 0)
	f.path = f.path[:len(f.path)-1]
}

// fill walks v with n; hops counts the schema edges taken without moving
// into v, a backstop for a $ref cycle that never reaches a value.
func (f *filler) fill(v any, n *node, hops int) {
	p := f.p
	if n == nil || !n.fills || hops > p.maxHops || f.over {
		return
	}
	id := identity(v)
	if id == nil {
		return // defaults fill objects, and scalars hold none
	}
	if f.seen != nil {
		k := visit{n: n, at: id}
		if f.seen[k] {
			return
		}
		f.seen[k] = true
	}
	// Ajv's order: the in-place applicators first, so their defaults win
	// and if sees the value before this node's own defaults; then this
	// node's defaults, its members and entries, then dependentSchemas.
	f.fill(v, n.target, hops+1)
	for _, c := range n.allOf {
		f.fill(v, c, hops+1)
	}
	if n.then != nil || n.els != nil {
		if n.sch.If.Validate(v) == nil {
			f.fill(v, n.then, hops+1)
		} else {
			f.fill(v, n.els, hops+1)
		}
	}
	switch v := v.(type) {
	case map[string]any:
		if !f.fillDefaults(v, n) {
			return
		}
		for _, c := range n.props {
			if pv, ok := v[c.name]; ok {
				f.child(pv, c.n, c.name)
			}
		}
		if len(n.patterns) > 0 || n.additional != nil {
			if f.log == nil {
				for k, pv := range v {
					f.member(n, k, pv)
				}
			} else {
				for _, k := range slices.Sorted(maps.Keys(v)) {
					f.member(n, k, v[k])
				}
			}
		}
		f.fillDependent(v, n, hops)
	case []any:
		for i, e := range v {
			if i < len(n.prefix) {
				f.child(e, n.prefix[i], strconv.Itoa(i))
			} else if i >= len(n.sch.PrefixItems) {
				f.child(e, n.items, strconv.Itoa(i))
			}
		}
	}
}

// fillDefaults fills v's absent members that n gives defaults for. It
// returns false when the fill must stop: a limit is reached, or a
// default would be filled inside itself without end.
func (f *filler) fillDefaults(v map[string]any, n *node) bool {
	for _, d := range n.defaults {
		if _, present := v[d.name]; !present {
			if f.log != nil {
				if f.limit > 0 && len(f.log.fills) >= f.limit {
					f.over = true
					return false
				}
				at := ijson.Pointer(append(f.path[:len(f.path):len(f.path)], d.name))
				for _, r := range f.log.fills {
					// The same default inside itself: it would
					// be filled again at every level, without end.
					if r.from == d.from && strings.HasPrefix(at, r.path+"/") {
						f.over, f.log.endless = true, true
						return false
					}
				}
				f.log.fills = append(f.log.fills, filled{at, d.from})
			}
			if f.spent += d.size; f.budget > 0 && f.spent > f.budget {
				f.over = true
				return false
			}
			v[d.name] = Copy(d.value)
		}
	}
	return true
}

// member fills the member k of an object with the additionalProperties
// and patternProperties subschemas of n that apply to it.
func (f *filler) member(n *node, k string, pv any) {
	if c := n.additional; c != nil && !n.declares(k) {
		f.child(pv, c, k)
	}
	for _, c := range n.patterns {
		if c.re.MatchString(k) {
			f.child(pv, c.n, k)
		}
	}
}

// declares reports whether property k is covered by properties or
// patternProperties, so that additionalProperties does not apply to it.
func (n *node) declares(k string) bool {
	if _, ok := n.sch.Properties[k]; ok {
		return true
	}
	for re := range n.sch.PatternProperties {
		if re.MatchString(k) {
			return true
		}
	}
	return false
}

// RefSite is a string value under a ref: the model schema named, and the
// container holding the value (an object member or an array entry), so
// that the caller can replace the value by the instance's key.
type RefSite struct {
	Schema string
	Value  string
	Object map[string]any // the value is Object[Key], or
	Key    string
	Array  []any // Array[Index]
	Index  int
	Path   []string // tokens of the value's location, from the root
}

// Set replaces the value at the site.
func (s *RefSite) Set(v any) {
	if s.Object != nil {
		// Go's maps turn a full eight-slot map into a table on any
		// assignment, even to a key it holds; deleting first keeps a
		// full small map small.
		delete(s.Object, s.Key)
		s.Object[s.Key] = v
	} else {
		s.Array[s.Index] = v
	}
}

// Refs appends to sites every string value of v that sits under a ref
// whose schema applies to it: a ref in a branch of anyOf or oneOf counts
// only when that branch holds, in the then or else that applies, in a
// triggered dependentSchemas. v must be valid against the schema. A value
// under several applying refs is listed once, for the first. The walk
// stops once sites holds more than max values, so that a caller can tell
// the limit was passed without walking the rest.
func (p *Plan) Refs(v any, sites []RefSite, max int) []RefSite {
	if !p.hasRefs {
		return sites
	}
	w := refWalker{p: p, sites: sites, max: max}
	if p.memo {
		w.visited = map[visit]bool{}
	}
	w.walk(v, p.root, RefSite{}, 0)
	return w.sites
}

type refWalker struct {
	p       *Plan
	sites   []RefSite
	max     int
	path    []string
	visited map[visit]bool // nil when the plan needs no memo
}

// seen reports whether the current path is listed already.
func (w *refWalker) seen() bool {
	for i := range w.sites {
		if slices.Equal(w.sites[i].Path, w.path) {
			return true
		}
	}
	return false
}

func (w *refWalker) walk(v any, n *node, at RefSite, hops int) {
	if n == nil || !n.refs || len(w.sites) > w.max || hops > w.p.maxHops {
		return
	}
	if w.visited != nil {
		k := visit{n: n, at: identity(v)}
		if k.at == nil { // a scalar: known by its place
			k.at, k.key, k.index, k.place = identity(any(at.Object)), at.Key, at.Index, true
			if at.Object == nil {
				k.at = identity(any(at.Array))
			}
		}
		if w.visited[k] {
			return
		}
		w.visited[k] = true
	}
	if s, ok := v.(string); ok && n.ref != "" && len(w.path) > 0 && !w.seen() {
		site := at
		site.Schema, site.Value = n.ref, s
		site.Path = slices.Clone(w.path)
		w.sites = append(w.sites, site)
	}
	switch v := v.(type) {
	case map[string]any:
		for _, c := range n.props {
			if pv, ok := v[c.name]; ok {
				w.child(pv, c.n, RefSite{Object: v, Key: c.name})
			}
		}
		if len(n.patterns) > 0 || n.additional != nil {
			// In name order, so that the resolver sees the same calls in
			// the same order every time.
			for _, k := range slices.Sorted(maps.Keys(v)) {
				pv := v[k]
				if c := n.additional; c != nil && !n.declares(k) {
					w.child(pv, c, RefSite{Object: v, Key: k})
				}
				for _, c := range n.patterns {
					if c.re.MatchString(k) {
						w.child(pv, c.n, RefSite{Object: v, Key: k})
					}
				}
			}
		}
		for _, c := range n.dependent {
			if _, ok := v[c.name]; ok {
				w.walk(v, c.n, at, hops+1)
			}
		}
	case []any:
		for i, e := range v {
			if i < len(n.prefix) {
				w.child(e, n.prefix[i], RefSite{Array: v, Index: i})
			} else if i >= len(n.sch.PrefixItems) {
				w.child(e, n.items, RefSite{Array: v, Index: i})
			}
		}
	}
	w.walkInPlace(v, n, at, hops)
}

// walkInPlace walks v with n's in-place applicators: $ref, allOf, the
// anyOf and oneOf branches v passes, and then or else.
func (w *refWalker) walkInPlace(v any, n *node, at RefSite, hops int) {
	w.walk(v, n.target, at, hops+1)
	for _, c := range n.allOf {
		w.walk(v, c, at, hops+1)
	}
	for i, c := range n.anyOf {
		if c != nil && n.sch.AnyOf[i].Validate(v) == nil {
			w.walk(v, c, at, hops+1)
		}
	}
	for i, c := range n.oneOf {
		if c != nil && n.sch.OneOf[i].Validate(v) == nil {
			w.walk(v, c, at, hops+1)
		}
	}
	if n.then != nil || n.els != nil {
		if n.sch.If.Validate(v) == nil {
			w.walk(v, n.then, at, hops+1)
		} else {
			w.walk(v, n.els, at, hops+1)
		}
	}
}

// child walks into a member or an entry of the current value.
func (w *refWalker) child(v any, n *node, at RefSite) {
	if n == nil || !n.refs {
		return
	}
	tok := at.Key
	if at.Object == nil {
		tok = strconv.Itoa(at.Index)
	}
	w.path = append(w.path, tok)
	w.walk(v, n, at, 0)
	w.path = w.path[:len(w.path)-1]
}
