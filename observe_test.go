package actions_test

import (
	"context"
	"reflect"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/store"
)

// ended is what one observation's End received.
type ended struct {
	kind actions.OpKind
	res  actions.Result
	err  error
}

// told records every operation an observer is told and every End, each
// observation with its own span id.
type told struct {
	mu   sync.Mutex
	ops  []actions.Operation
	ends []ended
}

func (o *told) Start(ctx context.Context, op actions.Operation) (context.Context, actions.Observation) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ops = append(o.ops, op)
	span := strconv.Itoa(len(o.ops))
	return ctx, actions.Observation{TraceID: "t", SpanID: span, End: func(res actions.Result, err error) {
		o.mu.Lock()
		defer o.mu.Unlock()
		o.ends = append(o.ends, ended{op.Kind, res, err})
	}}
}

// reset forgets what o was told.
func (o *told) reset() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ops, o.ends = nil, nil
}

// samePointer reports whether a and b are the same map (not a copy).
func samePointer(a, b any) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

func TestObserverIsToldTheCallPathsValues(t *testing.T) {
	o := &told{}
	named := map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}
	reg := actions.NewRegistry(&actions.Options{Observer: o, Store: actions.NewRunLog()})
	reg.MustRegister(
		actions.New(actions.Definition{ID: "demo/leaf", Parameters: named}, func(ctx context.Context, _ map[string]any, _ *actions.Trace) (any, error) { return "leaf", nil }),
		actions.New(actions.Definition{ID: "demo/outer", Parameters: named}, func(ctx context.Context, params map[string]any, tr *actions.Trace) (any, error) {
			return tr.CallAsHost(ctx, "demo/leaf", params)
		}),
		actions.New(actions.Definition{ID: "demo/empty"}, func(ctx context.Context, _ map[string]any, _ *actions.Trace) (any, error) {
			return nil, actions.NewRefusal("tank_empty", "the tank is empty")
		}),
		actions.New(actions.Definition{ID: "demo/held", NeedsConfirmation: true}, func(ctx context.Context, _ map[string]any, _ *actions.Trace) (any, error) {
			return "done", nil
		}),
	)
	ann := &identity.Caller{Principal: "ann", Surface: identity.SurfaceUI}
	ctx := context.Background()

	t.Run("call", func(t *testing.T) {
		o.reset()
		params := map[string]any{"name": "n"}
		res, err := reg.Run(ctx, actions.Call{Action: "demo/outer", Params: params, Caller: ann, ToolCallID: "tc1", IdempotencyKey: "k1", Progress: func(actions.Progress) {}})
		require.NoError(t, err)
		require.Len(t, o.ops, 3)
		unit, call, nested := o.ops[0], o.ops[1], o.ops[2]
		assert.Equal(t, actions.Operation{Kind: actions.OpUnit, Step: -1}, unit)
		assert.Equal(t, actions.OpCall, call.Kind)
		assert.Equal(t, "demo/outer", call.Call.Action)
		assert.Same(t, ann, call.Call.Caller)
		assert.Equal(t, "tc1", call.Call.ToolCallID)
		assert.True(t, samePointer(params, call.Call.Params), "the caller's params, not a copy")
		assert.Nil(t, call.Call.Progress, "the observer never gets the caller's progress")
		assert.Empty(t, call.Call.IdempotencyKey)
		assert.Equal(t, actions.Decision{}, call.Decision)
		assert.Equal(t, -1, call.Step)
		assert.Equal(t, actions.OpNested, nested.Kind)
		assert.Equal(t, "demo/leaf", nested.Call.Action)
		assert.Nil(t, nested.Call.Caller, "a call as the host")
		assert.True(t, nested.AsHost)
		assert.Empty(t, nested.Call.ToolCallID)

		require.Len(t, o.ends, 3)
		assert.Equal(t, actions.OpNested, o.ends[0].kind)
		assert.Equal(t, "leaf", o.ends[0].res.Value)
		require.Len(t, o.ends[0].res.Records, 1)
		assert.Equal(t, "demo/leaf", o.ends[0].res.Records[0].Entry.Action)
		assert.Equal(t, store.Audit{}, o.ends[0].res.Records[0].Audit)
		assert.Equal(t, actions.OpCall, o.ends[1].kind)
		assert.Equal(t, "leaf", o.ends[1].res.Value)
		require.Len(t, o.ends[1].res.Records, 1)
		assert.Equal(t, "2", o.ends[1].res.Records[0].Audit.SpanID, "the call's record carries its own span")
		assert.Equal(t, actions.OpUnit, o.ends[2].kind)
		assert.Equal(t, res.Records, o.ends[2].res.Records, "the unit's records as kept")
		assert.False(t, o.ends[2].res.Records[0].RolledBack)
		assert.NoError(t, o.ends[2].err)
	})

	t.Run("batch", func(t *testing.T) {
		o.reset()
		b := actions.Batch{Steps: []actions.Step{{Call: "demo/leaf"}, {Call: "demo/empty"}}}
		res, err := reg.Run(ctx, actions.Call{Batch: &b, Caller: ann, ToolCallID: "tc2"})
		require.ErrorIs(t, err, codes.Code("tank_empty"))
		require.Len(t, o.ops, 4)
		batch := o.ops[0]
		assert.Equal(t, actions.OpBatch, batch.Kind)
		assert.Same(t, &b, batch.Call.Batch, "the caller's batch, not a copy")
		assert.Same(t, ann, batch.Call.Caller)
		assert.Equal(t, "tc2", batch.Call.ToolCallID)
		assert.Empty(t, batch.Call.Action)
		assert.Equal(t, -1, batch.Step)
		assert.Equal(t, actions.OpUnit, o.ops[1].Kind)
		for i, step := range o.ops[2:] {
			assert.Equal(t, actions.OpCall, step.Kind)
			assert.Equal(t, b.Steps[i].Call, step.Call.Action)
			assert.Equal(t, i, step.Step)
		}

		last := o.ends[len(o.ends)-1]
		assert.Equal(t, actions.OpBatch, last.kind)
		assert.Equal(t, res, last.res, "what Run returns")
		assert.Equal(t, err, last.err)
		unit := o.ends[len(o.ends)-2]
		assert.Equal(t, actions.OpUnit, unit.kind)
		require.Len(t, unit.res.Records, 2)
		assert.True(t, unit.res.Records[0].RolledBack, "a stopped batch keeps nothing")
	})

	t.Run("decide and replay", func(t *testing.T) {
		_, err := reg.Run(ctx, actions.Call{Action: "demo/held", Caller: ann})
		var r *actions.Refusal
		require.ErrorAs(t, err, &r)
		require.NotNil(t, r.Pending)
		o.reset()
		d := actions.Decision{Change: r.Pending.ID, Confirm: true, Caller: ann}
		res, err := reg.Decide(ctx, d)
		require.NoError(t, err)
		require.Len(t, o.ops, 3)
		assert.Equal(t, actions.Operation{Kind: actions.OpDecide, Decision: d, Step: -1}, o.ops[0])
		run := o.ops[2]
		assert.Equal(t, actions.OpCall, run.Kind)
		assert.Equal(t, "demo/held", run.Call.Action)
		require.NotNil(t, run.Call.Caller)
		assert.Equal(t, r.Pending.ID, run.Call.Caller.PendingChange, "the confirming person")
		assert.Equal(t, actions.Decision{Change: r.Pending.ID, Confirm: true, Caller: run.Call.Caller}, run.Decision)
		last := o.ends[len(o.ends)-1]
		assert.Equal(t, actions.OpDecide, last.kind)
		assert.Equal(t, res, last.res, "what Decide returns")
		assert.NoError(t, last.err)

		o.reset()
		rec := res.Records[0]
		_, err = reg.Replay(ctx, rec)
		require.NoError(t, err)
		require.NotEmpty(t, o.ops)
		assert.Equal(t, actions.Operation{Kind: actions.OpReplay, Call: actions.Call{Action: "demo/held", Caller: rec.Audit.Caller}, Step: -1}, o.ops[0])
		last = o.ends[len(o.ends)-1]
		assert.Equal(t, ended{kind: actions.OpReplay}, last)
	})
}

