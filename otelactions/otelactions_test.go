package otelactions_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/mcpserver"
	"github.com/actionreg/actions/otelactions"
	"github.com/actionreg/actions/store"
)

// pipeline is a real SDK pipeline: spans into a recorder, metrics into a
// manual reader.
type pipeline struct {
	obs    *otelactions.Observer
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
}

func newPipeline(t testing.TB, values bool) *pipeline {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	obs, err := otelactions.New(&otelactions.Options{TracerProvider: tp, MeterProvider: mp, Values: values})
	require.NoError(t, err)
	return &pipeline{obs: obs, spans: sr, reader: reader}
}

// named returns the ended span of that name; it fails when there is not
// exactly one.
func (p *pipeline) named(t *testing.T, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	var found []sdktrace.ReadOnlySpan
	for _, s := range p.spans.Ended() {
		if s.Name() == name {
			found = append(found, s)
		}
	}
	require.Len(t, found, 1, "spans named %q among %v", name, names(p.spans.Ended()))
	return found[0]
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = s.Name()
	}
	return out
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// histogram returns the histogram of that name, with its unit.
func (p *pipeline) histogram(t *testing.T, name string) (metricdata.Histogram[float64], string) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, p.reader.Collect(context.Background(), &rm))
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				h, ok := m.Data.(metricdata.Histogram[float64])
				require.True(t, ok, "%s is a float64 histogram", name)
				return h, m.Unit
			}
		}
	}
	t.Fatalf("no metric %s", name)
	return metricdata.Histogram[float64]{}, ""
}

const secret = "a-personal-value"

var nameSchema = map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}

func registry(p *pipeline, store store.Store) *actions.Registry {
	opts := &actions.Options{Store: store, ProgressInterval: -1}
	if p.obs != nil {
		opts.Observer = p.obs
	}
	reg := actions.NewRegistry(opts)
	reg.MustRegister(
		actions.New(actions.Definition{ID: "demo/echo", Parameters: nameSchema}, func(ctx context.Context, params map[string]any, _ *actions.Trace) (any, error) {
			return map[string]any{"echo": params["name"]}, nil
		}),
		actions.New(actions.Definition{ID: "demo/outer", Parameters: nameSchema}, func(ctx context.Context, params map[string]any, tr *actions.Trace) (any, error) {
			return tr.Call(ctx, "demo/echo", params)
		}),
		actions.New(actions.Definition{ID: "demo/empty"}, func(ctx context.Context, _ map[string]any, _ *actions.Trace) (any, error) {
			return nil, actions.NewRefusal("tank_empty", "the tank is empty")
		}),
		actions.New(actions.Definition{ID: "demo/held", NeedsConfirmation: true}, func(ctx context.Context, _ map[string]any, _ *actions.Trace) (any, error) {
			return map[string]any{"done": true}, nil
		}),
		actions.New(actions.Definition{ID: "demo/slow", Timeout: time.Millisecond}, func(ctx context.Context, _ map[string]any, _ *actions.Trace) (any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}),
		actions.New(actions.Definition{ID: "demo/progress"}, func(ctx context.Context, _ map[string]any, tr *actions.Trace) (any, error) {
			for i := 1; i <= 5; i++ {
				tr.Progress(float64(i), 5, "")
			}
			return map[string]any{"ok": true}, nil
		}),
	)
	return reg
}

