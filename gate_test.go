package actions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/store"
)

// gateFixture is testdata/gate/checks.json.
type gateFixture struct {
	Description string `json:"description"`
	GateOptions struct {
		ResourceMetadata string `json:"resourceMetadata"`
	} `json:"gateOptions"`
	Order []string   `json:"order"`
	Cases []gateCase `json:"cases"`
}

type gateCase struct {
	Name        string           `json:"name"`
	Fails       []string         `json:"fails"`
	Definitions json.RawMessage  `json:"definitions"`
	Caller      *identity.Caller `json:"caller"`
	Gate        struct {
		ReadOnly        bool     `json:"readOnly"`
		Stopped         []string `json:"stopped"`
		StopAll         bool     `json:"stopAll"`
		Rate            float64  `json:"rate"`
		Burst           int      `json:"burst"`
		Before          int      `json:"before"`
		BeforePrincipal string   `json:"beforePrincipal"`
	} `json:"gate"`
	Call struct {
		Action     string          `json:"action"`
		Parameters json.RawMessage `json:"parameters"`
	} `json:"call"`
	Expect struct {
		Outcome   string          `json:"outcome"`
		Code      codes.Code      `json:"code"`
		Reason    codes.Code      `json:"reason"`
		Transport codes.Transport `json:"transport"`
		Retry     codes.Retry     `json:"retry"`
		Challenge string          `json:"challenge"`
		RetryAt   bool            `json:"retryAt"`
		Alias     string          `json:"alias"`
	} `json:"expect"`
}

func loadGateFixture(t *testing.T) gateFixture {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "gate", "checks.json"))
	require.NoError(t, err)
	var f gateFixture
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&f))
	return f
}

// gateRun is what one fixture case gave.
type gateRun struct {
	ran     int
	err     error
	entry   store.RunEntry
	audit   store.Audit
	audited bool
}

// runGateCase registers the case's definitions on a fresh registry, sets
// the gate and makes the call.
func runGateCase(t *testing.T, f gateFixture, c gateCase) gateRun {
	t.Helper()
	defs, err := DecodeManifest(c.Definitions)
	require.NoError(t, err)
	now := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	serving := &Serving{}
	reg := NewRegistry(&Options{Now: func() time.Time { return now }, Gate: &GateOptions{
		ResourceMetadata: f.GateOptions.ResourceMetadata,
		Rate:             c.Gate.Rate, Burst: c.Gate.Burst,
		Serving: serving,
	}})
	var ran atomic.Int32
	for _, d := range defs {
		require.NoError(t, reg.Register(Action{Definition: d, Run: func(context.Context, map[string]any, *Trace) (any, error) {
			ran.Add(1)
			return map[string]any{"ok": true}, nil
		}}))
	}
	for range c.Gate.Before {
		before := &identity.Caller{Principal: "alice", Capabilities: []string{"stock.write"}, Surface: identity.SurfaceUI}
		if c.Gate.BeforePrincipal != "" {
			before.Principal = c.Gate.BeforePrincipal
		}
		_, _, err := callAs(reg, context.Background(), before, defs[0].ID, `{"item":"pears","count":1}`)
		if !errors.Is(err, codes.ConfirmationRequired) {
			require.NoError(t, err, "a call made before the case")
		}
	}
	ran.Store(0)
	serving.SetReadOnly(c.Gate.ReadOnly)
	serving.Stop(c.Gate.Stopped...)
	if c.Gate.StopAll {
		serving.StopAll()
	}
	var out gateRun
	res, err := reg.Run(context.Background(), Call{Action: c.Call.Action, Params: []byte(c.Call.Parameters), Caller: c.Caller})
	out.entry, out.err = res.Entry(), err
	if len(res.Records) == 1 {
		out.audit, out.audited = res.Records[0].Audit, true
	}
	out.ran = int(ran.Load())
	return out
}

