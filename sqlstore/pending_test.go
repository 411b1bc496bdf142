package sqlstore_test

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/internal/dbtest"
	"github.com/actionreg/actions/sqlstore"
)

// TestPendingChangesInSQL: a call needing confirmation is held in the
// database; a confirmation whose body fails rolls back with the change
// left in place; two confirmations at once run the change once, in one
// transaction with its entry and the change's removal.
func TestPendingChangesInSQL(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		ctx := context.Background()
		createModel(t, db)
		s := newStore(t, db, nil)
		reg := actions.NewRegistry[*sql.Tx](&actions.Options{Gate: &actions.GateOptions{Pending: s.Pending()}})
		var fail atomic.Bool
		var ran atomic.Int32
		reg.MustRegister(actions.New(actions.Definition{ID: "t/purge", Effect: actions.EffectDelete, NeedsConfirmation: true,
			Parameters: `{"type":"object","properties":{"n":{"type":"integer"}}}`},
			func(ctx context.Context, p map[string]any, tx *sql.Tx) (any, error) {
				if err := writeRow(ctx, db, tx, "t/purge", p); err != nil {
					return nil, err
				}
				if fail.Load() {
					return nil, actions.NewRefusal("busy_elsewhere", "try later")
				}
				ran.Add(1)
				return "purged", nil
			}))
		runner := sqlstore.NewRunner(s, reg)
		eve := &actions.Caller{Principal: "eve", Surface: actions.SurfaceUI}
		host := func(tx *sql.Tx) *actions.Host[*sql.Tx] {
			return &actions.Host[*sql.Tx]{Env: func(*actions.Trace) *sql.Tx { return tx }, Caller: eve}
		}

		_, _, err := runner.Run(ctx, "t/purge", `{"n":1}`, host)
		require.ErrorIs(t, err, actions.ErrConfirmationRequired)
		var r *actions.Refusal
		require.ErrorAs(t, err, &r)
		require.NotNil(t, r.Pending)
		id := r.Pending.ID
		pc, err := s.Pending().Get(ctx, id)
		require.NoError(t, err, "the change outlives the held call's rollback")
		assert.Equal(t, `{"n":1}`, pc.Parameters)
		before := dump(t, db)

		fail.Store(true)
		_, _, err = runner.Confirm(ctx, id, host)
		require.Error(t, err)
		assert.Equal(t, before, dump(t, db))
		_, err = s.Pending().Get(ctx, id)
		require.NoError(t, err, "a confirmation rolled back leaves the change to confirm again")

		fail.Store(false)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range errs {
			wg.Go(func() { _, _, errs[i] = runner.Confirm(ctx, id, host) })
		}
		wg.Wait()
		assert.Equal(t, int32(1), ran.Load(), "two confirmations run the change once")
		assert.True(t, (errs[0] == nil) != (errs[1] == nil), "one confirmation wins: %v", errs)
		_, err = s.Pending().Get(ctx, id)
		require.ErrorIs(t, err, actions.ErrNoPendingChange)

		recs, err := s.Read(ctx, sqlstore.Filter{Outcome: actions.OutcomeDone})
		require.NoError(t, err)
		require.Len(t, recs, 1, "the confirmed call's entry, committed with it")
		require.NotNil(t, recs[0].Audit)
		assert.Equal(t, id, recs[0].Audit.PendingChange)
		assert.Equal(t, "eve", recs[0].Audit.Caller.Principal)
	})
}
