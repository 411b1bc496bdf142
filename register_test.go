package actions

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRegistryRegisterRefusesBadIDs covers the id rule: namespace/name, both
// identifiers, ASCII only.
func TestRegistryRegisterRefusesBadIDs(t *testing.T) {
	body := func(context.Context, map[string]any, *Trace) (any, error) { return nil, nil }
	for _, id := range []string{"", "a", "a/b/c", "1a/b", "a/b-c", "ns/", "/x", "/", "a b/c", "ns/1x",
		"é/x", "ns/名前", "ns/x\u200b", "ns\\x"} {
		t.Run(fmt.Sprintf("%q", id), func(t *testing.T) {
			reg := NewRegistry(nil)
			err := reg.Register(Action{Definition: Definition{ID: id}, Run: body})
			require.Error(t, err)
			assert.ErrorIs(t, err, codes.ConstraintViolation)
			var r *Refusal
			require.True(t, errors.As(err, &r))
			assert.Equal(t, codes.ConstraintViolation, r.Code)
			assert.Equal(t, codes.RetryNever, r.Retry)
			assert.Equal(t, codes.TransportProtocol, r.Transport)
			assert.Empty(t, reg.Definitions(), "a refused action is not registered")
		})
	}
	for _, id := range []string{"a/b", "_/_", "ns_1/x_2", "A/Z9", "garden/plant"} {
		t.Run("accepts "+id, func(t *testing.T) {
			reg := NewRegistry(nil)
			require.NoError(t, reg.Register(Action{Definition: Definition{ID: id}, Run: body}))
			_, ok := getAction(reg, id)
			assert.True(t, ok)
		})
	}
}

func TestRegistryRegisterRefusesDuplicatesAndMissingBodies(t *testing.T) {
	body := func(context.Context, map[string]any, *Trace) (any, error) { return "first", nil }
	reg := NewRegistry(nil)
	require.NoError(t, reg.Register(Action{Definition: Definition{ID: "ns/x", Title: "first"}, Run: body}))
	err := reg.Register(Action{Definition: Definition{ID: "ns/x", Title: "second"}, Run: body})
	require.Error(t, err)
	assert.ErrorIs(t, err, codes.DuplicateName)
	var r *Refusal
	require.True(t, errors.As(err, &r))
	assert.Equal(t, codes.DuplicateName, r.Code)
	got, _ := getAction(reg, "ns/x")
	assert.Equal(t, "first", got.Title, "the first registration stays")

	err = reg.Register(Action{Definition: Definition{ID: "ns/nobody"}})
	assert.ErrorIs(t, err, codes.ConstraintViolation, "an action without body")

	err = reg.Register(Action{Definition: Definition{ID: "ns/y", Parameters: `{"type":"array"}`}, Run: body})
	assert.ErrorIs(t, err, codes.ConstraintViolation, "a root that is not an object")
	_, ok := getAction(reg, "ns/y")
	assert.False(t, ok)
}

// TestRegisterRefusesKeyedActionWithoutKeyStore: an action that needs
// idempotency keys is refused on a registry whose store keeps none (no
// caller could ever call it), and registered on one that keeps them.
func TestRegisterRefusesKeyedActionWithoutKeyStore(t *testing.T) {
	body := func(context.Context, map[string]any, *Trace) (any, error) { return nil, nil }
	keyed := Action{Definition: Definition{ID: "pay/charge", NeedsIdempotencyKey: true}, Run: body}
	for name, store := range map[string]store.Store{"no store": nil, "no KeyStore": plainStore{}} {
		t.Run(name, func(t *testing.T) {
			reg := NewRegistry(&Options{Store: store})
			err := reg.Register(keyed)
			require.ErrorIs(t, err, codes.ConstraintViolation)
			rf := asRefusal(err)
			require.NotNil(t, rf)
			require.Len(t, rf.Issues, 1)
			assert.Equal(t, "/needsIdempotencyKey", rf.Issues[0].Path)
			assert.Empty(t, reg.Definitions())
		})
	}
	reg := NewRegistry(&Options{Store: NewRunLog()})
	require.NoError(t, reg.Register(keyed))
}

