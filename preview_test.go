package actions_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/internal/dbtest"
	"github.com/actionreg/actions/sqlstore"
	"github.com/actionreg/actions/store"
)

// previewRegistry has orders/plan (Preview), whose body draws an id
// (Trace.NewID), writes it, and ships it through orders/ship, which
// needs confirmation; orders reads the table outside any unit.
func previewRegistry(t *testing.T, db *dbtest.DB, st store.Store, pending actions.PendingStore) (*actions.Registry, func() []string) {
	t.Helper()
	ctx := context.Background()
	_, err := db.ExecContext(ctx, `CREATE TABLE orders (id TEXT NOT NULL)`)
	require.NoError(t, err)
	write := func(ctx context.Context, id any) error {
		tx, ok := sqlstore.Tx(ctx)
		if !ok {
			_, err := db.ExecContext(ctx, db.Q(`INSERT INTO orders (id) VALUES (?)`), id)
			return err
		}
		_, err := tx.ExecContext(ctx, db.Q(`INSERT INTO orders (id) VALUES (?)`), id)
		return err
	}
	reg := actions.NewRegistry(&actions.Options{Store: st, Gate: &actions.GateOptions{Pending: pending}})
	reg.MustRegister(
		actions.New(actions.Definition{ID: "orders/ship", NeedsConfirmation: true,
			Parameters: `{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`},
			func(ctx context.Context, p map[string]any, _ *actions.Trace) (any, error) {
				return "shipped", write(ctx, "shipped:"+p["id"].(string))
			}),
		actions.New(actions.Definition{ID: "orders/plan", Preview: true},
			func(ctx context.Context, _ map[string]any, tr *actions.Trace) (any, error) {
				id := tr.NewID()
				if err := write(ctx, id); err != nil {
					return nil, err
				}
				if _, err := tr.Call(ctx, "orders/ship", map[string]any{"id": id}); err != nil {
					return nil, err
				}
				return id, nil
			}),
	)
	rows := func() []string {
		r, err := db.QueryContext(ctx, `SELECT id FROM orders ORDER BY id`)
		require.NoError(t, err)
		defer r.Close()
		out := []string{}
		for r.Next() {
			var s string
			require.NoError(t, r.Scan(&s))
			out = append(out, s)
		}
		return out
	}
	return reg, rows
}

// TestPreviewHoldsWholeAndConfirmsAsShown: a call of an action with
// Preview whose body makes a call needing confirmation runs first,
// undone, and is held with the preview's entry; confirmed, it runs
// again with the value it drew given back, and is kept.
func TestPreviewHoldsWholeAndConfirmsAsShown(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		ctx := context.Background()
		st, err := sqlstore.New(db.DB, db.Dialect, nil)
		require.NoError(t, err)
		require.NoError(t, st.Migrate(ctx))
		reg, rows := previewRegistry(t, db, st, st.Pending())
		agent := &identity.Caller{Principal: "ann", Surface: identity.SurfaceAI}
		person := &identity.Caller{Principal: "ann", Surface: identity.SurfaceUI}

		res, err := reg.Run(ctx, actions.Call{Action: "orders/plan", Caller: agent})
		var rf *actions.Refusal
		require.ErrorAs(t, err, &rf)
		require.Equal(t, codes.ConfirmationRequired, rf.Code)
		assert.Empty(t, rows(), "the preview is undone")
		require.Len(t, res.Records, 1)
		assert.Equal(t, store.StageHeld, res.Records[0].Audit.Stage)

		pc, err := reg.PendingChange(ctx, rf.Pending.ID, person)
		require.NoError(t, err)
		require.NotNil(t, pc.Preview)
		require.Len(t, pc.Preview.Steps, 2)
		drawn := pc.Preview.Steps[0].Result // the id, as JSON text
		ship := pc.Preview.Steps[1].Call
		require.NotNil(t, ship)
		assert.Equal(t, "orders/ship", ship.Action)
		assert.Equal(t, `{"id":`+drawn+`}`, ship.Parameters)

		res, err = reg.Decide(ctx, actions.Decision{Change: pc.ID, Confirm: true, Caller: person})
		require.NoError(t, err)
		assert.Equal(t, drawn, res.Text, "the confirmed run draws the id the person saw")
		id := drawn[1 : len(drawn)-1]
		assert.Equal(t, []string{id, "shipped:" + id}, rows())
	})
}

// TestPreviewNeedsSavepoints: with a store that cannot undo part of a
// unit, nothing is previewed: the nested call that needs confirmation is
// refused, and nothing is held.
func TestPreviewNeedsSavepoints(t *testing.T) {
	db := dbtest.SQLite(t)
	reg, _ := previewRegistry(t, db, actions.NewRunLog(), nil)
	ann := &identity.Caller{Principal: "ann", Surface: identity.SurfaceAI}
	_, err := reg.Run(context.Background(), actions.Call{Action: "orders/plan", Caller: ann})
	require.Error(t, err)
	var rf *actions.Refusal
	require.ErrorAs(t, err, &rf)
	assert.Nil(t, rf.Pending, "nothing is held")
	all, err := reg.PendingChanges(context.Background(), ann)
	require.NoError(t, err)
	assert.Empty(t, all)
}
