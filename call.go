package actions

import (
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/store"
)

// Call is one call made through a [Registry]: of one action (Action and
// Params) or of a batch (Batch), on behalf of Caller. Every entry point
// makes the same Call: a host's own Go code, an MCP tool, the batch tool,
// a model API's tool call (package profiles).
type Call struct {
	// Action is the id of the action called, or a deprecated alias of
	// it (the call is recorded under the id). Empty when Batch is set:
	// a call with both is refused invalid_parameters.
	Action string
	// Params are the call's parameters: map[string]any, JSON text
	// (json.RawMessage, []byte or string), nil for {} (as is the text
	// null; empty text is not JSON, and refused), or any other Go value,
	// taken as encoding/json marshals it (a struct, a map with other
	// value types; a map's integer keys become member names). The
	// caller's value is never changed. Ignored when Batch is set.
	Params any
	// Batch, when set, makes the call a batch: its steps run one after
	// the other in one unit (see [Batch] and docs/batches.md).
	Batch *Batch
	// Caller is who calls, built by the host from what it authenticated;
	// nil is the host itself, which the gate lets through
	// (docs/gate.md).
	Caller *identity.Caller
	// ToolCallID is the id a client or model gave the call (an MCP
	// request id, a model's tool call id), kept in the audit record for
	// tracing; it decides nothing.
	ToolCallID string
	// Progress, when set, receives the call's progress reports: the
	// body's (see [Trace.Progress]) or, for a batch, one per step done
	// (Done steps of Total). It is called on the reporting goroutine,
	// one report at a time, in order, never after Run returned. Nil:
	// reports are dropped.
	Progress func(Progress)
	// IdempotencyKey, when set, makes the call run at most once per
	// (principal, action, key) within Options.KeyWindow: a retry with
	// the same parameters gets the first call's answer and records, and
	// nothing runs (docs/database.md has the table). For a batch it is
	// the whole batch's key. 1 to 255 printable ASCII bytes (another is
	// refused invalid_parameters); empty for none, which changes nothing.
	// A transport that receives a key given empty refuses it instead of
	// passing "" (mcpserver does): the client meant to send a key. The
	// registry's Store must be a [store.KeyStore]; with another (or none) a
	// keyed call is refused internal (retry never) and nothing runs.
	IdempotencyKey string
}

// Result is what a call, a batch or a decision gave back.
type Result struct {
	// Value is the body's result, or for a batch the batch's result (see
	// [Batch].Result), in JSON's Go types when it comes from a batch;
	// nil whenever the error is not nil. A result over its bound
	// (Limits.MaxResultBytes, [Definition].MaxResultBytes) is a
	// *[bound.Bounded] instead: its first items or characters, and how to get
	// the rest.
	Value any
	// Text is the canonical JSON (RFC 8785) of Value as given: what a
	// transport sends. Empty when Value is nil: a call done with no
	// result, or any call whose error is not nil.
	Text string
	// StepResults, for a batch, holds each step's result as the batch
	// gives it back, in order: in JSON's Go types, or a *[bound.Bounded] (an
	// Omitted one past Limits.MaxBatchResultBytes); nil for a step that
	// gave none or was refused. Nil for one call.
	StepResults []any
	// Records are the records of the calls the unit made, in order, as
	// the store kept them: one for a call or a decision, one per call
	// made for a batch (the refused one last). Empty when the call was
	// refused before any action was named (an unknown pending change).
	Records []store.Record
}

// Entry returns the entry of the last record: the call's own for a call,
// the last call made for a batch. It is the zero entry when there is no
// record.
func (r Result) Entry() store.RunEntry {
	if len(r.Records) == 0 {
		return store.RunEntry{}
	}
	return r.Records[len(r.Records)-1].Entry
}

// Decision is a person's answer to a pending change: confirm (run it) or
// reject (drop it). See [Registry.Decide].
type Decision struct {
	// Change is the pending change's id ([Receipt].ID).
	Change string
	// Confirm runs the change; false rejects it.
	Confirm bool
	// Params, when not nil, edits the change: the person's own
	// arguments for the change's action (a JSON object as Call.Params
	// takes it: a map, a struct, json.RawMessage or a string), a new
	// proposal of the same action by the deciding person. Confirm is
	// then ignored. The edited call is checked as the deciding person
	// like any call of the action (the gate's checks, defaults, schema,
	// refs, the approval rule); it runs under this decision when the
	// action's [Approval] would let that person decide a change they
	// proposed themselves, and is otherwise held as their own new
	// pending change (four eyes: another person decides it). The action
	// is always the change's: nothing in a decision names another. A
	// held batch, or a call held after a preview, is confirmed or rejected whole, never edited
	// (constraint_violation).
	Params any
	// Reason, for a rejection, is the person's reason, for the caller
	// to read (at most maxDescriptionBytes, cut beyond): recorded in the
	// rejection's audit and given, in the rejected refusal's Reason, to
	// a retry of the held call under its idempotency key. Ignored when
	// confirming.
	Reason string
	// Caller is the person deciding: only the principal who proposed the
	// change may decide it.
	Caller *identity.Caller
}

// Progress is one report of how far a running call has come (MCP
// notifications/progress: progress, total, message).
type Progress struct {
	// Done is how much is done so far; it increases with every report
	// delivered (a report that does not increase it is dropped).
	Done float64
	// Total is how much there is in all; 0 when unknown.
	Total float64
	// Message says what is being done, for a person; it may be empty.
	Message string
}
