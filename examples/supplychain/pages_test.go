package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/identity"
)

// TestPages: the example's pages at /ui/ behind Basic sign-in. Nobody
// signed in is asked to; the viewer does not see the editor's change; the
// editor lists it, confirms it with the screen's form, and finds the
// confirmed call in the run log.
func TestPages(t *testing.T) {
	model, reg, err := setup()
	require.NoError(t, err)
	defer model.Close()
	ui, err := newPages(reg, model)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/ui/", ui)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	editor := &identity.Caller{Principal: "editor", Capabilities: principals["editor"], Surface: identity.SurfaceUI}
	_, err = reg.Run(context.Background(), actions.Call{Action: "supply/delete_actor", Params: `{"actor":"le_havre_depot"}`, Caller: editor})
	var r *actions.Refusal
	require.True(t, errors.As(err, &r) && r.Pending != nil, "held: %v", err)
	id := r.Pending.ID

	send := func(user, method, path string, form url.Values) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(form.Encode()))
		require.NoError(t, err)
		if method == http.MethodPost {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		if user != "" {
			req.SetBasicAuth(user, user+"-demo-token")
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res.StatusCode, string(b)
	}

	status, _ := send("", http.MethodGet, "/ui/", nil)
	assert.Equal(t, http.StatusUnauthorized, status, "nobody signed in")
	status, _ = send("viewer", http.MethodGet, "/ui/changes/"+id, nil)
	assert.Equal(t, http.StatusNotFound, status, "the editor's change is not the viewer's")

	status, body := send("editor", http.MethodGet, "/ui/", nil)
	require.Equal(t, http.StatusOK, status)
	assert.Contains(t, body, "Delete an actor")
	status, body = send("editor", http.MethodGet, "/ui/changes/"+id, nil)
	require.Equal(t, http.StatusOK, status)
	m := regexp.MustCompile(`action="([^"]+/confirm)">\s*<input type="hidden" name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
	require.NotNil(t, m, "the confirm form")
	status, body = send("editor", http.MethodPost, m[1], url.Values{"csrf": {m[2]}})
	require.Equal(t, http.StatusOK, status)
	assert.Contains(t, body, "Done")

	status, body = send("editor", http.MethodGet, "/ui/log?outcome=confirmed", nil)
	require.Equal(t, http.StatusOK, status)
	assert.Contains(t, body, "supply/delete_actor")
	assert.Contains(t, body, "confirmed · done")
}
