package sqlstore_test

import (
	"context"
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
		agent := &identity.Caller{Principal: "agent", Surface: identity.SurfaceMCP}
		boss := &identity.Caller{Principal: "boss", Capabilities: []string{"t.approve"}, Surface: identity.SurfaceUI}
		other := &identity.Caller{Principal: "other", Surface: identity.SurfaceUI}
		hold := func(c *identity.Caller) string {
			_, err := reg.Run(ctx, actions.Call{Action: "t/delete", Params: `{"n":1}`, Caller: c})
			require.ErrorIs(t, err, codes.ConfirmationRequired)
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
		assert.ErrorIs(t, err, codes.ForbiddenProposer)
		onMCP := *boss
		onMCP.Surface = identity.SurfaceMCP
		_, err = reg.Decide(ctx, actions.Decision{Change: first, Confirm: true, Caller: &onMCP})
		assert.ErrorIs(t, err, codes.ForbiddenSurface)
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

// TestEditDecisionInSQL: on both databases, a supervisor's edit of an
// agent's change runs the edited arguments in one transaction with its
// record, which the log keeps as stage edited with the replaced
// parameters; under four eyes the edit is held again as the
// supervisor's change, replacing the agent's, and the log says which.
func TestEditDecisionInSQL(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		ctx := context.Background()
		s := newStore(t, db, nil)
		reg := actions.NewRegistry(&actions.Options{Store: s, Gate: &actions.GateOptions{Pending: s.Pending()}})
		var ran atomic.Int32
		body := func(context.Context, map[string]any, *actions.Trace) (any, error) {
			ran.Add(1)
			return "deleted", nil
		}
		params := `{"type":"object","properties":{"n":{"type":"integer"},"why":{"type":"string","default":"cleanup"}},"required":["n"]}`
		reg.MustRegister(
			actions.New(actions.Definition{ID: "t/delete", Effect: actions.EffectDelete, NeedsConfirmation: true,
				Approval: &actions.Approval{Capability: "t.approve"}, Parameters: params}, body),
			actions.New(actions.Definition{ID: "t/purge", Effect: actions.EffectDelete, NeedsConfirmation: true,
				Approval: &actions.Approval{Capability: "t.approve", Proposer: actions.ProposerNever}, Parameters: params}, body))
		agent := &identity.Caller{Principal: "agent", Surface: identity.SurfaceMCP}
		boss := &identity.Caller{Principal: "boss", Capabilities: []string{"t.approve"}, Surface: identity.SurfaceUI}
		hold := func(action string) string {
			_, err := reg.Run(ctx, actions.Call{Action: action, Params: `{"n":1}`, Caller: agent})
			require.ErrorIs(t, err, codes.ConfirmationRequired)
			return err.(*actions.Refusal).Pending.ID
		}

		first := hold("t/delete")
		_, err := reg.Decide(ctx, actions.Decision{Change: first, Params: `{"n":"one"}`, Caller: boss})
		require.ErrorIs(t, err, codes.InvalidParameters)
		_, err = s.Pending().Get(ctx, first)
		require.NoError(t, err, "the refused edit rolled back: the change waits")
		_, err = reg.Decide(ctx, actions.Decision{Change: first, Params: `{"n":2}`, Caller: boss})
		require.NoError(t, err)
		assert.Equal(t, int32(1), ran.Load())
		recs, err := s.Read(ctx, sqlstore.Filter{PendingChange: first, Stages: []store.Stage{store.StageEdited}})
		require.NoError(t, err)
		require.Len(t, recs, 1)
		assert.Equal(t, `{"n":2,"why":"cleanup"}`, recs[0].Entry.Parameters)
		assert.Equal(t, `{"n":1,"why":"cleanup"}`, recs[0].Audit.Original)
		assert.Equal(t, "boss", recs[0].Audit.Caller.Principal)
		assert.Equal(t, store.OutcomeDone, recs[0].Entry.Outcome)

		second := hold("t/purge")
		_, err = reg.Decide(ctx, actions.Decision{Change: second, Params: `{"n":3}`, Caller: boss})
		require.ErrorIs(t, err, codes.ConfirmationRequired)
		next := err.(*actions.Refusal).Pending.ID
		_, err = s.Pending().Get(ctx, second)
		assert.ErrorIs(t, err, actions.ErrNoPendingChange)
		pc, err := s.Pending().Get(ctx, next)
		require.NoError(t, err)
		assert.Equal(t, "boss", pc.Proposer.Principal)
		assert.Equal(t, `{"n":3,"why":"cleanup"}`, pc.Parameters)
		recs, err = s.Read(ctx, sqlstore.Filter{PendingChange: next})
		require.NoError(t, err)
		require.Len(t, recs, 1)
		assert.Equal(t, store.StageHeld, recs[0].Audit.Stage)
		assert.Equal(t, second, recs[0].Audit.Replaces)
		assert.Equal(t, int32(1), ran.Load())
	})
}
