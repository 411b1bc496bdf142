package pages_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	_ "modernc.org/sqlite" // the host picks the driver

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/pages"
	"github.com/actionreg/actions/sqlstore"
)

// The pages of a registry whose store is SQL, mounted at /ui/ behind the
// host's sign-in (here a header its proxy sets): the person who proposed
// a change finds it in their list; someone else does not, and nobody
// signed in gets 401.
func ExampleNew() {
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file::memory:")
	if err != nil {
		panic(err)
	}
	db.SetMaxOpenConns(1) // each connection to :memory: is a database of its own
	defer db.Close()
	store, err := sqlstore.New(db, sqlstore.SQLite, nil)
	if err != nil {
		panic(err)
	}
	if err := store.Migrate(ctx); err != nil {
		panic(err)
	}
	reg := actions.NewRegistry(&actions.Options{Store: store, Gate: &actions.GateOptions{Pending: store.Pending()}})
	reg.MustRegister(actions.New(actions.Definition{ID: "stock/discard", Title: "Discard stock",
		Effect: actions.EffectDelete, NeedsConfirmation: true, Parameters: `{"type":"object"}`},
		func(context.Context, map[string]any, *actions.Trace) (any, error) { return "discarded", nil }))

	caller := func(r *http.Request) *identity.Caller {
		if p := r.Header.Get("X-Signed-In"); p != "" {
			return &identity.Caller{Principal: p, Surface: identity.SurfaceUI}
		}
		return nil
	}
	ui, err := pages.New(reg, store, &pages.Options{Caller: caller, Base: "/ui", Title: "Stock"})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/ui/", ui)

	_, err = reg.Run(ctx, actions.Call{Action: "stock/discard", Caller: &identity.Caller{Principal: "ana", Surface: identity.SurfaceUI}})
	fmt.Println("held:", actions.CodeOf(err))
	for _, who := range []string{"ana", "bo", ""} {
		req := httptest.NewRequest("GET", "/ui/", nil)
		if who != "" {
			req.Header.Set("X-Signed-In", who)
		}
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, req)
		fmt.Printf("%q: %d, lists the change: %v\n", who, w.Code, strings.Contains(w.Body.String(), "Discard stock"))
	}
	// Output:
	// held: confirmation_required
	// "ana": 200, lists the change: true
	// "bo": 200, lists the change: false
	// "": 401, lists the change: false
}
