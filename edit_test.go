package actions

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/store"
)

func edit(reg *Registry, id string, params any, c *identity.Caller) (Result, error) {
	return reg.Decide(context.Background(), Decision{Change: id, Params: params, Caller: c})
}

// An edit runs the person's arguments, checked in full (defaults filled),
// under the decision; its record says edited, by whom, and what it
// replaced.
func TestEditRunsThePersonsArguments(t *testing.T) {
	reg, ran := helpdesk(t, GateOptions{}, &Approval{Capability: "tickets.approve"})
	id := holdDelete(t, reg, agent)
	res, err := edit(reg, id, map[string]any{"id": 3}, supervisor)
	require.NoError(t, err)
	assert.Equal(t, int32(1), ran.Load())
	assert.Equal(t, map[string]any{"deleted": json.Number("3")}, res.Value)
	require.Len(t, res.Records, 1)
	rec := res.Records[0]
	assert.Equal(t, "tickets/delete", rec.Entry.Action)
	assert.Equal(t, `{"id":3,"note":"no note"}`, rec.Entry.Parameters, "the edit went through defaults")
	assert.Equal(t, store.StageEdited, rec.Audit.Stage)
	assert.Equal(t, `{"id":2,"note":"no note"}`, rec.Audit.Original)
	assert.Equal(t, id, rec.Audit.PendingChange)
	assert.Equal(t, "sam", rec.Audit.Caller.Principal)
	_, err = reg.PendingChange(context.Background(), id, supervisor)
	assert.ErrorIs(t, err, codes.UnknownChange, "the change is decided")
}

// An edit names no other action: whatever its arguments say, the
// change's action runs (or refuses them), never another.
func TestEditCannotNameAnotherAction(t *testing.T) {
	reg, ran := helpdesk(t, GateOptions{}, &Approval{Capability: "tickets.approve"})
	id := holdDelete(t, reg, agent)
	res, err := edit(reg, id, `{"id":4,"action":"tickets/open","call":"tickets/open","batch":{"steps":[{"call":"tickets/open"}]}}`, supervisor)
	require.NoError(t, err)
	assert.Equal(t, int32(1), ran.Load())
	assert.Equal(t, "tickets/delete", res.Records[0].Entry.Action)
	assert.Empty(t, res.Records[0].Audit.Alias)

	// A Call given as the arguments is arguments, not a call.
	id = holdDelete(t, reg, agent)
	_, err = edit(reg, id, Call{Action: "tickets/open", Params: `{}`}, supervisor)
	require.ErrorIs(t, err, codes.InvalidParameters)
	assert.Equal(t, int32(1), ran.Load())
}

// Edited arguments the schema refuses run nothing, and the change waits.
func TestEditIsCheckedAgain(t *testing.T) {
	reg, ran := helpdesk(t, GateOptions{}, &Approval{Capability: "tickets.approve"})
	id := holdDelete(t, reg, agent)
	res, err := edit(reg, id, `{"id":"two"}`, supervisor)
	require.ErrorIs(t, err, codes.InvalidParameters)
	assert.Zero(t, ran.Load())
	require.Len(t, res.Records, 1)
	assert.Equal(t, store.StageEdited, res.Records[0].Audit.Stage)
	_, err = reg.PendingChange(context.Background(), id, supervisor)
	require.NoError(t, err, "a refused edit leaves the change")

	// The gate is the editor's: a read-only token edits nothing.
	readOnly := cloneCaller(supervisor)
	readOnly.Token, readOnly.Scopes = true, []string{"mcp:read"}
	_, err = edit(reg, id, `{"id":3}`, &readOnly)
	require.ErrorIs(t, err, codes.InsufficientScope)
	// Nor may someone the policy does not name, nor the model's surface.
	_, err = edit(reg, id, `{"id":3}`, colleague)
	require.ErrorIs(t, err, codes.UnknownChange)
	onMCP := cloneCaller(supervisor)
	onMCP.Surface = identity.SurfaceMCP
	_, err = edit(reg, id, `{"id":3}`, &onMCP)
	require.ErrorIs(t, err, codes.ForbiddenSurface)
	assert.Zero(t, ran.Load())
}

