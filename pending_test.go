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
func confirmRegistry(t *testing.T, opts GateOptions) (*Registry[any], *atomic.Int32) {
	t.Helper()
	reg := NewRegistry[any](&Options{Gate: &opts})
	var ran atomic.Int32
	require.NoError(t, reg.Register(Action[any]{
		Definition: Definition{ID: "shop/discard", Effect: EffectDelete, Capability: "stock.write", NeedsConfirmation: true,
			DeprecatedAliases: []string{"shop/throw_away"},
			Parameters:        `{"type":"object","properties":{"item":{"type":"string"},"count":{"type":"integer","default":1}},"required":["item"]}`},
		Run: func(_ context.Context, p map[string]any, c any) (any, error) {
			ran.Add(1)
			return map[string]any{"discarded": p["item"], "count": p["count"]}, nil
		},
	}))
	return reg, &ran
}

var editor = &Caller{Principal: "eve", Capabilities: []string{"stock.write"}, Surface: SurfaceMCP}

func propose(t *testing.T, reg *Registry[any], caller *Caller, name, params string) Receipt {
	t.Helper()
	_, entry, err := reg.Run(context.Background(), name, params, &Host[any]{Caller: caller})
	require.ErrorIs(t, err, ErrConfirmationRequired)
	assert.Equal(t, CodeConfirmationRequired, entry.Error)
	r := asRefusal(err)
	require.NotNil(t, r.Pending)
	return *r.Pending
}

func TestConfirmRunsOnceAsTheConfirmingPerson(t *testing.T) {
	clk := &clock{now: time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)}
	reg, ran := confirmRegistry(t, GateOptions{Now: clk.Now})
	rc := propose(t, reg, editor, "shop/throw_away", `{"item":"old-milk"}`)
	assert.Equal(t, "shop/discard", rc.Action)
	assert.Equal(t, clk.Now().Add(MaxPendingFor), rc.Expires)
	assert.Equal(t, int32(0), ran.Load(), "nothing runs while the change waits")

	pc, err := reg.PendingChange(context.Background(), rc.ID, editor)
	require.NoError(t, err)
	assert.Equal(t, `{"item":"old-milk"}`, pc.Parameters, "the call as given, canonical")
	assert.Equal(t, "shop/throw_away", pc.Alias)

	var audits []Audit
	onUI := &Caller{Principal: "eve", Capabilities: []string{"stock.write"}, Surface: SurfaceUI}
	host := &Host[any]{Caller: onUI, OnAudit: func(_ RunEntry, a Audit) { audits = append(audits, a) }}
	res, entry, err := reg.Confirm(context.Background(), rc.ID, host)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"discarded": "old-milk", "count": json.Number("1")}, res)
	assert.Equal(t, "shop/discard", entry.Action)
	assert.Equal(t, int32(1), ran.Load())
	require.Len(t, audits, 1)
	assert.Equal(t, rc.ID, audits[0].PendingChange)
	assert.Equal(t, "shop/throw_away", audits[0].Alias)
	assert.Equal(t, rc.ID, audits[0].Caller.PendingChange)
	assert.Empty(t, onUI.PendingChange, "the host's caller is not changed")

	_, _, err = reg.Confirm(context.Background(), rc.ID, host)
	assert.ErrorIs(t, err, ErrUnknownChange, "a second confirmation runs nothing")
	assert.Equal(t, int32(1), ran.Load())
}

func TestConfirmChecksAgain(t *testing.T) {
	reg, ran := confirmRegistry(t, GateOptions{})
	rc := propose(t, reg, editor, "shop/discard", `{"item":"x"}`)
	// The confirming person has lost the capability since.
	weaker := &Caller{Principal: "eve", Surface: SurfaceUI}
	_, _, err := reg.Confirm(context.Background(), rc.ID, &Host[any]{Caller: weaker})
	assert.ErrorIs(t, err, ErrForbiddenCapability)
	assert.Equal(t, int32(0), ran.Load())

	rc = propose(t, reg, editor, "shop/discard", `{"item":"x"}`)
	reg.SetReadOnly(true)
	_, _, err = reg.Confirm(context.Background(), rc.ID, &Host[any]{Caller: editor})
	assert.ErrorIs(t, err, ErrReadOnly)
	assert.Equal(t, int32(0), ran.Load())
}

