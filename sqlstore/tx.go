package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/actionreg/actions/store"
)

// defaultMaxAttempts is Options.MaxAttempts when left zero.
const defaultMaxAttempts = 20

// DefaultBackoff is Options.Backoff when left nil: a random wait below a
// ceiling of 2 ms, doubled after each failed attempt up to 250 ms ("full
// jitter": writers that conflicted once draw apart instead of meeting
// again).
func DefaultBackoff(n int) time.Duration {
	ceiling := min(2*time.Millisecond<<min(max(n-1, 0), 8), 250*time.Millisecond)
	return time.Duration(rand.Int64N(int64(ceiling)) + 1)
}

// IsConflict reports whether err is a transaction conflict that trying
// again may clear: a PostgreSQL serialization failure (SQLSTATE 40001) or
// deadlock (40P01), found through an error's SQLState() string method
// (pgx's *pgconn.PgError, lib/pq's *pq.Error), or SQLITE_BUSY or
// SQLITE_LOCKED (extended codes included), found through a Code() int
// method (modernc.org/sqlite's *sqlite.Error). Wrapped errors are
// unwrapped.
func IsConflict(err error) bool {
	var st interface{ SQLState() string }
	if errors.As(err, &st) {
		switch st.SQLState() {
		case "40001", "40P01":
			return true
		}
	}
	var c interface{ Code() int }
	if errors.As(err, &c) {
		switch c.Code() & 0xff {
		case 5, 6: // SQLITE_BUSY, SQLITE_LOCKED
			return true
		}
	}
	return false
}

// retry runs fn (given the attempt number, from 1) until it returns nil or
// an error that is not a conflict, at most MaxAttempts times, waiting
// Backoff between attempts.
func (s *Store) retry(ctx context.Context, fn func(attempt int) error) error {
	for attempt := 1; ; attempt++ {
		err := fn(attempt)
		if err == nil || !IsConflict(err) || attempt >= s.opts.MaxAttempts {
			return err
		}
		if werr := s.wait(ctx, attempt); werr != nil {
			return err
		}
	}
}

