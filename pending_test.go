package actions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/store"
)

// clock is a settable clock for the gate.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// confirmRegistry has shop/discard, a write needing confirmation whose body
// counts its runs.
func confirmRegistry(t *testing.T, opts Options) (*Registry, *atomic.Int32) {
	t.Helper()
	reg := NewRegistry(&opts)
	var ran atomic.Int32
	require.NoError(t, reg.Register(Action{
		Definition: Definition{ID: "shop/discard", Effect: EffectDelete, Capability: "stock.write", NeedsConfirmation: true,
			DeprecatedAliases: []string{"shop/throw_away"},
			Parameters:        `{"type":"object","properties":{"item":{"type":"string"},"count":{"type":"integer","default":1}},"required":["item"]}`},
		Run: func(_ context.Context, p map[string]any, c *Trace) (any, error) {
			ran.Add(1)
			return map[string]any{"discarded": p["item"], "count": p["count"]}, nil
		},
	}))
	return reg, &ran
}

var editor = &identity.Caller{Principal: "eve", Capabilities: []string{"stock.write"}, Surface: identity.SurfaceMCP}

func propose(t *testing.T, reg *Registry, caller *identity.Caller, name, params string) Receipt {
	t.Helper()
	_, entry, err := callAs(reg, context.Background(), caller, name, params)
	require.ErrorIs(t, err, codes.ConfirmationRequired)
	assert.Equal(t, codes.ConfirmationRequired, entry.Error)
	r := asRefusal(err)
	require.NotNil(t, r.Pending)
	return *r.Pending
}

func TestConfirmRunsOnceAsTheConfirmingPerson(t *testing.T) {
	clk := &clock{now: time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)}
	reg, ran := confirmRegistry(t, Options{Now: clk.Now})
	rc := propose(t, reg, editor, "shop/throw_away", `{"item":"old-milk"}`)
	assert.Equal(t, "shop/discard", rc.Action)
	assert.Equal(t, clk.Now().Add(maxPendingFor), rc.Expires)
	assert.Equal(t, int32(0), ran.Load(), "nothing runs while the change waits")

	pc, err := reg.PendingChange(context.Background(), rc.ID, editor)
	require.NoError(t, err)
	assert.Equal(t, `{"count":1,"item":"old-milk"}`, pc.Parameters, "the call as it will run: defaults filled, canonical")
	assert.Equal(t, `{"item":"old-milk"}`, pc.Given, "the call as given, canonical")
	assert.Equal(t, "shop/throw_away", pc.Alias)

	onUI := &identity.Caller{Principal: "eve", Capabilities: []string{"stock.write"}, Surface: identity.SurfaceUI}
	out, err := reg.Decide(context.Background(), Decision{Change: rc.ID, Confirm: true, Caller: onUI})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"discarded": "old-milk", "count": json.Number("1")}, out.Value)
	assert.Equal(t, "shop/discard", out.Entry().Action)
	assert.Equal(t, int32(1), ran.Load())
	require.Len(t, out.Records, 1)
	audit := out.Records[0].Audit
	assert.Equal(t, rc.ID, audit.PendingChange)
	assert.Equal(t, store.StageConfirmed, audit.Stage)
	assert.Equal(t, "shop/throw_away", audit.Alias)
	assert.Equal(t, rc.ID, audit.Caller.PendingChange)
	assert.Empty(t, onUI.PendingChange, "the host's caller is not changed")

	_, _, err = confirm3(reg, context.Background(), rc.ID, onUI)
	assert.ErrorIs(t, err, codes.UnknownChange, "a second confirmation runs nothing")
	assert.Equal(t, int32(1), ran.Load())
}

func TestConfirmChecksAgain(t *testing.T) {
	serving := &Serving{}
	reg, ran := confirmRegistry(t, Options{Gate: &GateOptions{Serving: serving}})
	rc := propose(t, reg, editor, "shop/discard", `{"item":"x"}`)
	// The confirming person has lost the capability since: the caller is
	// told unknown_action, the record says why.
	weaker := &identity.Caller{Principal: "eve", Surface: identity.SurfaceUI}
	res, err := reg.Decide(context.Background(), Decision{Change: rc.ID, Confirm: true, Caller: weaker})
	assert.ErrorIs(t, err, codes.UnknownAction)
	assert.NotErrorIs(t, err, codes.ForbiddenCapability, "the caller's view is unknown_action only")
	require.Len(t, res.Records, 1)
	assert.Equal(t, codes.ForbiddenCapability, res.Records[0].Entry.Error)
	assert.Equal(t, codes.ForbiddenCapability, res.Records[0].Audit.Code)
	assert.Equal(t, int32(0), ran.Load())
	// A refused confirmation uses nothing up: with the capability back,
	// the same change is confirmed.
	_, err = reg.PendingChange(context.Background(), rc.ID, editor)
	require.NoError(t, err, "the change waits on")

	serving.SetReadOnly(true)
	_, _, err = confirm3(reg, context.Background(), rc.ID, editor)
	assert.ErrorIs(t, err, codes.ReadOnly)
	assert.Equal(t, int32(0), ran.Load())
	serving.SetReadOnly(false)
	_, _, err = confirm3(reg, context.Background(), rc.ID, editor)
	require.NoError(t, err)
	assert.Equal(t, int32(1), ran.Load())
}

