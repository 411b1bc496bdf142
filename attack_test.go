package actions

import (
	"context"
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

// These tests attack the gate as a caller without rights would, through
// every door the registry has: ids, aliases, case variants, batches,
// confirmations, and several "sessions" of one principal.

// attackRegistry has a write with an alias and a read, both counting
// their runs, and a write needing confirmation.
func attackRegistry(t *testing.T, opts GateOptions) (*Registry, *atomic.Int32) {
	t.Helper()
	reg := NewRegistry(&Options{Gate: &opts})
	var ran atomic.Int32
	body := func(context.Context, map[string]any, *Trace) (any, error) { ran.Add(1); return "ok", nil }
	require.NoError(t, reg.Register(
		New(Definition{ID: "shop/restock", Effect: EffectWrite, Capability: "stock.write", DeprecatedAliases: []string{"shop/refill"}}, body),
		New(Definition{ID: "shop/discard", Effect: EffectDelete, Capability: "stock.write", NeedsConfirmation: true, DeprecatedAliases: []string{"shop/toss"}}, body),
	))
	return reg, &ran
}

// TestAttackRateLimitNotSpread: a principal's calls of one action pass at
// most Burst times in a span far shorter than 1/Rate, whether they name
// the id, an alias, come as batch steps, confirm held changes, or come
// through several sessions (callers of the same principal on other
// surfaces and clients).
func TestAttackRateLimitNotSpread(t *testing.T) {
	const burst = 3
	reg, ran := attackRegistry(t, GateOptions{Rate: 1 / time.Hour.Seconds(), Burst: burst})
	callers := []*identity.Caller{
		{Principal: "mallory", Capabilities: []string{"stock.write"}, Surface: identity.SurfaceMCP, Client: &identity.Client{ID: "a"}},
		{Principal: "mallory", Capabilities: []string{"stock.write"}, Surface: identity.SurfaceAI, Client: &identity.Client{ID: "b"}},
		{Principal: "mallory", Capabilities: []string{"stock.write"}, Surface: identity.SurfaceUI},
	}
	passed := 0
	for i := 0; i < 4; i++ {
		for _, c := range callers {
			for _, name := range []string{"shop/restock", "shop/refill"} {
				if _, _, err := callAs(reg, context.Background(), c, name, nil); err == nil {
					passed++
				} else {
					require.ErrorIs(t, err, codes.RateLimited)
				}
			}
			b := Batch{Steps: []Step{{Call: "shop/restock"}, {Call: "shop/refill"}}}
			_, entries, _ := batch3(reg, context.Background(), b, c)
			for _, e := range entries {
				if e.Outcome == store.OutcomeDone {
					passed++
				}
			}
		}
	}
	assert.Equal(t, burst, passed, "calls passed")
	assert.Equal(t, int32(burst), ran.Load(), "bodies run")

	// Held changes: proposing counts, confirming counts again.
	reg, ran = attackRegistry(t, GateOptions{Rate: 1 / time.Hour.Seconds(), Burst: burst})
	var ids []string
	for i := 0; i < 2*burst; i++ {
		for _, name := range []string{"shop/discard", "shop/toss"} {
			_, _, err := callAs(reg, context.Background(), callers[i%len(callers)], name, nil)
			if r := asRefusal(err); r != nil && r.Pending != nil {
				ids = append(ids, r.Pending.ID)
			}
		}
	}
	assert.Len(t, ids, burst, "changes held")
	for _, id := range ids {
		_, _, _ = confirm3(reg, context.Background(), id, callers[0])
	}
	assert.Zero(t, ran.Load(), "no confirmation passes a spent limit")
}

// TestAttackReadOnlyHolds: on a read-only registry no write runs, by any
// door: id, alias, batch step, confirmation of a change held before, the
// host's own call.
func TestAttackReadOnlyHolds(t *testing.T) {
	serving := &Serving{}
	reg, ran := attackRegistry(t, GateOptions{Serving: serving})
	c := &identity.Caller{Principal: "eve", Capabilities: []string{"stock.write"}, Surface: identity.SurfaceMCP}
	_, _, err := callAs(reg, context.Background(), c, "shop/toss", nil)
	held := asRefusal(err)
	require.NotNil(t, held)
	require.NotNil(t, held.Pending)
	serving.SetReadOnly(true)
	for _, caller := range []*identity.Caller{c, nil} {
		for _, name := range []string{"shop/restock", "shop/refill", "shop/discard", "shop/toss"} {
			_, _, err := callAs(reg, context.Background(), caller, name, nil)
			assert.ErrorIs(t, err, codes.ReadOnly, name)
		}
		_, _, err := batch3(reg, context.Background(), Batch{Steps: []Step{{Call: "shop/refill"}}}, caller)
		assert.ErrorIs(t, err, codes.ReadOnly)
	}
	_, _, err = confirm3(reg, context.Background(), held.Pending.ID, c)
	assert.ErrorIs(t, err, codes.ReadOnly)
	assert.Zero(t, ran.Load())
}

// TestAttackNamesAreExact: an id or alias differing in case, or with
// spaces or a tool name's hyphen, is an unknown action, for a caller with
// every right as for one with none, and indistinguishable from it.
func TestAttackNamesAreExact(t *testing.T) {
	reg, ran := attackRegistry(t, GateOptions{})
	all := &identity.Caller{Principal: "eve", Capabilities: []string{"stock.write"}, Surface: identity.SurfaceMCP}
	none := &identity.Caller{Principal: "mallory", Surface: identity.SurfaceMCP}
	unknown := func(c *identity.Caller, name string) string {
		_, _, err := callAs(reg, context.Background(), c, name, map[string]any{"x": "MARKER"})
		require.ErrorIs(t, err, codes.UnknownAction, name)
		return err.Error()
	}
	want := unknown(none, "shop/nothing")
	for _, name := range []string{"Shop/Restock", "SHOP/REFILL", "shop/restock ", " shop/refill", "shop-restock", "shop/restock\x00", "shop/Discard"} {
		assert.Equal(t, want, unknown(all, name), name)
		assert.Equal(t, want, unknown(none, name), name)
		assert.NotContains(t, unknown(none, name), strings.TrimSpace(name))
	}
	for _, name := range []string{"shop/restock", "shop/refill", "shop/discard", "shop/toss"} {
		assert.Equal(t, want, unknown(none, name), "a forbidden %s reads as unknown", name)
	}
	assert.Zero(t, ran.Load())
}

// TestAttackConfirmations: a change confirmed or rejected by another
// principal, replayed after it ran, confirmed by its alias's name or with
// a forged caller's PendingChange, runs nothing; every such answer is the
// same unknown_change.
func TestAttackConfirmations(t *testing.T) {
	reg, ran := attackRegistry(t, GateOptions{})
	eve := &identity.Caller{Principal: "eve", Capabilities: []string{"stock.write"}, Surface: identity.SurfaceMCP}
	mallory := &identity.Caller{Principal: "mallory", Capabilities: []string{"stock.write"}, Surface: identity.SurfaceMCP}
	_, _, err := callAs(reg, context.Background(), eve, "shop/discard", nil)
	id := asRefusal(err).Pending.ID
	_, _, missing := confirm3(reg, context.Background(), strings.Repeat("0", 32), mallory)
	require.ErrorIs(t, missing, codes.UnknownChange)
	_, _, err = confirm3(reg, context.Background(), id, mallory)
	assert.Equal(t, missing.Error(), err.Error(), "another's change reads as a missing one")
	assert.ErrorIs(t, reject(reg, context.Background(), id, mallory), codes.UnknownChange)
	_, err = reg.PendingChange(context.Background(), id, mallory)
	assert.ErrorIs(t, err, codes.UnknownChange)
	// A host that sets PendingChange itself confirms nothing.
	forged := *mallory
	forged.PendingChange = id
	_, _, err = callAs(reg, context.Background(), &forged, "shop/discard", nil)
	assert.ErrorIs(t, err, codes.ConfirmationRequired)
	assert.Zero(t, ran.Load())

	_, _, err = confirm3(reg, context.Background(), id, eve)
	require.NoError(t, err)
	_, _, err = confirm3(reg, context.Background(), id, eve)
	assert.Equal(t, missing.Error(), err.Error(), "a replayed confirmation")
	assert.Equal(t, int32(1), ran.Load())
}