func TestConfirmOnlyByTheProposerBeforeExpiry(t *testing.T) {
	clk := &clock{now: time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)}
	reg, ran := confirmRegistry(t, GateOptions{Now: clk.Now, PendingFor: time.Hour})
	rc := propose(t, reg, editor, "shop/discard", `{"item":"x"}`)
	assert.Equal(t, clk.Now().Add(time.Hour), rc.Expires)

	mallory := &Caller{Principal: "mallory", Capabilities: []string{"stock.write"}, Surface: SurfaceUI}
	_, _, err := reg.Confirm(context.Background(), rc.ID, &Host[any]{Caller: mallory})
	assert.ErrorIs(t, err, ErrUnknownChange, "another principal cannot confirm")
	assert.ErrorIs(t, reg.Reject(context.Background(), rc.ID, mallory), ErrUnknownChange)
	_, _, err = reg.Confirm(context.Background(), rc.ID, nil)
	assert.ErrorIs(t, err, ErrUnknownChange, "the host alone confirms nothing")

	clk.Add(time.Hour)
	_, _, err = reg.Confirm(context.Background(), rc.ID, &Host[any]{Caller: editor})
	assert.ErrorIs(t, err, ErrUnknownChange, "an expired change runs nothing")
	assert.Equal(t, int32(0), ran.Load())
}

func TestPendingForIsAtMostSevenDays(t *testing.T) {
	clk := &clock{now: time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)}
	reg, _ := confirmRegistry(t, GateOptions{Now: clk.Now, PendingFor: 30 * 24 * time.Hour})
	rc := propose(t, reg, editor, "shop/discard", `{"item":"x"}`)
	assert.Equal(t, clk.Now().Add(7*24*time.Hour), rc.Expires)
}

func TestRejectRunsNothing(t *testing.T) {
	reg, ran := confirmRegistry(t, GateOptions{})
	rc := propose(t, reg, editor, "shop/discard", `{"item":"x"}`)
	require.NoError(t, reg.Reject(context.Background(), rc.ID, editor))
	_, _, err := reg.Confirm(context.Background(), rc.ID, &Host[any]{Caller: editor})
	assert.ErrorIs(t, err, ErrUnknownChange)
	assert.Equal(t, int32(0), ran.Load())
}

func TestInvalidParametersAreNotHeld(t *testing.T) {
	store := NewMemoryPendingStore()
	reg, _ := confirmRegistry(t, GateOptions{Pending: store})
	_, _, err := reg.Run(context.Background(), "shop/discard", `{"count":"many"}`, &Host[any]{Caller: editor})
	assert.ErrorIs(t, err, ErrInvalidParameters)
	assert.Equal(t, 0, store.Len())
}