func TestGateFixtures(t *testing.T) {
	f := loadGateFixture(t)
	require.GreaterOrEqual(t, len(f.Cases), 40)
	for _, c := range f.Cases {
		t.Run(c.Name, func(t *testing.T) {
			got := runGateCase(t, f, c)
			require.True(t, got.audited, "OnAudit receives every top-level call")
			switch c.Expect.Outcome {
			case "done":
				require.NoError(t, got.err)
				assert.Equal(t, 1, got.ran, "the body runs once")
				assert.Equal(t, store.OutcomeDone, got.entry.Outcome)
				assert.Equal(t, c.Expect.Alias, got.audit.Alias)
				if c.Expect.Alias != "" {
					assert.NotEqual(t, c.Expect.Alias, got.entry.Action, "an alias call is recorded under the id")
				}
				return
			case "refused", "held":
			default:
				t.Fatalf("unknown outcome %q", c.Expect.Outcome)
			}
			require.Error(t, got.err)
			assert.Equal(t, 0, got.ran, "a refused or held call runs nothing")
			r := asRefusal(got.err)
			require.NotNil(t, r, "a *Refusal: %v", got.err)
			assert.Equal(t, c.Expect.Code, r.Code, "code")
			assert.Equal(t, c.Expect.Transport, r.Transport, "transport")
			assert.Equal(t, c.Expect.Retry, r.Retry, "retry")
			assert.Equal(t, c.Expect.Challenge, r.Challenge, "challenge")
			assert.Equal(t, c.Expect.RetryAt, !r.RetryAt.IsZero(), "retryAt")
			assert.Equal(t, store.OutcomeRefused, got.entry.Outcome)
			want := c.Expect.Code
			if c.Expect.Reason != "" {
				want = c.Expect.Reason
				assert.False(t, errors.Is(got.err, sentinelOf(c.Expect.Reason)), "the caller's error is unknown_action only")
				assert.Equal(t, c.Expect.Reason, CodeOf(r.Cause()), "the host finds the reason in the cause")
				assert.Equal(t, unknownAction().Error(), r.Error(), "a forbidden call reads as an unknown one")
			}
			assert.Equal(t, want, got.entry.Error, "the entry records the host's code")
			assert.Equal(t, want, got.audit.Code, "the audit records the host's code")
			if c.Expect.Outcome == "held" {
				require.NotNil(t, r.Pending, "a held call carries its receipt")
				assert.Equal(t, r.Pending.ID, got.audit.PendingChange)
				assert.Len(t, r.Pending.ID, 32)
			}
		})
	}
}

// The table covers each check alone and each pair of checks, and the
// expected winner of a pair is the earlier check: the fixture cannot
// drift from the documented order.
func TestGateFixturesCoverEveryPair(t *testing.T) {
	f := loadGateFixture(t)
	assert.Equal(t, []string{"surface", "capability", "scope", "serving", "readonly", "rate", "params", "confirmation"}, f.Order)
	seen := map[string]bool{}
	for _, c := range f.Cases {
		fails := slices.Clone(c.Fails)
		slices.SortFunc(fails, func(a, b string) int { return slices.Index(f.Order, a) - slices.Index(f.Order, b) })
		seen[strings.Join(fails, "+")] = true
	}
	for i, a := range f.Order {
		assert.True(t, seen[a], "no case where only %s fails", a)
		for _, b := range f.Order[i+1:] {
			assert.True(t, seen[a+"+"+b], "no case where %s and %s both fail", a, b)
		}
	}
	assert.True(t, seen["unknown"], "no case of an unknown action")
}

// No gate refusal tells a caller anything of the parameters: not a value,
// not a path, not a schema keyword or property name.
func TestGateRefusalsLeakNothing(t *testing.T) {
	f := loadGateFixture(t)
	secrets := []string{"Secret Value 4711", "4711", "hunter2", "secretName", "apples", "item", "count", "pattern", "minimum", "^[a-z]+$", "/count", "/item"}
	n := 0
	for _, c := range f.Cases {
		if c.Expect.Outcome == "done" || c.Expect.Code == codes.InvalidParameters {
			continue
		}
		got := runGateCase(t, f, c)
		r := asRefusal(got.err)
		require.NotNil(t, r, c.Name)
		// What a caller receives: the refusal's fields, as a connector
		// renders them (the cause is the host's).
		out, err := json.Marshal(r)
		require.NoError(t, err)
		text := string(out) + r.Error()
		for _, s := range secrets {
			assert.NotContains(t, text, s, "%s: the refusal names %q", c.Name, s)
		}
		n++
	}
	assert.GreaterOrEqual(t, n, 30)
}

