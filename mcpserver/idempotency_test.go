package mcpserver_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/mcpserver"
)

// TestIdempotencyKeyMeta: a tools/call (and a batch) carrying the key in
// _meta runs once; its retry gets the first answer; the tool that needs
// a key lists it in _meta; a call without one is refused as a tool
// result.
func TestIdempotencyKeyMeta(t *testing.T) {
	ctx := context.Background()
	var runs atomic.Int64
	reg := actions.NewRegistry(&actions.Options{Store: actions.NewRunLog()})
	require.NoError(t, reg.Register(actions.Action{
		Definition: actions.Definition{ID: "shop/charge", NeedsIdempotencyKey: true},
		Run: func(context.Context, map[string]any, *actions.Trace) (any, error) {
			return map[string]any{"n": runs.Add(1)}, nil
		},
	}))
	server := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "v0.0.1"}, nil)
	require.NoError(t, mcpserver.AddTools(server, reg, &mcpserver.Options{Batch: &mcpserver.BatchTool{},
		Caller: func(context.Context, *auth.TokenInfo, http.Header) *actions.Caller {
			return &actions.Caller{Principal: "ann", Surface: actions.SurfaceMCP}
		}}))
	serverT, clientT := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, serverT, nil)
	require.NoError(t, err)
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "v0.0.1"}, nil).Connect(ctx, clientT, nil)
	require.NoError(t, err)
	defer cs.Close()

	list, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	for _, tool := range list.Tools {
		if tool.Name == "shop-charge" {
			assert.Equal(t, "required", tool.Meta[actions.IdempotencyKeyMeta])
		}
	}
	call := func(name string, args any, key string) *mcp.CallToolResult {
		p := &mcp.CallToolParams{Name: name, Arguments: args}
		if key != "" {
			p.Meta = mcp.Meta{actions.IdempotencyKeyMeta: key}
		}
		res, err := cs.CallTool(ctx, p)
		require.NoError(t, err)
		return res
	}
	first := call("shop-charge", map[string]any{}, "k1")
	again := call("shop-charge", map[string]any{}, "k1")
	require.False(t, first.IsError)
	assert.Equal(t, first.Content, again.Content)
	assert.Equal(t, int64(1), runs.Load())

	refused := call("shop-charge", map[string]any{}, "")
	assert.True(t, refused.IsError)
	assert.Contains(t, refused.Content[0].(*mcp.TextContent).Text, string(actions.CodeIdempotencyKeyRequired))

	// A key given empty is a malformed key, refused before anything
	// runs, never a call without key.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "shop-charge", Arguments: map[string]any{}, Meta: mcp.Meta{actions.IdempotencyKeyMeta: ""}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, string(actions.CodeInvalidParameters))
	assert.Equal(t, int64(1), runs.Load())

	batch := map[string]any{"commands": []any{map[string]any{"call": "shop-charge"}}}
	b1 := call("run_batch", batch, "b1")
	b2 := call("run_batch", batch, "b1")
	require.False(t, b1.IsError, "%v", b1.Content)
	assert.Equal(t, b1.Content, b2.Content)
	assert.Equal(t, int64(2), runs.Load())
}

// TestIdempotencyKeyHeader: over streamable HTTP, the Idempotency-Key
// header (a structured-field string) is the call's key: the same call sent
// twice with one key runs once and both answers are the first's; another
// key runs again.
func TestIdempotencyKeyHeader(t *testing.T) {
	ctx := context.Background()
	var runs atomic.Int64
	reg := actions.NewRegistry(&actions.Options{Store: actions.NewRunLog()})
	reg.MustRegister(actions.New(actions.Definition{ID: "shop/charge"},
		func(context.Context, map[string]any, *actions.Trace) (any, error) {
			return map[string]any{"n": runs.Add(1)}, nil
		}))
	server := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "v0.0.1"}, nil)
	require.NoError(t, mcpserver.AddTools(server, reg, &mcpserver.Options{
		Caller: func(context.Context, *auth.TokenInfo, http.Header) *actions.Caller {
			return &actions.Caller{Principal: "ann", Surface: actions.SurfaceMCP}
		}}))
	web := httptest.NewServer(mcpserver.HTTPHandler(server, nil))
	defer web.Close()
	key := new(atomic.Value)
	key.Store(`"k-1"`)
	httpClient := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set("Idempotency-Key", key.Load().(string))
		return http.DefaultTransport.RoundTrip(r)
	})}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "v0.0.1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: web.URL, HTTPClient: httpClient}, nil)
	require.NoError(t, err)
	defer cs.Close()
	text := func() string {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "shop-charge"})
		require.NoError(t, err)
		require.False(t, res.IsError)
		return res.Content[0].(*mcp.TextContent).Text
	}
	first := text()
	assert.Equal(t, `{"n":1}`, first)
	assert.Equal(t, first, text(), "the retry gets the first answer")
	assert.Equal(t, int64(1), runs.Load(), "the body ran once")
	key.Store("k-2") // a bare token is taken as it is
	assert.Equal(t, `{"n":2}`, text())

	// An empty header, or an empty string, is a malformed key: refused,
	// and nothing runs.
	for _, empty := range []string{"", `""`, "  "} {
		key.Store(empty)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "shop-charge"})
		require.NoError(t, err)
		require.True(t, res.IsError, "%q", empty)
		assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, string(actions.CodeInvalidParameters), "%q", empty)
	}
	assert.Equal(t, int64(2), runs.Load(), "nothing ran for an empty key")
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
