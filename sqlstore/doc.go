// Package sqlstore keeps a registry's run log in a SQL database and runs
// calls and batches in database transactions, on database/sql alone: it
// imports no driver, the host opens the database with the one it chooses
// (modernc.org/sqlite and github.com/jackc/pgx/v5/stdlib are the ones
// tested) and names its [Dialect].
//
// The life of a call through a [Runner]:
//
//  1. a transaction begins (serializable by default);
//  2. the host's [TxHost] builds the call's host on it, so that the
//     bodies reach the transaction through the environment they receive;
//  3. the registry checks and runs the call (or the whole batch);
//  4. done: the entries are appended in the same transaction, which
//     commits; refused or failed: it rolls back, and the entries are
//     written in a transaction of their own, marked rolled back;
//  5. a conflict (serialization failure, deadlock, SQLITE_BUSY) runs the
//     whole unit again, a bounded number of times, its entries written
//     once.
//
// Entries are stored as their canonical JSON (RFC 8785), byte for byte,
// and read back in commit order by [Store.Read] for replay
// ([actions.Registry.Replay]). [Store.Migrate] creates the tables;
// docs/database.md in the repository shows the layout and how to set up
// PostgreSQL.
package sqlstore