func TestCallSpanAttributesAndMetric(t *testing.T) {
	p := newPipeline(t, false)
	reg := registry(p, nil)
	res, err := reg.Run(context.Background(), actions.Call{Action: "demo/echo", Params: map[string]any{"name": secret}, ToolCallID: "call_1"})
	require.NoError(t, err)
	s := p.named(t, "execute_tool demo-echo")
	assert.Equal(t, trace.SpanKindInternal, s.SpanKind())
	a := attrs(s)
	assert.Equal(t, "execute_tool", a["gen_ai.operation.name"].AsString())
	assert.Equal(t, "demo-echo", a["gen_ai.tool.name"].AsString())
	assert.Equal(t, "call_1", a["gen_ai.tool.call.id"].AsString())
	assert.Equal(t, "function", a["gen_ai.tool.type"].AsString())
	assert.Equal(t, "demo/echo", a["actions.action.id"].AsString())
	_, hasErr := a["error.type"]
	assert.False(t, hasErr)
	// No value on a span by default.
	_, hasArgs := a["gen_ai.tool.call.arguments"]
	_, hasResult := a["gen_ai.tool.call.result"]
	assert.False(t, hasArgs || hasResult)
	for _, kv := range s.Attributes() {
		assert.NotContains(t, kv.Value.Emit(), secret, "attribute %s", kv.Key)
	}
	// The record finds its span.
	audit := res.Records[0].Audit
	assert.Equal(t, s.SpanContext().TraceID().String(), audit.TraceID)
	assert.Equal(t, s.SpanContext().SpanID().String(), audit.SpanID)

	h, unit := p.histogram(t, "gen_ai.execute_tool.duration")
	assert.Equal(t, "s", unit)
	require.Len(t, h.DataPoints, 1)
	assert.Equal(t, uint64(1), h.DataPoints[0].Count)
	name, _ := h.DataPoints[0].Attributes.Value("gen_ai.tool.name")
	assert.Equal(t, "demo-echo", name.AsString())
	assert.Equal(t, []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}, h.DataPoints[0].Bounds)
}

func TestValuesOnSpansWhenOptedIn(t *testing.T) {
	p := newPipeline(t, true)
	reg := registry(p, nil)
	_, err := reg.Run(context.Background(), actions.Call{Action: "demo/echo", Params: map[string]any{"name": "x"}})
	require.NoError(t, err)
	a := attrs(p.named(t, "execute_tool demo-echo"))
	assert.Equal(t, `{"name":"x"}`, a["gen_ai.tool.call.arguments"].AsString())
	assert.Equal(t, `{"echo":"x"}`, a["gen_ai.tool.call.result"].AsString())
}

func TestRefusedCallErrorType(t *testing.T) {
	for _, tc := range []struct {
		name, action string
		params       any
		want         string
	}{
		{"invalid parameters", "demo/echo", map[string]any{"name": 3}, "invalid_parameters"},
		{"domain refusal", "demo/empty", nil, "tank_empty"},
		{"unknown action", "demo/nothing", nil, "unknown_action"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPipeline(t, false)
			reg := registry(p, nil)
			_, err := reg.Run(context.Background(), actions.Call{Action: tc.action, Params: tc.params})
			require.Error(t, err)
			s := p.named(t, "execute_tool "+actions.ToolName(tc.action))
			assert.Equal(t, tc.want, attrs(s)["error.type"].AsString())
			assert.Equal(t, "Error", s.Status().Code.String())
			h, _ := p.histogram(t, "gen_ai.execute_tool.duration")
			require.Len(t, h.DataPoints, 1)
			et, _ := h.DataPoints[0].Attributes.Value("error.type")
			assert.Equal(t, tc.want, et.AsString())
		})
	}
}

func TestNestedCallSpanTree(t *testing.T) {
	p := newPipeline(t, false)
	reg := registry(p, nil)
	_, err := reg.Run(context.Background(), actions.Call{Action: "demo/outer", Params: map[string]any{"name": "n"}})
	require.NoError(t, err)
	outer, inner := p.named(t, "execute_tool demo-outer"), p.named(t, "execute_tool demo-echo")
	assert.Equal(t, outer.SpanContext().SpanID(), inner.Parent().SpanID(), "the nested call is the outer call's child")
	assert.Equal(t, outer.SpanContext().TraceID(), inner.SpanContext().TraceID())
}

