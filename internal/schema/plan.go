package schema

import (
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Plan is the part of a compiled schema that acts on an instance rather
// than judging it: the defaults to fill and the refs to resolve. It is
// built once from the engine's compiled schema and read by many calls at
// once; it holds only the nodes that lead to a default or a ref.
type Plan struct {
	root        *node
	hasDefaults bool
	hasRefs     bool
	maxHops     int
	// conditional is set when an if decides which defaults are filled:
	// Fill then repeats its walk while it adds members.
	conditional bool
	// entries are the nodes a value is checked against as a whole that
	// fill defaults, for Contradictions.
	entries []*node
	// memo is set when one value may be reached by a node more than once
	// (a $ref, or two subschemas applying in place): the walks then
	// remember what they visited, which keeps diamonds and cycles of
	// subschemas from multiplying the work.
	memo bool
}

type member struct {
	name  string
	value any
	size  int                // the value's weight, as Fill counts it
	from  *jsonschema.Schema // the schema whose default it is
}

type named struct {
	name string
	n    *node
}

type patterned struct {
	re jsonschema.Regexp
	n  *node
}

// node mirrors one compiled schema object. Children that lead to neither a
// default nor a ref are left out once the plan is built.
type node struct {
	sch        *jsonschema.Schema
	defaults   []member // properties whose schema has a default, by name
	ref        string   // the model schema named by ref, if any
	props      []named
	patterns   []patterned
	additional *node
	prefix     []*node
	items      *node
	target     *node // $ref
	allOf      []*node
	anyOf      []*node // resolved for refs only, when the branch holds
	oneOf      []*node
	then, els  *node // chosen by sch.If
	dependent  []named

	fills, refs bool // leads to a default / a ref
}

// Build makes the plan of a compiled schema from what Check reported. It
// refuses a default that, once its own nested defaults are filled, breaks
// the subschema that declares it. A schema with neither defaults nor refs
// gets an empty plan at no cost.
//
// budget bounds, in Fill's weight, what the defaults may fill into one
// value at registration: defaults that fill without end (a default object
// whose schema recurses into another default object) are refused.
func Build(root *jsonschema.Schema, r *Report, budget int) (*Plan, error) {
	if r.Defaults == 0 && len(r.Refs) == 0 {
		return &Plan{}, nil
	}
	if r.Defaults > 0 {
		if err := tried(root, false, map[triedKey]bool{}); err != nil {
			return nil, err
		}
	}
	refs := r.Refs
	b := &builder{nodes: map[*jsonschema.Schema]*node{}, refs: refs, used: map[string]bool{}}
	p := &Plan{root: b.node(root), maxHops: len(b.nodes) + 1}
	// A node leads somewhere when one of its children does; $ref cycles
	// make this a fixpoint. b.order lists parents before their children,
	// so walking it backwards settles all but cycles in one pass.
	for changed := true; changed; {
		changed = false
		for i := len(b.order) - 1; i >= 0; i-- {
			n := b.order[i]
			f, r := n.leads()
			if f != n.fills || r != n.refs {
				n.fills, n.refs, changed = f, r, true
			}
		}
	}
	p.hasDefaults, p.hasRefs = p.root != nil && p.root.fills, p.root != nil && p.root.refs
	if err := b.unreached(r.Reached); err != nil {
		return nil, err
	}
	for _, n := range b.order {
		for _, d := range n.defaults {
			ps := n.sch.Properties[d.name]
			v := Copy(d.value)
			f := &filler{p: p, seen: map[visit]bool{}, budget: budget, log: &fillLog{}}
			f.fill(v, b.nodes[ps], 0)
			// (Build has not pruned yet, and p.conditional is not yet
			// known: Contradictions tries the defaults again with the
			// rounds of Fill.)
			if f.log.endless {
				return nil, &Error{fragment(d.from.Location) + "/default", "default", "the default fills without end: its own nested defaults hold it again"}
			}
			if f.over {
				return nil, &Error{fragment(d.from.Location) + "/default", "default", "with its own nested defaults, the default passes " + strconv.Itoa(budget) + " bytes"}
			}
			if ps.Validate(v) != nil {
				return nil, &Error{Pointer: fragment(d.from.Location) + "/default", Keyword: "default", Reason: "the default breaks its own schema"}
			}
		}
	}
	if p.hasDefaults {
		p.entries = b.entries()
	}
	for _, n := range b.order {
		n.prune()
		if n.target != nil || n.inPlace() > 1 {
			p.memo = true
		}
		if n.then != nil || n.els != nil {
			p.conditional = true
		}
	}
	return p, nil
}

// fragment returns the JSON Pointer of a schema location.
func fragment(loc string) string {
	_, frag, _ := strings.Cut(loc, "#")
	if p, err := url.PathUnescape(frag); err == nil {
		return p
	}
	return frag
}

type builder struct {
	nodes map[*jsonschema.Schema]*node
	order []*node
	refs  map[string]string
	used  map[string]bool // locations of the schemas whose default is filled
}

// defaultOf returns the schema whose default a property with schema ps
// gets: ps itself, or the first along its chain of $ref that has one (a
// default beside a $ref wins over the target's). nil if none has.
func defaultOf(ps *jsonschema.Schema) *jsonschema.Schema {
	seen := map[*jsonschema.Schema]bool{}
	for s := ps; s != nil && !seen[s]; s = s.Ref {
		if s.Default != nil {
			return s
		}
		seen[s] = true
	}
	return nil
}

// unreached refuses a default outside properties (reached maps its
// schema's location to its pointer) that no property gets through $ref:
// it could never be filled. Of several, the first pointer in byte order.
func (b *builder) unreached(reached map[string]string) error {
	var ptrs []string
	for loc, ptr := range reached {
		if !b.used[loc] {
			ptrs = append(ptrs, ptr)
		}
	}
	if len(ptrs) == 0 {
		return nil
	}
	return &Error{slices.Min(ptrs), "default", "a default is filled only in a schema under properties, or in one that a $ref there leads to with no default beside it"}
}

func (b *builder) node(s *jsonschema.Schema) *node {
	if s == nil || s.Bool != nil {
		return nil
	}
	if n, ok := b.nodes[s]; ok {
		return n
	}
	n := &node{sch: s, ref: b.refs[s.Location]}
	b.nodes[s] = n
	b.order = append(b.order, n)
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		ps := s.Properties[name]
		if from := defaultOf(ps); from != nil {
			n.defaults = append(n.defaults, member{name, *from.Default, len(name) + weight(*from.Default), from})
			b.used[from.Location] = true
		}
		if c := b.node(ps); c != nil {
			n.props = append(n.props, named{name, c})
		}
	}
	for re, ps := range s.PatternProperties {
		if c := b.node(ps); c != nil {
			n.patterns = append(n.patterns, patterned{re, c})
		}
	}
	sort.Slice(n.patterns, func(i, j int) bool { return n.patterns[i].re.String() < n.patterns[j].re.String() })
	if ap, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
		n.additional = b.node(ap)
	}
	for _, ps := range s.PrefixItems {
		n.prefix = append(n.prefix, b.node(ps))
	}
	n.items = b.node(s.Items2020)
	n.target = b.node(s.Ref)
	for _, ps := range s.AllOf {
		n.allOf = append(n.allOf, b.node(ps))
	}
	for _, ps := range s.AnyOf {
		n.anyOf = append(n.anyOf, b.node(ps))
	}
	for _, ps := range s.OneOf {
		n.oneOf = append(n.oneOf, b.node(ps))
	}
	if s.If != nil {
		n.then, n.els = b.node(s.Then), b.node(s.Else)
	}
	deps := make([]string, 0, len(s.DependentSchemas))
	for name := range s.DependentSchemas {
		deps = append(deps, name)
	}
	sort.Strings(deps)
	for _, name := range deps {
		if c := b.node(s.DependentSchemas[name]); c != nil {
			n.dependent = append(n.dependent, named{name, c})
		}
	}
	return n
}

