package actions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/store"
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
	agent      = &identity.Caller{Principal: "agent", Capabilities: []string{"tickets.write"}, Surface: identity.SurfaceMCP}
	supervisor = &identity.Caller{Principal: "sam", Capabilities: []string{"tickets.write", "tickets.approve"}, Surface: identity.SurfaceUI}
	colleague  = &identity.Caller{Principal: "cora", Capabilities: []string{"tickets.write"}, Surface: identity.SurfaceUI}
)

func holdDelete(t *testing.T, reg *Registry, c *identity.Caller) string {
	t.Helper()
	_, err := reg.Run(context.Background(), Call{Action: "tickets/delete", Params: `{"id":2}`, Caller: c})
	require.ErrorIs(t, err, codes.ConfirmationRequired)
	return asRefusal(err).Pending.ID
}

func decide(reg *Registry, id string, confirm bool, c *identity.Caller) (Result, error) {
	return reg.Decide(context.Background(), Decision{Change: id, Confirm: confirm, Caller: c})
}

// A decision sent from an MCP client or a model the host drives is
// refused by default, a confirmation and a rejection alike; the change
// waits for the person on the host's own screen.
func TestDecideFromModelSurfacesRefusedByDefault(t *testing.T) {
	reg, ran := helpdesk(t, GateOptions{}, nil)
	id := holdDelete(t, reg, agent)
	for _, s := range []identity.Surface{identity.SurfaceMCP, identity.SurfaceAI} {
		c := cloneCaller(agent)
		c.Surface = s
		for _, confirm := range []bool{true, false} {
			res, err := decide(reg, id, confirm, &c)
			assert.ErrorIs(t, err, codes.ForbiddenSurface, "%s confirm=%v", s, confirm)
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
	reg, ran := helpdesk(t, GateOptions{DecideFrom: []identity.Surface{identity.SurfaceUI, identity.SurfaceMCP}}, nil)
	_, err := decide(reg, holdDelete(t, reg, agent), true, agent)
	require.NoError(t, err)
	assert.Equal(t, int32(1), ran.Load())

	reg, _ = helpdesk(t, GateOptions{DecideFrom: []identity.Surface{identity.SurfaceMCP}}, &Approval{Surfaces: []identity.Surface{identity.SurfaceUI}})
	_, err = decide(reg, holdDelete(t, reg, agent), true, agent)
	assert.ErrorIs(t, err, codes.ForbiddenSurface, "the action's surfaces win")
}

// A supervisor holding the approval capability decides an agent's change;
// a colleague without it does not even see it.
func TestSupervisorDecides(t *testing.T) {
	reg, ran := helpdesk(t, GateOptions{}, &Approval{Capability: "tickets.approve"})
	id := holdDelete(t, reg, agent)

	_, err := reg.PendingChange(context.Background(), id, colleague)
	assert.ErrorIs(t, err, codes.UnknownChange)
	_, err = decide(reg, id, true, colleague)
	assert.ErrorIs(t, err, codes.UnknownChange)
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
	assert.Equal(t, store.StageConfirmed, res.Records[0].Audit.Stage)

	// A supervisor without the action's own capability is nobody here.
	id = holdDelete(t, reg, agent)
	approverOnly := &identity.Caller{Principal: "ava", Capabilities: []string{"tickets.approve"}, Surface: identity.SurfaceUI}
	_, err = decide(reg, id, true, approverOnly)
	assert.ErrorIs(t, err, codes.UnknownChange)
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
				assert.ErrorIs(t, err, codes.ForbiddenProposer)
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
	assert.ErrorIs(t, err, codes.ForbiddenCapability)
	assert.Zero(t, ran.Load())

	boss := &identity.Caller{Principal: "sam", Capabilities: []string{"tickets.write", "tickets.approve"}, Surface: identity.SurfaceMCP}
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
	readOnly := cloneCaller(supervisor)
	readOnly.Token, readOnly.Scopes = true, []string{"mcp:read"}
	for _, confirm := range []bool{true, false} {
		_, err := decide(reg, id, confirm, &readOnly)
		assert.ErrorIs(t, err, codes.InsufficientScope, "confirm=%v", confirm)
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
	require.ErrorIs(t, err, codes.ConfirmationRequired)
	id := asRefusal(err).Pending.ID
	_, err = decide(reg, id, true, onUI(agent))
	assert.ErrorIs(t, err, codes.ForbiddenProposer)
	_, err = decide(reg, id, true, supervisor)
	require.NoError(t, err)
	assert.Equal(t, int32(2), ran.Load())
}

func TestApprovalPolicyIsChecked(t *testing.T) {
	cases := map[string]Definition{
		"without needsConfirmation":    {ID: "t/a", Approval: &Approval{}},
		"needs-capability naming none": {ID: "t/a", NeedsConfirmation: true, Approval: &Approval{Proposer: ProposerNeedsCapability}},
		"an unknown proposer rule":     {ID: "t/a", NeedsConfirmation: true, Approval: &Approval{Proposer: "sometimes"}},
		"an unknown surface":           {ID: "t/a", NeedsConfirmation: true, Approval: &Approval{Surfaces: []identity.Surface{"web"}}},
		"a surface listed twice":       {ID: "t/a", NeedsConfirmation: true, Approval: &Approval{Surfaces: []identity.Surface{identity.SurfaceUI, identity.SurfaceUI}}},
	}
	for name, d := range cases {
		t.Run(name, func(t *testing.T) {
			err := NewRegistry(nil).Register(New(d, func(context.Context, map[string]any, *Trace) (any, error) { return nil, nil }))
			require.ErrorIs(t, err, codes.ConstraintViolation)
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
	assert.Equal(t, Approval{Capability: "t.approve", Proposer: ProposerNever, Surfaces: []identity.Surface{identity.SurfaceUI}}, *defs[0].Approval)
}

// The person sees what runs: the change holds the checked parameters
// (defaults filled, refs resolved), the parameters as given, and the
// host's description written in the unit that holds it.
func TestHeldChangeShowsWhatRuns(t *testing.T) {
	key := "t2"
	var mu sync.Mutex
	reg := NewRegistry(&Options{Resolve: func(_ context.Context, schema, value string) (RefMatches, error) {
		mu.Lock()
		defer mu.Unlock()
		if value == "Printer on fire" {
			return RefMatches{Names: []string{key}}, nil
		}
		return RefMatches{}, nil
	}})
	var ran atomic.Int32
	reg.MustRegister(New(Definition{ID: "tickets/delete", Effect: EffectDelete, NeedsConfirmation: true,
		Approval: &Approval{Describe: func(ctx context.Context, c CheckedCall) (string, error) {
			return fmt.Sprintf("ticket %v (%s), 3 comments", c.Params["ticket"], c.Caller.Principal), nil
		}},
		Parameters: `{"type":"object","properties":{"ticket":{"type":"string","ref":"ticket"},"note":{"type":"string","default":"no note"}},"required":["ticket"]}`},
		func(context.Context, map[string]any, *Trace) (any, error) { ran.Add(1); return nil, nil }))
	hold := func() string {
		_, err := reg.Run(context.Background(), Call{Action: "tickets/delete", Params: `{"ticket":"Printer on fire"}`, Caller: agent})
		require.ErrorIs(t, err, codes.ConfirmationRequired)
		return asRefusal(err).Pending.ID
	}
	id := hold()
	pc, err := reg.PendingChange(context.Background(), id, onUI(agent))
	require.NoError(t, err)
	assert.Equal(t, `{"note":"no note","ticket":"t2"}`, pc.Parameters)
	assert.Equal(t, `{"ticket":"Printer on fire"}`, pc.Given)
	assert.Equal(t, "ticket t2 (agent), 3 comments", pc.Description)
	_, err = decide(reg, id, true, onUI(agent))
	require.NoError(t, err)
	assert.Equal(t, int32(1), ran.Load())

	// The ref now names another ticket: what would run is not what the
	// person saw, and nothing runs.
	id = hold()
	mu.Lock()
	key = "t3"
	mu.Unlock()
	_, err = decide(reg, id, true, onUI(agent))
	require.ErrorIs(t, err, codes.StaleChange)
	assert.Equal(t, int32(1), ran.Load())
}

// A description hook that fails or panics leaves the description empty;
// the call is held all the same.
func TestDescribeFailingStillHolds(t *testing.T) {
	for name, fn := range map[string]func(context.Context, CheckedCall) (string, error){
		"error": func(context.Context, CheckedCall) (string, error) { return "secret", errors.New("db down") },
		"panic": func(context.Context, CheckedCall) (string, error) { panic("boom") },
	} {
		t.Run(name, func(t *testing.T) {
			reg, ran := helpdesk(t, GateOptions{}, &Approval{Describe: fn})
			id := holdDelete(t, reg, agent)
			pc, err := reg.PendingChange(context.Background(), id, onUI(agent))
			require.NoError(t, err)
			assert.Empty(t, pc.Description)
			assert.Zero(t, ran.Load())
		})
	}
}

// A rule decides per call: a call it lets through runs at once, one it
// holds waits with the rule's reason.
func TestApprovalRuleDecidesPerCall(t *testing.T) {
	var seen atomic.Value
	rule := func(_ context.Context, c CheckedCall) (bool, string, error) {
		seen.Store(c.Params["note"])
		id, _ := c.Params["id"].(json.Number).Int64()
		if id >= 100 {
			return true, "tickets from 100 on are archived ones", nil
		}
		return false, "", nil
	}
	reg, ran := helpdesk(t, GateOptions{}, &Approval{When: rule})
	_, err := reg.Run(context.Background(), Call{Action: "tickets/delete", Params: `{"id":2}`, Caller: agent})
	require.NoError(t, err)
	assert.Equal(t, int32(1), ran.Load())
	assert.Equal(t, "no note", seen.Load(), "the rule sees the checked parameters")

	_, err = reg.Run(context.Background(), Call{Action: "tickets/delete", Params: `{"id":200}`, Caller: agent})
	require.ErrorIs(t, err, codes.ConfirmationRequired)
	pc, err := reg.PendingChange(context.Background(), asRefusal(err).Pending.ID, onUI(agent))
	require.NoError(t, err)
	assert.Equal(t, "tickets from 100 on are archived ones", pc.Reason)
	assert.Equal(t, int32(1), ran.Load())

	// An anonymous caller's call the rule lets through runs; one it
	// holds is refused, with nothing held.
	anon := &identity.Caller{Capabilities: []string{"tickets.write"}, Surface: identity.SurfaceMCP}
	_, err = reg.Run(context.Background(), Call{Action: "tickets/delete", Params: `{"id":3}`, Caller: anon})
	require.NoError(t, err)
	res, err := reg.Run(context.Background(), Call{Action: "tickets/delete", Params: `{"id":300}`, Caller: anon})
	require.ErrorIs(t, err, codes.ConfirmationRequired)
	assert.Nil(t, asRefusal(err).Pending)
	assert.Empty(t, res.Records[0].Audit.PendingChange)
	assert.Equal(t, int32(2), ran.Load())
}

// A rule fails closed: each way it can fail holds the call, with a
// reason saying so and nothing of the failure's text.
func TestApprovalRuleFailsClosed(t *testing.T) {
	never := make(chan struct{})
	t.Cleanup(func() { close(never) })
	cases := map[string]func(context.Context, CheckedCall) (bool, string, error){
		"an error": func(context.Context, CheckedCall) (bool, string, error) {
			return false, "secret", errors.New("rule store down")
		},
		"a panic": func(context.Context, CheckedCall) (bool, string, error) { panic("boom") },
		"a timeout": func(ctx context.Context, _ CheckedCall) (bool, string, error) {
			<-ctx.Done()
			return false, "", nil // answers, but only after its time ran out
		},
		"no answer": func(context.Context, CheckedCall) (bool, string, error) {
			<-never // never returns while the call waits
			return false, "", nil
		},
		"an error with hold false and a reason": func(context.Context, CheckedCall) (bool, string, error) {
			return false, "fine", errors.New("partial")
		},
	}
	for name, rule := range cases {
		t.Run(name, func(t *testing.T) {
			reg, ran := helpdesk(t, GateOptions{RuleTimeout: 20 * time.Millisecond}, &Approval{When: rule})
			id := holdDelete(t, reg, agent)
			pc, err := reg.PendingChange(context.Background(), id, onUI(agent))
			require.NoError(t, err)
			assert.Equal(t, ruleFailed, pc.Reason)
			assert.Zero(t, ran.Load())
		})
	}
}

// A rejection's reason reaches the caller: a retry of the held call under
// its idempotency key gets rejected, the person's reason, and a verdict
// not to send the same call again; the record keeps the reason.
func TestRejectionReasonReachesTheCaller(t *testing.T) {
	reg := NewRegistry(&Options{Store: NewRunLog()})
	var ran atomic.Int32
	reg.MustRegister(New(Definition{ID: "tickets/delete", Effect: EffectDelete, NeedsConfirmation: true,
		Parameters: `{"type":"object","properties":{"id":{"type":"integer"}}}`},
		func(context.Context, map[string]any, *Trace) (any, error) { ran.Add(1); return nil, nil }))
	call := Call{Action: "tickets/delete", Params: `{"id":2}`, Caller: agent, IdempotencyKey: "k-1"}
	_, err := reg.Run(context.Background(), call)
	require.ErrorIs(t, err, codes.ConfirmationRequired)
	id := asRefusal(err).Pending.ID

	res, err := reg.Decide(context.Background(), Decision{Change: id, Caller: onUI(agent), Reason: "ticket 2 is evidence in an open case"})
	require.NoError(t, err)
	assert.Equal(t, "ticket 2 is evidence in an open case", res.Records[0].Audit.Reason)

	_, err = reg.Run(context.Background(), call)
	require.ErrorIs(t, err, codes.Rejected)
	rf := asRefusal(err)
	assert.Equal(t, "ticket 2 is evidence in an open case", rf.Reason)
	assert.Equal(t, codes.RetryNever, rf.Policy().Retry)
	assert.Contains(t, rf.NextAction, "Do not send the same call again")
	text, err := json.Marshal(rf)
	require.NoError(t, err)
	assert.Contains(t, string(text), `"reason":"ticket 2 is evidence in an open case"`)
	assert.Zero(t, ran.Load())
}

// A batch naming an action the caller may not see (forbidden, or offered
// on no surface) runs, and is refused, exactly as one naming a missing
// action: the same steps run, the same answer, the same number of
// records.
func TestBatchHidesForbiddenActionsLikeMissingOnes(t *testing.T) {
	reg := NewRegistry(&Options{Gate: &GateOptions{}})
	var reads atomic.Int32
	nop := func(context.Context, map[string]any, *Trace) (any, error) { return nil, nil }
	reg.MustRegister(
		New(Definition{ID: "doc/read", Effect: EffectRead}, func(context.Context, map[string]any, *Trace) (any, error) {
			reads.Add(1)
			return "text", nil
		}),
		New(Definition{ID: "doc/drop", Effect: EffectDelete, Capability: "doc.admin", NeedsConfirmation: true}, nop),
		New(Definition{ID: "doc/purge", Effect: EffectDelete, NeedsConfirmation: true, Surfaces: []identity.Surface{identity.SurfaceUI}}, nop),
	)
	caller := &identity.Caller{Principal: "ann", Surface: identity.SurfaceMCP}
	type seen struct {
		err   string
		index int
		recs  int
		reads int32
	}
	run := func(second string) seen {
		reads.Store(0)
		res, err := reg.Run(context.Background(), Call{Batch: &Batch{Steps: []Step{{Call: "doc/read"}, {Call: second}}}, Caller: caller})
		var se *StepError
		require.ErrorAs(t, err, &se, second)
		require.ErrorIs(t, err, codes.UnknownAction, second)
		return seen{err: err.Error(), index: se.Index, recs: len(res.Records), reads: reads.Load()}
	}
	missing := run("doc/nothere")
	assert.Equal(t, int32(1), missing.reads, "the step before the missing one runs")
	for _, hidden := range []string{"doc/drop", "doc/purge"} {
		assert.Equal(t, missing, run(hidden), hidden)
	}
}