// Many confirmations of the same change race: exactly one runs it.
func TestDoubleConfirmRunsOnce(t *testing.T) {
	reg, ran := confirmRegistry(t, GateOptions{})
	const changes, racers = 20, 8
	for range changes {
		rc := propose(t, reg, editor, "shop/discard", `{"item":"x"}`)
		var wg sync.WaitGroup
		var ok atomic.Int32
		for range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, _, err := reg.Confirm(context.Background(), rc.ID, &Host[any]{Caller: editor}); err == nil {
					ok.Add(1)
				} else if !errors.Is(err, ErrUnknownChange) {
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
	reg := NewRegistry[any](&Options{Gate: &GateOptions{Rate: perSecond, Burst: burst}})
	var ran atomic.Int32
	require.NoError(t, reg.Register(Action[any]{
		Definition: Definition{ID: "shop/count", Effect: EffectRead},
		Run: func(context.Context, map[string]any, any) (any, error) {
			ran.Add(1)
			return nil, nil
		},
	}))
	const principals, goroutines, calls = 4, 8, 50
	passed := make([]atomic.Int32, principals)
	start := time.Now()
	var wg sync.WaitGroup
	for p := range principals {
		caller := &Caller{Principal: fmt.Sprint("p", p), Surface: SurfaceAI}
		for range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range calls {
					_, _, err := reg.Run(context.Background(), "shop/count", nil, &Host[any]{Caller: caller})
					switch {
					case err == nil:
						passed[p].Add(1)
					case errors.Is(err, ErrRateLimited):
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
	reg := NewRegistry[any](nil)
	shared := &Refusal{Code: "out_of_stock", Message: "no stock left", Retry: RetryNever, Transport: TransportToolResult}
	for _, a := range []Action[any]{
		{Definition: Definition{ID: "shop/order", Refusals: []DeclaredRefusal{{Code: "out_of_stock", Retry: RetryAfterBackoff}}},
			Run: func(context.Context, map[string]any, any) (any, error) { return nil, shared }},
		{Definition: Definition{ID: "shop/order_undeclared", Refusals: []DeclaredRefusal{{Code: "closed", Retry: RetryAfterBackoff}}},
			Run: func(context.Context, map[string]any, any) (any, error) {
				return nil, &Refusal{Code: "out_of_stock", Retry: RetryAfterEdit}
			}},
	} {
		require.NoError(t, reg.Register(a))
	}
	_, _, err := reg.Run(context.Background(), "shop/order", nil, nil)
	assert.Equal(t, RetryAfterBackoff, asRefusal(err).Retry, "the declared verdict")
	assert.Equal(t, RetryNever, shared.Retry, "the body's refusal is not changed")
	_, _, err = reg.Run(context.Background(), "shop/order_undeclared", nil, nil)
	assert.Equal(t, RetryNever, asRefusal(err).Retry, "an undeclared code is never retried")

	tools, err := reg.Tools(nil)
	require.NoError(t, err)
	assert.Equal(t, "It may refuse with: out_of_stock (retry later).", tools[0].Description)
}

func TestAliasesCollide(t *testing.T) {
	body := func(context.Context, map[string]any, any) (any, error) { return nil, nil }
	reg := NewRegistry[any](nil)
	require.NoError(t, reg.Register(Action[any]{Definition: Definition{ID: "shop/a", DeprecatedAliases: []string{"shop/old_a"}}, Run: body}))
	for _, d := range []Definition{
		{ID: "shop/b", DeprecatedAliases: []string{"shop/a"}},
		{ID: "shop/c", DeprecatedAliases: []string{"shop/old_a"}},
		{ID: "shop/old_a"},
	} {
		assert.ErrorIs(t, reg.Register(Action[any]{Definition: d, Run: body}), ErrDuplicateName, d.ID)
	}
	err := reg.Bind([]Definition{
		{ID: "shop/d", DeprecatedAliases: []string{"shop/x"}},
		{ID: "shop/e", DeprecatedAliases: []string{"shop/x"}},
	}, map[string]Body[any]{"shop/d": body, "shop/e": body})
	assert.ErrorIs(t, err, ErrDuplicateName, "two definitions of a manifest share an alias")
	_, ok := reg.Get("shop/d")
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
		surfaces    []Surface
	}{
		{EffectRead, false, nil},
		{EffectWrite, false, nil},
		{EffectWrite, true, nil},
		{EffectWrite, false, nil},
		{EffectWrite, false, []Surface{}},
		{EffectWrite, false, nil},
		{EffectWrite, true, nil},
	}
	for i, d := range defs {
		assert.Equal(t, want[i].effect, d.Effect, d.ID)
		assert.Equal(t, want[i].destructive, d.IsDestructive(), d.ID)
		assert.Equal(t, want[i].surfaces, d.Surfaces, d.ID)
		assert.Empty(t, d.Kind, d.ID)
		assert.Empty(t, d.Exposure, d.ID)
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
	reg := NewRegistry[any](nil)
	err = reg.Register(Action[any]{Definition: Definition{ID: "a/b", Kind: KindRead, Effect: EffectRead},
		Run: func(context.Context, map[string]any, any) (any, error) { return nil, nil }})
	assert.ErrorIs(t, err, ErrConstraintViolation)
}

// What the registry hands out cannot change what it checks.
func TestPolicyIsNotShared(t *testing.T) {
	reg := NewRegistry[any](nil)
	surfaces := []Surface{SurfaceUI}
	require.NoError(t, reg.Register(Action[any]{Definition: Definition{ID: "a/b", Surfaces: surfaces, DeprecatedAliases: []string{"a/old"}},
		Run: func(context.Context, map[string]any, any) (any, error) { return nil, nil }}))
	surfaces[0] = SurfaceMCP
	a, ok := reg.Get("a/old")
	require.True(t, ok)
	assert.Equal(t, "a/b", a.ID)
	a.Surfaces[0] = SurfaceMCP
	reg.Definitions()[0].Surfaces[0] = SurfaceMCP
	_, _, err := reg.Run(context.Background(), "a/b", nil, &Host[any]{Caller: &Caller{Principal: "p", Surface: SurfaceMCP}})
	assert.ErrorIs(t, err, ErrForbiddenSurface)
}