// nilContext is an observer whose Start gives back a nil context, with
// ids and without.
type nilContext struct{ ids bool }

func (o nilContext) Start(context.Context, actions.Operation) (context.Context, actions.Observation) {
	if o.ids {
		return nil, actions.Observation{TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", SpanID: "00f067aa0ba902b7"}
	}
	return nil, actions.Observation{}
}

// A nil context from Start means the one Start was given: the operation
// runs in it, it does not panic.
func TestObserverNilContext(t *testing.T) {
	for _, o := range []nilContext{{ids: true}, {ids: false}} {
		for _, store := range []store.Store{nil, actions.NewRunLog()} {
			reg := actions.NewRegistry(&actions.Options{Store: store, Observer: o})
			reg.MustRegister(
				actions.New(actions.Definition{ID: "shop/inner"}, func(ctx context.Context, _ map[string]any, _ *actions.Trace) (any, error) {
					return ctx.Value(ctxProbe{}), nil
				}),
				actions.New(actions.Definition{ID: "shop/order"}, func(ctx context.Context, _ map[string]any, tr *actions.Trace) (any, error) {
					return tr.Call(ctx, "shop/inner", nil)
				}))
			ctx := context.WithValue(context.Background(), ctxProbe{}, "given")
			var res actions.Result
			var err error
			require.NotPanics(t, func() {
				res, err = reg.Run(ctx, actions.Call{Action: "shop/order", Caller: &identity.Caller{Principal: "ann", Surface: identity.SurfaceAI}})
			}, "ids %v, store %v", o.ids, store != nil)
			require.NoError(t, err)
			assert.Equal(t, "given", res.Value, "the body runs in the caller's context")
		}
	}
}

type ctxProbe struct{}

// panicking panics in Start for one kind of operation.
type panicking struct{ on actions.OpKind }

func (o panicking) Start(ctx context.Context, op actions.Operation) (context.Context, actions.Observation) {
	if op.Kind == o.on {
		panic("observer")
	}
	return ctx, actions.Observation{}
}

// An observer's panic, as Observer says: outside a unit (OpUnit) it is
// not recovered; inside one, the unit is undone and refused internal,
// and the call is recorded: refused, rolled back (OpCall); during a
// nested call, inside the calling body, that call fails internal.
func TestObserverPanic(t *testing.T) {
	var recs []store.Record
	run := func(kind actions.OpKind) (actions.Result, error) {
		recs = nil
		reg := actions.NewRegistry(&actions.Options{Store: actions.NewRunLog(), Observer: panicking{kind},
			OnRecord: func(r store.Record) { recs = append(recs, r) }})
		reg.MustRegister(
			actions.New(actions.Definition{ID: "shop/inner"}, func(context.Context, map[string]any, *actions.Trace) (any, error) { return "in", nil }),
			actions.New(actions.Definition{ID: "shop/order"}, func(ctx context.Context, _ map[string]any, tr *actions.Trace) (any, error) {
				return tr.Call(ctx, "shop/inner", nil)
			}))
		return reg.Run(context.Background(), actions.Call{Action: "shop/order", Caller: &identity.Caller{Principal: "ann", Surface: identity.SurfaceAI}})
	}
	assert.PanicsWithValue(t, "observer", func() { _, _ = run(actions.OpUnit) })
	_, err := run(actions.OpCall)
	assert.Equal(t, codes.Internal, actions.CodeOf(err))
	require.Len(t, recs, 1, "the call is recorded")
	assert.Equal(t, "shop/order", recs[0].Entry.Action)
	assert.Equal(t, codes.Internal, recs[0].Entry.Error)
	assert.True(t, recs[0].RolledBack)
	_, err = run(actions.OpNested)
	assert.Equal(t, codes.Internal, actions.CodeOf(err))
}
