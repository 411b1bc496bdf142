package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/mcpserver"
)

// batchClient serves reg with the batch tool and returns a client of it.
func batchClient(t *testing.T, reg *actions.Registry) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "bounds", Version: "v0.0.1"}, nil)
	require.NoError(t, mcpserver.AddTools(server, reg, &mcpserver.Options{Batch: &mcpserver.BatchTool{}}))
	serverT, clientT := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, serverT, nil)
	require.NoError(t, err)
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "planner", Version: "v0.0.1"}, nil).Connect(ctx, clientT, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	return cs
}

// unknownSteps is a batch of n steps each calling a tool no server lists.
func unknownSteps(n int) json.RawMessage {
	var b strings.Builder
	b.WriteString(`{"commands":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"call":"nope/unlisted"}`)
	}
	b.WriteString(`]}`)
	return json.RawMessage(b.String())
}

type refusedBatch struct {
	Code    string          `json:"code"`
	Message string          `json:"message"`
	Issues  []actions.Issue `json:"issues"`
}

func refusedOf(t *testing.T, res *mcp.CallToolResult) refusedBatch {
	t.Helper()
	require.True(t, res.IsError)
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var r refusedBatch
	require.NoError(t, json.Unmarshal(raw, &r))
	return r
}

// TestBatchToolStepBoundBeforeLookup: 250,000 steps naming unlisted
// tools (a 6 MB request) are refused at the step bound, with one issue,
// before any step's tool is looked up (an unknown_action refusal would
// say the lookups ran); the answer is a few hundred bytes, not one issue
// per step.
func TestBatchToolStepBoundBeforeLookup(t *testing.T) {
	reg := actions.NewRegistry(nil)
	reg.MustRegister(actions.New(actions.Definition{ID: "t/echo", Parameters: `{"type":"object"}`},
		func(_ context.Context, p map[string]any, _ *actions.Trace) (any, error) { return p, nil }))
	cs := batchClient(t, reg)
	args := unknownSteps(250_000)
	require.Greater(t, len(args), 4<<20)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_batch", Arguments: args})
	require.NoError(t, err)
	r := refusedOf(t, res)
	assert.Equal(t, string(codes.InvalidScriptStep), r.Code)
	require.Len(t, r.Issues, 1)
	assert.Equal(t, "/commands", r.Issues[0].Path)
	assert.Contains(t, r.Issues[0].Message, "more than 1000 steps")
	raw, err := json.Marshal(res)
	require.NoError(t, err)
	assert.Less(t, len(raw), 4<<10, "the refusal is small")
}

// TestBatchToolUnknownStepsCapped: 1,000 steps (the step bound) each
// calling an unlisted tool are refused with the first 100
// listed, the message saying how many there were.
func TestBatchToolUnknownStepsCapped(t *testing.T) {
	reg := actions.NewRegistry(nil)
	reg.MustRegister(actions.New(actions.Definition{ID: "t/echo", Parameters: `{"type":"object"}`},
		func(_ context.Context, p map[string]any, _ *actions.Trace) (any, error) { return p, nil }))
	cs := batchClient(t, reg)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_batch", Arguments: unknownSteps(1000)})
	require.NoError(t, err)
	r := refusedOf(t, res)
	assert.Equal(t, string(codes.UnknownAction), r.Code)
	require.Len(t, r.Issues, 100)
	assert.Equal(t, "/commands/99/call", r.Issues[99].Path)
	assert.Contains(t, r.Message, "1000 steps, the first 100 listed")
	raw, err := json.Marshal(res)
	require.NoError(t, err)
	assert.Less(t, len(raw), 32<<10, "the refusal is bounded by the issue cap")
}

