package sqlstore_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"strconv"
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
	"github.com/actionreg/actions/store"
)

// TestSettleOrphansWhileSameOriginRuns: two live replicas share one
// origin (the misconfiguration the docs warn of), and one settles its
// origin's orphans while the other runs a keyed call whose body has
// started. The running call keeps its own answer, its changes commit
// once, and a retry afterwards gets that answer. On SQLite the settle
// waits for the unit's write lock and finds the key answered. On
// PostgreSQL it answers the claim at once (a retry meanwhile is told
// outcome_unknown); a unit that had read or written before the settle
// then conflicts when it writes its key's answer, and is run again from
// the start, so its body runs twice (its first attempt's writes undone):
// what SettleOrphans' documentation says.
func TestSettleOrphansWhileSameOriginRuns(t *testing.T) {
	for _, writeFirst := range []bool{false, true} {
		name := "waits then writes"
		if writeFirst {
			name = "writes then waits"
		}
		t.Run(name, func(t *testing.T) { settleWhileSameOriginRuns(t, writeFirst) })
	}
}

func settleWhileSameOriginRuns(t *testing.T, writeFirst bool) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		ctx := context.Background()
		createCharges(t, db)
		clock := &keyClock{t: time.Unix(1e9, 0)}
		var runs atomic.Int64
		opts := &sqlstore.Options{Origin: "replica-a"}
		a := newKeyReplica(t, db, true, clock, &runs, opts)
		b := newKeyReplica(t, db, true, clock, &runs, opts)
		a.started, a.release = make(chan struct{}), make(chan struct{})
		for _, rp := range []*keyReplica{a, b} {
			rp := rp
			require.NoError(t, rp.reg.Register(actions.Action{Definition: actions.Definition{ID: "shop/write_first",
				Parameters: `{"type":"object","properties":{"amount":{"type":"integer"}}}`},
				Run: func(ctx context.Context, p map[string]any, _ *actions.Trace) (any, error) {
					runs.Add(1)
					if _, err := txOf(ctx).ExecContext(ctx, db.Dialect.Rebind("INSERT INTO charges (amount) VALUES (?)"), "5"); err != nil {
						return nil, err
					}
					if runs.Load() == 1 {
						close(rp.started)
						<-rp.release
					}
					return map[string]any{"charged": p["amount"]}, nil
				}}))
		}
		action := "shop/slow"
		if writeFirst {
			action = "shop/write_first"
		}
		call := actions.Call{Action: action, Params: map[string]any{"amount": 5}, Caller: ann, IdempotencyKey: "k"}
		type out struct {
			res actions.Result
			err error
		}
		first := make(chan out, 1)
		go func() {
			res, err := a.reg.Run(ctx, call)
			first <- out{res, err}
		}()
		<-a.started

		settled := make(chan error, 1)
		var n sqlstore.Orphans
		go func() {
			var err error
			n, err = b.s.SettleOrphans(ctx, "replica-a", clock.now())
			settled <- err
		}()
		if db.Dialect == sqlstore.PostgreSQL {
			// The claim was committed on its own: the settle does not
			// wait for the unit.
			require.NoError(t, <-settled)
			assert.Equal(t, sqlstore.Orphans{Claims: 1}, n)
			_, err := b.reg.Run(ctx, call)
			assert.ErrorIs(t, err, codes.OutcomeUnknown, "the claim answered meanwhile")
		}
		close(a.release)
		got := <-first
		require.NoError(t, got.err, "the running call ends with its own answer")
		assert.Equal(t, map[string]any{"charged": jsonNumber("5")}, got.res.Value)
		if db.Dialect == sqlstore.SQLite {
			// The settle waited for the unit's write lock, and found the
			// key answered.
			require.NoError(t, <-settled)
			assert.Zero(t, n)
		}
		bodies := int64(1)
		if writeFirst && db.Dialect == sqlstore.PostgreSQL {
			bodies = 2 // the unit conflicted with the settle and ran again
		}
		assert.Equal(t, bodies, runs.Load(), "the body's runs")
		assert.Equal(t, 1, chargeCount(t, db), "the changes commit once")

		res, err := b.reg.Run(ctx, call)
		require.NoError(t, err, "a retry gets the call's own answer")
		assert.Equal(t, got.res.Value, res.Value)
		assert.Equal(t, bodies, runs.Load(), "the retry ran nothing")
	})
}