// wait sleeps before attempt n+1, or returns ctx's error when it ends
// first.
func (s *Store) wait(ctx context.Context, n int) error {
	t := time.NewTimer(s.opts.Backoff(n))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// txKey is the context key of the unit's *unitCtx.
type txKey struct{}

// unitCtx is what a unit's context carries, in one value: its
// transaction, the store's dialect (zero in a View), its savepoints
// (nil in a View) and what an attempt settled under a key.
type unitCtx struct {
	tx      *sql.Tx
	dialect Dialect
	sps     *savepoints
	own     savepoints // sps of a unit: allocated with it
	settle  settlement
}

// unitOf returns the unitCtx ctx carries, or nil.
func unitOf(ctx context.Context) *unitCtx {
	u, _ := ctx.Value(txKey{}).(*unitCtx)
	return u
}

// Tx returns the transaction of the unit that ctx belongs to: the context
// the registry's resolver, a body and an [actions.PendingStore] receive
// while [Store.Atomic] runs a unit carries it, and so does the context
// [Store.View] gives. It is the one way a body reaches the transaction.
// ok is false outside a unit.
func Tx(ctx context.Context) (tx *sql.Tx, ok bool) {
	if u := unitOf(ctx); u != nil {
		return u.tx, true
	}
	return nil, false
}

// rolledBackTimeout bounds the write of a rolled-back unit's records:
// generous, since a unit may leave megabytes of them (a batch stopped at
// its byte bound) on a loaded machine, and its records are the audit
// trail.
const rolledBackTimeout = time.Minute

// Atomic runs fn, one unit of a registry's work (a call, a batch, a
// decision), in one transaction of the store's database opened with the
// store's isolation level (serializable by default), and keeps its
// records; it makes *Store an [store.Store]: pass the store as
// actions.Options.Store.
//
//   - when the unit commits (every call done, or a call held for
//     confirmation), its records are appended in the same transaction,
//     Options.BeforeCommit runs, and the transaction commits: a change
//     is never kept without its record, nor a record without its change;
//   - when it does not (a refused call, a batch that stopped), or the
//     append, BeforeCommit or the commit fails, the transaction is rolled
//     back and the records are then appended in a transaction of their
//     own, marked rolled back (an audit trail; a replay skips them). That
//     write uses a context detached from ctx's cancellation, bounded to
//     10 s, so a cancelled call still leaves its trail;
//   - when the failure is a conflict ([IsConflict]: a serialization
//     failure, a deadlock, SQLITE_BUSY), fn runs again in a new
//     transaction, after Options.Backoff, at most Options.MaxAttempts
//     times in all; the records of an attempt retried are dropped, so the
//     log holds each call of the unit once, under one unit id.
//
// When ctx ends before the commit is sent (in a body, in BeforeCommit),
// the unit is undone and its records are marked rolled back; once the
// commit is sent, ctx no longer interrupts it, so the records given back
// say what the database kept: never rolled back for
// a change that was kept, nor done for one that was not.
//
// It returns the records as kept and the unit's error, or the database's
// (BeginTx, the append, the commit: joined to the unit's), the last
// conflict when the attempts ran out, or ctx.Err() when ctx ended before
// the commit.
func (s *Store) Atomic(ctx context.Context, fn func(ctx context.Context) store.Unit) ([]store.Record, error) {
	if err := s.made(); err != nil {
		return nil, err
	}
	return s.atomic(ctx, NewUnit(), fn)
}

// atomic is Atomic for the unit id unit. What the last attempt settled
// under a key ([Store.SettleKey]) is written with the unit: in its
// transaction when it commits, else in the transaction that writes its
// rolled-back records.
func (s *Store) atomic(ctx context.Context, unit string, fn func(ctx context.Context) store.Unit) ([]store.Record, error) {
	for attempt := 1; ; attempt++ {
		if err := s.writers.enter(ctx); err != nil {
			return nil, err
		}
		u, key, committed, err := s.attemptInQueue(ctx, unit, fn)
		if committed {
			s.writers.leave()
			return u.Records, err
		}
		if errors.Is(err, sql.ErrTxDone) && ctx.Err() != nil {
			// database/sql rolled the transaction back when ctx ended;
			// the end of ctx is the cause.
			err = ctx.Err()
		}
		if IsConflict(err) && attempt < s.opts.MaxAttempts {
			s.writers.leave() // the backoff waits outside the queue
			werr := s.wait(ctx, attempt)
			if werr == nil {
				continue
			}
			err = errors.Join(werr, err)
			if qerr := s.writers.enter(context.WithoutCancel(ctx)); qerr != nil {
				return u.Records, errors.Join(err, qerr)
			}
		}
		for i := range u.Records {
			u.Records[i].RolledBack = true
		}
		if len(u.Records) > 0 || key.set {
			wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rolledBackTimeout)
			var extra func(ctx context.Context, tx *sql.Tx) error
			if key.set {
				extra = func(ctx context.Context, tx *sql.Tx) error { return s.writeKey(ctx, tx, unit, key.undone) }
			}
			werr := s.writeWith(wctx, unit, extra, u.Records...)
			cancel()
			if werr != nil {
				err = errors.Join(err, werr)
			}
		}
		s.writers.leave()
		return u.Records, err
	}
}

// attemptInQueue is attempt for a unit holding a slot of the writers'
// queue: should fn panic, the slot is given back (the transaction is
// rolled back by attempt) before the panic goes on, so that the units
// after it still run.
func (s *Store) attemptInQueue(ctx context.Context, unit string, fn func(ctx context.Context) store.Unit) (u store.Unit, key *settlement, committed bool, err error) {
	returned := false
	defer func() {
		if !returned {
			s.writers.leave()
		}
	}()
	u, key, committed, err = s.attempt(ctx, unit, fn)
	returned = true
	return u, key, committed, err
}

