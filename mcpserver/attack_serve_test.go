package mcpserver_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/mcpserver"
)

// These tests attack the serving layer as clients that flood, stall or
// vanish would.

func withBatch(o *mcpserver.Options) {
	o.Batch = &mcpserver.BatchTool{}
}

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

// committer is a registry whose action commit/late finishes its work even
// when its caller cancels: it waits for its context to be done, then
// reports the work done (a commit that won the race with the cancel).
func committer(t *testing.T) (*mcp.Server, func() []actions.RunEntry, chan struct{}) {
	t.Helper()
	var mu sync.Mutex
	var entries []actions.RunEntry
	reg := actions.NewRegistry(&actions.Options{OnRecord: func(rec actions.Record) {
		mu.Lock()
		entries = append(entries, rec.Entry)
		mu.Unlock()
	}})
	started := make(chan struct{}, 10)
	reg.MustRegister(actions.New(actions.Definition{ID: "commit/late", Additive: true},
		func(ctx context.Context, _ map[string]any, _ *actions.Trace) (any, error) {
			started <- struct{}{}
			<-ctx.Done()
			return "committed", nil
		}))
	s := mcp.NewServer(&mcp.Implementation{Name: "committer", Version: "v0"}, nil)
	require.NoError(t, mcpserver.AddTools(s, reg, nil))
	return s, func() []actions.RunEntry {
		mu.Lock()
		defer mu.Unlock()
		return append([]actions.RunEntry(nil), entries...)
	}, started
}

const cancelFive = `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}`

// TestAttackCancelLosesTheRace: the client cancels a call whose body then
// ends done anyway (its work was done). The call ran and is recorded
// done, so its answer goes out (MCP: a receiver MAY ignore a cancellation
// of a request whose processing completed); only a call that ended
// cancelled goes unanswered.
func TestAttackCancelLosesTheRace(t *testing.T) {
	t.Run("stdio", func(t *testing.T) {
		s, entries, started := committer(t)
		p := servePipes(t, s, nil)
		lines := p.lines()
		p.send(t, initializeBody, initializedLine)
		awaitAnswer(t, lines, 1)
		p.send(t, callBody(5, "commit-late"))
		<-started
		p.send(t, cancelFive)
		line := awaitAnswer(t, lines, 5)
		assert.Contains(t, line, "committed")
		require.Len(t, entries(), 1)
		assert.Equal(t, actions.OutcomeDone, entries()[0].Outcome)
	})
	t.Run("http", func(t *testing.T) {
		s, entries, started := committer(t)
		h := mcpserver.HTTPHandler(s, nil)
		srv := httptest.NewServer(h)
		defer srv.Close()
		c := newRawClient(srv.URL)
		c.initialize(t)
		streamed := make(chan string, 1)
		go func() {
			resp, err := c.post(context.Background(), callBody(5, "commit-late"))
			if err != nil {
				streamed <- err.Error()
				return
			}
			streamed <- readAll(t, resp)
		}()
		<-started // a cancellation before the handler runs is the SDK's to answer
		require.Eventually(t, func() bool {
			resp, err := c.post(context.Background(), cancelFive)
			require.NoError(t, err)
			resp.Body.Close()
			select {
			case body := <-streamed:
				streamed <- body
				return true
			default:
				return false
			}
		}, 5*time.Second, 50*time.Millisecond)
		body := <-streamed
		assert.Contains(t, body, "committed", "the call that ran is answered")
		require.Len(t, entries(), 1)
		assert.Equal(t, actions.OutcomeDone, entries()[0].Outcome)
		shutdown(t, h)
	})
}

