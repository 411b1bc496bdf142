package actions_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
)

// waitBody blocks until its context ends and returns the context's error.
func waitBody(ctx context.Context, _ map[string]any, _ *actions.Trace) (any, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func TestTimeoutRefusesRecordsAndRollsBack(t *testing.T) {
	log := actions.NewRunLog()
	reg := actions.NewRegistry(&actions.Options{Store: log})
	a := actions.New(actions.Definition{ID: "demo/slow"}, waitBody)
	a.Timeout = 10 * time.Millisecond
	reg.MustRegister(a)
	res, err := reg.Run(context.Background(), actions.Call{Action: "demo/slow"})
	require.Error(t, err)
	assert.Equal(t, codes.Timeout, actions.CodeOf(err))
	assert.ErrorIs(t, err, codes.Timeout)
	assert.NotErrorIs(t, err, codes.Cancelled)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, codes.Policy{Transport: codes.TransportToolResult, Retry: codes.RetryAfterBackoff}, codes.PolicyOf(codes.Timeout))
	require.Len(t, res.Records, 1)
	assert.Equal(t, codes.Timeout, res.Records[0].Entry.Error)
	assert.True(t, res.Records[0].RolledBack, "the unit is rolled back")
	recs := log.Records()
	require.Len(t, recs, 1)
	assert.True(t, recs[0].RolledBack)
}

func TestTimeoutRegistryDefaultAndNestedInherits(t *testing.T) {
	// The deadlines themselves: the registry's default bounds a call
	// whose action sets none, and a nested call with a longer limit of
	// its own keeps its caller's deadline.
	reg := actions.NewRegistry(&actions.Options{Timeout: time.Hour})
	inner := actions.New(actions.Definition{ID: "demo/inner"}, func(ctx context.Context, _ map[string]any, _ *actions.Trace) (any, error) {
		d, _ := ctx.Deadline()
		return d.UnixNano(), nil
	})
	inner.Timeout = 2 * time.Hour
	var outerDeadline time.Time
	outer := actions.New(actions.Definition{ID: "demo/outer"}, func(ctx context.Context, _ map[string]any, tr *actions.Trace) (any, error) {
		outerDeadline, _ = ctx.Deadline()
		return tr.Call(ctx, "demo/inner", nil)
	})
	reg.MustRegister(inner, outer)
	before := time.Now()
	res, err := reg.Run(context.Background(), actions.Call{Action: "demo/outer"})
	require.NoError(t, err)
	assert.False(t, outerDeadline.Before(before.Add(time.Hour)), "the registry's default bounds the outer call")
	assert.True(t, outerDeadline.Before(time.Now().Add(time.Hour+time.Second)))
	assert.EqualValues(t, outerDeadline.UnixNano(), res.Value, "the nested call keeps the outer call's deadline")

	// Running out of it: the nested call, started well before the outer
	// call's second is up, is refused timeout in the outer's entry.
	reg = actions.NewRegistry(&actions.Options{Timeout: time.Second})
	inner = actions.New(actions.Definition{ID: "demo/inner"}, waitBody)
	inner.Timeout = time.Hour
	outer = actions.New(actions.Definition{ID: "demo/outer"}, func(ctx context.Context, _ map[string]any, tr *actions.Trace) (any, error) {
		return tr.Call(ctx, "demo/inner", nil)
	})
	reg.MustRegister(inner, outer)
	res, err = reg.Run(context.Background(), actions.Call{Action: "demo/outer"})
	assert.True(t, errors.Is(err, codes.Timeout), "outer: %v", err)
	steps := res.Entry().Steps
	require.Len(t, steps, 1)
	require.NotNil(t, steps[0].Call)
	assert.Equal(t, codes.Timeout, steps[0].Call.Error, "the nested call ran out of the outer call's time")
}

func TestTimeoutNegativeMeansNone(t *testing.T) {
	reg := actions.NewRegistry(&actions.Options{Timeout: time.Nanosecond})
	a := actions.New(actions.Definition{ID: "demo/quick"}, func(ctx context.Context, _ map[string]any, _ *actions.Trace) (any, error) {
		return map[string]any{"ok": true}, ctx.Err()
	})
	a.Timeout = -1
	reg.MustRegister(a)
	_, err := reg.Run(context.Background(), actions.Call{Action: "demo/quick"})
	assert.NoError(t, err)
}

// clock is a settable clock for the gate (and the progress rate).
type clock struct{ ns atomic.Int64 }

func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }

