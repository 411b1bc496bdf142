package sqlstore_test

import (
	"context"
	"sync"
	"sync/atomic"
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

// TestPendingChangesInSQL: a call needing confirmation is held in the
// database, committed with its record (stage held); a confirmation whose
// body fails rolls back with the change left in place; two confirmations
// at once run the change once, in one transaction with its record and
// the change's removal; a rejection drops the change and records it.
func TestPendingChangesInSQL(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		ctx := context.Background()
		createModel(t, db)
		s := newStore(t, db, nil)
		reg := actions.NewRegistry(&actions.Options{Store: s, Gate: &actions.GateOptions{Pending: s.Pending()}})
		var fail atomic.Bool
		var ran atomic.Int32
		reg.MustRegister(actions.New(actions.Definition{ID: "t/purge", Effect: actions.EffectDelete, NeedsConfirmation: true,
			Parameters: `{"type":"object","properties":{"n":{"type":"integer"}}}`},
			func(ctx context.Context, p map[string]any, _ *actions.Trace) (any, error) {
				tx := txOf(ctx)
				if err := writeRow(ctx, db, tx, "t/purge", p); err != nil {
					return nil, err
				}
				if fail.Load() {
					return nil, actions.NewRefusal("busy_elsewhere", "try later")
				}
				ran.Add(1)
				return "purged", nil
			}))
		eve := &identity.Caller{Principal: "eve", Surface: identity.SurfaceUI}
		confirm := func(id string) (actions.Result, error) {
			return reg.Decide(ctx, actions.Decision{Change: id, Confirm: true, Caller: eve})
		}

		res, err := reg.Run(ctx, actions.Call{Action: "t/purge", Params: `{"n":1}`, Caller: eve})
		require.ErrorIs(t, err, codes.ConfirmationRequired)
		var r *actions.Refusal
		require.ErrorAs(t, err, &r)
		require.NotNil(t, r.Pending)
		id := r.Pending.ID
		pc, err := s.Pending().Get(ctx, id)
		require.NoError(t, err, "the change is kept with the held call's record")
		assert.Equal(t, `{"n":1}`, pc.Parameters)
		require.Len(t, res.Records, 1)
		assert.False(t, res.Records[0].RolledBack, "a held call's unit commits")
		assert.Equal(t, store.StageHeld, res.Records[0].Audit.Stage)
		assert.Equal(t, id, res.Records[0].Audit.PendingChange)
		before := dump(t, db)

		fail.Store(true)
		res, err = confirm(id)
		require.Error(t, err)
		assert.Equal(t, before, dump(t, db))
		require.Len(t, res.Records, 1)
		assert.True(t, res.Records[0].RolledBack, "the failed confirmation is undone")
		_, err = s.Pending().Get(ctx, id)
		require.NoError(t, err, "a confirmation rolled back leaves the change to confirm again")

		fail.Store(false)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range errs {
			wg.Go(func() { _, errs[i] = confirm(id) })
		}
		wg.Wait()
		assert.Equal(t, int32(1), ran.Load(), "two confirmations run the change once")
		assert.True(t, (errs[0] == nil) != (errs[1] == nil), "one confirmation wins: %v", errs)
		_, err = s.Pending().Get(ctx, id)
		require.ErrorIs(t, err, actions.ErrNoPendingChange)

		recs, err := s.Read(ctx, sqlstore.Filter{Outcome: store.OutcomeDone})
		require.NoError(t, err)
		require.Len(t, recs, 1, "the confirmed call's entry, committed with it")
		assert.Equal(t, id, recs[0].Audit.PendingChange)
		assert.Equal(t, store.StageConfirmed, recs[0].Audit.Stage)
		assert.Equal(t, "eve", recs[0].Audit.Caller.Principal)

		// A rejection takes the change and runs nothing.
		_, err = reg.Run(ctx, actions.Call{Action: "t/purge", Params: `{"n":2}`, Caller: eve})
		require.ErrorAs(t, err, &r)
		before = dump(t, db)
		res, err = reg.Decide(ctx, actions.Decision{Change: r.Pending.ID, Caller: eve})
		require.NoError(t, err)
		require.Len(t, res.Records, 1)
		assert.Equal(t, codes.Rejected, res.Records[0].Entry.Error)
		assert.Equal(t, store.StageRejected, res.Records[0].Audit.Stage)
		assert.False(t, res.Records[0].RolledBack, "the rejection is kept")
		assert.Equal(t, before, dump(t, db))
		assert.Equal(t, int32(1), ran.Load())
		_, err = s.Pending().Get(ctx, r.Pending.ID)
		require.ErrorIs(t, err, actions.ErrNoPendingChange)
	})
}