// TestAttackStdioMarkersNeverEchoed: over stdio too, no answer quotes a
// marker sent in a tool name, a method, a prompt, a resource or params
// that do not decode.
func TestAttackStdioMarkersNeverEchoed(t *testing.T) {
	w := newWaiter(t)
	lines := []string{initializeBody, initializedLine,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + marker + `","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":["` + marker + `"]}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"wait-echo","arguments":{"n":"` + marker + `"},"_meta":"` + marker + `"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"` + marker + `","params":{}}`,
		`{"jsonrpc":"2.0","id":6,"method":"prompts/get","params":{"name":"` + marker + `"}}`,
		`{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"file:///` + marker + `"}}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"wait-echo","arguments":{"n":"` + marker + `"}}}`,
	}
	out, _ := serveInput(t, w.server(t), strings.Join(lines, "\n")+"\n", nil)
	require.Contains(t, out, `"id":8`)
	assert.NotContains(t, out, marker, "what the client received:\n%s", out)
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

// TestAttackSlowReader: a client that calls a tool with a large answer
// and never reads it loses its connection after WriteTimeout: the request
// ends (Shutdown then finds nothing in progress), the call is recorded,
// and no goroutine is left.
func TestAttackSlowReader(t *testing.T) {
	base := runtime.NumGoroutine()
	var recorded atomic.Int32
	reg := actions.NewRegistry(&actions.Options{OnRecord: func(actions.Record) { recorded.Add(1) }})
	reg.MustRegister(actions.New(actions.Definition{ID: "big/blob", Effect: actions.EffectRead},
		func(context.Context, map[string]any, *actions.Trace) (any, error) {
			return strings.Repeat("x", 32<<20), nil
		}))
	s := mcp.NewServer(&mcp.Implementation{Name: "big", Version: "v0"}, nil)
	require.NoError(t, mcpserver.AddTools(s, reg, nil))
	h := mcpserver.HTTPHandler(s, &mcpserver.HTTPOptions{Stateless: true, WriteTimeout: 300 * time.Millisecond})
	srv := httptest.NewServer(h)
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	require.NoError(t, err)
	body := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"big-blob","arguments":{}}}`
	_, err = fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\nContent-Length: %d\r\n\r\n%s",
		strings.TrimPrefix(srv.URL, "http://"), len(body), body)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return recorded.Load() == 1 }, 60*time.Second, 10*time.Millisecond, "the call ran")
	// The client never reads: the answer's write times out, the request
	// ends, and Shutdown has nothing to wait for. The bound is generous:
	// under -race, encoding the 32 MiB answer alone takes about 7 s on an
	// idle machine, and CI runs packages side by side.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	require.NoError(t, h.Shutdown(ctx), "the stalled request ended")
	t.Logf("the stalled request ended %v after Shutdown began", time.Since(start))
	conn.Close()
	srv.Close()
	checkGoroutines(t, base)
}

// TestAttackStdioCancelOddities: cancellations of unknown ids, of
// malformed ids, and of a request already answered (its id then reused)
// change nothing: every request is answered once.
func TestAttackStdioCancelOddities(t *testing.T) {
	base := runtime.NumGoroutine()
	w := newWaiter(t)
	p := servePipes(t, w.server(t), nil)
	lines := p.lines()
	p.send(t, initializeBody, initializedLine)
	awaitAnswer(t, lines, 1)
	p.send(t,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"5"}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{"a":1}}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":"x"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled"}`,
		echoCall(5))
	awaitAnswer(t, lines, 5)
	p.send(t, cancelFive, echoCall(6)) // after its answer
	awaitAnswer(t, lines, 6)
	// The id again (MCP forbids reusing one in a session): the stale
	// cancellation may reach it, and then it is answered cancelled;
	// either way it is answered and recorded alike.
	p.send(t, cancelFive, echoCall(5))
	reused := awaitAnswer(t, lines, 5)
	p.send(t, echoCall(7))
	awaitAnswer(t, lines, 7)
	p.in.Close()
	select {
	case err := <-p.done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
	entries, _, _ := w.snapshot()
	done := 0
	for _, e := range entries {
		if e.Outcome == actions.OutcomeDone {
			done++
		}
	}
	if strings.Contains(reused, `"result"`) {
		assert.Equal(t, 4, done, "%v", entries)
	} else {
		// Cancelled before it ran (no entry) or while it ran (recorded
		// cancelled): never done and unanswered.
		assert.Contains(t, reused, `"error"`)
		assert.Equal(t, 3, done, "%v", entries)
	}
	checkGoroutines(t, base)
}