func TestProgressRateAndOrder(t *testing.T) {
	c := &clock{}
	reg := actions.NewRegistry(&actions.Options{Now: c.now})
	reg.MustRegister(actions.New(actions.Definition{ID: "demo/work"}, func(ctx context.Context, _ map[string]any, tr *actions.Trace) (any, error) {
		tr.Progress(1, 4, "one") // delivered: the first
		c.advance(50 * time.Millisecond)
		tr.Progress(2, 4, "two") // dropped: 50 ms after the last
		c.advance(50 * time.Millisecond)
		tr.Progress(3, 4, "three") // delivered: 100 ms after
		c.advance(time.Second)
		tr.Progress(3, 4, "again") // dropped: does not advance
		tr.Progress(4, 4, "four")  // delivered
		return nil, nil
	}))
	var got []actions.Progress
	_, err := reg.Run(context.Background(), actions.Call{Action: "demo/work", Progress: func(p actions.Progress) { got = append(got, p) }})
	require.NoError(t, err)
	assert.Equal(t, []actions.Progress{{Done: 1, Total: 4, Message: "one"}, {Done: 3, Total: 4, Message: "three"}, {Done: 4, Total: 4, Message: "four"}}, got)
}

func TestProgressNeverAfterReturn(t *testing.T) {
	reg := actions.NewRegistry(&actions.Options{ProgressInterval: -1})
	returned := make(chan struct{})
	var late sync.WaitGroup
	late.Add(1)
	reg.MustRegister(actions.New(actions.Definition{ID: "demo/leak"}, func(ctx context.Context, _ map[string]any, tr *actions.Trace) (any, error) {
		tr.Progress(1, 2, "")
		go func() { // reports after the call returned
			defer late.Done()
			<-returned
			tr.Progress(2, 2, "")
		}()
		return nil, nil
	}))
	var mu sync.Mutex
	var after, before int
	done := false
	_, err := reg.Run(context.Background(), actions.Call{Action: "demo/leak", Progress: func(actions.Progress) {
		mu.Lock()
		defer mu.Unlock()
		if done {
			after++
		} else {
			before++
		}
	}})
	require.NoError(t, err)
	mu.Lock()
	done = true
	mu.Unlock()
	close(returned)
	late.Wait()
	assert.Equal(t, 1, before)
	assert.Equal(t, 0, after, "no report after Run returned")
}

func TestBatchReportsStepCount(t *testing.T) {
	reg := actions.NewRegistry(&actions.Options{ProgressInterval: -1})
	reg.MustRegister(actions.New(actions.Definition{ID: "demo/step"}, func(ctx context.Context, _ map[string]any, tr *actions.Trace) (any, error) {
		tr.Progress(99, 100, "a step's own report is dropped")
		return map[string]any{"ok": true}, nil
	}))
	b := actions.Batch{Steps: []actions.Step{{Call: "demo/step"}, {Call: "demo/step"}, {Call: "demo/step"}}}
	var got []float64
	_, err := reg.Run(context.Background(), actions.Call{Batch: &b, Progress: func(p actions.Progress) {
		assert.Equal(t, float64(3), p.Total)
		got = append(got, p.Done)
	}})
	require.NoError(t, err)
	assert.Equal(t, []float64{1, 2, 3}, got)
}

// kinds records the operations an observer sees, and stamps ids.
type kinds struct {
	mu  sync.Mutex
	ops []actions.OpKind
	n   int
}

func (k *kinds) Start(ctx context.Context, op actions.Operation) (context.Context, actions.Observation) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.ops = append(k.ops, op.Kind)
	k.n++
	id := string(rune('a' + k.n))
	return ctx, actions.Observation{TraceID: "t", SpanID: id}
}

func TestObserverSeesEveryOperation(t *testing.T) {
	k := &kinds{}
	reg := actions.NewRegistry(&actions.Options{Observer: k, Store: actions.NewRunLog()})
	reg.MustRegister(
		actions.New(actions.Definition{ID: "demo/leaf"}, func(ctx context.Context, _ map[string]any, _ *actions.Trace) (any, error) { return "leaf", nil }),
		actions.New(actions.Definition{ID: "demo/outer"}, func(ctx context.Context, _ map[string]any, tr *actions.Trace) (any, error) {
			return tr.Call(ctx, "demo/leaf", nil)
		}))
	res, err := reg.Run(context.Background(), actions.Call{Action: "demo/outer"})
	require.NoError(t, err)
	assert.Equal(t, []actions.OpKind{actions.OpUnit, actions.OpCall, actions.OpNested}, k.ops)
	assert.Equal(t, "t", res.Records[0].Audit.TraceID)
	assert.Equal(t, string(rune('a'+2)), res.Records[0].Audit.SpanID, "the call's own span")

	k.ops = nil
	b := actions.Batch{Steps: []actions.Step{{Call: "demo/leaf"}}}
	_, err = reg.Run(context.Background(), actions.Call{Batch: &b})
	require.NoError(t, err)
	assert.Equal(t, []actions.OpKind{actions.OpBatch, actions.OpUnit, actions.OpCall}, k.ops)

	k.ops = nil
	_, err = reg.Replay(context.Background(), res.Records[0])
	require.NoError(t, err)
	assert.Equal(t, actions.OpReplay, k.ops[0])

	k.ops = nil
	_, err = reg.Decide(context.Background(), actions.Decision{Change: "none", Confirm: true, Caller: &identity.Caller{Principal: "p"}})
	assert.ErrorIs(t, err, codes.UnknownChange)
	assert.Equal(t, []actions.OpKind{actions.OpDecide, actions.OpUnit}, k.ops)
}
