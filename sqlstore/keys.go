package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/actionreg/actions/store"
)

// keysTable holds the idempotency keys: one row per (principal, action,
// key), a claim (answer ”) committed before its unit runs, then the
// unit's answer, so that its unique key decides which of two racing
// units runs. Schema version 8 adds origin (keysOrigin): the
// Options.Origin of the store that claimed the key, whose
// SettleOrphans answers the claim if its process died.
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

// keysOrigin gives each key's row the origin of the store that claimed
// it; the rows of older releases get the empty origin.
const keysOrigin = `ALTER TABLE actions_keys ADD COLUMN origin TEXT NOT NULL DEFAULT ''`

// ClaimKey claims the key of claim for a unit about to run, as
// [store.KeyStore] says; with [Store.SettleKey] it makes *Store an
// store.KeyStore, shared by every replica of the database. It runs
// one short transaction of its own (the driver's default isolation,
// read committed on PostgreSQL), which commits before the unit begins,
// so that the claim is durable before any body runs: it deletes the
// key's row if it expired at now, inserts claim (answer ”, origin
// the store's Options.Origin, for [Store.SettleOrphans]), and, when a
// row is there already, reads it, then the records of its unit (those
// of a unit kept though it rolled back included). On PostgreSQL an
// insert that meets a row another transaction is writing waits for it
// (the end of a unit: short); on SQLite the transaction waits for the
// write lock, which a running unit holds, so a retry there finds the
// first call settled. Conflicts are retried as [Store.Atomic] retries
// them.
func (s *Store) ClaimKey(ctx context.Context, claim store.KeyRecord, now time.Time) (*store.KeyRecord, error) {
	if err := s.made(); err != nil {
		return nil, err
	}
	if err := s.writers.enter(ctx); err != nil {
		return nil, err
	}
	var found *store.KeyRecord
	err := s.retry(ctx, func(int) error {
		found = nil
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }()
		where := " WHERE principal = " + s.param(1) + " AND action = " + s.param(2) + " AND idem_key = " + s.param(3)
		if _, err := tx.ExecContext(ctx, "DELETE FROM actions_keys"+where+" AND expires <= "+s.param(4),
			claim.Principal, claim.Action, claim.Key, now.UnixMicro()); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, "INSERT INTO actions_keys (principal, action, idem_key, digest, expires, unit, answer, origin) VALUES ("+
			s.params(6)+", '', "+s.param(7)+") ON CONFLICT DO NOTHING",
			claim.Principal, claim.Action, claim.Key, claim.Digest, claim.Expires.UnixMicro(), claim.Unit, s.opts.Origin)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			var (
				row     = store.KeyRecord{Principal: claim.Principal, Action: claim.Action, Key: claim.Key}
				answer  string
				expires int64
			)
			if err := tx.QueryRowContext(ctx, "SELECT digest, expires, unit, answer FROM actions_keys"+where,
				claim.Principal, claim.Action, claim.Key).Scan(&row.Digest, &expires, &row.Unit, &answer); err != nil {
				return err
			}
			row.Expires = time.UnixMicro(expires).UTC()
			if answer != "" {
				row.Answer = json.RawMessage(answer)
			}
			found = &row
		}
		return tx.Commit()
	})
	s.writers.leave()
	if err != nil || found == nil || found.Answer == nil {
		return found, err
	}
	rows, err := s.Read(ctx, Filter{Unit: found.Unit, Kept: KeptAndUndone}) // a kept unit's records are rolled back
	if err != nil {
		return nil, err
	}
	found.Records = make([]store.Record, len(rows))
	for i, r := range rows {
		found.Records[i] = r.Record
	}
	return found, nil
}

// SettleKey says, inside a unit of the store (ctx is the context
// [Store.Atomic] gave fn), what the unit leaves under a key, as
// [store.KeyStore] says: done is written (an upsert, its unit the
// unit's id in the run log) in the unit's transaction just before it
// commits, after the unit's records; undone, when the unit does not
// commit, in the transaction that writes its rolled-back records. The
// claim ClaimKey committed stays in between: no replica finds the key
// free while the unit settles. Outside a unit it returns an error.
func (s *Store) SettleKey(ctx context.Context, done, undone store.KeyRecord) error {
	u := unitOf(ctx)
	if u == nil || u.settle.store != s {
		return errors.New("sqlstore: SettleKey called outside a unit of the store")
	}
	st := &u.settle
	st.set, st.done, st.undone = true, done, undone
	return nil
}

// settlement is what an attempt of a unit settled under a key.
type settlement struct {
	store        *Store
	set          bool
	done, undone store.KeyRecord
}

// writeKey writes row in tx for unit: an upsert when it has an answer;
// otherwise the deletion of the claim row.Unit names, if any. The claim's
// token names it alone: a claim answered meanwhile was answered by
// SettleOrphans (a replica of the same origin), and is deleted too, as
// no body of its unit started.
func (s *Store) writeKey(ctx context.Context, tx *sql.Tx, unit string, row store.KeyRecord) error {
	if row.Answer == nil {
		if row.Unit == "" {
			return nil
		}
		_, err := tx.ExecContext(ctx, "DELETE FROM actions_keys WHERE principal = "+s.param(1)+" AND action = "+s.param(2)+
			" AND idem_key = "+s.param(3)+" AND unit = "+s.param(4), row.Principal, row.Action, row.Key, row.Unit)
		return err
	}
	_, err := tx.ExecContext(ctx, "INSERT INTO actions_keys (principal, action, idem_key, digest, expires, unit, answer, origin) VALUES ("+
		s.params(8)+") ON CONFLICT (principal, action, idem_key) DO UPDATE SET digest = excluded.digest, expires = excluded.expires, unit = excluded.unit, answer = excluded.answer",
		row.Principal, row.Action, row.Key, row.Digest, row.Expires.UnixMicro(), unit, string(row.Answer), s.opts.Origin)
	return err
}

// keyTaken is the error of an insert that found a row committed after
// the attempt began: a conflict ([IsConflict]), so that the attempt is
// retried and reads it.
type keyTaken struct{}

func (keyTaken) Error() string    { return "sqlstore: the key was taken meanwhile" }
func (keyTaken) SQLState() string { return "40001" }

var errKeyTaken error = keyTaken{}

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
