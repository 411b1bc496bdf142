package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/actionreg/actions"
)

// DefaultMaxAttempts is Options.MaxAttempts when left zero.
const DefaultMaxAttempts = 20

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

// TxHost builds the host of one attempt of a call or batch on the
// attempt's transaction: its Env gives the bodies tx, so
// that what they change is committed or rolled back with the run
// entries. It runs once per attempt; nil, or a nil result, runs without
// a host (and the bodies cannot reach tx).
type TxHost[C any] func(tx *sql.Tx) *actions.Host[C]

// Runner runs calls and batches of a registry, each in one transaction of
// the store's database, and writes their entries to the store. It is
// safe for concurrent use.
type Runner[C any] struct {
	store *Store
	reg   *actions.Registry[C]
	// BeforeCommit, when set, runs in each attempt after the entries are
	// appended and just before the commit: a host writes there what must
	// commit with the unit (an outbox row), or checks an invariant. Its
	// error rolls the attempt back and is handled as the run's own (a
	// conflict is retried). Set it before the first call.
	BeforeCommit func(ctx context.Context, tx *sql.Tx) error
}

// NewRunner returns a runner of reg's actions on store.
func NewRunner[C any](store *Store, reg *actions.Registry[C]) *Runner[C] {
	return &Runner[C]{store: store, reg: reg}
}

// Run runs the action id in one transaction (see [Runner.RunBatch] for
// what happens to the transaction and the entry); it returns what
// [actions.Registry.Run] returns, or the database's error.
//
// A call the gate holds for confirmation (confirmation_required: its body
// did not run) commits its transaction: with a [PendingStore] as the
// gate's store, the pending change and the call's refused entry are kept
// together. In a batch such a step is refused like any other and rolled
// back with the batch, its pending change with it: call the action alone
// to have it held.
func (r *Runner[C]) Run(ctx context.Context, id string, params any, host TxHost[C]) (any, actions.RunEntry, error) {
	result, entries, err := r.do(ctx, host, func(ctx context.Context, h *actions.Host[C]) (any, []actions.RunEntry, error) {
		res, e, err := r.reg.Run(ctx, id, params, h)
		return res, []actions.RunEntry{e}, err
	})
	var entry actions.RunEntry
	if len(entries) > 0 {
		entry = entries[0]
	}
	return result, entry, err
}

// RunBatch runs b ([actions.Registry.RunBatch]) in one transaction opened with the
// store's isolation level (serializable by default), and records its
// entries:
//
//   - when every call is done, the entries are appended in the same
//     transaction, which is then committed: a change is never kept
//     without its entry, nor an entry without its change;
//   - when a call is refused or fails (or the append or the commit
//     fails), the transaction is rolled back, and the entries of the
//     calls made are then appended in a transaction of their own, marked
//     rolled back (an audit trail; a replay skips them). That write uses
//     a context detached from ctx's cancellation, bounded to 10 s, so a
//     cancelled call still leaves its trail;
//   - when the failure is a conflict ([IsConflict]: a serialization
//     failure, a deadlock, SQLITE_BUSY), the whole batch runs again in a
//     new transaction, after Options.Backoff, at most Options.MaxAttempts
//     times in all; the entries of an attempt retried are dropped, so the
//     log holds each call of the batch once, under one unit id.
//
// host builds each attempt's host on its transaction (see [TxHost]). Its
// OnEntry and OnAudit, if any, are not called per attempt: they receive
// the final attempt's entries and audit records once the outcome is
// settled (after the commit, or after the rolled-back entries are
// written). Each entry is stored with its audit record (who called:
// [actions.Audit]).
//
// It returns the batch's result and entries and the error of
// [actions.Registry.RunBatch], or the database's error (BeginTx, the append, the
// commit), the last conflict when the attempts ran out, or ctx.Err()
// joined to the last conflict when ctx ended during a backoff.
func (r *Runner[C]) RunBatch(ctx context.Context, b actions.Batch, host TxHost[C]) (any, []actions.RunEntry, error) {
	return r.do(ctx, host, func(ctx context.Context, h *actions.Host[C]) (any, []actions.RunEntry, error) {
		return r.reg.RunBatch(ctx, b, h)
	})
}

// Confirm runs the pending change id ([actions.Registry.Confirm]) in one
// transaction, as [Runner.RunBatch] runs a batch: with a [PendingStore]
// as the gate's store, the change is taken in that transaction, so the
// change, what its body changed and its entry are kept or undone
// together.
func (r *Runner[C]) Confirm(ctx context.Context, id string, host TxHost[C]) (any, actions.RunEntry, error) {
	result, entries, err := r.do(ctx, host, func(ctx context.Context, h *actions.Host[C]) (any, []actions.RunEntry, error) {
		res, e, err := r.reg.Confirm(ctx, id, h)
		if e.Action == "" {
			return res, nil, err // refused before any call: no entry
		}
		return res, []actions.RunEntry{e}, err
	})
	var entry actions.RunEntry
	if len(entries) > 0 {
		entry = entries[0]
	}
	return result, entry, err
}

// txKey is the context key of the attempt's transaction.
type txKey struct{}