// plainStore is a Store and nothing more: it runs each unit once and
// keeps no keys.
type plainStore struct{}

func (plainStore) Atomic(ctx context.Context, fn func(context.Context) store.Unit) ([]store.Record, error) {
	u := fn(ctx)
	return u.Records, u.Err
}

func TestRegistryRegisterKeepsItsOwnCopyOfWrites(t *testing.T) {
	writes := []string{"plant", "bed"}
	reg := NewRegistry(nil)
	require.NoError(t, reg.Register(Action{
		Definition: Definition{ID: "ns/x", Writes: writes},
		Run:        func(context.Context, map[string]any, *Trace) (any, error) { return nil, nil },
	}))
	writes[0] = "changed"
	got, _ := getAction(reg, "ns/x")
	assert.Equal(t, []string{"plant", "bed"}, got.Writes)
}

func TestRegistryDefinitionsAreSorted(t *testing.T) {
	reg := NewRegistry(nil)
	assert.Empty(t, reg.Definitions())
	body := func(context.Context, map[string]any, *Trace) (any, error) { return nil, nil }
	ids := []string{"zeta/a", "alpha/z", "alpha/b", "Beta/x", "alpha/B", "m/m", "_/a"}
	for _, id := range ids {
		require.NoError(t, reg.Register(Action{Definition: Definition{ID: id}, Run: body}))
	}
	var got []string
	for _, a := range reg.Definitions() {
		got = append(got, a.ID)
	}
	want := append([]string(nil), ids...)
	sort.Strings(want)
	assert.Equal(t, want, got)
	assert.Equal(t, []string{"Beta/x", "_/a", "alpha/B", "alpha/b", "alpha/z", "m/m", "zeta/a"}, got, "byte order of the ids")
}

func TestRegistryRunNestedDepthDefault(t *testing.T) {
	// Without a fixture limit, an action calling itself forever is stopped
	// at defaultLimits.MaxCallDepth, with one entry per level.
	reg := NewRegistry(nil)
	var runs atomic.Int64
	require.NoError(t, reg.Register(Action{
		Definition: Definition{ID: "ns/loop"},
		Run: func(ctx context.Context, _ map[string]any, tr *Trace) (any, error) {
			runs.Add(1)
			return tr.Call(ctx, "ns/loop", nil)
		},
	}))
	_, entry, err := call3(reg, context.Background(), "ns/loop", nil)
	assert.ErrorIs(t, err, codes.Internal, "the caller is not at fault")
	assert.NotErrorIs(t, err, codes.ConstraintViolation, "errors.Is sees the caller's code only")
	var r *Refusal
	require.ErrorAs(t, err, &r)
	innermost := r.Cause()
	for {
		nr, ok := innermost.(*Refusal)
		if !ok || nr.Cause() == nil {
			break
		}
		innermost = nr.Cause()
	}
	assert.ErrorIs(t, innermost, codes.ConstraintViolation, "the host finds the nested refusal down the causes")
	assert.Equal(t, int64(defaultLimits.MaxCallDepth+1), runs.Load(), "bodies run: the top level and each allowed nesting")
	levels := 0
	for e := &entry; ; levels++ {
		assert.Equal(t, store.OutcomeRefused, e.Outcome)
		if len(e.Steps) == 0 {
			assert.Equal(t, codes.ConstraintViolation, e.Error, "the call too deep")
			break
		}
		assert.Equal(t, codes.Internal, e.Error, "each level returned the refusal of the level below")
		require.Len(t, e.Steps, 1)
		e = e.Steps[0].Call
	}
	assert.Equal(t, defaultLimits.MaxCallDepth+1, levels, "nested entries below the top one")
}

func TestRunTraceRecordsNothingAfterItsBody(t *testing.T) {
	reg := NewRegistry(nil)
	var kept *Trace
	require.NoError(t, reg.Register(Action{
		Definition: Definition{ID: "ns/leak"},
		Run: func(_ context.Context, _ map[string]any, tr *Trace) (any, error) {
			kept = tr
			return nil, nil
		},
	}))
	var lateRuns atomic.Int64
	require.NoError(t, reg.Register(Action{
		Definition: Definition{ID: "ns/late"},
		Run: func(context.Context, map[string]any, *Trace) (any, error) {
			lateRuns.Add(1)
			return nil, nil
		},
	}))
	_, entry, err := call3(reg, context.Background(), "ns/leak", nil)
	require.NoError(t, err)
	assert.Error(t, kept.Command("late", nil))
	// A call that nothing would record does not run either.
	_, err = kept.Call(context.Background(), "ns/late", nil)
	assert.Error(t, err)
	assert.Zero(t, lateRuns.Load(), "the late nested call ran")
	assert.Empty(t, entry.Steps)
}