func TestConfirmOnlyByTheProposerBeforeExpiry(t *testing.T) {
	clk := &clock{now: time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)}
	reg, ran := confirmRegistry(t, Options{Now: clk.Now, Gate: &GateOptions{PendingFor: time.Hour}})
	rc := propose(t, reg, editor, "shop/discard", `{"item":"x"}`)
	assert.Equal(t, clk.Now().Add(time.Hour), rc.Expires)

	mallory := &identity.Caller{Principal: "mallory", Capabilities: []string{"stock.write"}, Surface: identity.SurfaceUI}
	_, _, err := confirm3(reg, context.Background(), rc.ID, mallory)
	assert.ErrorIs(t, err, codes.UnknownChange, "another principal cannot confirm")
	assert.ErrorIs(t, reject(reg, context.Background(), rc.ID, mallory), codes.UnknownChange)
	_, _, err = confirm3(reg, context.Background(), rc.ID, nil)
	assert.ErrorIs(t, err, codes.UnknownChange, "the host alone confirms nothing")

	clk.Add(time.Hour)
	_, _, err = confirm3(reg, context.Background(), rc.ID, editor)
	assert.ErrorIs(t, err, codes.UnknownChange, "an expired change runs nothing")
	assert.Equal(t, int32(0), ran.Load())
}

func TestPendingForIsAtMostSevenDays(t *testing.T) {
	clk := &clock{now: time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)}
	reg, _ := confirmRegistry(t, Options{Now: clk.Now, Gate: &GateOptions{PendingFor: 30 * 24 * time.Hour}})
	rc := propose(t, reg, editor, "shop/discard", `{"item":"x"}`)
	assert.Equal(t, clk.Now().Add(7*24*time.Hour), rc.Expires)
}

func TestRejectRunsNothing(t *testing.T) {
	reg, ran := confirmRegistry(t, Options{})
	rc := propose(t, reg, editor, "shop/discard", `{"item":"x"}`)
	require.NoError(t, reject(reg, context.Background(), rc.ID, editor))
	_, _, err := confirm3(reg, context.Background(), rc.ID, editor)
	assert.ErrorIs(t, err, codes.UnknownChange)
	assert.Equal(t, int32(0), ran.Load())
}

func TestInvalidParametersAreNotHeld(t *testing.T) {
	store := &memoryPendingStore{}
	reg, _ := confirmRegistry(t, Options{Gate: &GateOptions{Pending: store}})
	_, _, err := callAs(reg, context.Background(), editor, "shop/discard", `{"count":"many"}`)
	assert.ErrorIs(t, err, codes.InvalidParameters)
	held, err := store.List(context.Background(), editor.Principal)
	require.NoError(t, err)
	assert.Empty(t, held)
}

// Many confirmations of the same change race: exactly one runs it.
func TestDoubleConfirmRunsOnce(t *testing.T) {
	reg, ran := confirmRegistry(t, Options{})
	const changes, racers = 20, 8
	for range changes {
		rc := propose(t, reg, editor, "shop/discard", `{"item":"x"}`)
		var wg sync.WaitGroup
		var ok atomic.Int32
		for range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, _, err := confirm3(reg, context.Background(), rc.ID, editor); err == nil {
					ok.Add(1)
				} else if !errors.Is(err, codes.UnknownChange) {
					t.Errorf("confirm: %v", err)
				}
			}()
		}
		wg.Wait()
		assert.Equal(t, int32(1), ok.Load())
	}
	assert.Equal(t, int32(changes), ran.Load())
}

