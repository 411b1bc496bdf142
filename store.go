// The Store a registry keeps its units in, and the idempotency keys it runs a unit under.

package actions

import (
	"context"
	"encoding/json"
	"time"
)

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
	//     not commit but says Keep is recorded under k with its Answer
	//     and its records rolled back (a store may do so once the unit's
	//     changes are undone, in a write of its own); any other leaves no
	//     trace of k, so a retry runs again.
	//
	// With k.Replace it runs fn whatever k recorded, and records the
	// unit under k when it commits. It returns the records as kept (the
	// unit's, or the audit line), the recorded unit that answered (nil
	// when fn ran), and the error as Atomic does.
	AtomicOnce(ctx context.Context, k UnitKey, fn func(ctx context.Context) Unit) ([]Record, *Recorded, error)
}

// Savepointer is a [Store] that can undo part of a unit: the writes of
// one nested call ([Trace.Call]) that was refused, while the body that
// made it carries on, so that the call's entry (refused) and the data
// agree. sqlstore.Store is one (SQL SAVEPOINT, on SQLite and PostgreSQL).
//
// Savepoint marks the unit ctx belongs to and returns the context the
// nested call runs in and end, which the registry calls once the call
// ended: end(true) undoes what was written since the mark, end(false)
// keeps it. end is nil when ctx belongs to no unit of the store. An
// error from Savepoint or end says the call's writes could not be told
// apart from the rest of the unit's (a sibling nested call made
// concurrently, a failed statement): the registry then does not commit a
// unit in which a refused nested call wrote.
type Savepointer interface {
	Savepoint(ctx context.Context) (context.Context, func(undo bool) error, error)
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
	// Keep is set for a unit run under a key ([Store].AtomicOnce) that
	// does not commit although a body of it started (refused timeout,
	// output_invalid, result_too_large, cancelled, or the body's own
	// error): a body may have done what no rollback undoes (a card
	// charged, a mail sent), so its key and outcome are kept all the
	// same. The store undoes the unit's changes, keeps its records as
	// rolled back, and records the unit under the key with its Answer:
	// a retry gets that outcome and nothing runs again.
	Keep bool
	// Answer is what the unit answers retries with, set for a unit run
	// under a key ([Store].AtomicOnce) that commits or is kept (Keep).
	Answer Answer
}

// UnitKey is what a [Store] needs to run a unit at most once under an
// idempotency key: the key's scope, the digest the retries are compared
// by, and the clock's readings.
type UnitKey struct {
	// Principal is the caller's principal ("" for the host and for an
	// anonymous caller, who share one scope).
	Principal string
	// Action is the action's id (never an alias), or "#batch" for a
	// batch (a batch's key is its own, whatever actions its steps call).
	Action string
	// Key is the caller's key, as given (1 to 255 printable ASCII bytes).
	Key string
	// Digest is the hex SHA-256 of the canonical JSON of the parameters
	// as given (of the batch, for a batch): a retry whose digest differs
	// is refused idempotency_conflict.
	Digest string
	// Now is the registry's clock at the call; Expires is Now plus the
	// window: a recorded unit answers until Expires, or until the
	// sooner time [UnitKey.Until] gives for its answer.
	Now, Expires time.Time
	// Wait bounds how long a retry waits for a first call still running
	// under the key, before the store refuses it in_progress.
	Wait time.Duration
	// Replace is set for a decision on a pending change held under the
	// key: the store runs the unit whatever the key recorded and, when it
	// commits, records it under the key in place of the held call, so
	// that a retry of the held call gets the decided answer.
	Replace bool
	// Audit is the audit record of the retry, for the audit line a store
	// writes when a recorded unit answers (see [Recorded.AuditLine]).
	Audit Audit
}

// Answer is what a unit run under a key answers its retries with.
type Answer struct {
	// Value is the canonical JSON of the unit's value ("" for none).
	Value string `json:"value,omitempty"`
	// Refusal is the refusal a retry gets, or nil: the receipt of a held
	// call (confirmation_required), or the rejection of its change.
	Refusal *Refusal `json:"refusal,omitempty"`
	// Bounded is true when Value is a [Bounded] envelope, which a retry
	// is given as such.
	Bounded bool `json:"bounded,omitempty"`
	// Steps are a batch's step results as its caller was given them
	// ([Result].StepResults), so that a retry gets the first answer
	// whole: each step's canonical JSON ("null" for none) and whether it
	// is a [Bounded] envelope.
	Steps []AnswerStep `json:"steps,omitempty"`
}

// AnswerStep is one step's result in a recorded [Answer].
type AnswerStep struct {
	Value   json.RawMessage `json:"value"`
	Bounded bool            `json:"bounded,omitempty"`
}

// answered carries what a unit gives its caller beside the value: the
// canonical JSON of the value as given, and a batch's step results.
type answered struct {
	value any
	text  string
	steps []any
}

// Recorded is a unit a [Store] keeps under a key, which answers a retry.
type Recorded struct {
	// Unit is the store's id of the unit (sqlstore: the run log's unit
	// column).
	Unit string
	Answer
	// Records are the unit's records as kept.
	Records []Record
}

// AuditLine is the one record a store writes for a retry that a
// recorded unit answered: the recorded unit's last entry, as it is, with
// the retry's audit a, whose Answered names the recorded unit, marked
// RolledBack, since the retry changed nothing (a replay skips it, and
// reads of kept records leave it out).
func (r *Recorded) AuditLine(a Audit) Record {
	rec := Record{Entry: RunEntry{Steps: []RunStep{}, Outcome: OutcomeRefused}}
	if n := len(r.Records); n > 0 {
		rec = r.Records[n-1].clone()
	}
	a.Answered = r.Unit
	rec.Audit, rec.RolledBack = a, true
	return rec
}

// inProgress is the refusal of a retry whose first call still runs.
func inProgress(retryAt time.Time) *Refusal {
	r := NewRefusal(CodeInProgress, "a call with this idempotency key is still running")
	r.RetryAt = retryAt
	return r
}

// InProgress returns the in_progress refusal a [Store] gives a retry
// that waited k.Wait for the first call under its key: retry at
// k.Now + k.Wait, or later.
func (k UnitKey) InProgress() *Refusal { return inProgress(k.Now.Add(k.Wait)) }

// Until is when the unit recorded under k with answer a stops answering
// retries: k.Expires, or sooner the expiry of the pending change a held
// call's receipt names, so that no retry is answered with a receipt
// nobody can decide any more (a retry after it runs as a first call and
// holds a new change). A [Store] writes this, not k.Expires.
func (k UnitKey) Until(a Answer) time.Time {
	if rf := a.Refusal; rf != nil && rf.Pending != nil && !rf.Pending.Expires.IsZero() && rf.Pending.Expires.Before(k.Expires) {
		return rf.Pending.Expires
	}
	return k.Expires
}

// Conflict returns the idempotency_conflict refusal a [Store] gives a
// call whose key recorded a call with other parameters.
func (k UnitKey) Conflict() *Refusal {
	return NewRefusal(CodeIdempotencyConflict, "this idempotency key was used for a call with other parameters")
}
