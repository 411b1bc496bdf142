package actions

import (
	"strconv"
)

// Batch is a call-only script: calls run one after the other, each able to
// use the results of earlier ones through placeholders. Its JSON form is
//
//	{"commands": [{"call": "ns/name", "with": {...}, "as": "name"}, ...],
//	 "result": "${name.path}"}
//
// where "result" may be left out. Steps of other kinds (commands, when,
// each, fail) and batches with parameters belong to the engine's script
// runner; this package refuses them (see [Registry.DecodeBatch]).
//
// A Batch built in Go is checked by [Registry.Run] (as [Call].Batch)
// exactly as a decoded one is.
// See docs/batches.md for the rules in full.
type Batch struct {
	// Steps are the calls, run in order; their JSON member is "commands"
	// (docs/batches.md). At most Limits.MaxBatchCalls.
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
	// A "${" with no "}" after it is plain text, and keys are never read.
	// A placeholder whose path reaches nothing (a missing member) removes
	// the string holding it, so the call sees that member absent (and its
	// schema may then say it is required); docs/batches.md has the
	// grammar. nil stands for {}. Values of Go types other than JSON's own
	// (structs, []string, int...) are accepted and first turned into JSON
	// values, so their strings are searched for placeholders too.
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
const maxBatchIssues = maxIssues

// StepError is the error of a batch whose step Index was refused: Err is
// that call's error as [Registry.Run] returns it, its issues located in
// the call's own parameters. It plays the part fs.PathError plays for a
// file: errors.Is(err, codes.InvalidParameters) and errors.As(err, &refusal)
// see through it.
type StepError struct {
	Index  int    // the step's index in Batch.Steps ("commands")
	Action string // the step's call
	Err    error
}

// Error returns "step 2: " and the call's error. It does not repeat the
// id called, which is submitted text.
func (e *StepError) Error() string {
	if e.Err == nil {
		return "step " + strconv.Itoa(e.Index) + ": refused"
	}
	return "step " + strconv.Itoa(e.Index) + ": " + e.Err.Error()
}

// Unwrap returns the call's error.
func (e *StepError) Unwrap() error { return e.Err }

// Pointer returns the RFC 6901 pointer of the step in the batch's JSON
// form, such as "/commands/2". An issue of an invalid_parameters refusal
// is at Pointer() + "/with" + its Path in the batch.
func (e *StepError) Pointer() string { return stepPointer(e.Index) }

func stepPointer(i int) string { return "/commands/" + strconv.Itoa(i) }