// Many callers at once: each principal's calls pass within the limiter's
// tolerance (the burst, plus the rate times the time elapsed), and one
// principal's calls never use up another's.
func TestRateLimitHoldsUnderConcurrency(t *testing.T) {
	const burst, perSecond = 5, 10
	reg := NewRegistry(&Options{Gate: &GateOptions{Rate: perSecond, Burst: burst}})
	var ran atomic.Int32
	require.NoError(t, reg.Register(Action{
		Definition: Definition{ID: "shop/count", Effect: EffectRead},
		Run: func(context.Context, map[string]any, *Trace) (any, error) {
			ran.Add(1)
			return nil, nil
		},
	}))
	const principals, goroutines, calls = 4, 8, 50
	passed := make([]atomic.Int32, principals)
	start := time.Now()
	var wg sync.WaitGroup
	for p := range principals {
		caller := &identity.Caller{Principal: fmt.Sprint("p", p), Surface: identity.SurfaceAI}
		for range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range calls {
					_, _, err := callAs(reg, context.Background(), caller, "shop/count", nil)
					switch {
					case err == nil:
						passed[p].Add(1)
					case errors.Is(err, codes.RateLimited):
						if r := asRefusal(err); r.RetryAt.IsZero() {
							t.Error("rate_limited without retryAt")
						}
					default:
						t.Errorf("run: %v", err)
					}
				}
			}()
		}
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	limit := int32(burst + perSecond*elapsed + 1)
	total := int32(0)
	for p := range principals {
		n := passed[p].Load()
		assert.GreaterOrEqual(t, n, int32(burst), "each principal gets at least its burst")
		assert.LessOrEqual(t, n, limit, "principal %d passed more than the limiter allows", p)
		total += n
	}
	assert.Equal(t, total, ran.Load())
}

func TestDeclaredRefusalRetry(t *testing.T) {
	reg := NewRegistry(nil)
	shared := &Refusal{Code: "out_of_stock", Message: "no stock left", Retry: codes.RetryNever, Transport: codes.TransportToolResult}
	for _, a := range []Action{
		{Definition: Definition{ID: "shop/order", Refusals: []DeclaredRefusal{{Code: "out_of_stock", Retry: codes.RetryAfterBackoff}}},
			Run: func(context.Context, map[string]any, *Trace) (any, error) { return nil, shared }},
		{Definition: Definition{ID: "shop/order_undeclared", Refusals: []DeclaredRefusal{{Code: "closed", Retry: codes.RetryAfterBackoff}}},
			Run: func(context.Context, map[string]any, *Trace) (any, error) {
				return nil, &Refusal{Code: "out_of_stock", Retry: codes.RetryAfterEdit}
			}},
	} {
		require.NoError(t, reg.Register(a))
	}
	_, _, err := call3(reg, context.Background(), "shop/order", nil)
	assert.Equal(t, codes.RetryAfterBackoff, asRefusal(err).Retry, "the declared verdict")
	assert.Equal(t, codes.RetryNever, shared.Retry, "the body's refusal is not changed")
	_, _, err = call3(reg, context.Background(), "shop/order_undeclared", nil)
	assert.Equal(t, codes.RetryNever, asRefusal(err).Retry, "an undeclared code is never retried")

	tools, err := reg.Tools(nil)
	require.NoError(t, err)
	assert.Equal(t, "It may refuse with: out_of_stock (retry later).", tools[0].Description)
}

func TestAliasesCollide(t *testing.T) {
	body := func(context.Context, map[string]any, *Trace) (any, error) { return nil, nil }
	reg := NewRegistry(nil)
	require.NoError(t, reg.Register(Action{Definition: Definition{ID: "shop/a", DeprecatedAliases: []string{"shop/old_a"}}, Run: body}))
	for _, d := range []Definition{
		{ID: "shop/b", DeprecatedAliases: []string{"shop/a"}},
		{ID: "shop/c", DeprecatedAliases: []string{"shop/old_a"}},
		{ID: "shop/old_a"},
	} {
		assert.ErrorIs(t, reg.Register(Action{Definition: d, Run: body}), codes.DuplicateName, d.ID)
	}
	err := reg.Bind([]Definition{
		{ID: "shop/d", DeprecatedAliases: []string{"shop/x"}},
		{ID: "shop/e", DeprecatedAliases: []string{"shop/x"}},
	}, map[string]Body{"shop/d": body, "shop/e": body})
	assert.ErrorIs(t, err, codes.DuplicateName, "two definitions of a manifest share an alias")
	_, ok := getAction(reg, "shop/d")
	assert.False(t, ok, "nothing of the manifest is registered")

	tools, err := reg.Tools(nil)
	require.NoError(t, err)
	require.Len(t, tools, 1, "aliases are not listed")
	assert.Equal(t, "shop-a", tools[0].Name)
}