func TestBatchSpanTree(t *testing.T) {
	p := newPipeline(t, false)
	reg := registry(p, actions.NewRunLog())
	b := actions.Batch{Steps: []actions.Step{{Call: "demo/echo", With: map[string]any{"name": "a"}, As: "a"}, {Call: "demo/outer", With: map[string]any{"name": "${a.echo}"}}}}
	res, err := reg.Run(context.Background(), actions.Call{Batch: &b})
	require.NoError(t, err)
	batch, tx := p.named(t, "batch"), p.named(t, "transaction")
	assert.Equal(t, int64(2), attrs(batch)["actions.batch.steps"].AsInt64())
	assert.Equal(t, batch.SpanContext().SpanID(), tx.Parent().SpanID())
	assert.True(t, attrs(tx)["actions.unit.committed"].AsBool())
	outer := p.named(t, "execute_tool demo-outer")
	assert.Equal(t, tx.SpanContext().SpanID(), outer.Parent().SpanID())
	assert.Equal(t, int64(1), attrs(outer)["actions.batch.step"].AsInt64())
	var steps, nested int
	for _, s := range p.spans.Ended() {
		if s.Name() != "execute_tool demo-echo" {
			continue
		}
		switch s.Parent().SpanID() {
		case tx.SpanContext().SpanID():
			steps++
			assert.Equal(t, int64(0), attrs(s)["actions.batch.step"].AsInt64())
		case outer.SpanContext().SpanID():
			nested++
		}
	}
	assert.Equal(t, 1, steps, "step 0 under the transaction")
	assert.Equal(t, 1, nested, "the nested call under step 1")
	require.Len(t, res.Records, 2)
	assert.Equal(t, outer.SpanContext().SpanID().String(), res.Records[1].Audit.SpanID)
}

func TestHeldCallEventAndConfirmSpan(t *testing.T) {
	p := newPipeline(t, false)
	reg := registry(p, nil)
	who := &identity.Caller{Principal: "ann", Surface: identity.SurfaceUI}
	r := holdOne(t, reg, who)
	held := p.named(t, "execute_tool demo-held")
	require.Len(t, held.Events(), 1)
	assert.Equal(t, otelactions.EventHeld, held.Events()[0].Name)
	assert.Equal(t, "confirmation_required", attrs(held)["error.type"].AsString())

	_, err := reg.Decide(context.Background(), actions.Decision{Change: r.Pending.ID, Confirm: true, Caller: who})
	require.NoError(t, err)
	confirm := p.named(t, "confirm")
	assert.Equal(t, r.Pending.ID, attrs(confirm)["actions.pending_change.id"].AsString())
	var run sdktrace.ReadOnlySpan
	for _, s := range p.spans.Ended() {
		if s.Name() == "execute_tool demo-held" && s.Parent().SpanID() == confirm.SpanContext().SpanID() {
			run = s
		}
	}
	require.NotNil(t, run, "the confirmed call runs under the confirm span")
	_, failed := attrs(run)["error.type"]
	assert.False(t, failed)
	assert.Equal(t, r.Pending.ID, attrs(run)["actions.pending_change.id"].AsString(), "the call names the change it confirms")
}

func TestRejectReplayAndBatchToolCallSpans(t *testing.T) {
	p := newPipeline(t, false)
	reg := registry(p, nil)
	who := &identity.Caller{Principal: "ann", Surface: identity.SurfaceUI}
	r := holdOne(t, reg, who)
	_, err := reg.Decide(context.Background(), actions.Decision{Change: r.Pending.ID, Caller: who})
	require.NoError(t, err)
	assert.Equal(t, r.Pending.ID, attrs(p.named(t, "reject"))["actions.pending_change.id"].AsString())

	res, err := reg.Run(context.Background(), actions.Call{Action: "demo/echo", Params: map[string]any{"name": "n"}})
	require.NoError(t, err)
	_, err = reg.Replay(context.Background(), res.Records[0])
	require.NoError(t, err)
	replay := p.named(t, "replay demo-echo")
	assert.Equal(t, "demo-echo", attrs(replay)["gen_ai.tool.name"].AsString())
	_, failed := attrs(replay)["error.type"]
	assert.False(t, failed)

	b := actions.Batch{Steps: []actions.Step{{Call: "demo/echo", With: map[string]any{"name": "a"}}}}
	_, err = reg.Run(context.Background(), actions.Call{Batch: &b, ToolCallID: "call_b"})
	require.NoError(t, err)
	batch := attrs(p.named(t, "batch"))
	assert.Equal(t, "call_b", batch["gen_ai.tool.call.id"].AsString())
	assert.Equal(t, int64(1), batch["actions.batch.steps"].AsInt64())
}

