package sqlstore_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/internal/dbtest"
	"github.com/actionreg/actions/sqlstore"
)

// TestSettleOrphansWhileSameOriginRuns: two live replicas share one
// origin (the misconfiguration the docs warn of), and one settles its
// origin's orphans while the other runs a keyed call whose body has
// started. The running call keeps its own answer, its changes commit
// once, and a retry afterwards gets that answer. On SQLite the settle
// waits for the unit's write lock and finds the key answered. On
// PostgreSQL it answers the claim at once (a retry meanwhile is told
// outcome_unknown); a unit that had read or written before the settle
// then conflicts when it writes its key's answer, and is run again from
// the start, so its body runs twice (its first attempt's writes undone):
// what SettleOrphans' documentation says.
func TestSettleOrphansWhileSameOriginRuns(t *testing.T) {
	for _, writeFirst := range []bool{false, true} {
		name := "waits then writes"
		if writeFirst {
			name = "writes then waits"
		}
		t.Run(name, func(t *testing.T) { settleWhileSameOriginRuns(t, writeFirst) })
	}
}

func settleWhileSameOriginRuns(t *testing.T, writeFirst bool) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		ctx := context.Background()
		createCharges(t, db)
		clock := &keyClock{t: time.Unix(1e9, 0)}
		var runs atomic.Int64
		opts := &sqlstore.Options{Origin: "replica-a"}
		a := newKeyReplica(t, db, true, clock, &runs, opts)
		b := newKeyReplica(t, db, true, clock, &runs, opts)
		a.started, a.release = make(chan struct{}), make(chan struct{})
		for _, rp := range []*keyReplica{a, b} {
			rp := rp
			require.NoError(t, rp.reg.Register(actions.Action{Definition: actions.Definition{ID: "shop/write_first",
				Parameters: `{"type":"object","properties":{"amount":{"type":"integer"}}}`},
				Run: func(ctx context.Context, p map[string]any, _ *actions.Trace) (any, error) {
					runs.Add(1)
					if _, err := txOf(ctx).ExecContext(ctx, db.Dialect.Rebind("INSERT INTO charges (amount) VALUES (?)"), "5"); err != nil {
						return nil, err
					}
					if runs.Load() == 1 {
						close(rp.started)
						<-rp.release
					}
					return map[string]any{"charged": p["amount"]}, nil
				}}))
		}
		action := "shop/slow"
		if writeFirst {
			action = "shop/write_first"
		}
		call := actions.Call{Action: action, Params: map[string]any{"amount": 5}, Caller: ann, IdempotencyKey: "k"}
		type out struct {
			res actions.Result
			err error
		}
		first := make(chan out, 1)
		go func() {
			res, err := a.reg.Run(ctx, call)
			first <- out{res, err}
		}()
		<-a.started

		settled := make(chan error, 1)
		var n sqlstore.Orphans
		go func() {
			var err error
			n, err = b.s.SettleOrphans(ctx, "replica-a", clock.now())
			settled <- err
		}()
		if db.Dialect == sqlstore.PostgreSQL {
			// The claim was committed on its own: the settle does not
			// wait for the unit.
			require.NoError(t, <-settled)
			assert.Equal(t, sqlstore.Orphans{Claims: 1}, n)
			_, err := b.reg.Run(ctx, call)
			assert.ErrorIs(t, err, codes.OutcomeUnknown, "the claim answered meanwhile")
		}
		close(a.release)
		got := <-first
		require.NoError(t, got.err, "the running call ends with its own answer")
		assert.Equal(t, map[string]any{"charged": jsonNumber("5")}, got.res.Value)
		if db.Dialect == sqlstore.SQLite {
			// The settle waited for the unit's write lock, and found the
			// key answered.
			require.NoError(t, <-settled)
			assert.Zero(t, n)
		}
		bodies := int64(1)
		if writeFirst && db.Dialect == sqlstore.PostgreSQL {
			bodies = 2 // the unit conflicted with the settle and ran again
		}
		assert.Equal(t, bodies, runs.Load(), "the body's runs")
		assert.Equal(t, 1, chargeCount(t, db), "the changes commit once")

		res, err := b.reg.Run(ctx, call)
		require.NoError(t, err, "a retry gets the call's own answer")
		assert.Equal(t, got.res.Value, res.Value)
		assert.Equal(t, bodies, runs.Load(), "the retry ran nothing")
	})
}
