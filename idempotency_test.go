package actions_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/mcpserver"
	"github.com/actionreg/actions/store"
)

// keyedRegistry is a registry on a RunLog with shop/charge, whose body
// counts its runs and, when block is not nil, waits on it.
func keyedRegistry(t *testing.T, runs *atomic.Int64, block chan struct{}, opts actions.Options) (*actions.Registry, *actions.RunLog) {
	t.Helper()
	log := actions.NewRunLog()
	opts.Store = log
	reg := actions.NewRegistry(&opts)
	require.NoError(t, reg.Register(actions.Action{
		Definition: actions.Definition{ID: "shop/charge", Parameters: `{"type":"object","properties":{"amount":{"type":"integer"}}}`, NeedsIdempotencyKey: true},
		Run: func(_ context.Context, p map[string]any, _ *actions.Trace) (any, error) {
			runs.Add(1)
			if block != nil {
				<-block
			}
			return map[string]any{"charged": p["amount"]}, nil
		},
	}))
	return reg, log
}

var payer = &identity.Caller{Principal: "ann", Surface: identity.SurfaceMCP}

func TestRunLogKeys(t *testing.T) {
	var runs atomic.Int64
	reg, log := keyedRegistry(t, &runs, nil, actions.Options{})
	ctx := context.Background()
	call := actions.Call{Action: "shop/charge", Params: `{"amount":5}`, Caller: payer, IdempotencyKey: "k"}
	first, err := reg.Run(ctx, call)
	require.NoError(t, err)
	again, err := reg.Run(ctx, call)
	require.NoError(t, err)
	assert.Equal(t, first.Entry(), again.Entry())
	assert.Equal(t, int64(1), runs.Load())
	recs := log.Records()
	require.Len(t, recs, 2)
	assert.True(t, recs[1].RolledBack, "the audit line changed nothing")
	assert.Equal(t, "runlog:1", recs[1].Audit.Answered)

	call.Params = `{"amount":6}`
	_, err = reg.Run(ctx, call)
	require.ErrorIs(t, err, codes.IdempotencyConflict)
	assert.Equal(t, codes.IdempotencyConflict, actions.CodeOf(err))

	_, err = reg.Run(ctx, actions.Call{Action: "shop/charge", Params: `{"amount":6}`, Caller: payer})
	require.ErrorIs(t, err, codes.IdempotencyKeyRequired)
	assert.Equal(t, int64(1), runs.Load())
}

func TestRunLogKeyInFlight(t *testing.T) {
	var runs atomic.Int64
	block := make(chan struct{})
	reg, _ := keyedRegistry(t, &runs, block, actions.Options{KeyWait: 1})
	ctx := context.Background()
	call := actions.Call{Action: "shop/charge", Params: `{"amount":5}`, Caller: payer, IdempotencyKey: "k"}
	done := make(chan error, 1)
	go func() { _, err := reg.Run(ctx, call); done <- err }()
	for runs.Load() == 0 {
		// the first call has claimed the key once its body runs
		runtime.Gosched()
	}
	_, err := reg.Run(ctx, call)
	require.ErrorIs(t, err, codes.InProgress)
	assert.Equal(t, codes.InProgress, actions.CodeOf(err))
	close(block)
	require.NoError(t, <-done)

	// Waiting retries get the answer once the first call is done.
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() { defer wg.Done(); _, errs[i] = reg.Run(ctx, call) }()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	assert.Equal(t, int64(1), runs.Load())
}

// TestKeyWithoutStore: a registry without a Store, or whose Store keeps
// no keys (no KeyStore), refuses a keyed call (internal, retry never)
// before any body runs, and runs the same call without a key.
func TestKeyWithoutStore(t *testing.T) {
	for name, store := range map[string]store.Store{"no store": nil, "no KeyStore": atomicOnly{actions.NewRunLog()}} {
		runs := 0
		reg := actions.NewRegistry(&actions.Options{Store: store})
		require.NoError(t, reg.Register(actions.Action{Definition: actions.Definition{ID: "shop/ping"},
			Run: func(context.Context, map[string]any, *actions.Trace) (any, error) { runs++; return nil, nil }}))
		_, err := reg.Run(context.Background(), actions.Call{Action: "shop/ping", IdempotencyKey: "k"})
		require.ErrorIs(t, err, codes.Internal, name)
		var rf *actions.Refusal
		require.ErrorAs(t, err, &rf, name)
		assert.Equal(t, codes.RetryNever, rf.Retry, name)
		assert.Zero(t, runs, name)
		_, err = reg.Run(context.Background(), actions.Call{Action: "shop/ping"})
		require.NoError(t, err, "%s: without a key nothing changes", name)
		assert.Equal(t, 1, runs, name)
	}
}

