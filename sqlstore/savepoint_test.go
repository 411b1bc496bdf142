package sqlstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/internal/dbtest"
	"github.com/actionreg/actions/sqlstore"
	"github.com/actionreg/actions/store"
)

// TestNestedCallSavepoint: a nested call is a savepoint of its unit: when
// it is refused (its own refusal, or a failed statement), its writes are
// undone while the outer body carries on and commits; a nested call done
// keeps its writes. The entries and the data agree.
func TestNestedCallSavepoint(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		createCharges(t, db)
		s, err := sqlstore.New(db.DB, db.Dialect, nil)
		require.NoError(t, err)
		require.NoError(t, s.Migrate(context.Background()))
		reg := actions.NewRegistry(&actions.Options{Store: s})
		insert := func(ctx context.Context, amount string) error {
			_, err := txOf(ctx).ExecContext(ctx, db.Dialect.Rebind("INSERT INTO charges (amount) VALUES (?)"), amount)
			return err
		}
		reg.MustRegister(
			actions.New(actions.Definition{ID: "t/declined"}, func(ctx context.Context, _ map[string]any, _ *actions.Trace) (any, error) {
				if err := insert(ctx, "declined"); err != nil {
					return nil, err
				}
				return nil, actions.NewRefusal("card_declined", "the card was declined")
			}),
			actions.New(actions.Definition{ID: "t/broken"}, func(ctx context.Context, _ map[string]any, _ *actions.Trace) (any, error) {
				if err := insert(ctx, "broken"); err != nil {
					return nil, err
				}
				_, err := txOf(ctx).ExecContext(ctx, "INSERT INTO no_such_table VALUES (1)") // PostgreSQL: the transaction is in error
				return nil, err
			}),
			actions.New(actions.Definition{ID: "t/fine"}, func(ctx context.Context, _ map[string]any, _ *actions.Trace) (any, error) {
				return "fine", insert(ctx, "fine")
			}),
			actions.New(actions.Definition{ID: "t/outer"}, func(ctx context.Context, _ map[string]any, tr *actions.Trace) (any, error) {
				if err := insert(ctx, "outer-1"); err != nil {
					return nil, err
				}
				for _, id := range []string{"t/declined", "t/broken", "t/fine"} {
					_, _ = tr.Call(ctx, id, nil) // refusals swallowed: the outer body carries on
				}
				return "carried on", insert(ctx, "outer-2")
			}),
		)
		res, err := reg.Run(context.Background(), actions.Call{Action: "t/outer"})
		require.NoError(t, err)
		steps := res.Entry().Steps
		require.Len(t, steps, 3)
		assert.Equal(t, store.OutcomeRefused, steps[0].Call.Outcome)
		assert.Equal(t, store.OutcomeRefused, steps[1].Call.Outcome)
		assert.Equal(t, store.OutcomeDone, steps[2].Call.Outcome)
		rows, err := db.Query("SELECT amount FROM charges ORDER BY amount")
		require.NoError(t, err)
		defer rows.Close()
		var got []string
		for rows.Next() {
			var a string
			require.NoError(t, rows.Scan(&a))
			got = append(got, a)
		}
		assert.Equal(t, []string{"fine", "outer-1", "outer-2"}, got, "the refused calls' writes were undone, the rest kept")
	})
}
