package mcpserver_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/mcpserver"
	"github.com/actionreg/actions/store"
)

// TestHTTPOrigin: a foreign Origin gets 403 and opens no session; the
// server's own origin, a trusted one and no Origin at all are served.
func TestHTTPOrigin(t *testing.T) {
	base := runtime.NumGoroutine()
	w := newWaiter(t)
	h := mcpserver.HTTPHandler(w.server(t), &mcpserver.HTTPOptions{TrustedOrigins: []string{"https://app.example.com"}})
	srv := httptest.NewServer(h)
	host := strings.TrimPrefix(srv.URL, "http://")
	cases := []struct {
		name   string
		header []string
		want   int
	}{
		{"foreign", []string{"Origin", "http://evil.example"}, http.StatusForbidden},
		{"foreign, same host other port", []string{"Origin", "http://127.0.0.1:1"}, http.StatusForbidden},
		{"foreign by fetch metadata", []string{"Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
		{"same origin", []string{"Origin", "http://" + host}, http.StatusOK},
		{"trusted", []string{"Origin", "https://app.example.com"}, http.StatusOK},
		{"trusted, by fetch metadata", []string{"Origin", "https://app.example.com", "Sec-Fetch-Site", "cross-site"}, http.StatusOK},
		{"same origin by fetch metadata", []string{"Sec-Fetch-Site", "same-origin"}, http.StatusOK},
		{"no origin", nil, http.StatusOK},
	}
	opened := 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, err := newRawClient(srv.URL).post(context.Background(), initializeBody, c.header...)
			require.NoError(t, err)
			body := readAll(t, resp)
			assert.Equal(t, c.want, resp.StatusCode, body)
			if c.want == http.StatusForbidden {
				assert.NotContains(t, body, "evil", "the refusal does not echo the origin")
				assert.Empty(t, resp.Header.Get("Mcp-Session-Id"))
			} else {
				opened++
			}
			assert.Equal(t, opened, h.Sessions(), "open sessions")
		})
	}
	// A GET (the stream of a session) is checked too, though browsers
	// count GET as safe.
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	req.Header.Set("Origin", "http://evil.example")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)

	ctx, cancel := context.WithTimeout(context.Background(), eventually)
	defer cancel()
	require.NoError(t, h.Shutdown(ctx))
	assert.Zero(t, h.Sessions())
	srv.Close()
	http.DefaultClient.CloseIdleConnections()
	checkGoroutines(t, base)
}

// TestHTTPSDKClient: the official client works against the handler in
// both modes, under both protocol versions a mode serves.
func TestHTTPSDKClient(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		versions := []string{"2025-11-25"}
		if stateless {
			versions = append(versions, "") // the client's default, 2026-07-28
		}
		for _, version := range versions {
			t.Run(fmt.Sprintf("stateless=%v/%q", stateless, version), func(t *testing.T) {
				w := newWaiter(t)
				url := serveHTTP(t, mcpserver.HTTPHandler(w.server(t), &mcpserver.HTTPOptions{Stateless: stateless}))
				var opts *mcp.ClientSessionOptions
				if version != "" {
					opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
				}
				cs, err := mcp.NewClient(&mcp.Implementation{Name: "sdk", Version: "v0"}, nil).
					Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, opts)
				require.NoError(t, err)
				defer cs.Close()
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "wait-echo", Arguments: map[string]any{"n": 7}})
				require.NoError(t, err)
				assert.Equal(t, `{"n":7}`, textOf(t, res))
			})
		}
	}
}

