package actions

import (
	"bytes"
	"context"
	"encoding/json"
	"sort"
	"strings"

	"github.com/actionreg/actions/internal/ijson"
)

// RunToolCall runs a tool call a provider's model made with a tool of
// profile p: name is the tool's name as the model sent it, arguments the
// arguments' JSON text (OpenAI's function.arguments, Anthropic's
// tool_use input, Gemini's functionCall.args re-encoded). It gives what
// [Registry.Run] gives for the action the name comes from, and Run is
// what it calls: the same checks, defaults, body, record and OnRecord.
//
// Under ProfileOpenAIChat and ProfileOpenAIResponses, a strict tool lists
// every property as required, and the model sends null for each property
// it would have left out. Before the check, each null member whose
// property was made nullable by the export (one the action's schema
// declares optional and does not let be null) is removed, so that
// defaults fill as they do for a call that leaves the property out. A
// null the schema accepts is kept. Where branches of anyOf, oneOf or
// allOf declare the same property, a null is removed when any branch had
// it made nullable. Other profiles pass the arguments as they are.
//
// Empty arguments (or only white space) mean {}. Text that is not JSON,
// or larger than Limits.MaxParamBytes, goes to Run as it is, which
// refuses it with invalid_parameters. The strict export of each action
// is worked out on its first call and kept.
//
// c is the call as every entry point makes it, c.Action holding the tool
// name the model called and c.Params its arguments (JSON text: []byte,
// json.RawMessage or string); the gate checks c.Caller as for Run (a host
// serving a model API sets its Surface to SurfaceAI).
//
// Errors: as [Registry.Run]; a name that no action id gives is a *Refusal
// unknown_action whose entry names the tool; an unknown profile is a
// *Refusal constraint_violation, and no entry is recorded.
func (r *Registry[C]) RunToolCall(ctx context.Context, p Profile, c Call) (Result, error) {
	rules, err := rulesOf(p)
	if err != nil {
		return Result{}, err
	}
	name := c.Action
	arguments, _ := textOf(c.Params)
	id, err := ActionID(name)
	if err != nil {
		if !strings.Contains(name, "/") {
			// No id has this name (an id holds a slash): Run refuses it
			// as it refuses any unknown id, record and all.
			return r.Run(ctx, c)
		}
		return r.unit(ctx, nil, func(context.Context) (any, []Record, bool, error) {
			return nil, []Record{r.refusedRecord(name, c.Params, r.audit(invocation{caller: c.Caller, toolCallID: c.ToolCallID}), err)}, false, err
		})
	}
	var params any = json.RawMessage(arguments)
	if len(bytes.TrimSpace(arguments)) == 0 {
		params = nil
	} else if rules.strict == strictOpenAI && len(arguments) <= r.Limits().MaxParamBytes {
		if v, ok := r.strictArguments(rules, id, arguments); ok {
			params = v
		}
	}
	c.Action, c.Params = id, params
	return r.Run(ctx, c)
}

// strictArguments decodes arguments and maps the nulls of a strict tool
// back to absent members; ok is false when nothing is to be mapped or the
// text does not decode (Run then sees it as it came).
func (r *Registry[C]) strictArguments(rules *profileRules, id string, arguments []byte) (map[string]any, bool) {
	reg, ok := r.lookup(id)
	if !ok {
		return nil, false
	}
	var t *exported
	if v, ok := r.strictBack.Load(reg); ok {
		t = v.(*exported)
	} else {
		def := reg.action.Definition
		var err error
		if t, err = exportOne(rules, &def, reg.params.doc, nil, nil, toolOptions{}); err != nil {
			t = &exported{}
		}
		t.wire = nil // only the strictness and the nulls are kept
		r.strictBack.Store(reg, t)
	}
	if !t.strict || len(t.nullable) == 0 {
		return nil, false
	}
	v, err := ijson.Decode(arguments, r.Limits().MaxParamDepth)
	if err != nil {
		return nil, false
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	nullToAbsent(t.source, t.nullable, m)
	return m, true
}

// nullToAbsent removes from a strict call's arguments each null that
// stands for a property left out: a member named in nullable (by the
// pointer of its object schema in root) whose value is null. It walks v
// along root, through properties, items, prefixItems,
// additionalProperties, local $refs and the branches of anyOf, oneOf and
// allOf; v is the caller's own decoded copy and is changed in place.
func nullToAbsent(root map[string]any, nullable map[string]bool, v any) {
	if len(nullable) == 0 {
		return
	}
	w := nullWalker{root: root, nullable: nullable}
	w.walk([]place{{root, ""}}, v)
}

type nullWalker struct {
	root     map[string]any
	nullable map[string]bool
}

// place is a schema object and its pointer in root.
type place struct {
	s   map[string]any
	ptr string
}

// expand adds s and every schema that applies with it to the same value
// (the targets of its local $refs, the branches of its anyOf, oneOf and
// allOf, transitively) to out, once each.
func (w *nullWalker) expand(s any, ptr string, out []place, hops int) []place {
	m, ok := s.(map[string]any)
	if !ok || hops > 32 {
		return out
	}
	for _, p := range out {
		if p.ptr == ptr {
			return out
		}
	}
	out = append(out, place{m, ptr})
	if ref, ok := m["$ref"].(string); ok {
		if t, tptr, ok := resolveLocal(w.root, ref); ok {
			out = w.expand(t, tptr, out, hops+1)
		}
	}
	for _, kw := range []string{"allOf", "anyOf", "oneOf"} {
		if bs, ok := m[kw].([]any); ok {
			for i, b := range bs {
				out = w.expand(b, ijson.AppendIndex(ijson.AppendToken(ptr, kw), i), out, hops+1)
			}
		}
	}
	return out
}

// walk maps the nulls of v, which the schemas starts describe. Each value
// is visited once, with every schema that applies to it.
func (w *nullWalker) walk(starts []place, v any) {
	var places []place
	for _, p := range starts {
		places = w.expand(p.s, p.ptr, places, 0)
	}
	switch x := v.(type) {
	case map[string]any:
		names := make([]string, 0, len(x))
		for k := range x {
			names = append(names, k)
		}
		sort.Strings(names)
	members:
		for _, k := range names {
			if x[k] == nil {
				for _, p := range places {
					if w.nullable[p.ptr+"\x00"+k] {
						delete(x, k)
						continue members
					}
				}
				continue
			}
			var subs []place
			for _, p := range places {
				props, _ := p.s["properties"].(map[string]any)
				if sub, ok := props[k].(map[string]any); ok {
					subs = append(subs, place{sub, ijson.AppendToken(ijson.AppendToken(p.ptr, "properties"), k)})
				} else if ap, ok := p.s["additionalProperties"].(map[string]any); ok {
					subs = append(subs, place{ap, ijson.AppendToken(p.ptr, "additionalProperties")})
				}
			}
			if len(subs) > 0 {
				w.walk(subs, x[k])
			}
		}
	case []any:
		for i, e := range x {
			var subs []place
			for _, p := range places {
				prefix, _ := p.s["prefixItems"].([]any)
				if i < len(prefix) {
					if sub, ok := prefix[i].(map[string]any); ok {
						subs = append(subs, place{sub, ijson.AppendIndex(ijson.AppendToken(p.ptr, "prefixItems"), i)})
					}
				} else if it, ok := p.s["items"].(map[string]any); ok {
					subs = append(subs, place{it, ijson.AppendToken(p.ptr, "items")})
				}
			}
			if len(subs) > 0 {
				w.walk(subs, e)
			}
		}
	}
}
