// Package pagestest is the fixture of the pages' tests: a registry of
// three shop actions on the SQL store, its pages served at /ui/ by a test
// server, a settable clock and three people signed in by a cookie. The
// pages' own tests and the browser tests (a module of their own, so that
// the library's module does not require a browser driver) share it.
package pagestest

import (
	"context"
	"errors"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/internal/dbtest"
	"github.com/actionreg/actions/pages"
	"github.com/actionreg/actions/sqlstore"
	"github.com/actionreg/actions/store"
)

// Clock is a settable clock shared by the gate, the store and the pages.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *Clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// People are the fixture's principals: two editors who may write and
// decide their own changes, and a viewer who reads.
var People = map[string]*identity.Caller{
	"editor": {Principal: "editor", Capabilities: []string{"shop.read", "shop.write"}, Surface: identity.SurfaceUI},
	"alice":  {Principal: "alice", Capabilities: []string{"shop.read", "shop.write"}, Surface: identity.SurfaceUI},
	"viewer": {Principal: "viewer", Capabilities: []string{"shop.read"}, Surface: identity.SurfaceUI},
}

// CallerOf is the test host's authentication: a cookie naming the person
// (a real host verifies a session).
func CallerOf(r *http.Request) *identity.Caller {
	c, err := r.Cookie("who")
	if err != nil {
		return nil
	}
	p, ok := People[c.Value]
	if !ok {
		return nil
	}
	cp := *p
	return &cp
}

// Fixture is one registry on one database, its pages and the server.
type Fixture struct {
	T     *testing.T
	Clock *Clock
	Store *sqlstore.Store
	Reg   *actions.Registry
	Pages *pages.Handler
	Srv   *httptest.Server
}

// EachEngine runs fn as a subtest on SQLite, then on PostgreSQL (skipped
// without ACTIONS_TEST_POSTGRES), each on a fixture of its own whose pages
// have opts (nil: the defaults of New).
func EachEngine(t *testing.T, opts *pages.Options, fn func(t *testing.T, f *Fixture)) {
	t.Helper()
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) { fn(t, New(t, db, opts)) })
}

// New serves the pages of a registry on db at /ui/. opts replaces
// the pages' options but for the clock, the caller, who sees all and the
// replayer (nil: Base "/ui", Title "Shop").
func New(t *testing.T, db *dbtest.DB, opts *pages.Options) *Fixture {
	t.Helper()
	ctx := context.Background()
	f := &Fixture{T: t, Clock: &Clock{t: time.Date(2026, 3, 14, 9, 30, 0, 0, time.UTC)}}
	var err error
	f.Store, err = sqlstore.New(db.DB, db.Dialect, &sqlstore.Options{Now: f.Clock.Now, Origin: "test"})
	require.NoError(t, err)
	require.NoError(t, f.Store.Migrate(ctx))
	f.Reg = NewRegistry(f.Store, f.Store.Pending(), f.Clock)
	o := pages.Options{Base: "/ui", Title: "Shop"}
	if opts != nil {
		o = *opts
	}
	o.Now, o.Caller = f.Clock.Now, CallerOf
	o.SeesAll = func(who *identity.Caller) bool { return who.Principal == "editor" }
	// Replays run on a registry of their own, in memory: a replay that
	// matches is kept, which the live store must not get.
	o.Replayer = NewRegistry(actions.NewRunLog(), nil, f.Clock)
	f.Pages, err = pages.New(f.Reg, f.Store, &o)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/ui/", f.Pages)
	mux.HandleFunc("GET /login/{who}", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "who", Value: r.PathValue("who"), Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode})
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
	})
	f.Srv = httptest.NewServer(mux)
	t.Cleanup(f.Srv.Close)
	return f
}

// NewRegistry registers the fixture's actions on store.
func NewRegistry(store store.Store, pending actions.PendingStore, c *Clock) *actions.Registry {
	reg := actions.NewRegistry(&actions.Options{Now: c.Now, Store: store, Gate: &actions.GateOptions{Pending: pending}})
	reg.MustRegister(
		actions.New(actions.Definition{ID: "shop/discard", Title: "Discard stock",
			Description: "Removes items from the stock for good, with a note saying why.",
			Capability:  "shop.write", Effect: actions.EffectDelete, NeedsConfirmation: true,
			Parameters: `{"type":"object","required":["item"],"properties":{"item":{"type":"string"},"count":{"type":"integer"},"note":{"type":"string"},"labels":{"type":"object"},"batches":{"type":"array"}}}`},
			func(_ context.Context, p map[string]any, tr *actions.Trace) (any, error) {
				_ = tr.Command(map[string]any{"op": "discard", "item": p["item"]}, true)
				if p["item"] == "locked" {
					return nil, actions.NewRefusal("stock_locked", "the stock is being counted")
				}
				return map[string]any{"discarded": p["item"], "count": p["count"]}, nil
			}),
		actions.New(actions.Definition{ID: "shop/restock", Title: "Restock", Capability: "shop.write", Additive: true,
			Parameters: `{"type":"object","properties":{"item":{"type":"string"},"count":{"type":"integer","minimum":1}}}`},
			func(ctx context.Context, p map[string]any, tr *actions.Trace) (any, error) {
				if _, err := tr.Call(ctx, "shop/count", map[string]any{"item": p["item"]}); err != nil {
					return nil, err
				}
				return map[string]any{"restocked": p["item"]}, nil
			}),
		actions.New(actions.Definition{ID: "shop/count", Title: "Count stock", Capability: "shop.read", Effect: actions.EffectRead,
			Parameters: `{"type":"object","properties":{"item":{"type":"string"}}}`},
			func(_ context.Context, p map[string]any, tr *actions.Trace) (any, error) {
				_ = tr.Command(map[string]any{"op": "count", "item": p["item"]}, 12)
				return 12, nil
			}),
	)
	return reg
}

// Hold makes who's call of shop/discard and returns the pending change's id.
func (f *Fixture) Hold(who string, params any) string {
	f.T.Helper()
	_, err := f.Reg.Run(context.Background(), actions.Call{Action: "shop/discard", Params: params, Caller: People[who]})
	var r *actions.Refusal
	require.True(f.T, errors.As(err, &r) && r.Pending != nil, "held: %v", err)
	return r.Pending.ID
}

// Call runs an action as who, recorded in the log.
func (f *Fixture) Call(who, id string, params any) error {
	_, err := f.Reg.Run(context.Background(), actions.Call{Action: id, Params: params, Caller: People[who]})
	return err
}

// Client returns an HTTP client signed in as who that does not follow
// redirects.
func (f *Fixture) Client(who string) *http.Client {
	jar, _ := cookiejar.New(nil)
	u, _ := url.Parse(f.Srv.URL)
	jar.SetCookies(u, []*http.Cookie{{Name: "who", Value: who, Path: "/"}})
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}