// TestConcurrentRegisterAndRun runs 8 goroutines at once; each registers
// its own actions, binds a small manifest and runs its own and shared
// actions many times, all recorded in one RunLog. Run it with -race.
func TestConcurrentRegisterAndRun(t *testing.T) {
	const workers, rounds = 8, 60
	log := NewRunLog()
	reg := NewRegistry(&Options{
		Store:   log,
		Resolve: fixtureResolver(map[string][]refFixture{"plant": {{Key: "k1", ID: "p1", DisplayName: map[string]string{"en": "Rose"}}}}),
	})
	echo := func(_ context.Context, p map[string]any, tr *Trace) (any, error) {
		if err := tr.Command(map[string]any{"op": "echo", "at": "${now()}"}, p); err != nil {
			return nil, err
		}
		return p, nil
	}
	shared := Definition{ID: "shared/echo", Parameters: `{"type":"object","properties":{"n":{"type":"integer"},"plant":{"type":"string","ref":"plant"}},"required":["n"]}`}
	require.NoError(t, reg.Register(Action{Definition: shared, Run: echo}))
	require.NoError(t, reg.Register(Action{
		Definition: Definition{ID: "shared/outer", Parameters: `{"type":"object","properties":{"n":{"type":"integer","default":0}}}`},
		Run: func(ctx context.Context, p map[string]any, tr *Trace) (any, error) {
			r, err := tr.Call(ctx, "shared/echo", map[string]any{"n": p["n"], "plant": "Rose"})
			if err != nil {
				return nil, err
			}
			return map[string]any{"inner": r}, nil
		},
	}))

	var wantDone, wantRefused atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			own := fmt.Sprintf("w%d/echo", w)
			if err := reg.Register(Action{Definition: Definition{ID: own, Parameters: shared.Parameters}, Run: echo}); err != nil {
				t.Error(err)
				return
			}
			// Everybody also tries to take a shared name: exactly one wins
			// across all workers (checked below).
			_ = reg.Register(Action{Definition: Definition{ID: "shared/race"}, Run: echo})
			bound := fmt.Sprintf("w%d/bound", w)
			if err := reg.Bind([]Definition{{ID: bound}}, map[string]Body{bound: echo}); err != nil {
				t.Error(err)
				return
			}
			ctx := context.Background()
			for i := range rounds {
				id := []string{own, "shared/echo", "shared/outer", bound}[i%4]
				var params any = map[string]any{"n": i}
				if id == bound {
					params = nil
				}
				result, entry, err := call3(reg, ctx, id, params)
				if err != nil || result == nil || entry.Outcome != store.OutcomeDone {
					t.Errorf("%s: %v", id, err)
					return
				}
				wantDone.Add(1)
				// A refused call: the wrong type.
				_, entry, err = call3(reg, ctx, own, []byte(`{"n":"x"}`))
				if !errors.Is(err, codes.InvalidParameters) || entry.Parameters != `{"n":"x"}` {
					t.Errorf("%s refused: %v %q", own, err, entry.Parameters)
					return
				}
				wantRefused.Add(1)
				_ = reg.Definitions()
			}
		}()
	}
	close(start)
	wg.Wait()

	entries := entriesOf(log.Records())
	require.Len(t, entries, int(wantDone.Load()+wantRefused.Load()))
	assert.Equal(t, int64(workers*rounds), wantDone.Load())
	done, refused := 0, 0
	for _, e := range entries {
		checkRunEntryShape(t, e)
		switch e.Outcome {
		case store.OutcomeDone:
			done++
			if e.Action == "shared/outer" {
				require.Len(t, e.Steps, 1)
				assert.Contains(t, e.Steps[0].Call.Parameters, `"plant":"k1"`, "the ref resolved in the nested call")
			}
		case store.OutcomeRefused:
			refused++
			assert.Equal(t, codes.InvalidParameters, e.Error)
		}
	}
	assert.Equal(t, int(wantDone.Load()), done)
	assert.Equal(t, int(wantRefused.Load()), refused)
	assert.Len(t, reg.Definitions(), 2+1+2*workers, "shared, the raced name once, own and bound per worker")
}

