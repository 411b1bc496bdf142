package schema

import (
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// A schema's defaults must not contradict it: filled into an
// object the caller left empty, they must give a value the schema accepts,
// or the caller would be refused for members it never sent. Build tries
// each object schema a value can be checked against as a whole (the root,
// the schemas of members and entries) on the empty object: it fills the
// defaults as a call would (those of $ref targets, allOf entries, the
// then or else that applies, the dependentSchemas the defaults trigger),
// validates the result with the engine, and refuses the schema when a
// breach appears that the empty object alone does not have. A missing
// member (required, dependentRequired) is never counted: the caller can
// send it.

// Contradictions tries the defaults of every entry node together and
// returns an *Error at the pointer of the first default found at fault,
// naming the keyword it breaks. budget bounds what one try may fill, as
// for Build. Each try validates, so the schema's cost must have been
// bounded first (Multiplies).
func (p *Plan) Contradictions(budget int) error {
	for _, e := range p.entries {
		if err := tryEmpty(p, e, budget); err != nil {
			return err
		}
	}
	return nil
}

// entries lists the nodes a value is checked against as a whole and that
// fill: the root and the nodes of members and entries, in the builder's
// order.
func (b *builder) entries() []*node {
	seen := map[*node]bool{}
	var out []*node
	add := func(n *node) {
		if n != nil && n.fills && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	add(b.order[0])
	for _, n := range b.order {
		for _, c := range n.props {
			add(c.n)
		}
		for _, c := range n.patterns {
			add(c.n)
		}
		add(n.additional)
		for _, c := range n.prefix {
			add(c)
		}
		add(n.items)
	}
	return out
}

// tryEmpty fills the empty object with e's defaults and refuses what the
// defaults break, at the pointer of the default at fault.
func tryEmpty(p *Plan, e *node, budget int) error {
	v, log, over := fillEmpty(p, e, budget, 0)
	if over {
		reason := "filled into an empty object, the defaults pass " + strconv.Itoa(budget) + " bytes"
		if log.endless {
			reason = "the defaults fill without end: a default's nested defaults hold it again"
		}
		at := fragment(e.sch.Location)
		if n := len(log.fills); n > 0 {
			at = fragment(log.fills[n-1].from.Location) + "/default"
		}
		return &Error{at, "default", reason}
	}
	err := e.sch.Validate(v)
	if err == nil {
		return nil
	}
	bare := map[[2]string]bool{}
	for _, br := range Breaches(e.sch.Validate(map[string]any{})) {
		bare[[2]string{br.Path, br.Keyword}] = true
	}
	for _, br := range sortedBreaches(Breaches(err)) {
		if br.Keyword == "required" || br.Keyword == "dependentRequired" {
			continue
		}
		from := log.owner(br.Path)
		if from == nil {
			if bare[[2]string{br.Path, br.Keyword}] {
				continue
			}
			from = firstBreaking(p, e, budget, log, br)
		}
		at := br.Path
		if at == "" {
			at = "the object"
		}
		return &Error{fragment(from.Location) + "/default", br.Keyword,
			"the defaults, filled into an empty object, break " + br.Keyword + " at " + at + ": this default makes the schema refuse a call that sent nothing there"}
	}
	return nil
}

// fillEmpty fills a new empty object with n's defaults, logging each
// fill, at most limit fills if limit is positive.
func fillEmpty(p *Plan, n *node, budget, limit int) (map[string]any, *fillLog, bool) {
	v := map[string]any{}
	f := &filler{p: p, seen: map[visit]bool{}, budget: budget, log: &fillLog{}, limit: limit}
	f.run(v, n)
	return v, f.log, f.over && (limit <= 0 || len(f.log.fills) < limit)
}

// owner returns the schema whose default filled the member at path or
// the nearest member above it, if a default filled one.
func (l *fillLog) owner(path string) *jsonschema.Schema {
	var best *filled
	for i := range l.fills {
		r := &l.fills[i]
		if (path == r.path || strings.HasPrefix(path, r.path+"/")) && (best == nil || len(r.path) > len(best.path)) {
			best = r
		}
	}
	if best == nil {
		return nil
	}
	return best.from
}

// firstBreaking finds the fill after which the breach br, one of the
// object's own (maxProperties, not, const...), first appears: the default
// that tips the object over.
func firstBreaking(p *Plan, e *node, budget int, log *fillLog, br Breach) *jsonschema.Schema {
	for k := 1; k < len(log.fills); k++ {
		v, _, _ := fillEmpty(p, e, budget, k)
		for _, x := range Breaches(e.sch.Validate(v)) {
			if x.Path == br.Path && x.Keyword == br.Keyword {
				return log.fills[k-1].from
			}
		}
	}
	return log.fills[len(log.fills)-1].from
}

func sortedBreaches(bs []Breach) []Breach {
	slices.SortFunc(bs, func(a, b Breach) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.Keyword, b.Keyword)
	})
	return bs
}