// TestSettledOrphanRetries: a dead replica's claims, a call's and a
// batch's, settled by a store of its origin. Every retry under either
// key passes the gate as any call does (each counted by the rate limit,
// and refused rate_limited past it, a batch for each of its steps'
// actions); the retries it lets through are answered outcome_unknown
// whose text holds nothing of the parameters; no body runs.
func TestSettledOrphanRetries(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		ctx := context.Background()
		createCharges(t, db)
		clock := &keyClock{t: time.Unix(1e9, 0)}
		const secret = 987654321
		params := map[string]any{"amount": secret}
		batch := actions.Batch{Steps: []actions.Step{{Call: "shop/charge", With: params}}}

		dead := newStore(t, db, &sqlstore.Options{Origin: "replica-a"})
		for _, c := range []struct {
			action, key string
			v           any
		}{{"shop/charge", "call-key", params}, {"#batch", "batch-key", batch}} {
			text, err := actions.CanonicalJSON(c.v)
			require.NoError(t, err)
			sum := sha256.Sum256(text)
			found, err := dead.ClaimKey(ctx, store.KeyRecord{Principal: "ann", Action: c.action, Key: c.key,
				Digest: hex.EncodeToString(sum[:]), Expires: clock.now().Add(time.Hour), Unit: "claim:" + c.key}, clock.now())
			require.NoError(t, err)
			require.Nil(t, found)
		}
		n, err := newStore(t, db, &sqlstore.Options{Origin: "replica-a"}).SettleOrphans(ctx, "replica-a", clock.now())
		require.NoError(t, err)
		assert.Equal(t, sqlstore.Orphans{Claims: 2}, n)

		var runs atomic.Int64
		s := newStore(t, db, &sqlstore.Options{Origin: "replica-b"})
		reg := actions.NewRegistry(&actions.Options{Store: s, Now: clock.now, Gate: &actions.GateOptions{Rate: 1e-9, Burst: 3}})
		require.NoError(t, reg.Register(actions.Action{Definition: actions.Definition{ID: "shop/charge",
			Parameters: `{"type":"object","properties":{"amount":{"type":"integer"}},"required":["amount"]}`},
			Run: func(context.Context, map[string]any, *actions.Trace) (any, error) { runs.Add(1); return nil, nil }}))

		callRetry := actions.Call{Action: "shop/charge", Params: params, Caller: ann, IdempotencyKey: "call-key"}
		batchRetry := actions.Call{Batch: &batch, Caller: ann, IdempotencyKey: "batch-key"}
		for i, c := range []struct {
			call actions.Call
			want codes.Code
		}{
			{callRetry, codes.OutcomeUnknown},
			{batchRetry, codes.OutcomeUnknown},
			{callRetry, codes.OutcomeUnknown},
			{callRetry, codes.RateLimited}, // Burst 3: the bucket is empty
			{batchRetry, codes.RateLimited},
		} {
			_, err := reg.Run(ctx, c.call)
			assert.ErrorIs(t, err, c.want, "retry %d", i)
			assertNoSecret(t, err, secret)
		}
		lines := auditLines(t, s)
		require.Len(t, lines, 3, "one audit line per retry answered")
		for _, l := range lines {
			assert.Equal(t, codes.OutcomeUnknown, l.Entry.Error)
			assert.NotContains(t, l.Text, strconv.Itoa(secret))
		}

		other := &identity.Caller{Principal: "bob", Surface: identity.SurfaceUI}
		_, err = reg.Run(ctx, actions.Call{Batch: &batch, Caller: other, IdempotencyKey: "batch-key"})
		require.NoError(t, err, "bob's key is his own: his batch runs")
		assert.Equal(t, int64(1), runs.Load(), "only bob's batch ran a body")
	})
}

// assertNoSecret fails when err's text or JSON holds secret.
func assertNoSecret(t *testing.T, err error, secret int) {
	t.Helper()
	if err == nil {
		return
	}
	b, jerr := json.Marshal(err)
	require.NoError(t, jerr)
	s := strconv.Itoa(secret)
	assert.NotContains(t, err.Error(), s)
	assert.NotContains(t, string(b), s)
}