// inPlace counts the subschemas that apply to the same value as n.
func (n *node) inPlace() int {
	c := len(n.allOf) + len(n.anyOf) + len(n.oneOf) + len(n.dependent)
	if n.target != nil {
		c++
	}
	if n.then != nil || n.els != nil {
		c++
	}
	return c
}

// leads reports whether n fills a default or resolves a ref, itself or
// through a child. anyOf and oneOf branches never fill (Check refuses
// defaults there) but may resolve.
func (n *node) leads() (fills, refs bool) {
	fills, refs = len(n.defaults) > 0, n.ref != ""
	see := func(c *node, mayFill bool) {
		if c != nil {
			fills = fills || (mayFill && c.fills)
			refs = refs || c.refs
		}
	}
	for _, c := range n.props {
		see(c.n, true)
	}
	for _, c := range n.patterns {
		see(c.n, true)
	}
	see(n.additional, true)
	for _, c := range n.prefix {
		see(c, true)
	}
	see(n.items, true)
	see(n.target, true)
	for _, c := range n.allOf {
		see(c, true)
	}
	for _, c := range n.anyOf {
		see(c, false)
	}
	for _, c := range n.oneOf {
		see(c, false)
	}
	see(n.then, true)
	see(n.els, true)
	for _, c := range n.dependent {
		see(c.n, true)
	}
	return fills, refs
}