func TestFoldOldSpellings(t *testing.T) {
	defs, err := DecodeManifest([]byte(`[
		{"id":"a/read","kind":"read"},
		{"id":"a/write","kind":"action"},
		{"id":"a/destroy","destructive":true},
		{"id":"a/keep","destructive":false},
		{"id":"a/hidden","exposure":"hidden"},
		{"id":"a/visible","exposure":"visible"},
		{"id":"a/bare"}
	]`))
	require.NoError(t, err)
	want := []struct {
		effect      Effect
		destructive bool
		surfaces    []identity.Surface
	}{
		{EffectRead, false, nil},
		{EffectWrite, false, nil},
		{EffectWrite, true, nil},
		{EffectWrite, false, nil},
		{EffectWrite, false, []identity.Surface{}},
		{EffectWrite, false, nil},
		{EffectWrite, true, nil},
	}
	for i, d := range defs {
		assert.Equal(t, want[i].effect, d.Effect, d.ID)
		assert.Equal(t, want[i].destructive, d.IsDestructive(), d.ID)
		assert.Equal(t, want[i].surfaces, d.Surfaces, d.ID)
	}
	for _, text := range []string{
		`[{"id":"a/b","kind":"read","effect":"read"}]`,
		`[{"id":"a/b","destructive":false,"additive":true}]`,
		`[{"id":"a/b","exposure":"hidden","surfaces":[]}]`,
		`[{"id":"a/b","effect":"erase"}]`,
		`[{"id":"a/b","surfaces":["web"]}]`,
		`[{"id":"a/b","personalData":["protected"],"surfaces":["mcp"]}]`,
		`[{"id":"a/b","effect":"read","needsConfirmation":true}]`,
		`[{"id":"a/b","effect":"delete","additive":true}]`,
		`[{"id":"a/b","refusals":[{"code":"Out-Of-Stock","retry":"never"}]}]`,
		`[{"id":"a/b","refusals":[{"code":"invalid_parameters","retry":"never"}]}]`,
		`[{"id":"a/b","refusals":[{"code":"gone","retry":"soon"}]}]`,
		`[{"id":"a/b","deprecatedAliases":["a/b"]}]`,
		`[{"id":"a/b","deprecatedAliases":["old-name"]}]`,
	} {
		_, err := DecodeManifest([]byte(text))
		assert.Error(t, err, text)
	}
	// In Go, the same rules at Register.
	reg := NewRegistry(nil)
	err = reg.Register(Action{Definition: Definition{ID: "a/b", Effect: EffectRead, NeedsConfirmation: true},
		Run: func(context.Context, map[string]any, *Trace) (any, error) { return nil, nil }})
	assert.ErrorIs(t, err, codes.ConstraintViolation)
	// An action needing confirmation must be offered on the host's own
	// screen, where the person confirms it.
	err = reg.Register(Action{Definition: Definition{ID: "a/c", Effect: EffectDelete, NeedsConfirmation: true, Surfaces: []identity.Surface{identity.SurfaceMCP}},
		Run: func(context.Context, map[string]any, *Trace) (any, error) { return nil, nil }})
	assert.ErrorIs(t, err, codes.ConstraintViolation)
}

// What the registry hands out cannot change what it checks.
func TestPolicyIsNotShared(t *testing.T) {
	reg := NewRegistry(nil)
	surfaces := []identity.Surface{identity.SurfaceUI}
	require.NoError(t, reg.Register(Action{Definition: Definition{ID: "a/b", Surfaces: surfaces, DeprecatedAliases: []string{"a/old"}},
		Run: func(context.Context, map[string]any, *Trace) (any, error) { return nil, nil }}))
	surfaces[0] = identity.SurfaceMCP
	a, ok := getAction(reg, "a/old")
	require.True(t, ok)
	assert.Equal(t, "a/b", a.ID)
	a.Surfaces[0] = identity.SurfaceMCP
	reg.Definitions()[0].Surfaces[0] = identity.SurfaceMCP
	res, err := reg.Run(context.Background(), Call{Action: "a/b", Caller: &identity.Caller{Principal: "p", Surface: identity.SurfaceMCP}})
	assert.ErrorIs(t, err, codes.UnknownAction)
	assert.Equal(t, codes.ForbiddenSurface, res.Entry().Error)
}

