package actions

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// helpdesk has tickets/delete, a delete needing confirmation under
// approval a, whose body counts its runs, and tickets/drop_all, a second
// held action with no approval policy.
func helpdesk(t *testing.T, opts GateOptions, a *Approval) (*Registry, *atomic.Int32) {
	t.Helper()
	reg := NewRegistry(&Options{Gate: &opts})
	var ran atomic.Int32
	body := func(_ context.Context, p map[string]any, _ *Trace) (any, error) {
		ran.Add(1)
		return map[string]any{"deleted": p["id"]}, nil
	}
	require.NoError(t, reg.Register(
		New(Definition{ID: "tickets/delete", Effect: EffectDelete, Capability: "tickets.write", NeedsConfirmation: true, Approval: a,
			Parameters: `{"type":"object","properties":{"id":{"type":"integer"},"note":{"type":"string","default":"no note"}},"required":["id"]}`}, body),
		New(Definition{ID: "tickets/open", Effect: EffectWrite, Capability: "tickets.write"}, body),
	))
	return reg, &ran
}

var (
	agent      = &Caller{Principal: "agent", Capabilities: []string{"tickets.write"}, Surface: SurfaceMCP}
	supervisor = &Caller{Principal: "sam", Capabilities: []string{"tickets.write", "tickets.approve"}, Surface: SurfaceUI}
	colleague  = &Caller{Principal: "cora", Capabilities: []string{"tickets.write"}, Surface: SurfaceUI}
)

func holdDelete(t *testing.T, reg *Registry, c *Caller) string {
	t.Helper()
	_, err := reg.Run(context.Background(), Call{Action: "tickets/delete", Params: `{"id":2}`, Caller: c})
	require.ErrorIs(t, err, CodeConfirmationRequired)
	return asRefusal(err).Pending.ID
}

func decide(reg *Registry, id string, confirm bool, c *Caller) (Result, error) {
	return reg.Decide(context.Background(), Decision{Change: id, Confirm: confirm, Caller: c})
}

// A decision sent from an MCP client or a model the host drives is
// refused by default, a confirmation and a rejection alike; the change
// waits for the person on the host's own screen.
func TestDecideFromModelSurfacesRefusedByDefault(t *testing.T) {
	reg, ran := helpdesk(t, GateOptions{}, nil)
	id := holdDelete(t, reg, agent)
	for _, s := range []Surface{SurfaceMCP, SurfaceAI} {
		c := agent.clone()
		c.Surface = s
		for _, confirm := range []bool{true, false} {
			res, err := decide(reg, id, confirm, &c)
			assert.ErrorIs(t, err, CodeForbiddenSurface, "%s confirm=%v", s, confirm)
			assert.Empty(t, res.Records, "a refused decision makes no record")
		}
	}
	assert.Zero(t, ran.Load())
	_, err := decide(reg, id, true, onUI(agent))
	require.NoError(t, err)
	assert.Equal(t, int32(1), ran.Load())
}

// The host opts in per host (DecideFrom) or per action (Approval.Surfaces,
// which wins over the host's).
func TestDecideFromOptIn(t *testing.T) {
	reg, ran := helpdesk(t, GateOptions{DecideFrom: []Surface{SurfaceUI, SurfaceMCP}}, nil)
	_, err := decide(reg, holdDelete(t, reg, agent), true, agent)
	require.NoError(t, err)
	assert.Equal(t, int32(1), ran.Load())

	reg, _ = helpdesk(t, GateOptions{DecideFrom: []Surface{SurfaceMCP}}, &Approval{Surfaces: []Surface{SurfaceUI}})
	_, err = decide(reg, holdDelete(t, reg, agent), true, agent)
	assert.ErrorIs(t, err, CodeForbiddenSurface, "the action's surfaces win")
}

// A supervisor holding the approval capability decides an agent's change;
// a colleague without it does not even see it.
func TestSupervisorDecides(t *testing.T) {
	reg, ran := helpdesk(t, GateOptions{}, &Approval{Capability: "tickets.approve"})
	id := holdDelete(t, reg, agent)

	_, err := reg.PendingChange(context.Background(), id, colleague)
	assert.ErrorIs(t, err, CodeUnknownChange)
	_, err = decide(reg, id, true, colleague)
	assert.ErrorIs(t, err, CodeUnknownChange)
	list, err := reg.ChangesToDecide(context.Background(), colleague)
	require.NoError(t, err)
	assert.Empty(t, list)

	list, err = reg.ChangesToDecide(context.Background(), supervisor)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, id, list[0].ID)
	assert.Equal(t, "agent", list[0].Proposer.Principal)
	require.NoError(t, reg.MayDecide(context.Background(), id, supervisor))

	res, err := decide(reg, id, true, supervisor)
	require.NoError(t, err)
	assert.Equal(t, int32(1), ran.Load())
	require.Len(t, res.Records, 1)
	assert.Equal(t, "sam", res.Records[0].Audit.Caller.Principal, "the record says who decided")
	assert.Equal(t, StageConfirmed, res.Records[0].Audit.Stage)

	// A supervisor without the action's own capability is nobody here.
	id = holdDelete(t, reg, agent)
	approverOnly := &Caller{Principal: "ava", Capabilities: []string{"tickets.approve"}, Surface: SurfaceUI}
	_, err = decide(reg, id, true, approverOnly)
	assert.ErrorIs(t, err, CodeUnknownChange)
	// The proposer keeps deciding its own (ProposerDecides).
	_, err = decide(reg, id, false, onUI(agent))
	require.NoError(t, err)
}