// Under four eyes the editor's arguments are the editor's proposal:
// held again, for another person to decide, never for the editor.
func TestEditUnderFourEyesIsHeldAgain(t *testing.T) {
	reg, ran := helpdesk(t, GateOptions{}, &Approval{Capability: "tickets.approve", Proposer: ProposerNever})
	id := holdDelete(t, reg, agent)
	res, err := edit(reg, id, `{"id":3}`, supervisor)
	require.ErrorIs(t, err, codes.ConfirmationRequired)
	assert.Zero(t, ran.Load())
	next := asRefusal(err).Pending.ID
	require.NotEqual(t, id, next)
	rec := res.Records[0].Audit
	assert.Equal(t, store.StageHeld, rec.Stage)
	assert.Equal(t, next, rec.PendingChange)
	assert.Equal(t, id, rec.Replaces)
	assert.Equal(t, `{"id":2,"note":"no note"}`, rec.Original)

	_, err = reg.PendingChange(context.Background(), id, supervisor)
	assert.ErrorIs(t, err, codes.UnknownChange, "the edited change is gone")
	_, err = decide(reg, next, true, supervisor)
	assert.ErrorIs(t, err, codes.ForbiddenProposer, "the editor may not confirm its own edit")
	other := &identity.Caller{Principal: "olga", Capabilities: []string{"tickets.write", "tickets.approve"}, Surface: identity.SurfaceUI}
	res, err = decide(reg, next, true, other)
	require.NoError(t, err)
	assert.Equal(t, int32(1), ran.Load())
	assert.Equal(t, `{"id":3,"note":"no note"}`, res.Records[0].Entry.Parameters)
}

// The approval rule sees the edited call: an edit it lets through runs,
// one it holds (or fails on) is held again under four eyes.
func TestEditGoesThroughTheRule(t *testing.T) {
	rule := func(_ context.Context, c CheckedCall) (bool, string, error) {
		id, _ := c.Params["id"].(json.Number).Int64()
		if id == 13 {
			panic("unlucky")
		}
		return id >= 100, "archived", nil
	}
	reg, ran := helpdesk(t, GateOptions{}, &Approval{Capability: "tickets.approve", Proposer: ProposerNever, When: rule})
	hold := func() string {
		_, err := reg.Run(context.Background(), Call{Action: "tickets/delete", Params: `{"id":200}`, Caller: agent})
		require.ErrorIs(t, err, codes.ConfirmationRequired)
		return asRefusal(err).Pending.ID
	}
	_, err := edit(reg, hold(), `{"id":5}`, supervisor)
	require.NoError(t, err, "the rule lets the edited call run")
	assert.Equal(t, int32(1), ran.Load())
	for _, p := range []string{`{"id":300}`, `{"id":13}`} {
		_, err = edit(reg, hold(), p, supervisor)
		require.ErrorIs(t, err, codes.ConfirmationRequired, p)
	}
	assert.Equal(t, int32(1), ran.Load())
}

// A held batch is decided whole: an edit is refused and the change waits.
func TestEditOfABatchRefused(t *testing.T) {
	reg, ran := helpdesk(t, GateOptions{}, &Approval{Capability: "tickets.approve"})
	b := Batch{Steps: []Step{{Call: "tickets/open"}, {Call: "tickets/delete", With: map[string]any{"id": 2}}}}
	_, err := reg.Run(context.Background(), Call{Batch: &b, Caller: agent})
	require.ErrorIs(t, err, codes.ConfirmationRequired)
	id := asRefusal(err).Pending.ID
	_, err = edit(reg, id, `{"id":3}`, supervisor)
	require.ErrorIs(t, err, codes.ConstraintViolation)
	_, err = decide(reg, id, true, supervisor)
	require.NoError(t, err)
	assert.Equal(t, int32(2), ran.Load())
}
