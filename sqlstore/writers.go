package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strings"
)

// queue lets at most cap(q) units run at once in this process, and
// serves the ones waiting first come, first served: the runtime queues a
// channel's blocked senders in order. database/sql hands a free
// connection to a waiter at random, and SQLite's busy handler polls, so
// without it a writer can wait seconds while later ones proceed
// (docs/performance.md, the load benchmark). A nil queue lets every unit
// run.
type queue chan struct{}

// newQueue is the queue of Options.Writers on db: n slots, db's
// MaxOpenConns for 0 when bounded, none for negative n or an unbounded
// pool.
func newQueue(db *sql.DB, n int) queue {
	if n == 0 {
		n = db.Stats().MaxOpenConnections
	}
	if n <= 0 {
		return nil
	}
	return make(queue, n)
}

// enter waits for a slot, or returns ctx's error when ctx ends first.
func (q queue) enter(ctx context.Context) error {
	if q == nil {
		return nil
	}
	select {
	case q <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// leave frees the slot enter took.
func (q queue) leave() {
	if q != nil {
		<-q
	}
}

// OpenSQLite opens the two pools a [Store] on an SQLite file wants: write,
// one connection whose transactions take the write lock when they begin
// (_txlock=immediate), and read, a pool of connections that only read
// (query_only), both in write-ahead-log mode with a 10 s busy timeout and
// foreign keys on. Pass write to [New] and read as Options.Readers:
//
//	write, read, err := sqlstore.OpenSQLite("sqlite", "app.db")
//	store, err := sqlstore.New(write, sqlstore.SQLite, &sqlstore.Options{Readers: read})
//
// The store then runs one unit at a time on write, the others waiting in
// its queue in the order they came (Options.Writers), while
// [Store.View] and [Store.Read] outside a unit read from read's
// snapshots beside it. driverName is the database/sql driver the host
// imported ("sqlite" for modernc.org/sqlite, which the pragmas are
// written for); path is the file, with no "file:" prefix and no query.
// It is not ":memory:" nor empty: each pool would open its own empty
// database (for SQLite in memory, pass New one pool on one connection,
// no Readers). The caller closes both. Errors: sql.Open's, or a path
// that is empty, ":memory:" or holds '?'.
func OpenSQLite(driverName, path string) (write, read *sql.DB, err error) {
	if strings.ContainsRune(path, '?') {
		return nil, nil, errors.New("sqlstore: OpenSQLite takes a path, not a DSN with a query")
	}
	if path == "" || path == ":memory:" || strings.Contains(path, "mode=memory") {
		return nil, nil, errors.New("sqlstore: OpenSQLite takes a file's path; each of its pools would open its own empty in-memory database (for SQLite in memory, give New one pool on one connection)")
	}
	const pragmas = "?_pragma=busy_timeout(10000)&_pragma=journal_mode(wal)&_pragma=foreign_keys(1)"
	if write, err = sql.Open(driverName, "file:"+path+pragmas+"&_txlock=immediate"); err != nil {
		return nil, nil, err
	}
	write.SetMaxOpenConns(1)
	write.SetMaxIdleConns(1)
	write.SetConnMaxIdleTime(0)
	write.SetConnMaxLifetime(0)
	if read, err = sql.Open(driverName, "file:"+path+pragmas+"&_pragma=query_only(1)"); err != nil {
		_ = write.Close()
		return nil, nil, err
	}
	return write, read, nil
}
