package otelactions_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/otelactions"
)

// heapNow is the live heap after a collection.
func heapNow() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// pointValues returns every attribute value of the histogram's points.
func pointValues(h metricdata.Histogram[float64]) []string {
	var out []string
	for _, dp := range h.DataPoints {
		for _, kv := range dp.Attributes.ToSlice() {
			out = append(out, kv.Value.Emit())
		}
	}
	return out
}

// TestUnknownToolNamesAreNoMetricValues: 100 tools/call of unknown tools
// through a session, each name different and 300 KiB long (the row's 3
// MiB scaled down for time; TestObserverRetainsNoLongName takes 3 MiB). The metric holds OtherValue in
// their place (one series, not 100), every span name and attribute is
// at most MaxAttributeLength. (The heap retained, measured, includes the
// transport's read buffer, sized by the largest message; the observer's
// own share is measured alone by TestObserverRetainsNoLongName.)
func TestUnknownToolNamesAreNoMetricValues(t *testing.T) {
	p := newPipeline(t, false)
	cs := serve(t, p, registry(p, nil), nil)
	// A known tool first: the server answers it, so the metric names it.
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "demo-echo", Arguments: map[string]any{"name": "x"}})
	require.NoError(t, err)
	before := heapNow()
	for i := range heavy(100) {
		name := fmt.Sprintf("%03d", i) + strings.Repeat("x", 300<<10)
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name})
		require.Error(t, err)
	}
	retained := int64(heapNow()) - int64(before)
	t.Logf("retained after 100 unknown tools of 300 KiB names, through a session: %d KiB", retained>>10)
	assert.Less(t, retained, int64(4<<20))

	h, _ := p.histogram(t, "mcp.server.operation.duration")
	tools := map[string]uint64{}
	for _, dp := range h.DataPoints {
		if v, ok := dp.Attributes.Value("gen_ai.tool.name"); ok {
			tools[v.AsString()] += dp.Count
		}
	}
	assert.Equal(t, map[string]uint64{"demo-echo": 1, otelactions.OtherValue: uint64(heavy(100))}, tools)
	for _, v := range pointValues(h) {
		assert.LessOrEqual(t, len(v), otelactions.MaxAttributeLength)
	}
	for _, s := range p.spans.Ended() {
		assert.LessOrEqual(t, len(s.Name()), len("tools/call ")+otelactions.MaxAttributeLength)
		for _, kv := range s.Attributes() {
			assert.LessOrEqual(t, len(kv.Value.Emit()), otelactions.MaxAttributeLength, "%s", kv.Key)
		}
	}
	runtime.KeepAlive(p)
}

// TestObserverRetainsNoLongName: the middleware alone, given 100
// tools/call requests naming unknown tools with 3 MiB names, each
// answered with a JSON-RPC error that repeats the name (as the SDK's
// does), retains less than 1 MiB.
func TestObserverRetainsNoLongName(t *testing.T) {
	p := newPipeline(t, false)
	next := func(_ context.Context, _ string, req mcp.Request) (mcp.Result, error) {
		name := req.GetParams().(*mcp.CallToolParamsRaw).Name
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown tool " + name}
	}
	h := p.obs.Middleware(next)
	before := heapNow()
	for i := range heavy(100) {
		name := fmt.Sprintf("%03d", i) + strings.Repeat("x", 3<<20)
		_, err := h(context.Background(), "tools/call", &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: name}})
		require.Error(t, err)
	}
	retained := int64(heapNow()) - int64(before)
	t.Logf("the observer retained after 100 unknown tools of 3 MiB names: %d KiB", retained>>10)
	assert.Less(t, retained, int64(1<<20))
	hist, _ := p.histogram(t, "mcp.server.operation.duration")
	require.Len(t, hist.DataPoints, 1, "one series")
	runtime.KeepAlive(p)
}

// TestLongProtocolVersionIsCut: 50 initialize requests with a 3 MiB
// protocolVersion each: the span attribute is cut, the metric says
// OtherValue.
func TestLongProtocolVersionIsCut(t *testing.T) {
	p := newPipeline(t, false)
	next := func(context.Context, string, mcp.Request) (mcp.Result, error) { return &mcp.InitializeResult{}, nil }
	h := p.obs.Middleware(next)
	before := heapNow()
	for i := range heavy(50) {
		v := fmt.Sprintf("%02d", i) + strings.Repeat("v", 3<<20)
		_, err := h(context.Background(), "initialize", &mcp.ServerRequest[*mcp.InitializeParams]{Params: &mcp.InitializeParams{ProtocolVersion: v}})
		require.NoError(t, err)
	}
	retained := int64(heapNow()) - int64(before)
	t.Logf("retained after 50 initialize with 3 MiB versions: %d KiB", retained>>10)
	assert.Less(t, retained, int64(1<<20))
	s := p.spans.Ended()
	require.Len(t, s, heavy(50))
	a := attrs(s[0])
	assert.Len(t, a["mcp.protocol.version"].AsString(), otelactions.MaxAttributeLength)
	assert.True(t, strings.HasSuffix(a["mcp.protocol.version"].AsString(), "…"))
	hist, _ := p.histogram(t, "mcp.server.operation.duration")
	require.Len(t, hist.DataPoints, 1, "one series")
	v, _ := hist.DataPoints[0].Attributes.Value("mcp.protocol.version")
	assert.Equal(t, otelactions.OtherValue, v.AsString())
	runtime.KeepAlive(p)
}

// TestUnknownActionIsNoMetricValue: the registry's execute_tool metric
// names registered actions only; the span name of a call of an unknown
// 3 MiB id is cut.
func TestUnknownActionIsNoMetricValue(t *testing.T) {
	p := newPipeline(t, true)
	reg := registry(p, nil)
	id := "demo/" + strings.Repeat("n", 3<<20)
	_, err := reg.Run(context.Background(), actions.Call{Action: id, Params: map[string]any{"name": strings.Repeat("é", 10_000)}})
	require.Error(t, err)
	_, err = reg.Run(context.Background(), actions.Call{Action: "demo/echo", Params: map[string]any{"name": strings.Repeat("é", 10_000)}})
	require.NoError(t, err)
	h, _ := p.histogram(t, "gen_ai.execute_tool.duration")
	var names []string
	for _, dp := range h.DataPoints {
		v, _ := dp.Attributes.Value("gen_ai.tool.name")
		names = append(names, v.AsString())
	}
	assert.ElementsMatch(t, []string{otelactions.OtherValue, "demo-echo"}, names)
	for _, s := range p.spans.Ended() {
		assert.LessOrEqual(t, len(s.Name()), len("execute_tool ")+otelactions.MaxAttributeLength)
		for _, kv := range s.Attributes() {
			assert.LessOrEqual(t, len(kv.Value.Emit()), otelactions.MaxValueLength, "%s", kv.Key)
		}
	}
	a := attrs(p.named(t, "execute_tool demo-echo"))
	args := a["gen_ai.tool.call.arguments"].AsString()
	assert.True(t, strings.HasSuffix(args, "…"), "the arguments are cut, marked")
	assert.LessOrEqual(t, len(args), otelactions.MaxValueLength)
}

// heavy is n, or a tenth of it under the race detector, which multiplies
// the time of these megabyte-sized loops; CI runs them at full size
// without it.
func heavy(n int) int {
	if raceEnabled {
		return max(n/10, 1)
	}
	return n
}