func TestPoliciesIncludeGateCodes(t *testing.T) {
	p := codes.Policies()
	for code, want := range map[codes.Code]codes.Policy{
		codes.ForbiddenSurface:     {Transport: codes.TransportToolResult, Retry: codes.RetryNever},
		codes.ForbiddenCapability:  {Transport: codes.TransportToolResult, Retry: codes.RetryNever},
		codes.InsufficientScope:    {Transport: codes.TransportToolResult, Retry: codes.RetryNever},
		codes.NotServing:           {Transport: codes.TransportToolResult, Retry: codes.RetryNever},
		codes.ReadOnly:             {Transport: codes.TransportToolResult, Retry: codes.RetryAfterBackoff},
		codes.RateLimited:          {Transport: codes.TransportToolResult, Retry: codes.RetryAfterBackoff},
		codes.ConfirmationRequired: {Transport: codes.TransportToolResult, Retry: codes.RetryNever},
	} {
		assert.Equal(t, want, p[code], code)
		assert.True(t, errors.Is(NewRefusal(code, ""), sentinelOf(code)), code)
	}
}

// BenchmarkRunGated is BenchmarkRun's call made by a caller: the surface,
// capability, scope, serving, read-only and rate checks (a limit high
// enough never to refuse) before the parameters, and the audit record.
// Compare with BenchmarkRun in the same run.
func BenchmarkRunGated(b *testing.B) {
	reg, _ := typicalRegistry(b)
	reg.gate.Store(newGate(GateOptions{Rate: math.Inf(1)}, nil))
	ctx := context.Background()
	params := typicalMap(b)
	caller := &identity.Caller{Principal: "ann", Capabilities: []string{"supply.write"}, Token: true, Scopes: []string{"mcp:read", "mcp:write"}, Surface: identity.SurfaceMCP}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := reg.Run(ctx, Call{Action: "supply/create_site", Params: params, Caller: caller}); err != nil {
			b.Fatal(err)
		}
	}
}

