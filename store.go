// The Store a registry keeps its units in.

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
//
// A Store that also keeps idempotency keys implements [KeyStore]; the
// registry runs the key's protocol over it (wait, conflict, the answer a
// retry gets), so a store keeps rows and nothing more.
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
}

// KeyStore is a [Store] that keeps idempotency keys: the optional
// interface (as database/sql/driver adds optional interfaces to a
// driver) that the registry needs to run a call carrying a key
// ([Call].IdempotencyKey). [RunLog] implements it in one process's
// memory, sqlstore.Store in its database, for every replica sharing it.
//
// The registry runs the protocol itself (docs/database.md, "Idempotency
// keys"): it claims the key before the unit runs, waits for a claim
// still running, compares digests, answers a retry from the row and
// writes its audit line, and tells the store what the unit leaves under
// the key. A store keeps one row per (Principal, Action, Key) and
// writes it when told; it decides nothing. On a Store without this
// interface the registry refuses every keyed call (internal, retry
// never) rather than fall back to memory: at most once cannot be
// promised without a row every process sharing the store sees.
type KeyStore interface {
	Store
	// ClaimKey claims the key of claim for a unit about to run. When the
	// store keeps no row for (claim.Principal, claim.Action, claim.Key),
	// or one whose Expires is not after now, it keeps claim in its place
	// and returns nil; the claim must be durable when ClaimKey returns
	// (in a write of its own, seen by every process sharing the store),
	// so that no other process runs the unit while it may be running.
	// Otherwise it writes nothing and returns the row it keeps, with
	// Records set (none while the row's unit runs).
	ClaimKey(ctx context.Context, claim KeyRecord, now time.Time) (*KeyRecord, error)
	// SettleKey is called inside a unit (ctx is the context
	// [Store.Atomic] gave fn), at most once per attempt, to say what
	// the unit leaves under a key. When the unit commits, done is
	// written in place of the key's row, with the unit's changes and
	// records (in the same transaction). When it does not (it says so,
	// or its commit fails), undone is written instead, with the unit's
	// rolled-back records; an undone whose Answer is nil (no body of
	// the unit started) deletes the row if it is still the claim
	// undone.Unit names, unanswered or answered by the store itself
	// (as sqlstore's SettleOrphans answers a dead process's claims), and
	// one with neither Answer nor Unit leaves the row as it is. In a row
	// it writes, a store puts its own id of the unit in Unit, by which
	// ClaimKey finds the unit's records. Outside a unit it returns an
	// error.
	SettleKey(ctx context.Context, done, undone KeyRecord) error
}

// KeyRecord is the row a [KeyStore] keeps for one idempotency key.
type KeyRecord struct {
	// Principal, Action and Key name the row: the caller's principal
	// ("" for the host and anonymous callers, who share one scope), the
	// action's id ("#batch" for a batch), the caller's key (1 to 255
	// printable ASCII bytes).
	Principal, Action, Key string
	// Digest is the hex SHA-256 of the canonical JSON of the call's
	// parameters as given (of the batch, for a batch).
	Digest string
	// Expires is when the row stops answering retries, by the
	// registry's clock: a claim made at or after it replaces the row.
	Expires time.Time
	// Unit names the unit the row is for: in a claim (Answer nil), a
	// token the registry drew for it; in a row a unit settled, the
	// store's own id of that unit.
	Unit string
	// Answer is what the unit answers its retries with, canonical JSON
	// the store keeps as it is (the registry alone reads it); nil while
	// the unit runs.
	Answer json.RawMessage
	// Records, in a row ClaimKey returns, are the records of the unit
	// Unit names, as the store keeps them. A store ignores them in the
	// rows it is given.
	Records []Record
}
