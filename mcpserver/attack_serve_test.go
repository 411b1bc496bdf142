package mcpserver_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/mcpserver"
)

// These tests attack the serving layer as clients that flood, stall or
// vanish would.

func withBatch(o *mcpserver.Options[*actions.Trace]) { o.Batch = &mcpserver.BatchTool[*actions.Trace]{} }

const blockBatch = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_batch","arguments":{"commands":[{"call":"wait/block"}]}}}`

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
	streamed := make(chan string, 1)
	go func() {
		resp, err := c.post(context.Background(), blockBatch)
		if err != nil {
			streamed <- err.Error()
			return
		}
		streamed <- readAll(t, resp)
	}()
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
	case <-time.After(5 * time.Second):
		close(w.release)
		t.Fatal("DELETE hung on a batch in flight")
	}
	w.awaitCancelled(t, 1, 5*time.Second, mcpserver.ErrSessionClosed)
	select {
	case body := <-streamed:
		assert.NotContains(t, body, `"result"`)
	case <-time.After(5 * time.Second):
		t.Fatal("the batch's stream did not end")
	}
	shutdown(t, h)
	srv.Close()
	checkGoroutines(t, base)
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
	case <-time.After(5 * time.Second):
		close(w.release)
		t.Fatal("Shutdown hung on a batch in flight")
	}
	w.awaitCancelled(t, 1, 5*time.Second, mcpserver.ErrShuttingDown)
	srv.Close()
	checkGoroutines(t, base)
}

var _ = strings.Contains
