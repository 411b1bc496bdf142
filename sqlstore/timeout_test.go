package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/internal/dbtest"
	"github.com/actionreg/actions/sqlstore"
)

// TestTimeoutAnsweredAtTheDeadline: a body that writes, then waits
// ignoring its context, is answered timeout at its deadline while it
// still runs; its unit is rolled back then, so the statement it sends
// once let go fails and nothing commits.
func TestTimeoutAnsweredAtTheDeadline(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		createCharges(t, db)
		s, err := sqlstore.New(db.DB, db.Dialect, nil)
		require.NoError(t, err)
		require.NoError(t, s.Migrate(context.Background()))
		reg := actions.NewRegistry(&actions.Options{Store: s})
		release := make(chan struct{})
		later := make(chan error, 1) // the error of the body's statement after the deadline
		reg.MustRegister(actions.Action{Definition: actions.Definition{ID: "shop/stuck", Parameters: `{"type":"object"}`, Timeout: 200 * time.Millisecond},
			Run: func(ctx context.Context, _ map[string]any, _ *actions.Trace) (any, error) {
				tx := txOf(ctx)
				if _, err := tx.Exec("INSERT INTO charges (amount) VALUES ('1')"); err != nil {
					return nil, err
				}
				<-release // ignores ctx
				_, err := tx.Exec("INSERT INTO charges (amount) VALUES ('2')")
				later <- err
				return "done", nil
			}})
		res, err := reg.Run(context.Background(), actions.Call{Action: "shop/stuck"})
		// The body is still blocked here: the answer came at the deadline.
		require.ErrorIs(t, err, codes.Timeout)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		require.Len(t, res.Records, 1)
		assert.True(t, res.Records[0].RolledBack)
		assert.Equal(t, 0, chargeCount(t, db), "the unit was rolled back at the deadline")
		close(release)
		require.Error(t, <-later, "the transaction ended: the body's later statement fails")
		assert.Equal(t, 0, chargeCount(t, db), "nothing commits")
		kept, err := s.Read(context.Background(), sqlstore.Filter{})
		require.NoError(t, err)
		assert.Empty(t, kept)
	})
}

// TestTimeoutByTheClock: a body that returns after its deadline by the
// registry's clock, before the context's timer fired, is not accepted as
// done: timeout, its writes undone.
func TestTimeoutByTheClock(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		createCharges(t, db)
		s, err := sqlstore.New(db.DB, db.Dialect, nil)
		require.NoError(t, err)
		require.NoError(t, s.Migrate(context.Background()))
		clock := &keyClock{t: time.Unix(1e9, 0)}
		reg := actions.NewRegistry(&actions.Options{Now: clock.now, Store: s})
		reg.MustRegister(actions.Action{Definition: actions.Definition{ID: "shop/late", Parameters: `{"type":"object"}`, Timeout: time.Hour},
			Run: func(ctx context.Context, _ map[string]any, _ *actions.Trace) (any, error) {
				if _, err := txOf(ctx).ExecContext(ctx, "INSERT INTO charges (amount) VALUES ('1')"); err != nil {
					return nil, err
				}
				clock.add(time.Hour) // the deadline passes by the clock; the context's timer (an hour) has not fired
				return "done", nil
			}})
		_, err = reg.Run(context.Background(), actions.Call{Action: "shop/late"})
		require.ErrorIs(t, err, codes.Timeout)
		assert.Equal(t, 0, chargeCount(t, db))
	})
}
