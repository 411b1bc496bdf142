package pages_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/internal/dbtest"
	"github.com/actionreg/actions/pages"
	"github.com/actionreg/actions/sqlstore"
)

// clock is a settable clock shared by the gate, the store and the pages.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// people are the fixture's principals: two editors who may write and
// decide their own changes, and a viewer who reads.
var people = map[string]*actions.Caller{
	"editor": {Principal: "editor", Capabilities: []string{"shop.read", "shop.write"}, Surface: actions.SurfaceUI},
	"alice":  {Principal: "alice", Capabilities: []string{"shop.read", "shop.write"}, Surface: actions.SurfaceUI},
	"viewer": {Principal: "viewer", Capabilities: []string{"shop.read"}, Surface: actions.SurfaceUI},
}

// callerOf is the test host's authentication: a cookie naming the person
// (a real host verifies a session).
func callerOf(r *http.Request) *actions.Caller {
	c, err := r.Cookie("who")
	if err != nil {
		return nil
	}
	p, ok := people[c.Value]
	if !ok {
		return nil
	}
	cp := *p
	return &cp
}

type fixture struct {
	t     *testing.T
	clock *clock
	store *sqlstore.Store
	reg   *actions.Registry
	pages *pages.Handler
	srv   *httptest.Server
}

// eachEngine runs fn as a subtest on SQLite, then on PostgreSQL (skipped
// without ACTIONS_TEST_POSTGRES), each on a fixture of its own whose pages
// have opts (nil: the defaults of newFixture).
func eachEngine(t *testing.T, opts *pages.Options, fn func(t *testing.T, f *fixture)) {
	t.Helper()
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) { fn(t, newFixture(t, db, opts)) })
}

// newFixture serves the pages of a registry on db at /ui/. opts replaces
// the pages' options but for the clock, the caller, who sees all and the
// replayer (nil: Base "/ui", Title "Shop").
func newFixture(t *testing.T, db *dbtest.DB, opts *pages.Options) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{t: t, clock: &clock{t: time.Date(2026, 3, 14, 9, 30, 0, 0, time.UTC)}}
	var err error
	f.store, err = sqlstore.New(db.DB, db.Dialect, &sqlstore.Options{Now: f.clock.Now, Origin: "test"})
	require.NoError(t, err)
	require.NoError(t, f.store.Migrate(ctx))
	f.reg = newRegistry(f.store, f.store.Pending(), f.clock)
	o := pages.Options{Base: "/ui", Title: "Shop"}
	if opts != nil {
		o = *opts
	}
	o.Now, o.Caller = f.clock.Now, callerOf
	o.SeesAll = func(who *actions.Caller) bool { return who.Principal == "editor" }
	// Replays run on a registry of their own, in memory: a replay that
	// matches is kept, which the live store must not get.
	o.Replayer = newRegistry(actions.NewRunLog(), nil, f.clock)
	f.pages, err = pages.New(f.reg, f.store, &o)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/ui/", f.pages)
	mux.HandleFunc("GET /login/{who}", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "who", Value: r.PathValue("who"), Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode})
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

// newRegistry registers the fixture's actions on store.
func newRegistry(store actions.Store, pending actions.PendingStore, c *clock) *actions.Registry {
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

// hold makes who's call of shop/discard and returns the pending change's id.
func (f *fixture) hold(who string, params any) string {
	f.t.Helper()
	_, err := f.reg.Run(context.Background(), actions.Call{Action: "shop/discard", Params: params, Caller: people[who]})
	var r *actions.Refusal
	require.True(f.t, errors.As(err, &r) && r.Pending != nil, "held: %v", err)
	return r.Pending.ID
}

// call runs an action as who, recorded in the log.
func (f *fixture) call(who, id string, params any) error {
	_, err := f.reg.Run(context.Background(), actions.Call{Action: id, Params: params, Caller: people[who]})
	return err
}
