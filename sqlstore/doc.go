// Package sqlstore keeps a registry's run log in a SQL database and runs
// calls and batches in database transactions, on database/sql alone: it
// imports no driver, the host opens the database with the one it chooses
// (modernc.org/sqlite and github.com/jackc/pgx/v5/stdlib are the ones
// tested) and names its [Dialect].
//
// A *[Store] is a registry's [store.Store]: pass it as
// actions.Options.Store, and its [Store.Pending] as the gate's
// PendingStore. The life of a call, a batch or a decision
// ([Store.Atomic]):
//
//  1. a transaction begins (serializable by default), carried by the
//     context the registry's resolver, bodies and pending store
//     receive: [Tx] returns it;
//  2. the registry checks and runs the call (or the whole batch, or the
//     confirmed change);
//  3. done, or held for confirmation: the records are appended in the
//     same transaction, which commits; refused, failed or cancelled
//     before the commit: it rolls back, and the records are written in
//     a transaction of their own, marked rolled back (and given back to
//     the registry so marked, so that OnRecord never reports a change
//     that was not kept);
//  4. a conflict (serialization failure, deadlock, SQLITE_BUSY) runs the
//     whole unit again, a bounded number of times, its records written
//     once.
//
// The wiring, on a database the host opened:
//
//	store, _ := sqlstore.New(db, sqlstore.SQLite, nil)
//	_ = store.Migrate(ctx)
//	reg := actions.NewRegistry(&actions.Options{Store: store, Gate: &actions.GateOptions{Pending: store.Pending()}})
//
// and a body finds the unit's transaction in its context:
//
//	tx, _ := sqlstore.Tx(ctx)
//
// Entries are stored as their canonical JSON (RFC 8785), byte for byte,
// beside their audit records, and read back in commit order by
// [Store.Read] for replay ([actions.Registry.Replay]); [Store.View] reads
// the log and the host's tables in one snapshot, so that a database
// still being written replays exactly. [Store.Migrate] creates the tables;
// docs/database.md in the repository shows the layout and how to set up
// PostgreSQL.
package sqlstore
