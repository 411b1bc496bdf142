package pages_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/internal/pagestest"
)

// TestSupervisorConfirmsOnThePages: on SQLite and PostgreSQL, an agent's
// change of an action whose approval reserves it to holders of
// shop.approve (four eyes) is listed for the supervisor, with the
// arguments as they will run and the host's description; the supervisor
// confirms it on the page; the agent, its proposer, cannot.
func TestSupervisorConfirmsOnThePages(t *testing.T) {
	pagestest.People["boss"] = &identity.Caller{Principal: "boss", Capabilities: []string{"shop.read", "shop.write", "shop.approve"}, Surface: identity.SurfaceUI}
	t.Cleanup(func() { delete(pagestest.People, "boss") })
	pagestest.EachEngine(t, nil, func(t *testing.T, f *pagestest.Fixture) {
		ran := 0
		f.Reg.MustRegister(actions.New(actions.Definition{ID: "shop/purge", Title: "Purge an aisle", Capability: "shop.write",
			Effect: actions.EffectDelete, NeedsConfirmation: true,
			Approval: &actions.Approval{Capability: "shop.approve", Proposer: actions.ProposerNever,
				Describe: func(_ context.Context, c actions.CheckedCall) (string, error) {
					return fmt.Sprintf("Aisle %v: 41 items, last counted on Monday", c.Params["aisle"]), nil
				}},
			Parameters: `{"type":"object","properties":{"aisle":{"type":"integer"},"keep":{"type":"string","default":"labels"}}}`},
			func(context.Context, map[string]any, *actions.Trace) (any, error) { ran++; return "purged", nil }))
		_, err := f.Reg.Run(context.Background(), actions.Call{Action: "shop/purge", Params: `{"aisle":4}`, Caller: pagestest.People["editor"]})
		var r *actions.Refusal
		require.ErrorAs(t, err, &r)
		id := r.Pending.ID

		_, list := get(t, f.Client("boss"), f.Srv.URL+"/ui/")
		assert.Contains(t, list, id, "the approver's list holds the agent's change")
		res, page := get(t, f.Client("boss"), f.Srv.URL+"/ui/changes/"+id)
		require.Equal(t, http.StatusOK, res.StatusCode)
		assert.Contains(t, page, "Aisle 4: 41 items, last counted on Monday")
		assert.Contains(t, page, "labels", "the default the body will receive is shown")

		// The proposer sees its change and cannot confirm it.
		_, own := get(t, f.Client("editor"), f.Srv.URL+"/ui/changes/"+id)
		if form, ok := forms(own)["confirm"]; ok {
			res, err := f.Client("editor").PostForm(f.Srv.URL+form[0], url.Values{"csrf": {form[1]}})
			require.NoError(t, err)
			_ = res.Body.Close()
			assert.NotEqual(t, http.StatusOK, res.StatusCode)
		}
		assert.Zero(t, ran)

		form := forms(page)["confirm"]
		res, err = f.Client("boss").PostForm(f.Srv.URL+form[0], url.Values{"csrf": {form[1]}})
		require.NoError(t, err)
		_ = res.Body.Close()
		assert.Less(t, res.StatusCode, 400)
		assert.Equal(t, 1, ran)
	})
}

// TestSupervisorEditsOnThePages: on SQLite and PostgreSQL, the screen
// offers the supervisor an edit of the agent's change; the edited
// arguments run (checked again, defaults filled) and the answer shows
// what changed; arguments the schema refuses run nothing; under four
// eyes the edit waits for another person.
func TestSupervisorEditsOnThePages(t *testing.T) {
	pagestest.People["boss"] = &identity.Caller{Principal: "boss", Capabilities: []string{"shop.read", "shop.write", "shop.approve"}, Surface: identity.SurfaceUI}
	t.Cleanup(func() { delete(pagestest.People, "boss") })
	pagestest.EachEngine(t, nil, func(t *testing.T, f *pagestest.Fixture) {
		var ran []any
		body := func(_ context.Context, p map[string]any, _ *actions.Trace) (any, error) {
			ran = append(ran, p["aisle"])
			return "purged", nil
		}
		params := `{"type":"object","properties":{"aisle":{"type":"integer"},"keep":{"type":"string","default":"labels"}},"required":["aisle"]}`
		f.Reg.MustRegister(
			actions.New(actions.Definition{ID: "shop/purge", Title: "Purge an aisle", Capability: "shop.write", Effect: actions.EffectDelete,
				NeedsConfirmation: true, Approval: &actions.Approval{Capability: "shop.approve"}, Parameters: params}, body),
			actions.New(actions.Definition{ID: "shop/purge4", Title: "Purge an aisle, four eyes", Capability: "shop.write", Effect: actions.EffectDelete,
				NeedsConfirmation: true, Approval: &actions.Approval{Capability: "shop.approve", Proposer: actions.ProposerNever}, Parameters: params}, body))
		hold := func(action string) string {
			_, err := f.Reg.Run(context.Background(), actions.Call{Action: action, Params: `{"aisle":4}`, Caller: pagestest.People["editor"]})
			var r *actions.Refusal
			require.ErrorAs(t, err, &r)
			return r.Pending.ID
		}
		post := func(id, text string) (int, string) {
			_, page := get(t, f.Client("boss"), f.Srv.URL+"/ui/changes/"+id)
			form, ok := forms(page)["edit"]
			require.True(t, ok, "the screen offers an edit")
			res, err := f.Client("boss").PostForm(f.Srv.URL+form[0], url.Values{"csrf": {form[1]}, "params": {text}})
			require.NoError(t, err)
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			return res.StatusCode, string(b)
		}

		id := hold("shop/purge")
		code, page := post(id, `{"aisle":"four"}`)
		assert.Equal(t, http.StatusOK, code)
		assert.Contains(t, page, "invalid_parameters")
		assert.Empty(t, ran)
		code, page = post(id, `{"aisle":5}`)
		assert.Equal(t, http.StatusOK, code)
		assert.Contains(t, page, "What your edit changed")
		assert.Contains(t, page, "<del>4</del>")
		assert.Contains(t, page, "<ins>5</ins>")
		assert.Equal(t, []any{json.Number("5")}, ran)

		id = hold("shop/purge4")
		code, page = post(id, `{"aisle":6}`)
		assert.Equal(t, http.StatusOK, code)
		assert.Contains(t, page, "it waits for another person")
		assert.Len(t, ran, 1)
	})
}
