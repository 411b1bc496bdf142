package mcpserver

import (
	"fmt"
	"strings"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/bound"
)

// boundedSchema is the branch of a listed output schema that a bounded
// result's structured content ([bound.Bounded]'s envelope) takes: an
// object with a "bounded" member. It says no more, so that it costs each
// listed tool few bytes; the envelope's members are documented once, in
// the package's docs and in the words of the answer's second text item.
var boundedSchema = map[string]any{"type": "object", "required": []any{"bounded"}}

// forClient is a bounded result as a client gets it: its next call names
// the tool, as tools/list does, not the action id.
func forClient(b *bound.Bounded) *bound.Bounded {
	c := *b
	if b.Bound.NextCall != nil {
		nc := *b.Bound.NextCall
		nc.Action = actions.ToolName(nc.Action)
		c.Bound.NextCall = &nc
	}
	return &c
}

// clientValue is v (a result as [actions.Result] gives it) for a client:
// a bounded one through forClient, anything else as it is.
func clientValue(v any) any {
	if b, ok := v.(*bound.Bounded); ok {
		return forClient(b)
	}
	return v
}

// clientText is the canonical JSON of a call's result for a client, and
// for a bounded one the sentence that tells a model so.
func clientText(res actions.Result) (text, note string) {
	b, ok := res.Value.(*bound.Bounded)
	if !ok {
		if res.Text == "" {
			return "null", ""
		}
		return res.Text, ""
	}
	c := forClient(b)
	t, err := actions.CanonicalJSON(c)
	if err != nil {
		return res.Text, boundedNote(c)
	}
	return string(t), boundedNote(c)
}

// boundedNote says, for a model, what of a result was given and how to
// get the rest. It quotes the next call's parameters, which are the
// caller's own plus the cursor.
func boundedNote(b *bound.Bounded) string {
	var s strings.Builder
	bd := b.Bound
	switch {
	case bd.Omitted:
		fmt.Fprintf(&s, "bounded: the result (%d bytes) is not shown: it does not fit what is left of the %d-byte bound", bd.Bytes, bd.Limit)
	default:
		unit := "items"
		if _, isString := b.Value.(string); isString {
			unit = "characters"
		}
		at := bd.Path
		if at == "" {
			at = "the result"
		}
		fmt.Fprintf(&s, "bounded: %s holds %d of %d %s (%d left out): the whole result is %d bytes, over the %d-byte bound", at, bd.Kept, bd.Total, unit, bd.Left, bd.Bytes, bd.Limit)
	}
	if bd.NextCall != nil {
		params, err := actions.CanonicalJSON(bd.NextCall.Params)
		if err == nil {
			fmt.Fprintf(&s, "\nnext call: %s with %s, for the rest", bd.NextCall.Action, params)
		}
	} else if !bd.Omitted {
		s.WriteString("\nnext call: none; narrow the call to see the rest")
	}
	return s.String()
}
