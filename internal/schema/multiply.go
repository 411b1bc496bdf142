package schema

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Multiplies refuses a schema on which the engine's work for one value
// grows faster than the schema and the value: a value reached by many
// in-place paths (a chain of $defs that each apply the next one twice),
// or a recursion that applies more subschemas to a child than to its
// parent (node = allOf[base, ext] where base and ext both recurse on the
// same member), which costs 2^depth. jsonschema v6 evaluates each path
// separately and cannot be interrupted, so this is refused at
// registration.
//
// The analysis is over the compiled schema graph. A member is a label:
// a property name, "*" for names no property declares
// (additionalProperties, unevaluatedProperties), one label per
// patternProperties pattern, "#i" for prefixItems entry i and "[]" for the
// other items (items, contains, unevaluatedItems). Within a recursion
// (a strongly connected set of schemas reached by members), each schema
// may lead to at most one schema of the recursion per label.
func Multiplies(root *jsonschema.Schema) error {
	if err := inPlaceCycle(root); err != nil {
		return err
	}
	m := &multiplier{
		count: map[*jsonschema.Schema]int{},
		desc:  map[*jsonschema.Schema]map[edge]int{},
		on:    map[*jsonschema.Schema]bool{},
	}
	entries := []*jsonschema.Schema{root}
	seen := map[*jsonschema.Schema]bool{root: true}
	adj := map[*jsonschema.Schema]map[edge]int{}
	// Of several faults, the one at the first pointer in byte order is
	// reported, whatever the order of Go's maps.
	var faults []*Error
	for i := 0; i < len(entries); i++ {
		e := entries[i]
		if c := m.inPlace(e); c > maxInPlace {
			faults = append(faults, &Error{fragment(e.Location), "$ref", "subschemas apply to one value by too many paths (more than " + strconv.Itoa(maxInPlace) + ")"})
			continue
		}
		adj[e] = m.descents(e)
		for k := range adj[e] {
			if !seen[k.to] {
				seen[k.to] = true
				entries = append(entries, k.to)
			}
		}
	}
	for _, scc := range components(entries, adj) {
		in := map[*jsonschema.Schema]bool{}
		for _, s := range scc {
			in[s] = true
		}
		for _, s := range scc {
			per := map[string]int{}
			for k, n := range adj[s] {
				if in[k.to] {
					per[k.label] += n
				}
			}
			for _, label := range slices.Sorted(maps.Keys(per)) {
				if n := per[label]; n > 1 {
					faults = append(faults, &Error{fragment(s.Location), "$ref", "a recursion applies " + strconv.Itoa(n) + " subschemas to the member " + strconv.Quote(label) + " at each level, so its cost doubles with every level of the parameters"})
					break
				}
			}
		}
	}
	if len(faults) == 0 {
		return nil
	}
	return slices.MinFunc(faults, func(a, b *Error) int {
		return cmp.Or(strings.Compare(a.Pointer, b.Pointer), strings.Compare(a.Reason, b.Reason))
	})
}

// maxInPlace bounds the subschemas applying to one value through in-place
// keywords, counted by path.
const maxInPlace = 10000

// edge is a member step: the label of the member and the schema applied to
// its value.
type edge struct {
	label string
	to    *jsonschema.Schema
}

type multiplier struct {
	count map[*jsonschema.Schema]int          // in-place evaluations, by path, saturated
	desc  map[*jsonschema.Schema]map[edge]int // member steps of the in-place closure, counted by path (at most 2)
	on    map[*jsonschema.Schema]bool         // on the current in-place path: a cycle the engine refuses itself
}

// inPlace counts, by path, the schemas evaluated for one value when s is.
func (m *multiplier) inPlace(s *jsonschema.Schema) int {
	if c, ok := m.count[s]; ok {
		return c
	}
	if m.on[s] {
		return 0
	}
	m.on[s] = true
	c := 1
	eachChild(s, func(k child) {
		if k.sameValue && c <= maxInPlace {
			c = min(c+m.inPlace(k.s), maxInPlace+1)
		}
	})
	m.on[s] = false
	m.count[s] = c
	return c
}

// descents counts the member steps reachable from s through in-place
// keywords, by path, saturated at 2.
func (m *multiplier) descents(s *jsonschema.Schema) map[edge]int {
	if d, ok := m.desc[s]; ok {
		return d
	}
	if m.on[s] {
		return nil
	}
	m.on[s] = true
	d := map[edge]int{}
	add := func(label string, to *jsonschema.Schema, n int) {
		if to != nil && to.Bool == nil {
			d[edge{label, to}] = min(d[edge{label, to}]+n, 2)
		}
	}
	eachChild(s, func(k child) {
		switch {
		case k.sameValue:
			for e, n := range m.descents(k.s) {
				add(e.label, e.to, n)
			}
		case k.member != "": // property names are strings: no recursion
			add(k.member, k.s, 1)
		}
	})
	m.on[s] = false
	m.desc[s] = d
	return d
}

// components returns the strongly connected components of the member
// graph that hold a cycle (Tarjan's algorithm).
func components(nodes []*jsonschema.Schema, adj map[*jsonschema.Schema]map[edge]int) [][]*jsonschema.Schema {
	index := map[*jsonschema.Schema]int{}
	low := map[*jsonschema.Schema]int{}
	onStack := map[*jsonschema.Schema]bool{}
	var stack []*jsonschema.Schema
	var out [][]*jsonschema.Schema
	next := 0
	var visit func(v *jsonschema.Schema)
	visit = func(v *jsonschema.Schema) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		self := false
		for e := range adj[v] {
			w := e.to
			if w == v {
				self = true
			}
			if _, seen := index[w]; !seen {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			var scc []*jsonschema.Schema
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				scc = append(scc, w)
				if w == v {
					break
				}
			}
			if len(scc) > 1 || self {
				out = append(out, scc)
			}
		}
	}
	for _, v := range nodes {
		if _, seen := index[v]; !seen {
			visit(v)
		}
	}
	return out
}

// inPlaceCycle refuses subschemas that apply to one value through a cycle
// of in-place keywords ($ref, allOf, anyOf, oneOf, not, if, then, else,
// dependentSchemas) without moving into a member or entry: validating
// such a value never ends (JSON Schema 2020-12 core §9.4.1), and the
// engine refuses every such call. Of several cycles, the one holding the
// first pointer in byte order is reported, at that pointer.
func inPlaceCycle(root *jsonschema.Schema) error {
	all := []*jsonschema.Schema{root}
	seen := map[*jsonschema.Schema]bool{root: true}
	adj := map[*jsonschema.Schema]map[edge]int{}
	for i := 0; i < len(all); i++ {
		s := all[i]
		eachChild(s, func(c child) {
			if c.sameValue {
				if adj[s] == nil {
					adj[s] = map[edge]int{}
				}
				adj[s][edge{to: c.s}]++
			}
			if !seen[c.s] {
				seen[c.s] = true
				all = append(all, c.s)
			}
		})
	}
	var at []string
	for _, scc := range components(all, adj) {
		for _, s := range scc {
			at = append(at, fragment(s.Location))
		}
	}
	if len(at) == 0 {
		return nil
	}
	return &Error{slices.Min(at), "$ref", "the schema applies itself to the same value without end (through $ref and in-place keywords, without moving into a member or entry)"}
}