// TxFrom returns the transaction of the Runner attempt that ctx belongs
// to: the context a body, a resolver or an [actions.PendingStore] receives
// during [Runner.Run], [Runner.RunBatch] or [Runner.Confirm] carries it.
// ok is false outside a Runner.
func TxFrom(ctx context.Context) (tx *sql.Tx, ok bool) {
	tx, ok = ctx.Value(txKey{}).(*sql.Tx)
	return tx, ok
}

// rolledBackTimeout bounds the write of a rolled-back unit's entries.
const rolledBackTimeout = 10 * time.Second

type runFunc[C any] func(ctx context.Context, h *actions.Host[C]) (any, []actions.RunEntry, error)

func (r *Runner[C]) do(ctx context.Context, host TxHost[C], run runFunc[C]) (any, []actions.RunEntry, error) {
	s := r.store
	unit := NewUnit()
	for attempt := 1; ; attempt++ {
		result, entries, out, err := r.attempt(ctx, host, unit, run)
		if errors.Is(err, sql.ErrTxDone) && ctx.Err() != nil {
			// database/sql rolled the transaction back when ctx ended;
			// the end of ctx is the cause.
			err = ctx.Err()
		}
		if err == nil || out.committed {
			out.deliver(entries)
			return result, entries, err
		}
		if IsConflict(err) && attempt < s.opts.MaxAttempts {
			werr := s.wait(ctx, attempt)
			if werr == nil {
				continue
			}
			err = errors.Join(werr, err)
		}
		if len(entries) > 0 {
			wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rolledBackTimeout)
			werr := s.Write(wctx, out.pending(entries, unit, true)...)
			cancel()
			if werr != nil {
				err = errors.Join(err, werr)
			}
		}
		out.deliver(entries)
		return nil, entries, err
	}
}

// outcome is what an attempt leaves for the caller: the audit records of
// its calls, and the host's own hooks, called once the outcome is
// settled.
type outcome struct {
	// committed is true when the transaction committed although the run
	// returned an error: a call held for confirmation.
	committed bool
	audits    []actions.Audit
	onEntry   func(actions.RunEntry)
	onAudit   func(actions.RunEntry, actions.Audit)
}

// attempt runs once in a new transaction and commits when all went well.
// It returns the entries made (none when the transaction did not begin),
// their audits and the host's hooks, and the error that stopped it.
func (r *Runner[C]) attempt(ctx context.Context, host TxHost[C], unit string, run runFunc[C]) (any, []actions.RunEntry, *outcome, error) {
	out := &outcome{}
	s := r.store
	var tx *sql.Tx
	if s.opts.Serial && s.dialect == PostgreSQL {
		conn, err := s.serialConn(ctx)
		if err != nil {
			return nil, nil, out, err
		}
		defer s.releaseSerial(ctx, conn)
		if tx, err = conn.BeginTx(ctx, &sql.TxOptions{Isolation: s.opts.Isolation}); err != nil {
			return nil, nil, out, err
		}
	} else {
		var err error
		if tx, err = s.db.BeginTx(ctx, &sql.TxOptions{Isolation: s.opts.Isolation}); err != nil {
			return nil, nil, out, err
		}
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit; runs before releaseSerial
	var h actions.Host[C]
	if host != nil {
		if hp := host(tx); hp != nil {
			h = *hp
		}
	}
	out.onEntry, out.onAudit = h.OnEntry, h.OnAudit
	h.OnEntry = nil
	h.OnAudit = func(_ actions.RunEntry, a actions.Audit) { out.audits = append(out.audits, a) }
	tctx := context.WithValue(ctx, txKey{}, tx)
	result, entries, err := run(tctx, &h)
	held := err != nil && len(entries) == 1 && errors.Is(err, actions.ErrConfirmationRequired) && !isStep(err)
	if err != nil && !held {
		return nil, entries, out, err
	}
	if aerr := s.Append(ctx, tx, out.pending(entries, unit, false)...); aerr != nil {
		return nil, entries, out, aerr
	}
	if r.BeforeCommit != nil {
		if berr := r.BeforeCommit(tctx, tx); berr != nil {
			return nil, entries, out, berr
		}
	}
	if cerr := tx.Commit(); cerr != nil {
		return nil, entries, out, cerr
	}
	out.committed = true
	return result, entries, out, err
}

// isStep reports whether err is a batch step's.
func isStep(err error) bool {
	var se *actions.StepError
	return errors.As(err, &se)
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

// pending are the records of entries, each with its audit record when
// the registry gave one per entry.
func (o *outcome) pending(entries []actions.RunEntry, unit string, rolledBack bool) []Row {
	recs := make([]Row, len(entries))
	for i, e := range entries {
		recs[i] = Row{Unit: unit, Position: i, RolledBack: rolledBack, Entry: e}
		if len(o.audits) == len(entries) {
			recs[i].Audit = &o.audits[i]
		}
	}
	return recs
}

// deliver gives the host's hooks the settled entries and audits.
func (o *outcome) deliver(entries []actions.RunEntry) {
	for i, e := range entries {
		if o.onEntry != nil {
			o.onEntry(e)
		}
		if o.onAudit != nil && len(o.audits) == len(entries) {
			o.onAudit(e, o.audits[i])
		}
	}
}
