package mcpserver_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/mcpserver"
	"github.com/actionreg/actions/store"
)

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
		assert.Equal(t, store.OutcomeDone, entries()[0].Outcome)
	})
	t.Run("http", func(t *testing.T) {
		s, entries, started := committer(t)
		h := mcpserver.HTTPHandler(s, nil)
		srv := httptest.NewServer(h)
		defer srv.Close()
		c := newRawClient(srv.URL)
		c.initialize(t)
		streamed := c.postAsync(t, callBody(5, "commit-late"))
		<-started // a cancellation before the handler runs is the SDK's to answer
		var body string
		require.Eventually(t, func() bool {
			resp, err := c.post(context.Background(), cancelFive)
			require.NoError(t, err)
			resp.Body.Close()
			select {
			case body = <-streamed:
				return true
			default:
				return false
			}
		}, eventually, 50*time.Millisecond)
		assert.Contains(t, body, "committed", "the call that ran is answered")
		require.Len(t, entries(), 1)
		assert.Equal(t, store.OutcomeDone, entries()[0].Outcome)
		shutdown(t, h)
	})
}

// committer is a registry whose action commit/late finishes its work even
// when its caller cancels: it waits for its context to be done, then
// reports the work done (a commit that won the race with the cancel).
func committer(t *testing.T) (*mcp.Server, func() []store.RunEntry, chan struct{}) {
	t.Helper()
	var mu sync.Mutex
	var entries []store.RunEntry
	reg := actions.NewRegistry(&actions.Options{OnRecord: func(rec store.Record) {
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
	return s, func() []store.RunEntry {
		mu.Lock()
		defer mu.Unlock()
		return append([]store.RunEntry(nil), entries...)
	}, started
}

// TestAttackStdioCancelOddities: cancellations of unknown ids, of
// malformed ids, and of a request already answered (its id then reused)
// change nothing: every request is answered once, but the reused id,
// which the stale cancellation may cancel (then recorded so, never done).
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
	// cancellation may reach it or not. Not reached, it is answered;
	// reached while it runs, it is cancelled, recorded so and goes
	// unanswered (the receiver SHOULD NOT respond). Either way the
	// session goes on: 7 is answered, and once the input ends every
	// answer is out before the output closes.
	p.send(t, cancelFive, echoCall(5), echoCall(7))
	reused := ""
	read := func(line string) (seven bool) {
		got := answers(t, line)
		if _, ok := got[5]; ok {
			reused = line
		}
		_, seven = got[7]
		return seven
	}
	timeout := time.After(eventually)
	for seven := false; !seven; {
		select {
		case line, ok := <-lines:
			require.True(t, ok, "the output ended before the answer to 7")
			seven = read(line)
		case <-timeout:
			t.Fatal("no answer to 7 in time")
		}
	}
	p.in.Close()
	select {
	case err := <-p.done:
		require.NoError(t, err)
	case <-timeout:
		t.Fatal("Serve did not return")
	}
	for line := range lines { // closed once Serve returned
		read(line)
	}
	entries, _, _ := w.snapshot()
	done := 0
	for _, e := range entries {
		if e.Outcome == store.OutcomeDone {
			done++
		}
	}
	if strings.Contains(reused, `"result"`) {
		assert.Equal(t, 4, done, "%v", entries)
	} else {
		// Cancelled before it ran (no entry) or while it ran (recorded
		// cancelled, unanswered or answered with an error): never done.
		assert.Equal(t, 3, done, "%v", entries)
	}
	checkGoroutines(t, base)
}

// TestHTTPCancelledNotification: after notifications/cancelled, the call
// is cancelled, recorded as such, and gets no answer (MCP 2025-11-25,
// cancellation: the receiver SHOULD NOT respond).
func TestHTTPCancelledNotification(t *testing.T) {
	base := runtime.NumGoroutine()
	w := newWaiter(t)
	h := mcpserver.HTTPHandler(w.server(t), nil)
	srv := httptest.NewServer(h)
	c := newRawClient(srv.URL)
	c.initialize(t)
	stream := c.postAsync(t, callBody(7, "wait-block"))
	w.awaitStart(t)
	resp, err := c.post(context.Background(), `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"the user gave up"}}`)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	select {
	case body := <-stream:
		assert.NotContains(t, body, `"id":7`, "the cancelled call is not answered")
	case <-time.After(eventually):
		t.Fatal("the call's stream did not end in time")
	}
	w.awaitCancelled(t, 1, context.Canceled)
	shutdown(t, h)
	srv.Close()
	checkGoroutines(t, base)
}

// TestStdioCancelledNotification: a call the client cancels is cancelled,
// recorded as cancelled, reported to OnError, and never answered; the
// next call is.
func TestStdioCancelledNotification(t *testing.T) {
	base := runtime.NumGoroutine()
	w := newWaiter(t)
	p := servePipes(t, w.server(t), nil)
	lines := p.lines()
	p.send(t, initializeBody, initializedLine)
	awaitAnswer(t, lines, 1)
	p.send(t, callBody(5, "wait-block"))
	w.awaitStart(t)
	p.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5,"reason":"the user gave up"}}`)
	w.awaitCancelled(t, 1, context.Canceled)
	p.send(t, echoCall(6))
	awaitAnswer(t, lines, 6, 5)
	p.in.Close() // end of input: nothing left to answer
	select {
	case err := <-p.done:
		require.NoError(t, err)
	case <-time.After(eventually):
		t.Fatal("Serve did not return")
	}
	for l := range lines {
		assert.NotContains(t, l, `"id":5`)
	}
	entries, _, _ := w.snapshot()
	require.Len(t, entries, 2)
	assert.Equal(t, codes.Cancelled, entries[0].Error)
	checkGoroutines(t, base)
}

// TestHTTPDroppedConnection: a client that drops its connection mid-call.
// Stateless (either protocol): the call ends with the request, at once.
// Stateful (2025-11-25): the drop alone does not cancel (the client may
// resume), but a DELETE of the session, or its idle timeout, does, and
// returns. Each time the body's context is done, the entry says cancelled, OnError hears why, and no
// goroutine is left.
func TestHTTPDroppedConnection(t *testing.T) {
	t.Run("stateless", func(t *testing.T) {
		for _, version := range []string{"2025-11-25", "2026-07-28"} {
			t.Run(version, func(t *testing.T) {
				base := runtime.NumGoroutine()
				w := newWaiter(t)
				h := mcpserver.HTTPHandler(w.server(t), &mcpserver.HTTPOptions{Stateless: true})
				srv := httptest.NewServer(h)
				c := newRawClient(srv.URL)
				c.version = version
				body := callBody(2, "wait-block")
				if version == "2026-07-28" {
					body = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"wait-block","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() {
					defer close(done)
					resp, err := c.post(ctx, body, "Mcp-Method", "tools/call", "Mcp-Name", "wait-block")
					if err == nil {
						readAll(t, resp)
					}
				}()
				w.awaitStart(t)
				cancel()
				<-done
				w.awaitCancelled(t, 1, mcpserver.ErrClientGone)
				shutdown(t, h)
				srv.Close()
				checkGoroutines(t, base)
			})
		}
	})
	t.Run("stateful/delete", func(t *testing.T) {
		base := runtime.NumGoroutine()
		w := newWaiter(t)
		h := mcpserver.HTTPHandler(w.server(t), nil)
		srv := httptest.NewServer(h)
		c := newRawClient(srv.URL)
		c.initialize(t)
		// A dropped connection alone does not cancel the call (2025-11-25):
		// the cause its body sees is the session's end, checked below.
		dropCall(t, w, c)
		req, _ := http.NewRequest(http.MethodDelete, srv.URL, nil)
		req.Header.Set("Mcp-Session-Id", c.session)
		deleted := make(chan int)
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
		case code := <-deleted:
			assert.Equal(t, http.StatusNoContent, code)
		case <-time.After(eventually):
			t.Fatal("DELETE did not return in time")
		}
		w.awaitCancelled(t, 1, mcpserver.ErrSessionClosed)
		assert.Zero(t, h.Sessions())
		shutdown(t, h)
		srv.Close()
		checkGoroutines(t, base)
	})
	t.Run("stateful/idle timeout", func(t *testing.T) {
		base := runtime.NumGoroutine()
		w := newWaiter(t)
		h := mcpserver.HTTPHandler(w.server(t), &mcpserver.HTTPOptions{SessionTimeout: time.Second})
		srv := httptest.NewServer(h)
		c := newRawClient(srv.URL)
		c.initialize(t)
		dropCall(t, w, c)
		w.awaitCancelled(t, 1, mcpserver.ErrSessionExpired)
		require.Eventually(t, func() bool { return h.Sessions() == 0 }, eventually, 10*time.Millisecond,
			"the expired session is still open")
		shutdown(t, h)
		srv.Close()
		checkGoroutines(t, base)
	})
}

// dropCall starts a tools/call of wait/block on c and drops its TCP
// connection once the body runs.
func dropCall(t *testing.T, w *waiter, c *rawClient) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := c.post(ctx, callBody(2, "wait-block"))
		if err == nil {
			readAll(t, resp)
		}
	}()
	w.awaitStart(t)
	cancel() // the client's connection closes
	<-done
}

// TestStdioClientKilled: the client dies with two calls in flight (its
// input ends and its output is closed). The first answer fails to go out,
// after which the SDK writes nothing more; Serve still returns, promptly
// once the bodies end, and leaves nothing behind.
func TestStdioClientKilled(t *testing.T) {
	base := runtime.NumGoroutine()
	w := newWaiter(t)
	p := servePipes(t, w.server(t), nil)
	lines := p.lines()
	p.send(t, initializeBody, initializedLine)
	awaitAnswer(t, lines, 1)
	p.send(t, callBody(2, "wait-block"), callBody(3, "wait-block"))
	w.awaitStart(t)
	w.awaitStart(t)
	p.out.Close()
	for range lines {
	}
	p.in.Close()
	close(w.release) // the bodies end; their answers cannot go out
	select {
	case err := <-p.done:
		// The session's error: the failed write, when an answer was tried.
		if err != nil {
			assert.ErrorIs(t, err, syscall.EPIPE)
		}
	case <-time.After(eventually):
		t.Fatal("Serve did not return after the client died")
	}
	entries, _, _ := w.snapshot()
	assert.Len(t, entries, 2)
	checkGoroutines(t, base)
}

const cancelFive = `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}`
