// The registry's export-profile methods: Export and RunToolCall.

package actions

import (
	"bytes"
	"context"
	"encoding/json"
	"sort"
	"strings"

	"github.com/actionreg/actions/internal/ijson"
)

// Export exports registered actions for profile p, sorted by tool name,
// from the schemas compiled at Register: nothing is compiled again. opts
// may be nil. With opts.Caller, the actions that caller may see (as
// [Registry.Tools]); without, those offered on the mcp surface for
// ProfileMCP and on the ai surface for the provider profiles. Its
// Languages describe localized text parameters as Tools does. Under
// ProfileMCP each tool is what Tools gives (output schema included), as
// JSON values. The tools are the caller's own copies. See
// docs/profiles.md for each profile's rules.
//
// Errors (*Refusal, constraint_violation, wrapped with the action's id):
// an unknown profile; a tool name the provider refuses (longer than 64
// characters, for every profile but ProfileMCP; see
// [Options].PortableNames to refuse such ids at Register); a schema the
// profile cannot express at all (a recursive schema, or a $ref that is
// not a JSON Pointer, under ProfileGeminiOpenAPI, which inlines them; a
// property key outside ^[a-zA-Z0-9_.-]{1,64}$ under ProfileAnthropic and
// ProfileAnthropicStrict, which Anthropic refuses with the whole request).
// A keyword a profile drops is no error: it is a [Loss].
func (r *Registry[C]) Export(p Profile, opts *ToolOptions) (*Export, error) {
	rules, err := rulesOf(p)
	if err != nil {
		return nil, err
	}
	o := toolOptionsOf(opts)
	var regs []*registered[C]
	r.actions.Range(func(_, v any) bool {
		if reg := v.(*registered[C]); exportSees(p, &o, &reg.action.Definition) {
			regs = append(regs, reg)
		}
		return true
	})
	sort.Slice(regs, func(i, j int) bool { return regs[i].action.ID < regs[j].action.ID })
	sources := make([]exportSource, len(regs))
	for i, reg := range regs {
		sources[i] = exportSource{def: reg.action.Definition, doc: reg.params.doc, output: reg.output}
	}
	return exportAll(rules, sources, o)
}

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
