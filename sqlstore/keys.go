package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/actionreg/actions"
)

// keysTable holds the units run under idempotency keys: one row per
// (principal, action, key), written in the unit's own transaction, so
// that its unique key decides which of two racing units runs.
func keysTable(integer string) string {
	return `CREATE TABLE IF NOT EXISTS actions_keys (
		principal TEXT NOT NULL,
		action TEXT NOT NULL,
		idem_key TEXT NOT NULL,
		digest TEXT NOT NULL,
		expires ` + integer + ` NOT NULL,
		unit TEXT NOT NULL,
		answer TEXT NOT NULL,
		PRIMARY KEY (principal, action, idem_key))`
}

const keysIndex = `CREATE INDEX IF NOT EXISTS actions_keys_expires ON actions_keys (expires)`

// AtomicOnce runs fn at most once under k within its window, across every
// replica sharing the database; it makes *Store an [actions.Store] with
// [Store.Atomic]. Each attempt runs in the unit's transaction:
//
//   - it reads the row of (k.Principal, k.Action, k.Key) in actions_keys.
//     A row whose window has not passed (expires after k.Now) answers:
//     with k.Digest, fn does not run, the transaction is rolled back and
//     the audit line alone is written, in a transaction of its own
//     (Options.BeforeCommit does not run for it); with another digest,
//     k.Conflict() is returned and nothing is written;
//   - otherwise it claims the key by inserting the row (an expired row is
//     deleted first), then runs fn; when the unit commits, the row's
//     answer is written and commits with the unit's changes and records;
//     when it does not, the claim is rolled back with them, and when the
//     unit says Keep (a body started), the key's row is written with its
//     answer in the transaction that writes its rolled-back records (a
//     row written meanwhile by a retry that found no claim stays; see
//     docs/database.md for that window).
//
// A replica whose insert meets a claim not yet committed waits for that
// transaction, on PostgreSQL at most k.Wait (lock_timeout; then
// k.InProgress(), in_progress), then finds its row or, if that unit
// rolled back, claims the key itself; on SQLite transactions that begin
// immediate (dbtest.SQLiteDSN) wait for each other at BEGIN
// (busy_timeout). A claim that conflicts (serialization failure,
// SQLITE_BUSY, a row committed after this attempt's snapshot) is retried
// as Atomic retries. With k.Replace the row is not read: the unit runs and,
// when it commits, its answer replaces the key's.
//
// Errors: those of Atomic; k.Conflict(); k.InProgress().
func (s *Store) AtomicOnce(ctx context.Context, k actions.UnitKey, fn func(ctx context.Context) actions.Unit) ([]actions.Record, *actions.Recorded, error) {
	if err := s.made(); err != nil {
		return nil, nil, err
	}
	unit := NewUnit()
	var answered *actions.Recorded
	recs, err := s.atomic(ctx, unit, func(ctx context.Context) actions.Unit {
		answered = nil
		tx, _ := Tx(ctx)
		if !k.Replace {
			rec, u, done := s.lookupKey(ctx, tx, k)
			if done {
				answered = rec
				return u
			}
			if err := s.claimKey(ctx, tx, k, unit); err != nil {
				return actions.Unit{Err: err}
			}
		}
		u := fn(ctx)
		if u.Commit {
			if err := s.recordKey(ctx, tx, k, unit, u.Answer); err != nil {
				u.Commit, u.Err = false, joinUnit(u.Err, err)
			}
		}
		return u
	}, func(ctx context.Context, tx *sql.Tx, u actions.Unit) error {
		return s.keepKey(ctx, tx, k, unit, u.Answer)
	})
	if answered != nil && err == nil {
		return recs, answered, nil
	}
	return recs, nil, err
}

// lookupKey reads k's row. done is true when the row answers: u is then
// the attempt's unit (the audit line, not committed, or the conflict).
func (s *Store) lookupKey(ctx context.Context, tx *sql.Tx, k actions.UnitKey) (rec *actions.Recorded, u actions.Unit, done bool) {
	var (
		digest, unit, answer string
		expires              int64
	)
	err := tx.QueryRowContext(ctx, "SELECT digest, expires, unit, answer FROM actions_keys WHERE principal = "+s.param(1)+
		" AND action = "+s.param(2)+" AND idem_key = "+s.param(3), k.Principal, k.Action, k.Key).Scan(&digest, &expires, &unit, &answer)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, actions.Unit{}, false
	case err != nil:
		return nil, actions.Unit{Err: err}, true
	case expires <= k.Now.UnixMicro():
		return nil, actions.Unit{}, false // the window passed: claimKey replaces the row
	case digest != k.Digest:
		return nil, actions.Unit{Err: k.Conflict()}, true
	}
	rec = &actions.Recorded{Unit: unit}
	if err := json.Unmarshal([]byte(answer), &rec.Answer); err != nil {
		return nil, actions.Unit{Err: fmt.Errorf("sqlstore: the answer of an idempotency key does not decode: %w", err)}, true
	}
	rows, err := s.Read(ctx, Filter{Unit: unit, Kept: KeptAndUndone}) // a kept unit's records are rolled back
	if err != nil {
		return nil, actions.Unit{Err: err}, true
	}
	rec.Records = make([]actions.Record, len(rows))
	for i, r := range rows {
		rec.Records[i] = r.Record
	}
	// Not committed: the attempt changed nothing, and Atomic writes the
	// audit line (rolled back) in a transaction of its own.
	return rec, actions.Unit{Records: []actions.Record{rec.AuditLine(k.Audit)}}, true
}

