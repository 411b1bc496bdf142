package mcpserver_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/mcpserver"
)

// waiter is a host whose action wait/block runs until its context is done,
// and wait/echo answers at once. It keeps every run entry, every error
// OnError hears, and the cause each blocked body saw.
type waiter struct {
	reg     *actions.Registry
	started chan struct{} // one value per wait/block body started

	mu      sync.Mutex
	entries []actions.RunEntry
	errs    []error
	causes  []error
	release chan struct{} // closed: wait/block bodies return "released"
}

func newWaiter(t *testing.T) *waiter {
	t.Helper()
	w := &waiter{started: make(chan struct{}, 1000), release: make(chan struct{})}
	w.reg = actions.NewRegistry(&actions.Options{OnRecord: func(rec actions.Record) {
		w.mu.Lock()
		w.entries = append(w.entries, rec.Entry)
		w.mu.Unlock()
	}})
	require.NoError(t, w.reg.Register(actions.Action{
		Definition: actions.Definition{ID: "wait/block", Effect: actions.EffectWrite, Additive: true},
		Run: func(ctx context.Context, _ map[string]any, _ *actions.Trace) (any, error) {
			w.started <- struct{}{}
			select {
			case <-ctx.Done():
				w.mu.Lock()
				w.causes = append(w.causes, context.Cause(ctx))
				w.mu.Unlock()
				return nil, ctx.Err()
			case <-w.release:
				return "released", nil
			}
		},
	}))
	require.NoError(t, w.reg.Register(actions.Action{
		Definition: actions.Definition{ID: "wait/echo", Effect: actions.EffectRead,
			Parameters: `{"type":"object","properties":{"n":{"type":"integer"}}}`},
		Run: func(_ context.Context, p map[string]any, _ *actions.Trace) (any, error) {
			return map[string]any{"n": p["n"]}, nil
		},
	}))
	return w
}

// server returns a fresh MCP server with the waiter's tools; each of more
// changes the options before AddTools. The registry's OnRecord keeps
// every entry.
func (w *waiter) server(t *testing.T, more ...func(*mcpserver.Options)) *mcp.Server {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "waiter", Version: "v0"}, nil)
	opts := &mcpserver.Options{
		OnError: func(_ context.Context, _ string, err error) {
			w.mu.Lock()
			w.errs = append(w.errs, err)
			w.mu.Unlock()
		},
	}
	for _, change := range more {
		change(opts)
	}
	require.NoError(t, mcpserver.AddTools(s, w.reg, opts))
	return s
}

func (w *waiter) snapshot() (entries []actions.RunEntry, errs, causes []error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]actions.RunEntry(nil), w.entries...), append([]error(nil), w.errs...), append([]error(nil), w.causes...)
}

// awaitStart waits for a wait/block body to start.
func (w *waiter) awaitStart(t *testing.T) {
	t.Helper()
	select {
	case <-w.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the body did not start within 10 s")
	}
}

// awaitCancelled waits (within bound) for n blocked bodies to have seen
// their context done, and checks each cause, entry and OnError report.
func (w *waiter) awaitCancelled(t *testing.T, n int, bound time.Duration, cause error) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		entries, errs, causes := w.snapshot()
		cancelledEntries := 0
		for _, e := range entries {
			if e.Action == "wait/block" && e.Outcome == actions.OutcomeRefused && e.Error == actions.CodeCancelled {
				cancelledEntries++
			}
		}
		heard := 0
		for _, err := range errs {
			if errors.Is(err, cause) && errors.Is(err, context.Canceled) {
				heard++
			}
		}
		if len(causes) >= n && cancelledEntries >= n && heard >= n {
			for _, c := range causes {
				require.ErrorIs(t, c, cause, "the cause the body saw")
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("within %v: %d bodies saw their context done (want %d), %d entries recorded cancelled, %d OnError reports of %v; errors %v",
				bound, len(causes), n, cancelledEntries, heard, cause, errs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkGoroutines fails the test unless the goroutine count comes back to
// base (with a little slack for the runtime's own) within 10 s.
func checkGoroutines(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= base+2 {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("%d goroutines, %d at the start:\n%s", n, base, buf)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// rawClient speaks streamable HTTP by hand, to do what a well-behaved
// client does not: drop a connection mid-call, never come back.
type rawClient struct {
	url     string
	version string // MCP-Protocol-Version, after initialize
	session string
	client  *http.Client
	header  []string // sent with every request: name, value...
}

func newRawClient(url string) *rawClient {
	return &rawClient{url: url, client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
}

// post sends one JSON-RPC message and returns the response.
func (c *rawClient) post(ctx context.Context, body string, header ...string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	if c.version != "" {
		req.Header.Set("MCP-Protocol-Version", c.version)
	}
	header = append(append([]string(nil), c.header...), header...)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return c.client.Do(req)
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`

// initialize opens a session (stateful) and sends notifications/initialized.
func (c *rawClient) initialize(t *testing.T) {
	t.Helper()
	resp, err := c.post(context.Background(), initializeBody)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	if resp.Header.Get("Mcp-Session-Id") == "" {
		c.version = "2025-11-25" // stateless: no session, nothing to confirm
		return
	}
	c.session = resp.Header.Get("Mcp-Session-Id")
	c.version = "2025-11-25"
	resp, err = c.post(context.Background(), `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
}

func callBody(id int, tool string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{}}}`, id, tool)
}

// readAll returns the whole body of resp (an SSE stream or JSON).
func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		b.WriteString(sc.Text())
		b.WriteByte('\n')
	}
	return b.String()
}
