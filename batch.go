package actions

import (
	"context"
	"errors"
	"math"
	"strconv"

	"github.com/actionreg/actions/internal/ijson"
	"github.com/actionreg/actions/internal/placeholder"
)

// Batch is a call-only script: calls run one after the other, each able to
// use the results of earlier ones through placeholders. Its JSON form is
//
//	{"commands": [{"call": "ns/name", "with": {...}, "as": "name"}, ...],
//	 "result": "${name.path}"}
//
// where "result" may be left out. Steps of other kinds (commands, when,
// each, fail) and batches with parameters belong to the engine's script
// runner; this package refuses them (see [DecodeBatch]).
//
// A Batch built in Go is checked by [Registry.RunBatch] exactly as a decoded one is.
// See docs/batches.md for the rules in full.
type Batch struct {
	// Steps are the calls, run in order; their JSON member is "commands",
	// the reference's name. At most Limits.MaxBatchCalls.
	Steps []Step `json:"commands"`
	// Result, when set, is a single placeholder path such as "${plant}" or
	// "${plant.id}" naming the result of some step: the batch's result. When
	// empty, the batch's result is the last call's.
	Result string `json:"result,omitempty"`
}

// Step is one call of a [Batch].
type Step struct {
	// Call is the id of the action to call ("namespace/name"). Required.
	Call string `json:"call"`
	// With holds the call's parameters, a JSON object whose strings may
	// hold placeholders ("${name.path}"), resolved just before the call.
	// nil stands for {}. Values of Go types other than JSON's own (structs,
	// []string, int...) are accepted and first turned into JSON values, so
	// their strings are searched for placeholders too.
	With map[string]any `json:"with,omitempty"`
	// As names the call's result for later steps: an identifier
	// ([A-Za-z_][A-Za-z0-9_]*) that no other step of the batch uses. Empty
	// for a result no later step needs.
	As string `json:"as,omitempty"`
}

// batchDepth is the nesting a batch adds above a step's "with" value: the
// batch object, the "commands" array and the step object.
const batchDepth = 3

// maxBatchIssues bounds the issues of one refusal of a batch; the check
// stops collecting after this many.
const maxBatchIssues = 100

// RunBatch checks b whole, with r.Limits(), then runs its calls in order
// through r, as [Registry.Run] does: each call's parameters are checked,
// its body runs, and its entry is recorded and given to host.OnEntry
// (host may be nil). A Batch built in Go is checked exactly as
// [Registry.DecodeBatch] checks JSON text, with the same refusals;
// RunBatch never changes b.
//
// Just before each call, the path placeholders of its "with" are replaced
// by values from the results named so far (see docs/batches.md): a whole
// string "${a.id}" by the value with its type, a placeholder inside text
// by its text (a non-string as its RFC 8785 canonical JSON), and a value
// reaching nothing leaves its object member or array element out.
// Placeholders that are not paths, such as "${now()}", reach the action
// unchanged. A named result is kept as the JSON its entry records (the
// canonical text of what the body returned, read back), so structs and
// typed slices are walked by their JSON names; a call that returned
// nothing names null.
//
// It returns the batch's result, the entries of the calls made (in order,
// the entry of a refused call included) and an error:
//   - result: in JSON's Go types (map[string]any, []any, string, bool,
//     nil, json.Number) as the run log records it: when b.Result is set,
//     the value its placeholder reaches, or nil when it reaches nothing;
//     otherwise the last call's result (nil for no calls);
//   - *Refusal invalid_script_step or unknown_reference: the check refused
//     the batch (see [Registry.DecodeBatch]); no call was made and entries is
//     empty. invalid_script_step is also returned, before the call, when a
//     value a placeholder copies in would nest the step's parameters deeper
//     than Limits.MaxParamDepth;
//   - a *StepError holding the error of a refused call, as
//     [Registry.Run] returns it (unknown_action, invalid_parameters, a
//     body's own refusal or error, internal...): the batch stops there,
//     and the refused call's entry is the last of entries. errors.Is and
//     errors.As see through it to the call's error; its Index and
//     [StepError.Pointer] locate the step in the batch, so that the
//     author of the batch can fix it ("/commands/2", and under it
//     "/with" + the issue's path for invalid_parameters);
//   - ctx.Err(): ctx was done before a call; that call and the rest are
//     not made. A call already running sees ctx itself.
//
// RunBatch opens no transaction, as the registry opens none. The host runs
// the whole batch inside one transaction and rolls it back when RunBatch
// returns an error, so that a batch is undone as one: calls done before a
// refused one leave nothing behind.
//
// Limits (r.Limits()): MaxBatchCalls steps, MaxPlaceholderLength bytes
// per placeholder, MaxPlaceholders per step, MaxParamDepth for each with.
// The work of a call does not grow with the number of calls before it: a
// name is found in constant time, and a result is held only from its call
// to the last step (or the batch's result) that reads it; a result nobody
// reads is not held at all.
//
// RunBatch keeps no state between runs; runs of batches may go on at the
// same time, on one registry.
func (r *Registry[C]) RunBatch(ctx context.Context, b Batch, host *Host[C]) (result any, entries []RunEntry, err error) {
	limits := r.Limits()
	plan, err := checkBatch(b, limits, nil)
	if err != nil {
		return nil, nil, err
	}
	pl := placeholderLimits(limits)
	// results[j] is step j's result as JSON values, kept from its call to
	// the last step that reads it. The check guarantees that a placeholder
	// names only a step before the current one.
	results := make([]any, len(plan.steps))
	current := 0
	lookup := func(name string) (any, bool) {
		j, ok := plan.names[name]
		if !ok || j >= current {
			return nil, false
		}
		return results[j], true
	}
	entries = make([]RunEntry, 0, len(plan.steps))
	for i, st := range plan.steps {
		if err := ctx.Err(); err != nil {
			return nil, entries, err
		}
		current = i
		var params any = st.with
		if st.refs {
			with, _, err := placeholder.Substitute(st.with, lookup, canonicalText, pl)
			if err != nil {
				return nil, entries, substituteRefusal(stepPointer(i)+"/with", "with", err)
			}
			params = with
		}
		for _, j := range st.drop {
			results[j] = nil
		}
		_, entry, err := r.Run(ctx, st.call, params, host)
		entries = append(entries, entry)
		if err != nil {
			return nil, entries, &StepError{Index: i, Action: st.call, Err: err}
		}
		if st.keep || i == len(plan.steps)-1 {
			v, err := scopeValue(entry)
			if err != nil {
				return nil, entries, err
			}
			results[i] = v
			result = v
		}
	}
	current = len(plan.steps)
	if plan.result != "" {
		// The result is no call's parameters: only the limits of canonical
		// JSON bound how deep it may nest. And it is one placeholder, so
		// it copies a result the batch holds once at most: no byte bound.
		rl := pl
		rl.MaxDepth = canonicalMaxDepth
		rl.MaxBytes = math.MaxInt
		v, ok, err := placeholder.Substitute(plan.result, lookup, canonicalText, rl)
		if err != nil {
			return nil, entries, substituteRefusal("/result", "result", err)
		}
		if !ok {
			v = nil
		}
		result = v
	}
	return result, entries, nil
}