// TestConcurrentBindAndRegisterSameID races Bind against Register on the
// same id: exactly one of them may win, never both.
func TestConcurrentBindAndRegisterSameID(t *testing.T) {
	body := func(context.Context, map[string]any, *Trace) (any, error) { return nil, nil }
	for i := range 200 {
		reg := NewRegistry(nil)
		id := fmt.Sprintf("ns/x%d", i)
		var errReg, errBind error
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			errReg = reg.Register(Action{Definition: Definition{ID: id, Title: "register"}, Run: body})
		}()
		go func() {
			defer wg.Done()
			errBind = reg.Bind([]Definition{{ID: id, Title: "bind"}}, map[string]Body{id: body})
		}()
		wg.Wait()
		require.True(t, (errReg == nil) != (errBind == nil), "exactly one wins: register %v, bind %v", errReg, errBind)
		got, _ := getAction(reg, id)
		if errReg == nil {
			require.Equal(t, "register", got.Title)
			require.ErrorIs(t, errBind, codes.DuplicateName)
		} else {
			require.Equal(t, "bind", got.Title)
			require.ErrorIs(t, errReg, codes.DuplicateName)
		}
	}
}

func readManifestFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "manifests", name))
	require.NoError(t, err)
	return b
}

// manifestTestBodies gives each id a body that returns its id.
func manifestTestBodies(ids ...string) map[string]Body {
	m := map[string]Body{}
	for _, id := range ids {
		m[id] = func(_ context.Context, p map[string]any, tr *Trace) (any, error) {
			return map[string]any{"ran": tr.Action(), "params": p}, nil
		}
	}
	return m
}

