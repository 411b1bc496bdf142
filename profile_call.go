package actions

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/actionreg/actions/internal/ijson"
)

// RunToolCall runs a tool call a provider's model made with a tool of
// profile p: name is the tool's name as the model sent it, arguments the
// arguments' JSON text (OpenAI's function.arguments, Anthropic's
// tool_use input, Gemini's functionCall.args re-encoded). It gives what
// [Registry.Run] gives for the action the name comes from, and Run is
// what it calls: the same checks, defaults, body, entry and OnEntry.
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
// refuses it with invalid_parameters. The export of the tool is worked
// out again on each call (a walk of the schema, no compiling).
//
// Errors: as [Registry.Run]; a name that no action id gives is a *Refusal
// unknown_action whose entry names the tool; an unknown profile is a
// *Refusal constraint_violation, and no entry is recorded.
func (r *Registry[C]) RunToolCall(ctx context.Context, p Profile, name string, arguments []byte, host *Host[C]) (any, RunEntry, error) {
	rules, err := rulesOf(p)
	if err != nil {
		return nil, RunEntry{Action: name, Steps: []RunStep{}}.refused(err, "null"), err
	}
	id, err := ActionID(name)
	if err != nil {
		entry := RunEntry{Action: name, Steps: []RunStep{}}.refused(err, r.givenParameters(json.RawMessage(arguments), r.Limits().MaxParamBytes))
		if host != nil && host.OnEntry != nil {
			if perr := safeCall("host's OnEntry", func() { host.OnEntry(entry) }); perr != nil {
				return nil, entry, perr
			}
		}
		return nil, entry, err
	}
	var params any = json.RawMessage(arguments)
	if len(bytes.TrimSpace(arguments)) == 0 {
		params = nil
	} else if rules.strict == strictOpenAI && len(arguments) <= r.Limits().MaxParamBytes {
		if v, ok := r.strictArguments(rules, id, arguments); ok {
			params = v
		}
	}
	return r.Run(ctx, id, params, host)
}

// strictArguments decodes arguments and maps the nulls of a strict tool
// back to absent members; ok is false when nothing is to be mapped or the
// text does not decode (Run then sees it as it came).
func (r *Registry[C]) strictArguments(rules *profileRules, id string, arguments []byte) (map[string]any, bool) {
	reg, ok := r.lookup(id)
	if !ok {
		return nil, false
	}
	def := reg.action.Definition
	t, err := exportOne(rules, &def, reg.params.doc, nil, toolOptions{})
	if err != nil || !t.strict || len(t.nullable) == 0 {
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