// atomicOnly is a Store with Atomic alone: it keeps no keys.
type atomicOnly struct{ log *actions.RunLog }

func (s atomicOnly) Atomic(ctx context.Context, fn func(context.Context) store.Unit) ([]store.Record, error) {
	return s.log.Atomic(ctx, fn)
}

func TestKeyCodes(t *testing.T) {
	for _, tc := range []struct {
		code     codes.Code
		sentinel error
		retry    codes.Retry
	}{
		{codes.InProgress, codes.InProgress, codes.RetryAfterBackoff},
		{codes.IdempotencyConflict, codes.IdempotencyConflict, codes.RetryAfterEdit},
		{codes.IdempotencyKeyRequired, codes.IdempotencyKeyRequired, codes.RetryAfterEdit},
		{codes.OutcomeUnknown, codes.OutcomeUnknown, codes.RetryNever},
	} {
		t.Run(string(tc.code), func(t *testing.T) {
			r := actions.NewRefusal(tc.code, "")
			assert.True(t, errors.Is(r, tc.sentinel))
			assert.False(t, errors.Is(r, codes.Internal))
			assert.Equal(t, tc.retry, codes.PolicyOf(tc.code).Retry)
			assert.Equal(t, codes.TransportToolResult, codes.PolicyOf(tc.code).Transport)
			assert.NotEmpty(t, r.NextAction)
			assert.Contains(t, codes.Policies(), tc.code)
		})
	}
}

// TestKeyToolSays: an action that needs a key says so in its tool (the
// export profiles: profiles.TestKeyToolSaysEveryProfile).
func TestKeyToolSays(t *testing.T) {
	var runs atomic.Int64
	reg, _ := keyedRegistry(t, &runs, nil, actions.Options{})
	tools, err := reg.Tools(nil)
	require.NoError(t, err)
	require.Len(t, tools, 1)
	assert.Equal(t, map[string]any{mcpserver.IdempotencyKeyMeta: "required"}, tools[0].Meta)
	assert.Contains(t, tools[0].Description, mcpserver.IdempotencyKeyMeta)
}

// A body's own error that is, wraps or joins the bare code of a key's
// refusal (in_progress, idempotency_conflict, outcome_unknown) is the
// body's: a keyed call gets it as an unkeyed call does, never a refusal
// about its key (a caller told "still running, retry at" for a call that
// ended).
func TestBodyBareKeyCode(t *testing.T) {
	ctx := context.Background()
	caller := &identity.Caller{Principal: "ann", Surface: identity.SurfaceAI}
	for name, bodyErr := range map[string]error{
		"in_progress":          codes.InProgress,
		"idempotency_conflict": codes.IdempotencyConflict,
		"outcome_unknown":      codes.OutcomeUnknown,
		"wrapped":              fmt.Errorf("the ledger said: %w", codes.InProgress),
		"joined":               errors.Join(errors.New("busy"), codes.IdempotencyConflict),
	} {
		var recs []store.Record
		reg := actions.NewRegistry(&actions.Options{Store: actions.NewRunLog(),
			OnRecord: func(rec store.Record) { recs = append(recs, rec) }})
		runs := 0
		reg.MustRegister(actions.New(actions.Definition{ID: "shop/charge"},
			func(context.Context, map[string]any, *actions.Trace) (any, error) { runs++; return nil, bodyErr }))
		for _, key := range []string{"", "k1"} {
			recs = nil
			_, err := reg.Run(ctx, actions.Call{Action: "shop/charge", IdempotencyKey: key, Caller: caller})
			assert.True(t, err == bodyErr, "%s, key %q: the body's error, as it is: %v", name, key, err)
			var rf *actions.Refusal
			assert.False(t, errors.As(err, &rf), "%s, key %q: no refusal is made of it", name, key)
			require.Len(t, recs, 1, name)
			assert.Equal(t, codes.Internal, recs[0].Entry.Error, name)
		}
		// The retry gets the kept outcome, as internal: never a refusal
		// it would read as its key's own; the body ran once under the
		// key.
		_, err := reg.Run(ctx, actions.Call{Action: "shop/charge", IdempotencyKey: "k1", Caller: caller})
		assert.Equal(t, codes.Internal, actions.CodeOf(err), name)
		assert.False(t, errors.Is(err, codes.InProgress) || errors.Is(err, codes.IdempotencyConflict) ||
			errors.Is(err, codes.OutcomeUnknown), name)
		assert.Equal(t, 2, runs, "%s: once without key, once under the key", name)
	}

}