// TestAttackHugeBody: a body past MaxRequestBodyBytes gets 413, whether it
// would open a session or call a tool in one, and nothing is kept or run.
// The server answers 413 and closes the connection before reading the
// whole body, so the client, still writing, may get a reset before it
// reads the answer (a bare net/http server does the same): that is an
// answer the server promises too. Never a 200, never
// a run.
func TestAttackHugeBody(t *testing.T) {
	w := newWaiter(t)
	h := mcpserver.HTTPHandler(w.server(t), &mcpserver.HTTPOptions{MaxRequestBodyBytes: 1 << 20})
	url := serveHTTP(t, h)
	huge := strings.Repeat(" ", 2<<20)
	c := newRawClient(url)
	refusedTooLarge(t, c, initializeBody[:len(initializeBody)-1]+huge+"}")
	assert.Zero(t, h.Sessions(), "no session opened")
	c.initialize(t)
	refusedTooLarge(t, c, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"wait-echo","arguments":{"n":1,"pad":"`+huge+`"}}}`)
	entries, _, _ := w.snapshot()
	assert.Empty(t, entries, "nothing ran")
	assert.Equal(t, 1, h.Sessions())
}

// refusedTooLarge posts body and checks the answer is 413, or that the
// connection was reset (or its write broken) while the client was still
// writing the body the server refused.
func refusedTooLarge(t *testing.T, c *rawClient, body string) {
	t.Helper()
	resp, err := c.post(context.Background(), body)
	if err != nil {
		assert.True(t, errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE),
			"the only error allowed is the server closing the connection on the body it refused: %v", err)
		return
	}
	readAll(t, resp)
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
}

// TestHardenLargeArgumentsSaySize: arguments under the HTTP
// body bound but past the registry's MaxParamBytes (1 MiB) are refused
// for their size, and the answer says so: valid JSON is not called
// "not I-JSON text".
func TestHardenLargeArgumentsSaySize(t *testing.T) {
	w := newWaiter(t)
	url := serveHTTP(t, mcpserver.HTTPHandler(w.server(t), nil))
	cs := connectSDK(t, url)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "wait-echo",
		Arguments: map[string]any{"n": 1, "pad": strings.Repeat("x", 4<<20-1024)}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	text := res.Content[0].(*mcp.TextContent).Text
	assert.Contains(t, text, "too large")
	assert.Contains(t, text, "larger than 1048576 bytes")
	assert.NotContains(t, text, "I-JSON")
	entries, _, _ := w.snapshot()
	require.Len(t, entries, 1)
	assert.Equal(t, "null", entries[0].Parameters, "the entry holds none of it")
}

// TestHardenServerWideCallBound: the calls in flight of all
// sessions together are bounded, in number and in argument bytes. Past a
// bound a tools/call POST gets 503 with Retry-After and does not run;
// other requests are served; once a call ends, calls run again.
func TestHardenServerWideCallBound(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts mcpserver.HTTPOptions
		pad  int // bytes of padding in each blocked call's arguments
		fill int // blocked calls that fill the bound
	}{
		{name: "calls", opts: mcpserver.HTTPOptions{MaxServerCalls: 4}, fill: 4},
		{name: "bytes", opts: mcpserver.HTTPOptions{MaxServerCallBytes: 3100}, pad: 1000, fill: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWaiter(t)
			w.reg.MustRegister(actions.New(actions.Definition{ID: "wait/hold",
				Parameters: `{"type":"object","properties":{"pad":{"type":"string"}}}`},
				func(ctx context.Context, _ map[string]any, _ *actions.Trace) (any, error) {
					w.started <- struct{}{}
					select {
					case <-w.release:
						return "released", nil
					case <-ctx.Done():
						return nil, ctx.Err()
					}
				}))
			h := mcpserver.HTTPHandler(w.server(t), &tc.opts)
			url := serveHTTP(t, h)
			blocked := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"wait-hold","arguments":{"pad":%q}}}`, strings.Repeat("x", tc.pad))
			streams := make(chan string, tc.fill)
			for range tc.fill {
				c := newRawClient(url) // a session for each: the bound is the server's
				c.initialize(t)
				go func() {
					resp, err := c.post(context.Background(), blocked)
					if err != nil {
						streams <- err.Error()
						return
					}
					streams <- readAll(t, resp)
				}()
				w.awaitStart(t)
			}
			c := newRawClient(url)
			c.initialize(t)
			resp, err := c.post(context.Background(),
				`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"wait-echo","arguments":{"n":3,"pad":"`+strings.Repeat("x", 100)+`"}}}`)
			require.NoError(t, err)
			body := readAll(t, resp)
			assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", body)
			assert.Equal(t, "1", resp.Header.Get("Retry-After"))

			resp, err = c.post(context.Background(), `{"jsonrpc":"2.0","id":4,"method":"tools/list"}`)
			require.NoError(t, err)
			assert.Contains(t, readAll(t, resp), "wait-echo", "a tools/list is served")
			entries, _, _ := w.snapshot()
			assert.Empty(t, entries, "the refused call did not run")

			close(w.release)
			for range tc.fill {
				assert.Contains(t, <-streams, "released")
			}
			resp, err = c.post(context.Background(), echoCall(5))
			require.NoError(t, err)
			assert.Contains(t, readAll(t, resp), `"n":5`, "room again")
		})
	}
}