// TestPendingChangesAreBounded: a principal holds at most MaxPending
// changes at once; the next is refused rate_limited and nothing is held;
// deciding or expiry frees a place; another principal has its own.
func TestPendingChangesAreBounded(t *testing.T) {
	clk := &clock{now: time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)}
	store := &memoryPendingStore{}
	reg, ran := confirmRegistry(t, Options{Now: clk.Now, Gate: &GateOptions{Pending: store, PendingFor: time.Hour}})
	var first Receipt
	for i := range defaultMaxPending {
		rc := propose(t, reg, editor, "shop/discard", fmt.Sprintf(`{"item":"x%d"}`, i))
		if i == 0 {
			first = rc
		}
	}
	res, err := reg.Run(context.Background(), Call{Action: "shop/discard", Params: `{"item":"one too many"}`, Caller: editor})
	require.ErrorIs(t, err, codes.RateLimited)
	assert.Nil(t, asRefusal(err).Pending, "nothing is held")
	assert.Equal(t, codes.RateLimited, res.Entry().Error)
	held, err := store.List(context.Background(), editor.Principal)
	require.NoError(t, err)
	assert.Len(t, held, defaultMaxPending)

	other := &identity.Caller{Principal: "olga", Capabilities: []string{"stock.write"}, Surface: identity.SurfaceMCP}
	propose(t, reg, other, "shop/discard", `{"item":"hers"}`)

	require.NoError(t, reject(reg, context.Background(), first.ID, editor))
	propose(t, reg, editor, "shop/discard", `{"item":"after a rejection"}`)

	clk.Add(time.Hour)
	propose(t, reg, editor, "shop/discard", `{"item":"after expiry"}`)
	assert.Zero(t, ran.Load())

	// Negative: no bound.
	unbounded, _ := confirmRegistry(t, Options{Gate: &GateOptions{MaxPending: -1}})
	for i := range defaultMaxPending + 4 {
		propose(t, unbounded, editor, "shop/discard", fmt.Sprintf(`{"item":"y%d"}`, i))
	}
}

// TestAccessorsHandOutCopies: changing whatever Tools, Definitions, List,
// Get, PendingChange and PendingChanges hand out, at any depth, changes
// neither what they hand out next nor any decision of the gate.
func TestAccessorsHandOutCopies(t *testing.T) {
	reg, ran := confirmRegistry(t, Options{})
	ctx := context.Background()
	rc := propose(t, reg, editor, "shop/discard", `{"item":"x"}`)
	wantTools, err := reg.Tools(nil)
	require.NoError(t, err)
	wantText, err := CanonicalJSON(wantTools)
	require.NoError(t, err)

	// Scribble over everything reachable.
	tools, _ := reg.Tools(nil)
	for i := range tools {
		tools[i].Name = "x"
		tools[i].InputSchema["type"] = "array"
		for k := range tools[i].InputSchema {
			delete(tools[i].InputSchema, k)
		}
		tools[i].Annotations.DestructiveHint = false
	}
	for _, d := range reg.Definitions() {
		d.Surfaces = append(d.Surfaces, identity.SurfaceMCP)
		d.Capability = ""
	}
	for _, a := range reg.Definitions() {
		a.DeprecatedAliases = append(a.DeprecatedAliases[:0], "shop/other")
	}
	pc, err := reg.PendingChange(ctx, rc.ID, editor)
	require.NoError(t, err)
	pc.Proposer.Principal = "mallory"
	pc.Proposer.Capabilities = append(pc.Proposer.Capabilities[:0], "root")
	list, err := reg.PendingChanges(ctx, editor)
	require.NoError(t, err)
	require.Len(t, list, 1)
	list[0].Proposer.Principal = "mallory"
	list[0].Expires = list[0].Created

	again, err := reg.Tools(nil)
	require.NoError(t, err)
	gotText, err := CanonicalJSON(again)
	require.NoError(t, err)
	assert.Equal(t, string(wantText), string(gotText), "Tools hands out copies")
	a, ok := getAction(reg, "shop/throw_away")
	require.True(t, ok, "the alias still names the action")
	assert.Equal(t, "stock.write", a.Capability)
	_, err = reg.PendingChange(ctx, rc.ID, &identity.Caller{Principal: "mallory", Surface: identity.SurfaceUI})
	assert.ErrorIs(t, err, codes.UnknownChange, "the change is still editor's")
	nobody := &identity.Caller{Principal: "mallory", Surface: identity.SurfaceMCP}
	_, err = reg.Run(ctx, Call{Action: "shop/discard", Params: `{"item":"y"}`, Caller: nobody})
	assert.ErrorIs(t, err, codes.UnknownAction, "the capability is still needed")
	_, _, err = confirm3(reg, ctx, rc.ID, editor)
	require.NoError(t, err, "the change is still there, unexpired")
	assert.Equal(t, int32(1), ran.Load())
}