// TestRunLogKeyKeptWhateverTheOutcome: in the in-memory log too, a keyed
// call whose body started keeps its key and outcome whatever the outcome;
// a call refused before its body started does not.
func TestRunLogKeyKeptWhateverTheOutcome(t *testing.T) {
	cases := []struct {
		name   string
		def    actions.Definition
		result any
		err    error
		wait   bool
		code   codes.Code
	}{
		// A second: the body surely starts (its goroutine) before the
		// deadline, even on a loaded machine.
		{name: "timeout", def: actions.Definition{Timeout: time.Second}, wait: true, code: codes.Timeout},
		{name: "output_invalid", def: actions.Definition{OutputSchema: `{"type":"object","required":["receipt"]}`}, result: map[string]any{"charged": 1}, code: codes.OutputInvalid},
		{name: "result_too_large", def: actions.Definition{MaxResultBytes: 20}, result: map[string]any{"charged": strings.Repeat("x", 100)}, code: codes.ResultTooLarge},
		{name: "body_error", err: errors.New("the bank hung up"), code: codes.Internal},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var card atomic.Int64
			log := actions.NewRunLog()
			reg := actions.NewRegistry(&actions.Options{Store: log})
			def := c.def
			def.ID, def.Parameters = "shop/pay", `{"type":"object","properties":{"n":{"type":"integer"}}}`
			reg.MustRegister(actions.Action{Definition: def, Run: func(ctx context.Context, _ map[string]any, _ *actions.Trace) (any, error) {
				card.Add(1)
				if c.wait {
					<-ctx.Done()
					return nil, ctx.Err()
				}
				return c.result, c.err
			}})
			call := actions.Call{Action: "shop/pay", Params: `{"n":1}`, Caller: payer, IdempotencyKey: "k"}
			for i := range 4 {
				_, err := reg.Run(context.Background(), call)
				assert.Equal(t, c.code, actions.CodeOf(err), "call %d", i)
			}
			assert.Equal(t, int64(1), card.Load(), "the body ran once")
			for _, r := range log.Records() {
				assert.True(t, r.RolledBack)
			}
			// A call refused before its body started keeps nothing: fixed
			// parameters run (once).
			bad := actions.Call{Action: "shop/pay", Params: `{"n":"x"}`, Caller: payer, IdempotencyKey: "k2"}
			_, err := reg.Run(context.Background(), bad)
			require.ErrorIs(t, err, codes.InvalidParameters)
			bad.Params = `{"n":"y"}`
			_, err = reg.Run(context.Background(), bad)
			require.ErrorIs(t, err, codes.InvalidParameters, "not idempotency_conflict: no key was kept")
			assert.Equal(t, int64(1), card.Load())
		})
	}
}

