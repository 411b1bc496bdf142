package pages_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/internal/pagestest"
	"github.com/actionreg/actions/pages"
	"github.com/actionreg/actions/sqlstore"
)

// A Handler not made by New answers 500 and does not panic; New refuses
// a missing registry or store.
func TestZeroHandler(t *testing.T) {
	var h pages.Handler
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	assert.Equal(t, http.StatusInternalServerError, w.Code)

	_, err := pages.New(nil, &sqlstore.Store{}, nil)
	require.Error(t, err)
	_, err = pages.New(actions.NewRegistry(nil), nil, nil)
	require.Error(t, err)
}

// Options.Caller is asked once per request, whatever the page asks of
// the person afterwards (its list, its forms' tokens, its header).
func TestCallerAskedOncePerRequest(t *testing.T) {
	pagestest.EachEngine(t, nil, func(t *testing.T, f *pagestest.Fixture) {
		id := f.Hold("editor", map[string]any{"item": "apples"})
		n := 0
		h, err := pages.New(f.Reg, f.Store, &pages.Options{Base: "/ui", Now: f.Clock.Now,
			Caller: func(r *http.Request) *identity.Caller { n++; return pagestest.CallerOf(r) }})
		require.NoError(t, err)
		for _, path := range []string{"/ui/", "/ui/changes/" + id, "/ui/log"} {
			n = 0
			req := httptest.NewRequest("GET", path, nil)
			req.AddCookie(&http.Cookie{Name: "who", Value: "editor"})
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			assert.Equal(t, http.StatusOK, w.Code, path)
			assert.Equal(t, 1, n, path)
		}
	})
}
