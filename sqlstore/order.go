package sqlstore

import (
	"context"
	"errors"
	"hash/fnv"
	"strconv"
	"strings"
)

// Order is how the store draws the log's Seq on PostgreSQL, and so what
// a replay of the log in Seq order can rely on (docs/database.md, "The
// log's order"). SQLite runs one writer at a time, and there both orders
// are the commit order.
type Order int

const (
	// OrderCommit (the default) numbers records in the order their units
	// commit, under one advisory lock every append takes and holds to the
	// commit: a reader following the log by Seq (Filter.After) never
	// skips a record committed late. The commits of all units, on every
	// replica, then run one after the other, flushes included.
	OrderCommit Order = iota
	// OrderLocks takes no global lock: each record's Seq is drawn when
	// its unit appends, after the body ran and while the unit still
	// holds every lock it took (the rows it wrote or read FOR UPDATE or
	// FOR SHARE, the keys of [Lock]), which it keeps to its commit. Two
	// units that touch a common row or key then get Seqs in the order
	// they ran, and units that touch none have no order a replay needs:
	// replaying in Seq order gives every read what it saw, provided each
	// body locks what it reads (writes lock themselves). Seq stays unique
	// and grows within each unit, but records of units that share
	// nothing may commit out of Seq order, so a reader following the log
	// by Seq must re-read a window behind the last Seq it saw.
	OrderLocks
)

// Lock takes the locks named keys, in the order given and in one
// statement, in the transaction of the unit ctx belongs to, held until
// the unit commits or rolls back: under [OrderLocks] a body locks so what
// a row lock cannot cover (a row that is not there yet, a range it
// counted, a name it checked free), so that the units that read or write
// it are ordered in the log as they ran. Two units that take several
// keys should take them in one order (sorted, say), or they may
// deadlock. On PostgreSQL each is a transaction-scoped advisory lock on
// a 64-bit hash of its key (FNV-1a); two keys of one hash share a lock,
// which orders more than needed and never less. The store's isolation
// must be read committed: at repeatable read or serializable a read
// after the lock still sees the snapshot the unit's first statement
// took, which may predate the commit of the unit it waited for
// (docs/database.md). On SQLite, whose writers run one at a time, and in
// a [Store.View], it does nothing; with no key, nothing either. Errors:
// outside a unit; the database's.
func Lock(ctx context.Context, keys ...string) error {
	return advisory(ctx, keys, "pg_advisory_xact_lock", "Lock")
}

// LockShared is [Lock] in shared mode: units holding a key shared run
// side by side, and wait only for a unit holding it with [Lock] (which
// waits for them). A reader of a range takes it shared, each writer of a
// row that would enter the range takes it with Lock: readers never wait
// for one another, and the log orders each reader against every insert
// it could have seen. On PostgreSQL it is pg_advisory_xact_lock_shared
// on each key's FNV-1a hash, held to the unit's end, under read
// committed as Lock; on SQLite and in a View it does nothing. Errors:
// outside a unit; the database's.
func LockShared(ctx context.Context, keys ...string) error {
	return advisory(ctx, keys, "pg_advisory_xact_lock_shared", "LockShared")
}

// advisory takes the transaction-scoped advisory locks of fn (the
// function's name) on the keys' hashes in the unit of ctx, in one
// statement whose select list takes them left to right; name is the
// caller's, for the error.
func advisory(ctx context.Context, keys []string, fn, name string) error {
	tx, ok := Tx(ctx)
	if !ok {
		return errors.New("sqlstore: " + name + " outside a unit")
	}
	if unitOf(ctx).dialect != PostgreSQL || len(keys) == 0 {
		return nil
	}
	var q strings.Builder
	q.WriteString("SELECT ")
	args := make([]any, len(keys))
	for i, key := range keys {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString(fn + "($" + strconv.Itoa(i+1) + ")")
		h := fnv.New64a()
		_, _ = h.Write([]byte(key))
		args[i] = int64(h.Sum64())
	}
	_, err := tx.ExecContext(ctx, q.String(), args...)
	return err
}

// ForShare is the clause a SELECT ends with to lock the rows it reads in
// shared mode until the unit ends, as a body under [OrderLocks] reads a
// row it does not write: " FOR SHARE" in a unit on PostgreSQL; "" on
// SQLite (one writer at a time, whose transaction holds the database),
// in a [Store.View] (read only, its snapshot fixed) and outside a unit,
// so that one query serves all four. PostgreSQL refuses the clause with
// an aggregate, DISTINCT or GROUP BY: select the rows and count or sum
// them in Go.
func ForShare(ctx context.Context) string {
	if inPostgresUnit(ctx) {
		return " FOR SHARE"
	}
	return ""
}

// ForUpdate is [ForShare] in exclusive mode (" FOR UPDATE"), for a row
// the unit reads and then writes or deletes: taking the write lock at
// the read spares two units the deadlock of each holding the row shared
// and waiting to write it.
func ForUpdate(ctx context.Context) string {
	if inPostgresUnit(ctx) {
		return " FOR UPDATE"
	}
	return ""
}

// inPostgresUnit tells whether ctx belongs to a unit of a PostgreSQL
// store (a View carries no dialect).
func inPostgresUnit(ctx context.Context) bool {
	u := unitOf(ctx)
	return u != nil && u.dialect == PostgreSQL
}
