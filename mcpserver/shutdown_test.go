package mcpserver_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions/mcpserver"
)

// TestHTTPShutdown: calls in flight may end within the drain time (the
// released one answers normally); the one still running after it is
// cancelled, and Shutdown returns promptly; later sessions get 503.
func TestHTTPShutdown(t *testing.T) {
	base := runtime.NumGoroutine()
	w := newWaiter(t)
	h := mcpserver.HTTPHandler(w.server(t), nil)
	srv := httptest.NewServer(h)
	// Without the standalone stream: its end when the session closes
	// would race the answer in the client.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "sdk", Version: "v0"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: srv.URL, MaxRetries: -1, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)
	answered := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "wait-block"})
		answered <- err
	}()
	w.awaitStart(t)

	// Drain: the call ends on its own before the drain time is over,
	// released once Shutdown has begun (new sessions get 503).
	go func() {
		defer close(w.release)
		assert.Eventually(t, func() bool {
			resp, err := newRawClient(srv.URL).post(context.Background(), initializeBody)
			if err != nil {
				return false
			}
			readAll(t, resp)
			return resp.StatusCode == http.StatusServiceUnavailable
		}, eventually, 5*time.Millisecond, "Shutdown did not begin")
	}()
	ctx, cancel := context.WithTimeout(context.Background(), eventually)
	require.NoError(t, h.Shutdown(ctx))
	cancel()
	require.NoError(t, <-answered, "the call that ended within the drain time is answered")
	resp, err := newRawClient(srv.URL).post(context.Background(), initializeBody)
	require.NoError(t, err)
	readAll(t, resp)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	cs.Close()
	srv.Close()

	// Past the drain time: cancelled.
	w = newWaiter(t)
	h = mcpserver.HTTPHandler(w.server(t), nil)
	srv = httptest.NewServer(h)
	c := newRawClient(srv.URL)
	c.initialize(t)
	go func() {
		resp, err := c.post(context.Background(), callBody(2, "wait-block"))
		if err == nil {
			readAll(t, resp)
		}
	}()
	w.awaitStart(t)
	ctx, cancel = context.WithTimeout(context.Background(), 200*time.Millisecond)
	err = h.Shutdown(ctx) // returns once the cancelled call ended
	cancel()
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	w.awaitCancelled(t, 1, mcpserver.ErrShuttingDown)
	srv.Close()
	checkGoroutines(t, base)
}

// TestStdioShutdown: when ctx ends, the calls in flight may end within
// the drain time (answered as usual); the one still running then is
// cancelled (ErrShuttingDown) and answered with -32800; Serve returns
// ctx.Err().
func TestStdioShutdown(t *testing.T) {
	base := runtime.NumGoroutine()
	w := newWaiter(t)
	p := servePipes(t, w.server(t), &mcpserver.ServeOptions{DrainTime: 300 * time.Millisecond})
	lines := p.lines()
	p.send(t, initializeBody, initializedLine)
	awaitAnswer(t, lines, 1)
	p.send(t, callBody(2, "wait-block"))
	w.awaitStart(t)
	p.cancel()
	line := awaitAnswer(t, lines, 2)
	assert.Contains(t, line, fmt.Sprint(mcpserver.CodeRequestCancelled))
	assert.Contains(t, line, `"code":"cancelled"`)
	select {
	case err := <-p.done:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(eventually):
		t.Fatal("Serve did not return")
	}
	w.awaitCancelled(t, 1, mcpserver.ErrShuttingDown)
	for range lines {
	}
	checkGoroutines(t, base)
}

// TestHardenShutdownAnswersCutCalls: calls cut by Shutdown are
// answered -32800 on their streams before their sessions close: each of
// the SDK clients' calls gets that answer, none an empty stream.
func TestHardenShutdownAnswersCutCalls(t *testing.T) {
	const sessions, perSession = 8, 8
	w := newWaiter(t)
	h := mcpserver.HTTPHandler(w.server(t), nil)
	srv := httptest.NewServer(h)
	defer srv.Close()
	errs := make(chan error, sessions*perSession)
	for range sessions {
		cs := connectSDK(t, srv.URL)
		for range perSession {
			go func() {
				_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "wait-block", Arguments: map[string]any{}})
				errs <- err
			}()
		}
	}
	for range sessions * perSession {
		w.awaitStart(t)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // no drain time: every call is cut
	assert.ErrorIs(t, h.Shutdown(ctx), context.Canceled)
	answered := 0
	for range sessions * perSession {
		err := <-errs
		var je *jsonrpc.Error
		if assert.ErrorAs(t, err, &je, "a cut call's answer") && assert.Equal(t, int64(mcpserver.CodeRequestCancelled), je.Code) {
			answered++
		}
	}
	assert.Equal(t, sessions*perSession, answered, "cut calls answered -32800")
	w.awaitCancelled(t, sessions*perSession, mcpserver.ErrShuttingDown)
}

// TestAttackBatchToolShutdown: Shutdown cancels a batch in flight after
// its drain time and returns promptly.
func TestAttackBatchToolShutdown(t *testing.T) {
	base := runtime.NumGoroutine()
	w := newWaiter(t)
	h := mcpserver.HTTPHandler(w.server(t, withBatch), nil)
	srv := httptest.NewServer(h)
	c := newRawClient(srv.URL)
	c.initialize(t)
	go func() {
		resp, err := c.post(context.Background(), blockBatch)
		if err == nil {
			readAll(t, resp)
		}
	}()
	w.awaitStart(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- h.Shutdown(ctx) }()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	case <-time.After(eventually):
		close(w.release)
		t.Fatal("Shutdown hung on a batch in flight")
	}
	w.awaitCancelled(t, 1, mcpserver.ErrShuttingDown)
	srv.Close()
	checkGoroutines(t, base)
}