// prune drops children that lead nowhere, so that a call walks only what
// matters.
func (n *node) prune() {
	keep := func(c *node) *node {
		if c == nil || (!c.fills && !c.refs) {
			return nil
		}
		return c
	}
	n.props = keepNamed(n.props, keep)
	n.dependent = keepNamed(n.dependent, keep)
	n.patterns = keepKept(n.patterns, func(c patterned) bool { return keep(c.n) != nil })
	n.additional, n.items, n.target = keep(n.additional), keep(n.items), keep(n.target)
	n.then, n.els = keep(n.then), keep(n.els)
	for i := range n.prefix {
		n.prefix[i] = keep(n.prefix[i])
	}
	n.allOf = keepNodes(n.allOf, keep)
	anyRefs := false
	for _, c := range n.anyOf {
		anyRefs = anyRefs || (c != nil && c.refs)
	}
	if !anyRefs {
		n.anyOf = nil
	}
	oneRefs := false
	for _, c := range n.oneOf {
		oneRefs = oneRefs || (c != nil && c.refs)
	}
	if !oneRefs {
		n.oneOf = nil
	}
}

func keepNamed(cs []named, keep func(*node) *node) []named {
	return keepKept(cs, func(c named) bool { return keep(c.n) != nil })
}

func keepNodes(cs []*node, keep func(*node) *node) []*node {
	return keepKept(cs, func(c *node) bool { return keep(c) != nil })
}

// keepKept keeps the elements of cs that kept says, in a slice of their
// own: the nodes dropped must not stay reachable through the old array,
// which a registry would hold for as long as the action is registered.
func keepKept[T any](cs []T, kept func(T) bool) []T {
	var out []T
	for _, c := range cs {
		if kept(c) {
			out = append(out, c)
		}
	}
	return slices.Clip(out)
}

// HasDefaults reports whether any default can be filled.
func (p *Plan) HasDefaults() bool { return p.hasDefaults }

// HasRefs reports whether any ref can be resolved.
func (p *Plan) HasRefs() bool { return p.hasRefs }

type triedKey struct {
	s     *jsonschema.Schema
	tried bool
}

// tried refuses a property default that a subschema whose values are only
// tried (a branch of anyOf or oneOf, not, if, contains, propertyNames,
// unevaluated*) reaches, also through $ref: Check finds those written in
// place, this finds those a $ref brings in. Ajv's strict mode refuses the
// same.
func tried(s *jsonschema.Schema, inTried bool, seen map[triedKey]bool) error {
	if s == nil || seen[triedKey{s, inTried}] {
		return nil
	}
	seen[triedKey{s, inTried}] = true
	if inTried {
		if s.Default != nil {
			// Reached from a tried subschema through $ref.
			return &Error{fragment(s.Location) + "/default", "default", "a default reached from a subschema that is only tried (anyOf, oneOf, not, if, contains, propertyNames) can never be filled"}
		}
		for _, ps := range s.Properties {
			if ps.Default != nil {
				return &Error{fragment(ps.Location) + "/default", "default", "a default reached from a subschema that is only tried (anyOf, oneOf, not, if, contains, propertyNames) can never be filled"}
			}
		}
	}
	var err error
	eachChild(s, func(c child) {
		if err == nil {
			err = tried(c.s, inTried || c.tried, seen)
		}
	})
	return err
}

// weight is what a value counts against Fill's budget: a string its
// length, a member its name's length, any other value 8.
func weight(v any) int {
	switch x := v.(type) {
	case map[string]any:
		n := 8
		for k, e := range x {
			n += len(k) + weight(e)
		}
		return n
	case []any:
		n := 8
		for _, e := range x {
			n += weight(e)
		}
		return n
	case string:
		return len(x)
	}
	return 8
}
