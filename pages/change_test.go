package pages

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/store"
)

// A held batch's screen shows every step of the batch, each with its
// action's text and its parameters exactly as the batch wrote them.
func TestChangeOfHeldBatch(t *testing.T) {
	defs := map[string]actions.Definition{
		"supply/create_actor": {ID: "supply/create_actor", Title: "Create an actor", Effect: actions.EffectWrite, Additive: true},
		"supply/delete_actor": {ID: "supply/delete_actor", Title: "Delete an actor", Effect: actions.EffectDelete, NeedsConfirmation: true},
	}
	var b actions.Batch
	require.NoError(t, json.Unmarshal([]byte(`{"commands":[
		{"call":"supply/create_actor","with":{"id":"lyon","n":9007199254740993},"as":"a"},
		{"call":"supply/delete_actor","with":{"actor":"${a.id}"}}]}`), &b))
	pc := actions.PendingChange{ID: "c1", Action: "supply/delete_actor", Batch: &b,
		Held: []actions.HeldStep{{Index: 1, Action: "supply/delete_actor"}}, Proposer: identity.Caller{Principal: "editor"}}
	c := changeOf(pc, defs)
	require.Len(t, c.Calls, 2, "every step the confirmation runs")
	assert.Equal(t, "Create an actor", c.Calls[0].Title)
	assert.False(t, c.Calls[0].Destructive)
	assert.JSONEq(t, `{"id":"lyon","n":9007199254740993}`, c.Calls[0].Parameters)
	assert.Contains(t, c.Calls[0].Parameters, "9007199254740993", "the digits as written")
	assert.Equal(t, "Delete an actor", c.Calls[1].Title)
	assert.True(t, c.Calls[1].Destructive)
	assert.Equal(t, `{"actor":"${a.id}"}`, c.Calls[1].Parameters)
}

// A call held after its preview (a program) shows the call, then every
// call the preview made, with its parameters as they ran; it is not
// editable.
func TestChangeOfPreviewedCall(t *testing.T) {
	defs := map[string]actions.Definition{
		"programs/run_program": {ID: "programs/run_program", Title: "Run a program", Effect: actions.EffectWrite},
		"supply/delete_actor":  {ID: "supply/delete_actor", Title: "Delete an actor", Effect: actions.EffectDelete, NeedsConfirmation: true},
	}
	pc := actions.PendingChange{ID: "c1", Action: "programs/run_program", Parameters: `{"program":"await supply.delete_actor({id: \"a1\"});"}`,
		Preview: &store.RunEntry{Action: "programs/run_program", Steps: []store.RunStep{
			{Command: json.RawMessage(`{"value":"now"}`), Result: `"2026-12-02T00:00:00Z"`},
			{Call: &store.RunEntry{Action: "supply/delete_actor", Parameters: `{"id":"a1"}`, Outcome: store.OutcomeDone}},
		}}}
	c := changeOf(pc, defs)
	assert.False(t, c.Editable)
	require.Len(t, c.Calls, 2)
	assert.Equal(t, "programs/run_program", c.Calls[0].Action)
	assert.Equal(t, "supply/delete_actor", c.Calls[1].Action)
	assert.Equal(t, `{"id":"a1"}`, c.Calls[1].Parameters)
	assert.True(t, c.Calls[1].Destructive)
}