// StepError is the error of a batch whose step Index was refused: Err is
// that call's error as [Registry.Run] returns it, its issues located in
// the call's own parameters. It plays the part fs.PathError plays for a
// file: errors.Is(err, ErrInvalidParameters) and errors.As(err, &refusal)
// see through it.
type StepError struct {
	Index  int    // the step's index in Batch.Steps ("commands")
	Action string // the step's call
	Err    error
}

// Error returns "step 2: " and the call's error. It does not repeat the
// id called, which is submitted text.
func (e *StepError) Error() string {
	return "step " + strconv.Itoa(e.Index) + ": " + e.Err.Error()
}

// Unwrap returns the call's error.
func (e *StepError) Unwrap() error { return e.Err }

// Pointer returns the RFC 6901 pointer of the step in the batch's JSON
// form, such as "/commands/2". An issue of an invalid_parameters refusal
// is at Pointer() + "/with" + its Path in the batch.
func (e *StepError) Pointer() string { return stepPointer(e.Index) }

// scopeValue is the value a named result stands for in later placeholders:
// the JSON the entry recorded, read back, so that it holds JSON's Go types
// only and agrees with the run log.
func scopeValue(e RunEntry) (any, error) {
	if e.Result == "" {
		return nil, nil
	}
	v, err := ijson.Decode([]byte(e.Result), 0)
	if err != nil {
		r := refusef(CodeInternal, "a recorded result cannot be read back")
		r.cause = err
		return nil, r
	}
	return v, nil
}

// substituteRefusal reports a fault met while substituting, which the
// check leaves to run time: a copied value nesting too deep. The other
// kinds cannot happen after the check; they are mapped for safety.
func substituteRefusal(at, keyword string, err error) error {
	var pe *placeholder.Error
	if !errors.As(err, &pe) {
		return err
	}
	is := Issue{Path: at + pe.Pointer, Keyword: keyword}
	switch pe.Kind {
	case placeholder.UnknownReference:
		is.Message = "no earlier step is named " + pe.Name
		return refusef(CodeUnknownReference, "a placeholder names a result that no earlier step sets", is)
	case placeholder.Text:
		r := refusef(CodeInternal, "a placeholder's value has no text")
		r.cause = err
		return r
	}
	is.Message = placeholderMessage(pe)
	return refusef(CodeInvalidScriptStep, "a step cannot be prepared", is)
}
