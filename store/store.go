package store

import (
	"context"
)

// Store keeps the work of each unit (a call, a batch, a decision) and its
// records together: what the calls changed is kept with their records, or
// neither is. sqlstore.Store keeps both in one database transaction;
// [github.com/actionreg/actions.RunLog] keeps records in memory. A Store is
// safe for concurrent use.
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

// Savepointer is a [Store] that can undo part of a unit: the writes of one
// nested call ([github.com/actionreg/actions.Trace.Call]) that was refused,
// while the body that made it carries on, so that the call's entry (refused)
// and the data agree. sqlstore.Store is one (SQL SAVEPOINT, on SQLite and
// PostgreSQL).
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