// Four eyes: the proposer sees its change and may not decide it.
func TestFourEyesRefusesTheProposer(t *testing.T) {
	for name, a := range map[string]*Approval{
		"with a capability": {Capability: "tickets.approve", Proposer: ProposerNever},
		"anyone else":       {Proposer: ProposerNever},
	} {
		t.Run(name, func(t *testing.T) {
			reg, ran := helpdesk(t, GateOptions{}, a)
			id := holdDelete(t, reg, agent)
			_, err := reg.PendingChange(context.Background(), id, onUI(agent))
			require.NoError(t, err, "the proposer sees its change")
			for _, confirm := range []bool{true, false} {
				_, err := decide(reg, id, confirm, onUI(agent))
				assert.ErrorIs(t, err, CodeForbiddenProposer)
			}
			mine, err := reg.ChangesToDecide(context.Background(), onUI(agent))
			require.NoError(t, err)
			assert.Empty(t, mine)
			assert.Zero(t, ran.Load())
			decider := supervisor
			if a.Capability == "" {
				decider = colleague
			}
			_, err = decide(reg, id, true, decider)
			require.NoError(t, err)
			assert.Equal(t, int32(1), ran.Load())
		})
	}
}

// needs-capability: the proposer decides only while holding it.
func TestProposerNeedsCapability(t *testing.T) {
	reg, ran := helpdesk(t, GateOptions{}, &Approval{Capability: "tickets.approve", Proposer: ProposerNeedsCapability})
	id := holdDelete(t, reg, agent)
	_, err := decide(reg, id, true, onUI(agent))
	assert.ErrorIs(t, err, CodeForbiddenCapability)
	assert.Zero(t, ran.Load())

	boss := &Caller{Principal: "sam", Capabilities: []string{"tickets.write", "tickets.approve"}, Surface: SurfaceMCP}
	id = holdDelete(t, reg, boss)
	_, err = decide(reg, id, true, onUI(boss))
	require.NoError(t, err)
	assert.Equal(t, int32(1), ran.Load())
}

// Every check of the gate is made again as the deciding person, scope
// included, for a rejection as for a confirmation.
func TestDecideChecksTheDecidersScope(t *testing.T) {
	reg, ran := helpdesk(t, GateOptions{}, &Approval{Capability: "tickets.approve"})
	id := holdDelete(t, reg, agent)
	readOnly := supervisor.clone()
	readOnly.Token, readOnly.Scopes = true, []string{"mcp:read"}
	for _, confirm := range []bool{true, false} {
		_, err := decide(reg, id, confirm, &readOnly)
		assert.ErrorIs(t, err, CodeInsufficientScope, "confirm=%v", confirm)
	}
	assert.Zero(t, ran.Load())
	_, err := reg.PendingChange(context.Background(), id, supervisor)
	require.NoError(t, err, "a refused decision leaves the change")
}

// A held batch is decided under the policy of every step it holds.
func TestBatchDecidedUnderEveryHeldPolicy(t *testing.T) {
	reg, ran := helpdesk(t, GateOptions{}, &Approval{Capability: "tickets.approve", Proposer: ProposerNever})
	b := Batch{Steps: []Step{{Call: "tickets/open"}, {Call: "tickets/delete", With: map[string]any{"id": 2}}}}
	_, err := reg.Run(context.Background(), Call{Batch: &b, Caller: agent})
	require.ErrorIs(t, err, CodeConfirmationRequired)
	id := asRefusal(err).Pending.ID
	_, err = decide(reg, id, true, onUI(agent))
	assert.ErrorIs(t, err, CodeForbiddenProposer)
	_, err = decide(reg, id, true, supervisor)
	require.NoError(t, err)
	assert.Equal(t, int32(2), ran.Load())
}

func TestApprovalPolicyIsChecked(t *testing.T) {
	cases := map[string]Definition{
		"without needsConfirmation":    {ID: "t/a", Approval: &Approval{}},
		"needs-capability naming none": {ID: "t/a", NeedsConfirmation: true, Approval: &Approval{Proposer: ProposerNeedsCapability}},
		"an unknown proposer rule":     {ID: "t/a", NeedsConfirmation: true, Approval: &Approval{Proposer: "sometimes"}},
		"an unknown surface":           {ID: "t/a", NeedsConfirmation: true, Approval: &Approval{Surfaces: []Surface{"web"}}},
		"a surface listed twice":       {ID: "t/a", NeedsConfirmation: true, Approval: &Approval{Surfaces: []Surface{SurfaceUI, SurfaceUI}}},
	}
	for name, d := range cases {
		t.Run(name, func(t *testing.T) {
			err := NewRegistry(nil).Register(New(d, func(context.Context, map[string]any, *Trace) (any, error) { return nil, nil }))
			require.ErrorIs(t, err, CodeConstraintViolation)
			assert.True(t, asRefusal(err).Issues[0].Keyword == "approval", "%v", asRefusal(err).Issues)
		})
	}
}

// The approval policy round-trips through a manifest's JSON.
func TestApprovalInAManifest(t *testing.T) {
	defs, err := DecodeManifest([]byte(`[{"id":"t/a","effect":"delete","needsConfirmation":true,
		"approval":{"capability":"t.approve","proposer":"never","surfaces":["ui"]}}]`))
	require.NoError(t, err)
	require.NotNil(t, defs[0].Approval)
	assert.Equal(t, Approval{Capability: "t.approve", Proposer: ProposerNever, Surfaces: []Surface{SurfaceUI}}, *defs[0].Approval)
}
