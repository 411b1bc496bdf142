package pages_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
)

// TestSupervisorConfirmsOnThePages: on SQLite and PostgreSQL, an agent's
// change of an action whose approval reserves it to holders of
// shop.approve (four eyes) is listed for the supervisor, with the
// arguments as they will run and the host's description; the supervisor
// confirms it on the page; the agent, its proposer, cannot.
func TestSupervisorConfirmsOnThePages(t *testing.T) {
	people["boss"] = &actions.Caller{Principal: "boss", Capabilities: []string{"shop.read", "shop.write", "shop.approve"}, Surface: actions.SurfaceUI}
	t.Cleanup(func() { delete(people, "boss") })
	eachEngine(t, nil, func(t *testing.T, f *fixture) {
		ran := 0
		f.reg.MustRegister(actions.New(actions.Definition{ID: "shop/purge", Title: "Purge an aisle", Capability: "shop.write",
			Effect: actions.EffectDelete, NeedsConfirmation: true,
			Approval: &actions.Approval{Capability: "shop.approve", Proposer: actions.ProposerNever,
				Describe: func(_ context.Context, c actions.CheckedCall) (string, error) {
					return fmt.Sprintf("Aisle %v: 41 items, last counted on Monday", c.Params["aisle"]), nil
				}},
			Parameters: `{"type":"object","properties":{"aisle":{"type":"integer"},"keep":{"type":"string","default":"labels"}}}`},
			func(context.Context, map[string]any, *actions.Trace) (any, error) { ran++; return "purged", nil }))
		_, err := f.reg.Run(context.Background(), actions.Call{Action: "shop/purge", Params: `{"aisle":4}`, Caller: people["editor"]})
		var r *actions.Refusal
		require.ErrorAs(t, err, &r)
		id := r.Pending.ID

		_, list := get(t, f.client("boss"), f.srv.URL+"/ui/")
		assert.Contains(t, list, id, "the approver's list holds the agent's change")
		res, page := get(t, f.client("boss"), f.srv.URL+"/ui/changes/"+id)
		require.Equal(t, http.StatusOK, res.StatusCode)
		assert.Contains(t, page, "Aisle 4: 41 items, last counted on Monday")
		assert.Contains(t, page, "labels", "the default the body will receive is shown")

		// The proposer sees its change and cannot confirm it.
		_, own := get(t, f.client("editor"), f.srv.URL+"/ui/changes/"+id)
		if form, ok := forms(own)["confirm"]; ok {
			res, err := f.client("editor").PostForm(f.srv.URL+form[0], url.Values{"csrf": {form[1]}})
			require.NoError(t, err)
			_ = res.Body.Close()
			assert.NotEqual(t, http.StatusOK, res.StatusCode)
		}
		assert.Zero(t, ran)

		form := forms(page)["confirm"]
		res, err = f.client("boss").PostForm(f.srv.URL+form[0], url.Values{"csrf": {form[1]}})
		require.NoError(t, err)
		_ = res.Body.Close()
		assert.Less(t, res.StatusCode, 400)
		assert.Equal(t, 1, ran)
	})
}