// A batch holding a step that needs confirmation is held whole, as one
// pending change, before any step runs; confirming it runs every step
// once, and rejecting it runs none.
func TestBatchStepNeedingConfirmation(t *testing.T) {
	reg := NewRegistry(nil)
	var ran []string
	body := func(id string) Body {
		return func(context.Context, map[string]any, *Trace) (any, error) {
			ran = append(ran, id)
			return map[string]any{}, nil
		}
	}
	reg.MustRegister(
		New(Definition{ID: "shop/count", Effect: EffectRead}, body("count")),
		New(Definition{ID: "shop/discard", Effect: EffectDelete, NeedsConfirmation: true}, body("discard")),
	)
	b, err := reg.DecodeBatch([]byte(`{"commands":[{"call":"shop/count"},{"call":"shop/discard"},{"call":"shop/count"}]}`))
	require.NoError(t, err)
	p := &identity.Caller{Principal: "p", Surface: identity.SurfaceAI}
	res, err := reg.Run(context.Background(), Call{Batch: &b, Caller: p})
	require.ErrorIs(t, err, codes.ConfirmationRequired)
	assert.Empty(t, ran, "no step runs before the person confirms")
	rc := asRefusal(err).Pending
	require.NotNil(t, rc)
	assert.Equal(t, []HeldStep{{Index: 1, Action: "shop/discard"}}, rc.Steps)
	require.Len(t, res.Records, 3, "one record per step held")
	for _, rec := range res.Records {
		assert.Equal(t, codes.ConfirmationRequired, rec.Entry.Error)
		assert.Equal(t, store.StageHeld, rec.Audit.Stage)
		assert.Equal(t, rc.ID, rec.Audit.PendingChange)
		assert.False(t, rec.RolledBack, "the held unit is kept")
	}
	// Another person cannot confirm it; its proposer can, once.
	_, err = reg.Decide(context.Background(), Decision{Change: rc.ID, Confirm: true, Caller: &identity.Caller{Principal: "q", Surface: identity.SurfaceUI}})
	require.ErrorIs(t, err, codes.UnknownChange)
	res, err = reg.Decide(context.Background(), Decision{Change: rc.ID, Confirm: true, Caller: &identity.Caller{Principal: "p", Surface: identity.SurfaceUI}})
	require.NoError(t, err)
	assert.Equal(t, []string{"count", "discard", "count"}, ran)
	require.Len(t, res.Records, 3)
	for _, rec := range res.Records {
		assert.Equal(t, store.OutcomeDone, rec.Entry.Outcome)
		assert.Equal(t, store.StageConfirmed, rec.Audit.Stage)
		assert.True(t, rec.Audit.Batch)
	}
	_, err = reg.Decide(context.Background(), Decision{Change: rc.ID, Confirm: true, Caller: &identity.Caller{Principal: "p", Surface: identity.SurfaceUI}})
	require.ErrorIs(t, err, codes.UnknownChange, "a batch runs once")

	// Rejected: nothing runs, and the rejection is recorded per step.
	ran = nil
	_, err = reg.Run(context.Background(), Call{Batch: &b, Caller: p})
	rc = asRefusal(err).Pending
	res, err = reg.Decide(context.Background(), Decision{Change: rc.ID, Caller: onUI(p)})
	require.NoError(t, err)
	assert.Empty(t, ran)
	require.Len(t, res.Records, 3)
	assert.Equal(t, codes.Rejected, res.Records[1].Entry.Error)
	assert.Equal(t, store.StageRejected, res.Records[1].Audit.Stage)
}

// TestRateLimitersArePruned: limiters whose bucket is full again are
// dropped as new ones are made, so the gate does not grow with every
// principal ever seen, and no decision changes: a principal whose bucket
// is empty is still refused, across a sweep.
func TestRateLimitersArePruned(t *testing.T) {
	clk := &clock{now: time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)}
	reg := NewRegistry(&Options{Now: clk.Now, Gate: &GateOptions{Rate: 1 / time.Minute.Seconds(), Burst: 1}})
	reg.MustRegister(New(Definition{ID: "shop/count", Effect: EffectRead}, func(context.Context, map[string]any, *Trace) (any, error) { return nil, nil }))
	call := func(p string) error {
		_, err := reg.Run(context.Background(), Call{Action: "shop/count", Caller: &identity.Caller{Principal: p, Surface: identity.SurfaceUI}})
		return err
	}
	count := func() int {
		n := 0
		reg.gateOf().limiters.Range(func(any, any) bool { n++; return true })
		return n
	}
	for i := range pruneEvery - 1 {
		require.NoError(t, call(fmt.Sprint("early", i)))
	}
	require.NoError(t, call("busy"))
	require.ErrorIs(t, call("busy"), codes.RateLimited)
	assert.Equal(t, pruneEvery, count(), "one limiter per principal so far")

	// A minute later every early bucket is full again; busy's too, so
	// take from it again just before the sweep.
	clk.Add(time.Minute)
	require.NoError(t, call("busy"))
	for i := range pruneEvery {
		require.NoError(t, call(fmt.Sprint("late", i)))
	}
	early := 0
	reg.gateOf().limiters.Range(func(k, _ any) bool {
		if strings.HasPrefix(k.(string), "early") {
			early++
		}
		return true
	})
	assert.Zero(t, early, "the full buckets were dropped")
	assert.LessOrEqual(t, count(), pruneEvery+1, "busy's and the late principals' are left")
	require.ErrorIs(t, call("busy"), codes.RateLimited, "an empty bucket survives the sweep")
}