// TestRunLogKeyHeldCallExpired: in the in-memory log, a keyed held call's
// retry after its pending change expired is held anew, never answered
// with the dead receipt.
func TestRunLogKeyHeldCallExpired(t *testing.T) {
	now := time.Unix(1e9, 0)
	clock := func() time.Time { return now }
	reg := actions.NewRegistry(&actions.Options{Now: clock, Store: actions.NewRunLog(), Gate: &actions.GateOptions{PendingFor: time.Hour}})
	reg.MustRegister(actions.New(actions.Definition{ID: "shop/refund", NeedsConfirmation: true},
		func(context.Context, map[string]any, *actions.Trace) (any, error) { return "refunded", nil }))
	call := actions.Call{Action: "shop/refund", Caller: payer, IdempotencyKey: "r"}
	_, err := reg.Run(context.Background(), call)
	var held, again *actions.Refusal
	require.ErrorAs(t, err, &held)
	require.NotNil(t, held.Pending)
	_, err = reg.Run(context.Background(), call)
	require.ErrorAs(t, err, &again)
	assert.Equal(t, held.Pending.ID, again.Pending.ID)
	now = now.Add(time.Hour)
	_, err = reg.Run(context.Background(), call)
	require.ErrorAs(t, err, &again)
	require.NotNil(t, again.Pending)
	assert.NotEqual(t, held.Pending.ID, again.Pending.ID, "not the dead receipt")
}

// TestKeyClaimGivenUp: a keyed call whose store fails before any body
// ran (here its unit cannot begin) gives its claim up: the retry runs,
// and is not refused in_progress for a call that never started.
func TestKeyClaimGivenUp(t *testing.T) {
	var runs atomic.Int64
	store := &failFirstUnit{RunLog: actions.NewRunLog()}
	reg := actions.NewRegistry(&actions.Options{Store: store, KeyWait: time.Minute})
	reg.MustRegister(actions.New(actions.Definition{ID: "shop/pay"},
		func(context.Context, map[string]any, *actions.Trace) (any, error) { return runs.Add(1), nil }))
	call := actions.Call{Action: "shop/pay", Caller: payer, IdempotencyKey: "k"}
	_, err := reg.Run(context.Background(), call)
	require.ErrorIs(t, err, codes.Internal, "the store's failure")
	assert.Zero(t, runs.Load())
	res, err := reg.Run(context.Background(), call)
	require.NoError(t, err)
	assert.Equal(t, "1", res.Text, "the retry ran")
	res, err = reg.Run(context.Background(), call)
	require.NoError(t, err)
	assert.Equal(t, "1", res.Text, "and is the key's answer")
	assert.Equal(t, int64(1), runs.Load())
}

// failFirstUnit is a RunLog whose first unit cannot begin: fn does not
// run, and Atomic fails.
type failFirstUnit struct {
	*actions.RunLog
	failed atomic.Bool
}

func (s *failFirstUnit) Atomic(ctx context.Context, fn func(context.Context) store.Unit) ([]store.Record, error) {
	if s.failed.CompareAndSwap(false, true) {
		return nil, errors.New("the unit could not begin")
	}
	return s.RunLog.Atomic(ctx, fn)
}

// TestRunLogKeyBatchRetryRate: in the in-memory log too, a keyed batch's
// retry answered from the record counts its steps' rates: with Burst 4
// and two steps, the batch and one retry pass, the next is limited and
// recorded as its step refused; the steps ran once.
func TestRunLogKeyBatchRetryRate(t *testing.T) {
	now := time.Unix(1e9, 0)
	log := actions.NewRunLog()
	reg := actions.NewRegistry(&actions.Options{Store: log, Now: func() time.Time { return now }, Gate: &actions.GateOptions{Rate: 1, Burst: 4}})
	var runs atomic.Int64
	reg.MustRegister(actions.New(actions.Definition{ID: "shop/pay"},
		func(context.Context, map[string]any, *actions.Trace) (any, error) { return runs.Add(1), nil }))
	call := actions.Call{Batch: &actions.Batch{Steps: []actions.Step{{Call: "shop/pay"}, {Call: "shop/pay"}}}, Caller: payer, IdempotencyKey: "b"}
	for i := range 2 {
		_, err := reg.Run(context.Background(), call)
		require.NoError(t, err, "call %d", i)
	}
	_, err := reg.Run(context.Background(), call)
	require.ErrorIs(t, err, codes.RateLimited)
	assert.Equal(t, int64(2), runs.Load())
	recs := log.Records()
	require.Len(t, recs, 4)
	assert.Equal(t, "runlog:1", recs[2].Audit.Answered, "the retry's audit line")
	assert.Equal(t, codes.RateLimited, recs[3].Audit.Code)
	assert.Equal(t, "shop/pay", recs[3].Entry.Action)
	assert.True(t, recs[3].RolledBack)
}