// TestSettledClaimOfACallRefusedBeforeItsBody: a replica of the same
// origin settles a keyed call's claim while the call's refs are being
// resolved; the call is then refused before any body started. Nothing
// ran, so nothing stays under the key: a retry is checked again (and
// refused for its parameters), not answered outcome_unknown.
func TestSettledClaimOfACallRefusedBeforeItsBody(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		ctx := context.Background()
		clock := &keyClock{t: time.Unix(1e9, 0)}
		resolving, release := make(chan struct{}), make(chan struct{})
		var first atomic.Bool
		var runs atomic.Int64
		newReg := func(s *sqlstore.Store) *actions.Registry {
			reg := actions.NewRegistry(&actions.Options{Store: s, Now: clock.now, KeyWait: time.Minute,
				Resolve: func(context.Context, string, string) (actions.RefMatches, error) {
					if first.CompareAndSwap(false, true) {
						close(resolving)
						<-release
					}
					return actions.RefMatches{}, nil // names nothing: invalid_parameters
				}})
			require.NoError(t, reg.Register(actions.Action{Definition: actions.Definition{ID: "tickets/close",
				Parameters: `{"type":"object","properties":{"ticket":{"type":"string","ref":"ticket"}},"required":["ticket"]}`},
				Run: func(context.Context, map[string]any, *actions.Trace) (any, error) { runs.Add(1); return nil, nil }}))
			return reg
		}
		a := newReg(newStore(t, db, &sqlstore.Options{Origin: "replica-a"}))
		pool, err := sql.Open(db.Driver, db.DSN)
		require.NoError(t, err)
		t.Cleanup(func() { _ = pool.Close() })
		bs, err := sqlstore.New(pool, db.Dialect, &sqlstore.Options{Origin: "replica-a"})
		require.NoError(t, err)
		b := newReg(bs)
		call := actions.Call{Action: "tickets/close", Params: map[string]any{"ticket": "T-1"}, Caller: ann, IdempotencyKey: "k"}

		done := make(chan error, 1)
		go func() { _, err := a.Run(ctx, call); done <- err }()
		<-resolving
		settled := make(chan error, 1)
		go func() { _, err := bs.SettleOrphans(ctx, "replica-a", clock.now()); settled <- err }()
		if db.Dialect == sqlstore.PostgreSQL {
			require.NoError(t, <-settled) // answered at once; SQLite waits for the unit
		}
		close(release)
		assert.ErrorIs(t, <-done, codes.InvalidParameters)
		if db.Dialect == sqlstore.SQLite {
			require.NoError(t, <-settled)
		}
		_, err = b.Run(ctx, call)
		assert.ErrorIs(t, err, codes.InvalidParameters, "nothing ran: the retry is checked again")
		assert.Zero(t, runs.Load())
	})
}

// TestRetriesRacingSettleOrphans: eight retries of a dead replica's
// keyed call wait on its claim while a store of its origin settles it;
// each is answered outcome_unknown (none in_progress, none run), with
// one audit line each.
func TestRetriesRacingSettleOrphans(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		ctx := context.Background()
		createCharges(t, db)
		clock := &keyClock{t: time.Unix(1e9, 0)}
		text, err := actions.CanonicalJSON(map[string]any{"amount": 8})
		require.NoError(t, err)
		sum := sha256.Sum256(text)
		dead := newStore(t, db, &sqlstore.Options{Origin: "replica-a"})
		found, err := dead.ClaimKey(ctx, store.KeyRecord{Principal: "ann", Action: "shop/charge", Key: "k",
			Digest: hex.EncodeToString(sum[:]), Expires: clock.now().Add(time.Hour), Unit: "claim:k"}, clock.now())
		require.NoError(t, err)
		require.Nil(t, found)

		var runs atomic.Int64
		b := newKeyReplica(t, db, true, clock, &runs, &sqlstore.Options{Origin: "replica-b"})
		errs := make(chan error, 8)
		for range 8 {
			go func() { _, err := b.reg.Run(ctx, chargeCall("k", 8)); errs <- err }()
		}
		n, err := newStore(t, db, &sqlstore.Options{Origin: "replica-a"}).SettleOrphans(ctx, "replica-a", clock.now())
		require.NoError(t, err)
		assert.Equal(t, sqlstore.Orphans{Claims: 1}, n)
		for i := range 8 {
			assert.ErrorIs(t, <-errs, codes.OutcomeUnknown, "retry %d", i)
		}
		assert.Zero(t, runs.Load())
		assert.Equal(t, 0, chargeCount(t, db))
		assert.Len(t, auditLines(t, b.s), 8)
	})
}
