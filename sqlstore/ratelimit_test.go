package sqlstore_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/internal/dbtest"
	"github.com/actionreg/actions/sqlstore"
)

// rateReplica is a registry with one action limited to 1 call per second,
// burst 3, its buckets in the store's shared RateLimits.
func rateReplica(t testing.TB, db *dbtest.DB, s *sqlstore.Store, clock *keyClock, shared bool) *actions.Registry {
	t.Helper()
	g := &actions.GateOptions{Rate: 1, Burst: 3}
	if shared {
		g.Limiter = s.RateLimits()
	}
	reg := actions.NewRegistry(&actions.Options{Store: s, Now: clock.now, Gate: g})
	require.NoError(t, reg.Register(actions.Action{Definition: actions.Definition{ID: "shop/ping", Effect: actions.EffectRead},
		Run: func(context.Context, map[string]any, *actions.Trace) (any, error) { return nil, nil }}))
	return reg
}

// TestSharedRateLimits: two replicas sharing the database's buckets allow
// the burst once between them, then one call per second, and tell when.
func TestSharedRateLimits(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		clock := &keyClock{t: time.Unix(1e9, 0)}
		var runs atomic.Int64
		a := newKeyReplica(t, db, true, clock, &runs, nil)
		b := newKeyReplica(t, db, true, clock, &runs, nil)
		regs := []*actions.Registry{rateReplica(t, db, a.s, clock, true), rateReplica(t, db, b.s, clock, true)}
		call := actions.Call{Action: "shop/ping", Caller: ann}
		ctx := context.Background()
		for i := range 3 {
			_, err := regs[i%2].Run(ctx, call)
			require.NoError(t, err, "call %d of the burst", i)
		}
		_, err := regs[1].Run(ctx, call)
		require.ErrorIs(t, err, codes.RateLimited)
		var rf *actions.Refusal
		require.ErrorAs(t, err, &rf)
		assert.Equal(t, clock.now().Add(time.Second), rf.RetryAt)
		clock.add(time.Second)
		_, err = regs[0].Run(ctx, call)
		require.NoError(t, err, "one call a second later")
		_, err = regs[1].Run(ctx, call)
		require.ErrorIs(t, err, codes.RateLimited)
		other := call
		other.Caller = &identity.Caller{Principal: "bob", Surface: identity.SurfaceUI}
		_, err = regs[1].Run(ctx, other)
		require.NoError(t, err, "another principal's bucket")

		// The in-process buckets (the default) are each replica's own.
		local := []*actions.Registry{rateReplica(t, db, a.s, clock, false), rateReplica(t, db, b.s, clock, false)}
		for _, reg := range local {
			for i := range 3 {
				_, err := reg.Run(ctx, call)
				require.NoError(t, err, "call %d", i)
			}
		}

		n, err := a.s.PurgeExpired(ctx, clock.now().Add(time.Hour))
		require.NoError(t, err)
		assert.Equal(t, int64(2), n, "both buckets are full again")
	})
}

// BenchmarkRateLimit is the cost per call of the gate's rate limit:
// in-process buckets against the database's shared ones.
func BenchmarkRateLimit(b *testing.B) {
	for _, name := range []string{"sqlite", "postgresql"} {
		for _, shared := range []bool{false, true} {
			label := name + "/in-process"
			if shared {
				label = name + "/shared"
			}
			b.Run(label, func(b *testing.B) {
				db := openBenchDB(b, name)
				s := newStore(b, db, nil)
				clock := &keyClock{t: time.Unix(1e9, 0)}
				reg := rateReplica(b, db, s, clock, shared)
				g := &actions.GateOptions{Rate: 1e6, Burst: 1 << 30} // never refuses, always counts
				if shared {
					g.Limiter = s.RateLimits()
				}
				reg = actions.NewRegistry(&actions.Options{Store: s, Gate: g})
				require.NoError(b, reg.Register(actions.Action{Definition: actions.Definition{ID: "shop/ping", Effect: actions.EffectRead},
					Run: func(context.Context, map[string]any, *actions.Trace) (any, error) { return nil, nil }}))
				_ = clock
				call := actions.Call{Action: "shop/ping", Caller: ann}
				b.ResetTimer()
				for b.Loop() {
					if _, err := reg.Run(context.Background(), call); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// openBenchDB opens the benchmark's database by dialect name.
func openBenchDB(b *testing.B, name string) *dbtest.DB {
	if name == "postgresql" {
		return dbtest.Postgres(b)
	}
	return dbtest.SQLite(b)
}

// BenchmarkKeyedCall is the cost per call of an idempotency key: a call
// without a key, a first call with a fresh key, and a retry answered
// from the record.
func BenchmarkKeyedCall(b *testing.B) {
	for _, name := range []string{"sqlite", "postgresql"} {
		for _, mode := range []string{"no-key", "fresh-key", "retry"} {
			b.Run(name+"/"+mode, func(b *testing.B) {
				db := openBenchDB(b, name)
				createCharges(b, db)
				var runs atomic.Int64
				rp := newKeyReplica(b, db, false, &keyClock{t: time.Unix(1e9, 0)}, &runs, nil)
				ctx := context.Background()
				if mode == "retry" {
					if _, err := rp.reg.Run(ctx, chargeCall("bench", 1)); err != nil {
						b.Fatal(err)
					}
				}
				i := 0
				b.ResetTimer()
				for b.Loop() {
					call := chargeCall("", 1)
					switch mode {
					case "fresh-key":
						i++
						call.IdempotencyKey = "k" + itoa(i)
					case "retry":
						call.IdempotencyKey = "bench"
					}
					if _, err := rp.reg.Run(ctx, call); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
