package actions

import (
	"context"
)

// Call is one call made through a [Runner]: of one action (Action and
// Params) or of a batch (Batch), on behalf of Caller. Every entry point
// makes the same Call: a host's own Go code, an MCP tool, the batch tool,
// a model API's tool call ([Registry.RunToolCall]).
type Call struct {
	// Action is the id of the action called, or a deprecated alias of
	// it (the call is recorded under the id). Empty when Batch is set.
	Action string
	// Params are the call's parameters: map[string]any, JSON text
	// (json.RawMessage, []byte or string), or nil for {}. The caller's
	// value is never changed. Ignored when Batch is set.
	Params any
	// Batch, when set, makes the call a batch: its steps run one after
	// the other in one unit (see [Batch] and docs/batches.md).
	Batch *Batch
	// Caller is who calls, built by the host from what it authenticated;
	// nil is the host itself, which the gate lets through
	// (docs/gate.md).
	Caller *Caller
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
	// the whole batch's key. 1 to MaxIdempotencyKeyLength printable
	// ASCII bytes; empty for none, which changes nothing.
	IdempotencyKey string
}

// Result is what a call, a batch or a decision gave back.
type Result struct {
	// Value is the body's result, or for a batch the batch's result (see
	// [Batch].Result), in JSON's Go types when it comes from a batch;
	// nil whenever the error is not nil. A result over its bound
	// (Limits.MaxResultBytes, [Definition].MaxResultBytes) is a
	// *[Bounded] instead: its first items or characters, and how to get
	// the rest.
	Value any
	// Text is the canonical JSON (RFC 8785) of Value as given: what a
	// transport sends. "null" for a call done with no result; empty when
	// the error is not nil.
	Text string
	// StepResults, for a batch, holds each step's result as the batch
	// gives it back, in order: in JSON's Go types, or a *[Bounded] (an
	// Omitted one past Limits.MaxBatchResultBytes); nil for a step that
	// gave none or was refused. Nil for one call.
	StepResults []any
	// Records are the records of the calls the unit made, in order, as
	// the store kept them: one for a call or a decision, one per call
	// made for a batch (the refused one last). Empty when the call was
	// refused before any action was named (an unknown pending change).
	Records []Record
}

// Entry returns the entry of the last record: the call's own for a call,
// the last call made for a batch. It is the zero entry when there is no
// record.
func (r Result) Entry() RunEntry {
	if len(r.Records) == 0 {
		return RunEntry{}
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
	// Caller is the person deciding: only the principal who proposed the
	// change may decide it.
	Caller *Caller
}

// Record is one call as the run log keeps it: its entry (the reference's
// run_entry shape, which replay compares) and its audit record (who
// called, what the gate decided, which pending change it touched).
type Record struct {
	Entry RunEntry `json:"entry"`
	Audit Audit    `json:"audit"`
	// RolledBack is true when the unit the call belonged to did not
	// commit (a refused call, a batch that stopped, a failed commit). A
	// store with transactions (sqlstore.Store) undid what the unit
	// changed; without one (no Store, a [RunLog]) nothing is undone, and
	// what a body changed before the refusal stays. A replay of a log
	// leaves such records out (sqlstore.Store.Read returns kept records
	// unless asked); Registry.Replay of one replays what it is given.
	RolledBack bool `json:"rolledBack,omitempty"`
}

// Runner is what a host and every transport do with actions: run a call
// or a batch, decide a pending change, replay a record, and see what a
// caller may call. It has no type parameter: a transport never needs the
// environment bodies receive. [*Registry] implements it; mcpserver, the
// batch tool and the pages take it and add transport only.
//
// Implementations are safe for concurrent use.
type Runner interface {
	// Run runs c: see [Registry.Run].
	Run(ctx context.Context, c Call) (Result, error)
	// Decide confirms or rejects a pending change: see [Registry.Decide].
	Decide(ctx context.Context, d Decision) (Result, error)
	// Replay runs a record's call again and compares: see
	// [Registry.Replay].
	Replay(ctx context.Context, rec Record) (RunEntry, error)
	// Admit runs the gate's checks that take nothing: see
	// [Registry.Admit].
	Admit(ctx context.Context, name string, c *Caller) error
	// Tools exports the actions as MCP tools: see [Registry.Tools].
	Tools(opts *ToolOptions) ([]Tool, error)
	// Definitions returns every action's definition: see
	// [Registry.Definitions].
	Definitions() []Definition
	// PendingChange returns a pending change for the person who may
	// decide it: see [Registry.PendingChange].
	PendingChange(ctx context.Context, id string, c *Caller) (PendingChange, error)
	// Limits returns the limits in force.
	Limits() Limits
}

// Store keeps the work of each unit (a call, a batch, a decision) and its
// records together: what the calls changed is kept with their records,
// or neither is. sqlstore.Store keeps both in one database transaction;
// [RunLog] keeps records in memory. A Store is safe for concurrent use.
type Store interface {
	// Atomic runs fn in a new unit of work, whose context fn receives
	// (a store puts its transaction there for the bodies), and settles
	// it by what fn returns: when the Unit says Commit, its records are
	// kept with the unit's changes; otherwise the changes are undone and
	// the records kept as rolled back. A store may run fn again when its
	// error or the commit is a conflict that a new attempt may clear;
	// only the last attempt's records are kept.
	//
	// It returns the records as kept (RolledBack set where undone) and
	// the unit's error, or the store's own (joined to it).
	Atomic(ctx context.Context, fn func(ctx context.Context) Unit) ([]Record, error)
	// AtomicOnce runs fn as Atomic does, at most once under k within its
	// window, across every process sharing the store:
	//   - when a unit under k committed and k.Expires has not passed for
	//     it: with the same k.Digest, fn does not run; the store writes
	//     one audit line ([Recorded.AuditLine] of k.Audit) and returns it
	//     with the recorded unit; with another digest it returns
	//     k.Conflict() (idempotency_conflict) and writes nothing;
	//   - when a unit under k is still running: the store waits for it,
	//     at most k.Wait, then answers as above, or runs fn if that unit
	//     did not commit, or returns k.InProgress() (in_progress);
	//   - otherwise it runs fn; a unit that commits is recorded under k
	//     with its Answer, in the unit's own transaction; one that does
	//     not leaves no trace of k, so a retry runs again.
	//
	// With k.Replace it runs fn whatever k recorded, and records the
	// unit under k when it commits. It returns the records as kept (the
	// unit's, or the audit line), the recorded unit that answered (nil
	// when fn ran), and the error as Atomic does.
	AtomicOnce(ctx context.Context, k UnitKey, fn func(ctx context.Context) Unit) ([]Record, *Recorded, error)
}

// Unit is what one attempt of a unit of work gives its [Store].
type Unit struct {
	// Records are the records of the calls made, in order.
	Records []Record
	// Commit keeps what the calls changed: every call was done, or the
	// call was held as a pending change (which must be kept).
	Commit bool
	// Err is the unit's error, returned to the caller.
	Err error
	// Answer is what the unit answers retries with, set for a unit run
	// under a key ([Store].AtomicOnce) that commits.
	Answer Answer
}
