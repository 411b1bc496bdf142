package sqlstore_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/internal/dbtest"
)

// TestApproverDecidesInSQL: on both databases, ListAll returns every
// principal's changes; an approver's list holds the changes its
// approval capability lets it decide, and nobody else's list holds them; a supervisor confirms an agent's
// change in one transaction with its record; four eyes refuses the
// proposer; a decision from the mcp surface is refused and leaves the
// change in place.
func TestApproverDecidesInSQL(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		ctx := context.Background()
		s := newStore(t, db, nil)
		reg := actions.NewRegistry(&actions.Options{Store: s, Gate: &actions.GateOptions{Pending: s.Pending()}})
		var ran atomic.Int32
		reg.MustRegister(actions.New(actions.Definition{ID: "t/delete", Effect: actions.EffectDelete, NeedsConfirmation: true,
			Approval:   &actions.Approval{Capability: "t.approve", Proposer: actions.ProposerNever},
			Parameters: `{"type":"object","properties":{"n":{"type":"integer"}}}`},
			func(context.Context, map[string]any, *actions.Trace) (any, error) {
				ran.Add(1)
				return "deleted", nil
			}))
		agent := &actions.Caller{Principal: "agent", Surface: actions.SurfaceMCP}
		boss := &actions.Caller{Principal: "boss", Capabilities: []string{"t.approve"}, Surface: actions.SurfaceUI}
		other := &actions.Caller{Principal: "other", Surface: actions.SurfaceUI}
		hold := func(c *actions.Caller) string {
			_, err := reg.Run(ctx, actions.Call{Action: "t/delete", Params: `{"n":1}`, Caller: c})
			require.ErrorIs(t, err, actions.CodeConfirmationRequired)
			return err.(*actions.Refusal).Pending.ID
		}
		first, second := hold(agent), hold(other)

		all, err := s.Pending().ListAll(ctx)
		require.NoError(t, err)
		assert.Len(t, all, 2)
		list, err := reg.ChangesToDecide(ctx, boss)
		require.NoError(t, err)
		assert.ElementsMatch(t, []string{first, second}, []string{list[0].ID, list[1].ID})
		list, err = reg.ChangesToDecide(ctx, other)
		require.NoError(t, err)
		assert.Empty(t, list, "neither its own (four eyes) nor another's (no capability)")

		_, err = reg.Decide(ctx, actions.Decision{Change: second, Confirm: true, Caller: other})
		assert.ErrorIs(t, err, actions.CodeForbiddenProposer)
		onMCP := *boss
		onMCP.Surface = actions.SurfaceMCP
		_, err = reg.Decide(ctx, actions.Decision{Change: first, Confirm: true, Caller: &onMCP})
		assert.ErrorIs(t, err, actions.CodeForbiddenSurface)
		assert.Zero(t, ran.Load())

		res, err := reg.Decide(ctx, actions.Decision{Change: first, Confirm: true, Caller: boss})
		require.NoError(t, err)
		assert.Equal(t, int32(1), ran.Load())
		assert.Equal(t, "boss", res.Records[0].Audit.Caller.Principal)
		_, err = s.Pending().Get(ctx, first)
		assert.ErrorIs(t, err, actions.ErrNoPendingChange)
		_, err = s.Pending().Get(ctx, second)
		require.NoError(t, err, "a refused decision leaves the change")
	})
}