// TestHTTPStatelessReplicas: a stateless server answers a tools/call sent
// to a second instance with no initialize there; the SDK's client, its
// requests spread over two instances in turn, works throughout.
func TestHTTPStatelessReplicas(t *testing.T) {
	w := newWaiter(t)
	first := serveHTTP(t, mcpserver.HTTPHandler(w.server(t), &mcpserver.HTTPOptions{Stateless: true}))
	second := serveHTTP(t, mcpserver.HTTPHandler(w.server(t), &mcpserver.HTTPOptions{Stateless: true}))

	// By hand: initialize on the first, call on the second.
	c := newRawClient(first)
	resp, err := c.post(context.Background(), initializeBody)
	require.NoError(t, err)
	assert.Contains(t, readAll(t, resp), `"protocolVersion":"2025-11-25"`)
	assert.Empty(t, resp.Header.Get("Mcp-Session-Id"), "a stateless server names no session")
	c.url, c.version = second, "2025-11-25"
	resp, err = c.post(context.Background(), `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"wait-echo","arguments":{"n":3}}}`)
	require.NoError(t, err)
	body := readAll(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.Contains(t, body, `"structuredContent":{"n":3}`)

	// The SDK's client, round-robin over both instances.
	for _, version := range []string{"2025-11-25", ""} {
		t.Run("sdk "+version, func(t *testing.T) {
			var n atomic.Int64
			rr := roundTripper(func(req *http.Request) (*http.Response, error) {
				target := first
				if n.Add(1)%2 == 0 {
					target = second
				}
				req = req.Clone(req.Context())
				req.URL.Host = strings.TrimPrefix(target, "http://")
				req.Host = req.URL.Host
				return http.DefaultTransport.RoundTrip(req)
			})
			var opts *mcp.ClientSessionOptions
			if version != "" {
				opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
			}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "rr", Version: "v0"}, nil).Connect(context.Background(),
				&mcp.StreamableClientTransport{Endpoint: first, HTTPClient: &http.Client{Transport: rr}, MaxRetries: -1, DisableStandaloneSSE: true}, opts)
			require.NoError(t, err)
			defer cs.Close()
			for i := range 6 {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "wait-echo", Arguments: map[string]any{"n": i}})
				require.NoError(t, err)
				assert.Equal(t, fmt.Sprintf(`{"n":%d}`, i), textOf(t, res))
			}
			assert.GreaterOrEqual(t, n.Load(), int64(6))
		})
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestHTTPSessionCap: past MaxSessions a new session gets 503 with
// Retry-After; nothing is kept of the refused ones.
func TestHTTPSessionCap(t *testing.T) {
	w := newWaiter(t)
	h := mcpserver.HTTPHandler(w.server(t), &mcpserver.HTTPOptions{MaxSessions: 3, SessionTimeout: time.Minute})
	url := serveHTTP(t, h)
	for range 3 {
		newRawClient(url).initialize(t)
	}
	for range 20 {
		resp, err := newRawClient(url).post(context.Background(), initializeBody)
		require.NoError(t, err)
		readAll(t, resp)
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
		secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		require.NoError(t, err, "Retry-After in seconds")
		assert.True(t, secs >= 1 && secs <= 60, "Retry-After %d: until the first idle session expires", secs)
	}
	assert.Equal(t, 3, h.Sessions())
}

// TestHTTPAbandonedSessions opens 10,000 sessions (each an initialize
// from a client that never comes back), checks that the next one gets
// 503, then that the idle timeout closes them all and the heap comes back
// within 16 MiB of where it was (runtime.ReadMemStats after GC).
func TestHTTPAbandonedSessions(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("opens 10,000 sessions (about 50 MiB of heap; not under -race or -short)")
	}
	const sessions = 10_000
	base := runtime.NumGoroutine()
	heapBefore := heapAfterGC()
	w := newWaiter(t)
	const idle = time.Minute
	h := mcpserver.HTTPHandler(w.server(t), &mcpserver.HTTPOptions{MaxSessions: sessions, SessionTimeout: idle})
	srv := httptest.NewServer(h)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	var (
		wg     sync.WaitGroup
		failed atomic.Int64
		next   atomic.Int64
		first  atomic.Value // the first failure, for the message
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := newRawClient(srv.URL)
			c.client = client
			for next.Add(1) <= sessions {
				resp, err := c.post(context.Background(), initializeBody)
				if err != nil {
					first.CompareAndSwap(nil, err.Error())
					failed.Add(1)
					continue
				}
				body := readAll(t, resp)
				if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
					first.CompareAndSwap(nil, fmt.Sprintf("%d %s", resp.StatusCode, body))
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	require.Zero(t, failed.Load(), "initialize requests that failed, the first: %v", first.Load())
	// The idle timeout (a minute) is longer than opening the sessions
	// takes on a loaded machine, so all of them are still open here.
	require.Equal(t, sessions, h.Sessions(), "sessions open: opening them took longer than the idle timeout")
	resp, err := newRawClient(srv.URL).post(context.Background(), initializeBody)
	require.NoError(t, err)
	readAll(t, resp)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.NotEmpty(t, resp.Header.Get("Retry-After"))
	heapOpen := heapAfterGC()
	require.Eventually(t, func() bool { return h.Sessions() == 0 }, idle+eventually, 50*time.Millisecond,
		"sessions still open long after the idle timeout")
	client.CloseIdleConnections()
	heapAfter := heapAfterGC()
	t.Logf("heap: %.1f MiB before, %.1f MiB with %d sessions open, %.1f MiB after they expired",
		mib(heapBefore), mib(heapOpen), sessions, mib(heapAfter))
	assert.Less(t, heapAfter, heapBefore+16<<20, "heap after the sessions expired")
	ctx, cancel := context.WithTimeout(context.Background(), eventually)
	defer cancel()
	require.NoError(t, h.Shutdown(ctx))
	srv.Close()
	checkGoroutines(t, base)
}

// TestAttackSlowReader: a client that calls a tool with a large answer
// and never reads it loses its connection after WriteTimeout: the request
// ends (Shutdown then finds nothing in progress), the call is recorded,
// and no goroutine is left.
func TestAttackSlowReader(t *testing.T) {
	base := runtime.NumGoroutine()
	var recorded atomic.Int32
	reg := actions.NewRegistry(&actions.Options{OnRecord: func(store.Record) { recorded.Add(1) }})
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
	require.Eventually(t, func() bool { return recorded.Load() == 1 }, eventually, 10*time.Millisecond, "the call ran")
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