// claimKey inserts k's row for unit, its answer empty until the unit
// commits, after deleting a row whose window passed.
func (s *Store) claimKey(ctx context.Context, tx *sql.Tx, k actions.UnitKey, unit string) error {
	where := " WHERE principal = " + s.param(1) + " AND action = " + s.param(2) + " AND idem_key = " + s.param(3)
	if _, err := tx.ExecContext(ctx, "DELETE FROM actions_keys"+where+" AND expires <= "+s.param(4),
		k.Principal, k.Action, k.Key, k.Now.UnixMicro()); err != nil {
		return err
	}
	if s.dialect == PostgreSQL {
		ms := max(k.Wait.Milliseconds(), 1)
		if _, err := tx.ExecContext(ctx, "SET LOCAL lock_timeout = '"+strconv.FormatInt(ms, 10)+"ms'"); err != nil {
			return err
		}
	}
	res, err := tx.ExecContext(ctx, "INSERT INTO actions_keys (principal, action, idem_key, digest, expires, unit, answer) VALUES ("+
		s.param(1)+", "+s.param(2)+", "+s.param(3)+", "+s.param(4)+", "+s.param(5)+", "+s.param(6)+", '') ON CONFLICT DO NOTHING",
		k.Principal, k.Action, k.Key, k.Digest, k.Expires.UnixMicro(), unit)
	if err != nil {
		if sqlState(err) == "55P03" { // lock_not_available: the first unit is still running
			return k.InProgress()
		}
		return err
	}
	if s.dialect == PostgreSQL {
		if _, err := tx.ExecContext(ctx, "SET LOCAL lock_timeout TO DEFAULT"); err != nil {
			return err
		}
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		// A unit under the key committed after this attempt began: a
		// new attempt reads its row.
		return errKeyTaken
	}
	return nil
}

// recordKey writes the answer of the unit that commits under k.
func (s *Store) recordKey(ctx context.Context, tx *sql.Tx, k actions.UnitKey, unit string, a actions.Answer) error {
	text, err := actions.CanonicalJSON(a)
	if err != nil {
		return fmt.Errorf("sqlstore: the answer of an idempotency key: %w", err)
	}
	_, err = tx.ExecContext(ctx, "INSERT INTO actions_keys (principal, action, idem_key, digest, expires, unit, answer) VALUES ("+
		s.param(1)+", "+s.param(2)+", "+s.param(3)+", "+s.param(4)+", "+s.param(5)+", "+s.param(6)+", "+s.param(7)+
		") ON CONFLICT (principal, action, idem_key) DO UPDATE SET digest = excluded.digest, expires = excluded.expires, unit = excluded.unit, answer = excluded.answer",
		k.Principal, k.Action, k.Key, k.Digest, k.Until(a).UnixMicro(), unit, string(text))
	return err
}

// keepKey records under k the answer of a unit that did not commit but
// is kept ([actions.Unit].Keep), in the transaction that writes its
// rolled-back records, after the unit's own transaction (and its claim)
// rolled back. A row another unit wrote meanwhile (a retry that found no
// claim in that window and ran) stays: its outcome is the key's; an
// expired row is replaced.
func (s *Store) keepKey(ctx context.Context, tx *sql.Tx, k actions.UnitKey, unit string, a actions.Answer) error {
	text, err := actions.CanonicalJSON(a)
	if err != nil {
		return fmt.Errorf("sqlstore: the answer of an idempotency key: %w", err)
	}
	_, err = tx.ExecContext(ctx, "INSERT INTO actions_keys (principal, action, idem_key, digest, expires, unit, answer) VALUES ("+
		s.param(1)+", "+s.param(2)+", "+s.param(3)+", "+s.param(4)+", "+s.param(5)+", "+s.param(6)+", "+s.param(7)+
		") ON CONFLICT (principal, action, idem_key) DO UPDATE SET digest = excluded.digest, expires = excluded.expires, unit = excluded.unit, answer = excluded.answer"+
		" WHERE actions_keys.expires <= "+s.param(8),
		k.Principal, k.Action, k.Key, k.Digest, k.Until(a).UnixMicro(), unit, string(text), k.Now.UnixMicro())
	return err
}

// keyTaken is the error of a claim that found a row committed after the
// attempt began: a conflict ([IsConflict]), so that the attempt is
// retried.
type keyTaken struct{}

func (keyTaken) Error() string    { return "sqlstore: the idempotency key was claimed meanwhile" }
func (keyTaken) SQLState() string { return "40001" }

var errKeyTaken error = keyTaken{}

// sqlState is the SQLSTATE of err, "" for none.
func sqlState(err error) string {
	var st interface{ SQLState() string }
	if errors.As(err, &st) {
		return st.SQLState()
	}
	return ""
}

// PurgeExpired deletes the idempotency keys whose window passed before
// now, and the rate-limit buckets that are full again at now (their
// next call would find them as new), in one transaction; it returns how
// many rows it deleted. The store never purges by itself: a host calls
// it from time to time (hourly, say) from one replica.
func (s *Store) PurgeExpired(ctx context.Context, now time.Time) (int64, error) {
	if err := s.made(); err != nil {
		return 0, err
	}
	var n int64
	err := s.retry(ctx, func(int) error {
		n = 0
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }()
		for _, q := range []string{"DELETE FROM actions_keys WHERE expires <= ", "DELETE FROM actions_rate WHERE tat <= "} {
			res, err := tx.ExecContext(ctx, q+s.param(1), now.UnixMicro())
			if err != nil {
				return err
			}
			d, _ := res.RowsAffected()
			n += d
		}
		return tx.Commit()
	})
	return n, err
}
