package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/actionreg/actions"
)

// PendingStore keeps the gate's pending changes ([actions.PendingStore])
// in the table actions_pending of the store's database, so that every
// replica sees the changes any of them held, and a decision runs in one
// transaction with its records: inside a unit ([Store.Atomic]), Take
// deletes the change in the unit's transaction, so a confirmed call
// whose transaction rolls back leaves the change in place, and two
// confirmations of one change run it once (the second finds nothing, or
// conflicts and finds nothing when retried). Hold writes in the unit's
// transaction too: a held call's unit commits, so the change is kept
// with its record.
type PendingStore struct {
	s *Store
}

// Pending returns the store's pending-change store; pass it as
// actions.GateOptions.Pending.
func (s *Store) Pending() *PendingStore { return &PendingStore{s: s} }

// made refuses a PendingStore not made by Store.Pending.
func (p *PendingStore) made() error {
	if p == nil || p.s == nil {
		return errNotMade
	}
	return p.s.made()
}

// queryer is what both *sql.DB and *sql.Tx offer.
type queryer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// on returns the unit's transaction that ctx carries, or the database.
func (p *PendingStore) on(ctx context.Context) queryer {
	if tx, ok := Tx(ctx); ok {
		return tx
	}
	return p.s.db
}

// Hold stores c, and drops the changes that expired before c was made.
func (p *PendingStore) Hold(ctx context.Context, c actions.PendingChange) error {
	if err := p.made(); err != nil {
		return err
	}
	text, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("sqlstore: pending change: %w", err)
	}
	s := p.s
	if tx, ok := Tx(ctx); ok {
		return p.hold(ctx, tx, c, string(text))
	}
	return s.retry(ctx, func(int) error {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }()
		if err := p.hold(ctx, tx, c, string(text)); err != nil {
			return err
		}
		return tx.Commit()
	})
}

func (p *PendingStore) hold(ctx context.Context, tx *sql.Tx, c actions.PendingChange, text string) error {
	s := p.s
	if _, err := tx.ExecContext(ctx, "DELETE FROM actions_pending WHERE expires <= "+s.param(1), c.Created.UnixMicro()); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, "INSERT INTO actions_pending (id, principal, expires, change) VALUES ("+
		s.param(1)+", "+s.param(2)+", "+s.param(3)+", "+s.param(4)+")",
		c.ID, c.Proposer.Principal, c.Expires.UnixMicro(), text)
	return err
}

// Get returns the change with the id, or actions.ErrNoPendingChange.
func (p *PendingStore) Get(ctx context.Context, id string) (actions.PendingChange, error) {
	if err := p.made(); err != nil {
		return actions.PendingChange{}, err
	}
	var text string
	err := p.on(ctx).QueryRowContext(ctx, "SELECT change FROM actions_pending WHERE id = "+p.s.param(1), id).Scan(&text)
	return decodeChange(text, err)
}

// Take deletes the change with the id and returns it, once; inside a
// unit, in its transaction.
func (p *PendingStore) Take(ctx context.Context, id string) (actions.PendingChange, error) {
	if err := p.made(); err != nil {
		return actions.PendingChange{}, err
	}
	var text string
	err := p.on(ctx).QueryRowContext(ctx, "DELETE FROM actions_pending WHERE id = "+p.s.param(1)+" RETURNING change", id).Scan(&text)
	return decodeChange(text, err)
}

// List returns the changes principal proposed, newest first.
func (p *PendingStore) List(ctx context.Context, principal string) ([]actions.PendingChange, error) {
	return p.list(ctx, "SELECT change FROM actions_pending WHERE principal = "+p.s.param(1), principal)
}

// ListAll returns every change the table holds, newest first (expired
// ones until a Hold drops them).
func (p *PendingStore) ListAll(ctx context.Context) ([]actions.PendingChange, error) {
	return p.list(ctx, "SELECT change FROM actions_pending")
}

func (p *PendingStore) list(ctx context.Context, query string, args ...any) ([]actions.PendingChange, error) {
	if err := p.made(); err != nil {
		return nil, err
	}
	q, ok := p.on(ctx).(interface {
		QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	})
	if !ok {
		return nil, errors.New("sqlstore: the transaction cannot query")
	}
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []actions.PendingChange
	for rows.Next() {
		var text string
		if err := rows.Scan(&text); err != nil {
			return nil, err
		}
		c, err := decodeChange(text, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.After(out[j].Created)
		}
		return out[i].ID < out[j].ID
	})
	return out, rows.Err()
}

func decodeChange(text string, err error) (actions.PendingChange, error) {
	if errors.Is(err, sql.ErrNoRows) {
		return actions.PendingChange{}, actions.ErrNoPendingChange
	}
	if err != nil {
		return actions.PendingChange{}, err
	}
	var c actions.PendingChange
	if err := json.Unmarshal([]byte(text), &c); err != nil {
		return actions.PendingChange{}, fmt.Errorf("sqlstore: pending change: %w", err)
	}
	return c, nil
}