func TestTimeoutSpanAndRollback(t *testing.T) {
	p := newPipeline(t, false)
	log := actions.NewRunLog()
	reg := registry(p, log)
	_, err := reg.Run(context.Background(), actions.Call{Action: "demo/slow"})
	assert.ErrorIs(t, err, codes.Timeout)
	assert.Equal(t, "timeout", attrs(p.named(t, "execute_tool demo-slow"))["error.type"].AsString())
	tx := p.named(t, "transaction")
	assert.False(t, attrs(tx)["actions.unit.committed"].AsBool())
	require.Len(t, log.Records(), 1)
	assert.True(t, log.Records()[0].RolledBack)
	assert.Equal(t, codes.Timeout, log.Records()[0].Entry.Error)
}

// serve connects an SDK client to a server offering reg's tools through
// the observer's middleware.
func serve(t *testing.T, p *pipeline, reg *actions.Registry, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "v0"}, nil)
	require.NoError(t, mcpserver.AddTools(s, reg, nil))
	s.AddReceivingMiddleware(p.obs.Middleware) // last: outermost
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(context.Background(), st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })
	c := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v0"}, copts)
	cs, err := c.Connect(context.Background(), ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func TestMCPServerSpanParentFromMeta(t *testing.T) {
	p := newPipeline(t, false)
	cs := serve(t, p, registry(p, nil), nil)
	params := &mcp.CallToolParams{Name: "demo-echo", Arguments: map[string]any{"name": secret}}
	params.SetMeta(map[string]any{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "tracestate": "rojo=00f067aa0ba902b7"})
	res, err := cs.CallTool(context.Background(), params)
	require.NoError(t, err)
	require.False(t, res.IsError)

	srv := p.named(t, "tools/call demo-echo")
	assert.Equal(t, trace.SpanKindServer, srv.SpanKind())
	assert.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", srv.SpanContext().TraceID().String())
	assert.Equal(t, "00f067aa0ba902b7", srv.Parent().SpanID().String())
	assert.True(t, srv.Parent().IsRemote())
	assert.Equal(t, "rojo=00f067aa0ba902b7", srv.SpanContext().TraceState().String())
	a := attrs(srv)
	assert.Equal(t, "tools/call", a["mcp.method.name"].AsString())
	assert.Equal(t, "demo-echo", a["gen_ai.tool.name"].AsString())
	assert.Equal(t, "execute_tool", a["gen_ai.operation.name"].AsString())
	assert.NotEmpty(t, a["mcp.protocol.version"].AsString())
	for _, kv := range srv.Attributes() {
		assert.NotContains(t, kv.Value.Emit(), secret)
	}
	tool := p.named(t, "execute_tool demo-echo")
	assert.Equal(t, srv.SpanContext().SpanID(), tool.Parent().SpanID(), "the tool's span is the server span's child")

	h, unit := p.histogram(t, "mcp.server.operation.duration")
	assert.Equal(t, "s", unit)
	var calls uint64
	for _, dp := range h.DataPoints {
		if m, _ := dp.Attributes.Value("mcp.method.name"); m.AsString() == "tools/call" {
			calls += dp.Count
			_, hasSession := dp.Attributes.Value("mcp.session.id")
			assert.False(t, hasSession, "no session id on a metric")
		}
	}
	assert.Equal(t, uint64(1), calls)
}

func TestMCPToolErrorType(t *testing.T) {
	p := newPipeline(t, false)
	cs := serve(t, p, registry(p, nil), nil)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "demo-empty"})
	require.NoError(t, err)
	require.True(t, res.IsError)
	assert.Equal(t, "tool_error", attrs(p.named(t, "tools/call demo-empty"))["error.type"].AsString())
	assert.Equal(t, "tank_empty", attrs(p.named(t, "execute_tool demo-empty"))["error.type"].AsString())
}