// attempt runs fn once in a new transaction and commits when the unit
// says so. It returns the unit, what it settled under a key, whether it
// committed, and the error that stopped it (the unit's own when it
// committed).
//
// The transaction's own context follows ctx until the commit begins, and
// no longer: when ctx ends before, the transaction is rolled back (by
// database/sql) and the unit is undone; once the commit is sent, it is
// not interrupted, so that its outcome is known. (A driver that reads the
// transaction's context during the commit, as pgx does, would otherwise
// answer a cancelled commit with an error although the server committed:
// records reported rolled back for a change that was kept.)
func (s *Store) attempt(ctx context.Context, unit string, fn func(ctx context.Context) store.Unit) (store.Unit, *settlement, bool, error) {
	uc := &unitCtx{dialect: s.dialect, settle: settlement{store: s}}
	uc.sps = &uc.own
	key := &uc.settle
	if err := ctx.Err(); err != nil {
		return store.Unit{}, key, false, err
	}
	// A ctx that never ends (Done is nil) is the transaction's own as it
	// is: no watcher to set up, and none for the driver to start at the
	// begin and the commit (modernc.org/sqlite starts one per statement
	// whose context can end).
	txCtx, follow := ctx, neverEnded
	if ctx.Done() != nil {
		var endTx context.CancelFunc
		txCtx, endTx = context.WithCancel(context.WithoutCancel(ctx))
		defer endTx()
		follow = context.AfterFunc(ctx, endTx)
		defer follow()
	}
	var tx *sql.Tx
	if s.opts.Serial && s.dialect == PostgreSQL {
		conn, err := s.serialConn(ctx)
		if err != nil {
			return store.Unit{}, key, false, err
		}
		defer s.releaseSerial(ctx, conn)
		if tx, err = conn.BeginTx(txCtx, &sql.TxOptions{Isolation: s.opts.Isolation}); err != nil {
			return store.Unit{}, key, false, err
		}
	} else {
		var err error
		if tx, err = s.db.BeginTx(txCtx, &sql.TxOptions{Isolation: s.opts.Isolation}); err != nil {
			return store.Unit{}, key, false, err
		}
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit; runs before releaseSerial
	uc.tx = tx
	tctx := context.WithValue(ctx, txKey{}, uc)
	u := fn(tctx)
	if !u.Commit {
		return u, key, false, u.Err
	}
	if err := s.append(ctx, tx, true, unit, u.Records...); err != nil {
		return u, key, false, joinUnit(u.Err, err)
	}
	if key.set {
		if err := s.writeKey(ctx, tx, unit, key.done); err != nil {
			return u, key, false, joinUnit(u.Err, err)
		}
	}
	if s.opts.BeforeCommit != nil {
		if err := s.opts.BeforeCommit(tctx, tx); err != nil {
			return u, key, false, joinUnit(u.Err, err)
		}
	}
	if !follow() {
		// ctx ended: the transaction is being rolled back.
		return u, key, false, joinUnit(u.Err, context.Cause(ctx))
	}
	if err := tx.Commit(); err != nil {
		return u, key, false, joinUnit(u.Err, err)
	}
	return u, key, true, u.Err
}

// neverEnded is the stop function of a context.AfterFunc on a context
// that never ends: the function was never started, so stopping it
// succeeds.
func neverEnded() bool { return true }

// joinUnit joins the store's failure to the unit's own error (a held
// call's refusal), so that neither is lost.
func joinUnit(unitErr, err error) error {
	if unitErr == nil {
		return err
	}
	return errors.Join(err, unitErr)
}

// View runs fn with a context carrying one read-only transaction (at
// repeatable read on PostgreSQL; SQLite reads from one snapshot
// whatever): [Store.Read] and the host's own queries through [Tx] then
// see the same moment of the database, as replaying a live database
// needs. The transaction is rolled back when fn returns.
func (s *Store) View(ctx context.Context, fn func(ctx context.Context) error) error {
	if err := s.made(); err != nil {
		return err
	}
	opts := &sql.TxOptions{ReadOnly: true}
	if s.dialect == PostgreSQL {
		opts.Isolation = sql.LevelRepeatableRead
	}
	tx, err := s.readers.BeginTx(ctx, opts)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	return fn(context.WithValue(ctx, txKey{}, &unitCtx{tx: tx}))
}

// serialConn returns a connection holding the session advisory lock of
// Options.Serial, taken before any transaction begins on it.
func (s *Store) serialConn(ctx context.Context) (*sql.Conn, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", serialLockKey); err != nil {
		s.discard(conn)
		return nil, err
	}
	return conn, nil
}

// releaseSerial releases the lock of serialConn and gives the connection
// back to the pool; a connection whose unlock failed is closed, so that
// its lock dies with its session.
func (s *Store) releaseSerial(ctx context.Context, conn *sql.Conn) {
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rolledBackTimeout)
	defer cancel()
	if _, err := conn.ExecContext(uctx, "SELECT pg_advisory_unlock($1)", serialLockKey); err != nil {
		s.discard(conn)
		return
	}
	_ = conn.Close()
}

// discard closes conn's driver connection instead of pooling it.
func (s *Store) discard(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	_ = conn.Close()
}