func TestBindManifest(t *testing.T) {
	t.Run("good", func(t *testing.T) {
		defs, err := DecodeManifest(readManifestFile(t, "good.json"))
		require.NoError(t, err)
		require.Len(t, defs, 3)
		reg := NewRegistry(nil)
		require.NoError(t, reg.Bind(defs, manifestTestBodies("garden/plant", "garden/list", "garden/audit")))
		var ids []string
		for _, a := range reg.Definitions() {
			ids = append(ids, a.ID)
		}
		assert.Equal(t, []string{"garden/audit", "garden/list", "garden/plant"}, ids)
		list, _ := getAction(reg, "garden/list")
		assert.True(t, list.EffectOf() == EffectRead)
		audit, _ := getAction(reg, "garden/audit")
		assert.False(t, audit.offers(identity.SurfaceMCP))
		assert.Equal(t, []string{"plant"}, mustGetAction(t, reg, "garden/plant").Writes)

		result, entry, err := call3(reg, context.Background(), "garden/plant", map[string]any{"species": "rose"})
		require.NoError(t, err)
		assert.Equal(t, `{"count":1,"species":"rose"}`, entry.Parameters, "the manifest's default applies")
		assert.Equal(t, "garden/plant", result.(map[string]any)["ran"])
		_, _, err = call3(reg, context.Background(), "garden/plant", map[string]any{})
		assert.ErrorIs(t, err, codes.InvalidParameters, "the manifest's schema applies")
	})

	t.Run("parameters as JSON text", func(t *testing.T) {
		defs, err := DecodeManifest(readManifestFile(t, "params_text.json"))
		require.NoError(t, err)
		reg := NewRegistry(nil)
		require.NoError(t, reg.Bind(defs, manifestTestBodies("garden/water")))
		_, entry, err := call3(reg, context.Background(), "garden/water", map[string]any{"plant": "p1"})
		require.NoError(t, err)
		assert.Equal(t, `{"litres":0.5,"plant":"p1"}`, entry.Parameters)
		_, _, err = call3(reg, context.Background(), "garden/water", map[string]any{"plant": "p1", "litres": -1})
		assert.ErrorIs(t, err, codes.InvalidParameters)
	})

	t.Run("every missing body and every stray body in one error", func(t *testing.T) {
		defs, err := DecodeManifest(readManifestFile(t, "unbound.json"))
		require.NoError(t, err)
		reg := NewRegistry(nil)
		// garden/plant and garden/list have bodies; garden/prune and
		// garden/harvest do not; garden/weed and garden/mow have no
		// definition.
		err = reg.Bind(defs, manifestTestBodies("garden/plant", "garden/list", "garden/weed", "garden/mow"))
		require.Error(t, err)
		assert.ErrorIs(t, err, codes.ConstraintViolation)
		var r *Refusal
		require.True(t, errors.As(err, &r))
		assert.Equal(t, []Issue{
			{Path: "/1", Keyword: "body", Message: "the definition garden/prune has no body"},
			{Path: "/3", Keyword: "body", Message: "the definition garden/harvest has no body"},
			{Path: "/bodies/garden~1mow", Keyword: "definition", Message: "the body garden/mow has no definition"},
			{Path: "/bodies/garden~1weed", Keyword: "definition", Message: "the body garden/weed has no definition"},
		}, r.Issues)
		assert.Empty(t, reg.Definitions(), "nothing is registered when the manifest does not bind")
	})

	t.Run("a refused definition registers nothing", func(t *testing.T) {
		defs := []Definition{{ID: "garden/ok"}, {ID: "bad id"}, {ID: "garden/schema", Parameters: `{"type":"object","frobnicate":1}`}}
		reg := NewRegistry(nil)
		err := reg.Bind(defs, manifestTestBodies("garden/ok", "bad id", "garden/schema"))
		assert.ErrorIs(t, err, codes.ConstraintViolation)
		var r *Refusal
		require.True(t, errors.As(err, &r))
		require.Len(t, r.Issues, 2)
		assert.Equal(t, "/1/id", r.Issues[0].Path, "issues point into the manifest")
		assert.Equal(t, "/2/parameters/frobnicate", r.Issues[1].Path, "schema faults are under /parameters")
		assert.Empty(t, reg.Definitions())
	})

	t.Run("an id listed twice or already taken", func(t *testing.T) {
		reg := NewRegistry(nil)
		err := reg.Bind([]Definition{{ID: "garden/a"}, {ID: "garden/a"}}, manifestTestBodies("garden/a"))
		assert.ErrorIs(t, err, codes.DuplicateName)
		assert.Empty(t, reg.Definitions())

		require.NoError(t, reg.Register(Action{Definition: Definition{ID: "garden/taken"}, Run: manifestTestBodies("x/y")["x/y"]}))
		err = reg.Bind([]Definition{{ID: "garden/new"}, {ID: "garden/taken"}}, manifestTestBodies("garden/new", "garden/taken"))
		assert.ErrorIs(t, err, codes.DuplicateName)
		var r *Refusal
		require.True(t, errors.As(err, &r))
		require.Len(t, r.Issues, 1)
		assert.Equal(t, "/1/id", r.Issues[0].Path, "the taken id is reported at its definition")
		_, ok := getAction(reg, "garden/new")
		assert.False(t, ok, "all or none")
	})

	t.Run("DecodeManifest refuses", func(t *testing.T) {
		for _, name := range []string{"refused_unknown_field.json", "refused_kind.json", "refused_exposure.json"} {
			t.Run(name, func(t *testing.T) {
				defs, err := DecodeManifest(readManifestFile(t, name))
				assert.Error(t, err)
				assert.Nil(t, defs)
			})
		}
	})
}

func mustGetAction(t *testing.T, reg *Registry, id string) Action {
	t.Helper()
	a, ok := getAction(reg, id)
	require.True(t, ok, id)
	return a
}

// getAction returns the action registered under id or the alias id, with
// its policy slices copied, as a host would see it.
func getAction(reg *Registry, id string) (Action, bool) {
	r, ok := reg.lookup(id)
	if !ok {
		return Action{}, false
	}
	a := r.action
	a.Definition.clonePolicy()
	return a, true
}