func TestMCPProgressNotificationsInOrder(t *testing.T) {
	p := newPipeline(t, false)
	got := make(chan float64, 16)
	cs := serve(t, p, registry(p, nil), &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		if req.Params.ProgressToken == "tok" {
			got <- req.Params.Progress
		}
	}})
	params := &mcp.CallToolParams{Name: "demo-progress"}
	params.SetProgressToken("tok")
	res, err := cs.CallTool(context.Background(), params)
	require.NoError(t, err)
	require.False(t, res.IsError)
	var seen []float64
	for len(seen) < 5 {
		select {
		case v := <-got:
			seen = append(seen, v)
		case <-time.After(10 * time.Second): // a guard against a hang, not a timing assertion
			t.Fatalf("progress seen: %v", seen)
		}
	}
	assert.Equal(t, []float64{1, 2, 3, 4, 5}, seen)
	// Without a token, none.
	_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "demo-progress"})
	require.NoError(t, err)
	select {
	case v := <-got:
		t.Fatalf("a notification without a token: %v", v)
	default:
	}
}

func TestSpanNamesFollowConventions(t *testing.T) {
	// "{mcp.method.name} {target}" and "execute_tool {gen_ai.tool.name}".
	p := newPipeline(t, false)
	cs := serve(t, p, registry(p, nil), nil)
	_, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	for _, s := range p.spans.Ended() {
		if s.SpanKind() == trace.SpanKindServer {
			m := attrs(s)["mcp.method.name"].AsString()
			assert.True(t, s.Name() == m || strings.HasPrefix(s.Name(), m+" "), "span %q for method %q", s.Name(), m)
		}
	}
	p.named(t, "tools/list")
}

// BenchmarkCall is the cost of one call with tracing and metrics on a real
// SDK pipeline (every span sampled, batched to an exporter that drops
// them), the same with a RunLog as the store (a unit's span too), on the
// no-op providers, and with no observer at all.
func BenchmarkCall(b *testing.B) {
	params := map[string]any{"name": "n"}
	run := func(b *testing.B, reg *actions.Registry) {
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := reg.Run(ctx, actions.Call{Action: "demo/echo", Params: params}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("sdk", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
		b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		obs, err := otelactions.New(&otelactions.Options{TracerProvider: tp, MeterProvider: mp})
		require.NoError(b, err)
		run(b, registry(&pipeline{obs: obs}, nil))
	})
	b.Run("sdk-store", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
		b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		obs, err := otelactions.New(&otelactions.Options{TracerProvider: tp, MeterProvider: mp})
		require.NoError(b, err)
		run(b, registry(&pipeline{obs: obs}, actions.NewRunLog()))
	})
	b.Run("noop", func(b *testing.B) {
		obs, err := otelactions.New(&otelactions.Options{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()})
		require.NoError(b, err)
		run(b, registry(&pipeline{obs: obs}, nil))
	})
	b.Run("none", func(b *testing.B) {
		run(b, registry(&pipeline{}, nil))
	})
}

// holdOne calls demo/held as who and returns the refusal holding it.
func holdOne(t *testing.T, reg *actions.Registry, who *identity.Caller) *actions.Refusal {
	t.Helper()
	_, err := reg.Run(context.Background(), actions.Call{Action: "demo/held", Caller: who})
	var r *actions.Refusal
	require.ErrorAs(t, err, &r)
	require.NotNil(t, r.Pending)
	return r
}