// TestHTTPCallsInFlight: a session runs at most MaxCallsInFlight calls;
// the next gets JSON-RPC -32000 and does not run.
func TestHTTPCallsInFlight(t *testing.T) {
	w := newWaiter(t)
	url := serveHTTP(t, mcpserver.HTTPHandler(w.server(t), &mcpserver.HTTPOptions{MaxCallsInFlight: 2}))
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "sdk", Version: "v0"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)
	defer cs.Close()
	results := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "wait-block"})
			results <- err
		}()
		w.awaitStart(t)
	}
	_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "wait-echo"})
	var je *jsonrpc.Error
	require.ErrorAs(t, err, &je)
	assert.Equal(t, int64(-32000), je.Code)
	var data map[string]any
	require.NoError(t, json.Unmarshal(je.Data, &data))
	assert.Equal(t, "after-backoff", data["retry"])
	close(w.release)
	for range 2 {
		require.NoError(t, <-results)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "wait-echo"})
	require.NoError(t, err, "a slot is free again")
	assert.False(t, res.IsError)
}

// TestAttackBatchToolIsTracked: a call of the batch tool counts towards
// its session's calls in flight, and ends with its session: a DELETE
// cancels it (ErrSessionClosed) and returns promptly, as for any tool.
func TestAttackBatchToolIsTracked(t *testing.T) {
	base := runtime.NumGoroutine()
	w := newWaiter(t)
	h := mcpserver.HTTPHandler(w.server(t, withBatch), &mcpserver.HTTPOptions{MaxCallsInFlight: 1})
	srv := httptest.NewServer(h)
	c := newRawClient(srv.URL)
	c.initialize(t)
	streamed := c.postAsync(t, blockBatch)
	w.awaitStart(t)

	resp, err := c.post(context.Background(), echoCall(3))
	require.NoError(t, err)
	assert.Contains(t, readAll(t, resp), "-32000", "the batch in flight fills the session's one call")

	req, err := http.NewRequest(http.MethodDelete, srv.URL, nil)
	require.NoError(t, err)
	req.Header.Set("Mcp-Session-Id", c.session)
	req.Header.Set("MCP-Protocol-Version", c.version)
	deleted := make(chan int, 1)
	go func() {
		resp, err := c.client.Do(req)
		if err != nil {
			deleted <- 0
			return
		}
		resp.Body.Close()
		deleted <- resp.StatusCode
	}()
	select {
	case status := <-deleted:
		assert.Equal(t, http.StatusNoContent, status)
	case <-time.After(eventually):
		close(w.release)
		t.Fatal("DELETE hung on a batch in flight")
	}
	w.awaitCancelled(t, 1, mcpserver.ErrSessionClosed)
	select {
	case body := <-streamed:
		assert.NotContains(t, body, `"result"`)
	case <-time.After(eventually):
		t.Fatal("the batch's stream did not end")
	}
	shutdown(t, h)
	srv.Close()
	checkGoroutines(t, base)
}

func withBatch(o *mcpserver.Options) {
	o.Batch = &mcpserver.BatchTool{}
}

// TestOverrunCountsInFlight: a call answered timeout at its deadline
// while its body runs on (ignoring its context) keeps its place in the
// session's bound until the body returns: the next call is refused busy
// meanwhile, and passes once the body returned.
func TestOverrunCountsInFlight(t *testing.T) {
	reg := actions.NewRegistry(&actions.Options{Store: actions.NewRunLog()})
	release, returned := make(chan struct{}), make(chan struct{})
	reg.MustRegister(
		actions.New(actions.Definition{ID: "t/stuck", Timeout: 200 * time.Millisecond},
			func(context.Context, map[string]any, *actions.Trace) (any, error) {
				defer close(returned)
				<-release // ignores ctx
				return "late", nil
			}),
		actions.New(actions.Definition{ID: "t/echo"},
			func(context.Context, map[string]any, *actions.Trace) (any, error) { return "echo", nil }),
	)
	server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "v0"}, nil)
	require.NoError(t, mcpserver.AddTools(server, reg, &mcpserver.Options{
		Caller: func(context.Context, *auth.TokenInfo, http.Header) *identity.Caller {
			return &identity.Caller{Principal: "ann", Surface: identity.SurfaceMCP}
		}}))
	url := serveHTTP(t, mcpserver.HTTPHandler(server, &mcpserver.HTTPOptions{MaxCallsInFlight: 1}))
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "sdk", Version: "v0"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)
	defer cs.Close()

	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "t-stuck"})
	require.NoError(t, err)
	require.True(t, res.IsError)
	assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, string(codes.Timeout))
	select {
	case <-returned:
		t.Fatal("the body returned: the call was not answered at its deadline")
	default:
	}

	_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "t-echo"})
	var je *jsonrpc.Error
	require.ErrorAs(t, err, &je, "the overrunning body still holds the session's one place")
	assert.Equal(t, int64(-32000), je.Code)

	close(release)
	<-returned
	require.Eventually(t, func() bool {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "t-echo"})
		return err == nil && !res.IsError
	}, eventually, 5*time.Millisecond, "the place is free once the body returned")
}
