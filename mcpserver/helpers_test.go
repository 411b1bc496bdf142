package mcpserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/mcpserver"
	"github.com/actionreg/actions/store"
)

// eventually bounds how long a test waits for what must happen (a body
// to start, a call to be cancelled, a server to stop). It is no measure of
// speed: only a test that would otherwise hang reaches it, so it is
// generous enough for a machine running other builds beside the tests.
const eventually = time.Minute

// waiter is a host whose action wait/block runs until its context is done,
// and wait/echo answers at once. It keeps every run entry, every error
// OnError hears, and the cause each blocked body saw.
type waiter struct {
	reg     *actions.Registry
	started chan struct{} // one value per wait/block body started

	mu      sync.Mutex
	entries []store.RunEntry
	errs    []error
	causes  []error
	release chan struct{} // closed: wait/block bodies return "released"
}

func newWaiter(t *testing.T) *waiter {
	t.Helper()
	w := &waiter{started: make(chan struct{}, 1000), release: make(chan struct{})}
	w.reg = actions.NewRegistry(&actions.Options{OnRecord: func(rec store.Record) {
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

func (w *waiter) snapshot() (entries []store.RunEntry, errs, causes []error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]store.RunEntry(nil), w.entries...), append([]error(nil), w.errs...), append([]error(nil), w.causes...)
}

// awaitStart waits for a wait/block body to start.
func (w *waiter) awaitStart(t *testing.T) {
	t.Helper()
	select {
	case <-w.started:
	case <-time.After(eventually):
		t.Fatal("the body did not start in time")
	}
}

// awaitCancelled waits for n blocked bodies to have seen their context
// done, and checks each cause, entry and OnError report. It fails only
// when that has not happened after [eventually].
func (w *waiter) awaitCancelled(t *testing.T, n int, cause error) {
	t.Helper()
	bound := eventually
	deadline := time.Now().Add(bound)
	for {
		entries, errs, causes := w.snapshot()
		cancelledEntries := 0
		for _, e := range entries {
			if e.Action == "wait/block" && e.Outcome == store.OutcomeRefused && e.Error == codes.Cancelled {
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
// base (with a little slack for the runtime's own) within [eventually].
func checkGoroutines(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(eventually)
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

// postAsync posts body in a goroutine of its own and gives its answer
// (every line of the response) on the channel, or the error of the post
// as text: for a call that blocks while the test does something else.
func (c *rawClient) postAsync(t *testing.T, body string) <-chan string {
	answer := make(chan string, 1)
	go func() {
		resp, err := c.post(context.Background(), body)
		if err != nil {
			answer <- err.Error()
			return
		}
		answer <- readAll(t, resp)
	}()
	return answer
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

// marker is a value no response may ever hold: tests submit it as a
// parameter or put it in a body's error.
const marker = "MARKER-7f3c-secret"

// testRegistry is the shop; opts (nil for none) are the registry's own.
func testRegistry(t *testing.T, opts *actions.Options) *actions.Registry {
	t.Helper()
	reg := actions.NewRegistry(opts)
	add := func(a actions.Action) {
		t.Helper()
		require.NoError(t, reg.Register(a))
	}
	add(actions.Action{
		Definition: actions.Definition{
			ID: "shop/greet", Title: "Greet", Description: "Greets a customer.", Effect: actions.EffectRead,
			Parameters: `{"type":"object","properties":{
				"name":{"type":"string","pattern":"^[A-Z][a-z]+$"},
				"times":{"type":"integer","minimum":1,"default":1},
				"note":{"anyOf":[{"type":"string"},{"type":"object","additionalProperties":{"type":"string"}}]}
			},"required":["name"],"additionalProperties":false}`,
		},
		Run: func(_ context.Context, p map[string]any, tr *actions.Trace) (any, error) {
			client := ""
			if c := tr.Caller(); c != nil && c.Client != nil {
				client = c.Client.ID
			}
			return map[string]any{"hello": p["name"], "times": p["times"], "client": client}, nil
		},
	})
	add(actions.Action{
		Definition: actions.Definition{ID: "shop/list_sizes", Effect: actions.EffectRead},
		Run: func(context.Context, map[string]any, *actions.Trace) (any, error) {
			return []any{"S", "M", "L"}, nil
		},
	})
	add(actions.Action{
		Definition: actions.Definition{ID: "shop/purge", Effect: actions.EffectWrite, Description: "Deletes every order."},
		Run: func(context.Context, map[string]any, *actions.Trace) (any, error) {
			return nil, nil
		},
	})
	add(actions.Action{
		Definition: actions.Definition{ID: "shop/audit", Surfaces: []identity.Surface{}},
		Run: func(context.Context, map[string]any, *actions.Trace) (any, error) {
			return "audited", nil
		},
	})
	add(actions.Action{
		Definition: actions.Definition{ID: "shop/order", Additive: true, Parameters: `{"type":"object","properties":{"qty":{"type":"integer"}}}`},
		Run: func(context.Context, map[string]any, *actions.Trace) (any, error) {
			r := actions.NewRefusal("out_of_stock", "the item is out of stock")
			r.NextAction = "Offer the customer another size."
			return nil, r
		},
	})
	add(actions.Action{
		Definition: actions.Definition{ID: "shop/crash", Additive: true},
		Run: func(context.Context, map[string]any, *actions.Trace) (any, error) {
			panic("crash " + marker)
		},
	})
	add(actions.Action{
		Definition: actions.Definition{ID: "shop/fail", Additive: true},
		Run: func(context.Context, map[string]any, *actions.Trace) (any, error) {
			return nil, errors.New("database unreachable: password=" + marker)
		},
	})
	return reg
}

// lockedBuffer collects the messages the client reads, for the leak
// checks. It logs on the client's side: a message is logged before the
// client handles it, so a response is in the log when its call returns.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// written returns the messages the server sent, one per line.
func (l *lockedBuffer) written() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(l.b.Bytes()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "read: "); ok {
			out.WriteString(line)
			out.WriteByte('\n')
		}
	}
	return out.String()
}

// fixture is a server on the test registry and a connected client.
type fixture struct {
	reg     *actions.Registry
	session *mcp.ClientSession
	wire    *lockedBuffer

	mu      sync.Mutex
	entries []store.RunEntry
	errs    []error
	callers int // calls of Options.Caller
}

func (f *fixture) loggedErrors() []error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]error(nil), f.errs...)
}

func (f *fixture) runEntries() []store.RunEntry {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]store.RunEntry(nil), f.entries...)
}

// connect serves the test registry over in-memory transports and connects
// a client asking for protocolVersion ("" for the SDK's default).
func connect(t *testing.T, protocolVersion string) *fixture {
	t.Helper()
	f := &fixture{wire: &lockedBuffer{}}
	// The registry's OnRecord sees each call's record once it is settled.
	f.reg = testRegistry(t, &actions.Options{OnRecord: func(rec store.Record) {
		f.mu.Lock()
		f.entries = append(f.entries, rec.Entry)
		f.mu.Unlock()
	}})
	server := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "v0.0.1"}, nil)
	err := mcpserver.AddTools(server, f.reg, &mcpserver.Options{
		// Who calls, built per request: the body's environment is built
		// from it (the trace's caller).
		Caller: func(context.Context, *auth.TokenInfo, http.Header) *identity.Caller {
			f.mu.Lock()
			f.callers++
			f.mu.Unlock()
			return &identity.Caller{Principal: "ada", Client: &identity.Client{ID: "test-client"}}
		},
		OnError: func(_ context.Context, tool string, err error) {
			f.mu.Lock()
			f.errs = append(f.errs, err)
			f.mu.Unlock()
		},
	})
	require.NoError(t, err)

	ctx := context.Background()
	serverT, clientT := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, serverT, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })

	client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "v0.0.1"}, nil)
	var opts *mcp.ClientSessionOptions
	if protocolVersion != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion}
	}
	cs, err := client.Connect(ctx, &mcp.LoggingTransport{Transport: clientT, Writer: f.wire}, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	f.session = cs
	return f
}

// versions are the protocol versions every test runs under: the client's
// default (the latest the SDK knows, 2026-07-28 in v1.8.0, negotiated
// through server/discover) and 2025-11-25 (the initialize handshake).
var versions = []struct{ name, ask, want string }{
	{"default", "", "2026-07-28"},
	{"2025-11-25", "2025-11-25", "2025-11-25"},
}

func forEachVersion(t *testing.T, test func(t *testing.T, f *fixture)) {
	for _, v := range versions {
		t.Run(v.name, func(t *testing.T) {
			f := connect(t, v.ask)
			require.Equal(t, v.want, f.session.InitializeResult().ProtocolVersion, "negotiated protocol version")
			test(t, f)
		})
	}
}

func call(t *testing.T, f *fixture, name string, args any) (*mcp.CallToolResult, error) {
	t.Helper()
	return f.session.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
}

func textOf(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	require.Len(t, res.Content, 1)
	tc, ok := res.Content[0].(*mcp.TextContent)
	require.True(t, ok, "content is %T, want text", res.Content[0])
	return tc.Text
}

func jsonText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

const resourceMetadata = "https://shop.example/.well-known/oauth-protected-resource"

// gateShop is a registry with a gate: a read, an additive write, a delete
// that needs confirmation (with a deprecated alias), and a read touching
// protected personal data, offered on ui only.
type gateShop struct {
	reg       *actions.Registry
	discarded atomic.Int32
	restocked atomic.Int32
	mu        sync.Mutex
	audits    []store.Audit
}

func newGateShop(t *testing.T) *gateShop {
	t.Helper()
	// Its people may answer in their MCP client (elicitation).
	return newGateShopWith(t, actions.GateOptions{ResourceMetadata: resourceMetadata, DecideFrom: []identity.Surface{identity.SurfaceUI, identity.SurfaceMCP}})
}

func newGateShopWith(t *testing.T, gate actions.GateOptions) *gateShop {
	t.Helper()
	g := &gateShop{}
	g.reg = actions.NewRegistry(&actions.Options{
		Gate: &gate,
		OnRecord: func(rec store.Record) {
			g.mu.Lock()
			g.audits = append(g.audits, rec.Audit)
			g.mu.Unlock()
		},
	})
	g.reg.MustRegister(
		actions.New(actions.Definition{ID: "shop/stock", Title: "Stock", Effect: actions.EffectRead, Capability: "stock.read", Idempotent: true},
			func(context.Context, map[string]any, *actions.Trace) (any, error) {
				return map[string]any{"apples": 3}, nil
			}),
		actions.New(actions.Definition{ID: "shop/restock", Title: "Restock", Effect: actions.EffectWrite, Additive: true, Capability: "stock.write",
			Parameters: `{"type":"object","properties":{"item":{"type":"string"},"count":{"type":"integer","minimum":1}},"required":["item","count"]}`},
			func(context.Context, map[string]any, *actions.Trace) (any, error) {
				g.restocked.Add(1)
				return map[string]any{"ok": true}, nil
			}),
		actions.New(actions.Definition{ID: "shop/discard", Title: "Discard stock", Effect: actions.EffectDelete, Capability: "stock.write",
			NeedsConfirmation: true, DeprecatedAliases: []string{"shop/throw_away"},
			Refusals:   []actions.DeclaredRefusal{{Code: "not_in_stock", Retry: codes.RetryAfterEdit}},
			Parameters: `{"type":"object","properties":{"item":{"type":"string"}},"required":["item"]}`},
			func(_ context.Context, p map[string]any, _ *actions.Trace) (any, error) {
				g.discarded.Add(1)
				return map[string]any{"discarded": p["item"]}, nil
			}),
		actions.New(actions.Definition{ID: "shop/tenants", Effect: actions.EffectRead, Capability: "stock.read",
			PersonalData: []actions.PersonalData{"name", actions.PersonalProtected}},
			func(context.Context, map[string]any, *actions.Trace) (any, error) { return nil, nil }),
	)
	return g
}

// principals: what the host derives from a token's user.
var capabilitiesOf = map[string][]string{
	"viewer": {"stock.read"},
	"editor": {"stock.read", "stock.write"},
}

// tokens the test verifier knows: the user and the scopes of each.
var tokens = map[string]auth.TokenInfo{
	"viewer-token":      {UserID: "viewer", Scopes: []string{"mcp:read"}},
	"editor-token":      {UserID: "editor", Scopes: []string{"mcp:read", "mcp:write"}},
	"editor-read-token": {UserID: "editor", Scopes: []string{"mcp:read"}},
	"no-scope-token":    {UserID: "editor"},
}

func verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	ti, ok := tokens[token]
	if !ok {
		return nil, auth.ErrInvalidToken
	}
	ti.Expiration = time.Now().Add(time.Hour)
	return &ti, nil
}

func (g *gateShop) options() *mcpserver.Options {
	return &mcpserver.Options{
		Caller: func(_ context.Context, token *auth.TokenInfo, _ http.Header) *identity.Caller {
			if token == nil {
				return &identity.Caller{Principal: "editor", Capabilities: capabilitiesOf["editor"]}
			}
			return &identity.Caller{Principal: token.UserID, Capabilities: capabilitiesOf[token.UserID]}
		},
	}
}

// recorder keeps the HTTP responses the client received, and sends the
// bearer token.
type recorder struct {
	token string
	mu    sync.Mutex
	seen  []*http.Response
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+r.token)
	res, err := http.DefaultTransport.RoundTrip(req)
	if err == nil {
		r.mu.Lock()
		r.seen = append(r.seen, res)
		r.mu.Unlock()
	}
	return res, err
}

func (r *recorder) forbidden() []*http.Response {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*http.Response
	for _, res := range r.seen {
		if res.StatusCode == http.StatusForbidden {
			out = append(out, res)
		}
	}
	return out
}

// serveHTTP serves the shop over streamable HTTP behind the SDK's bearer
// token middleware and ScopeChallenge.
func (g *gateShop) serveHTTP(t *testing.T, stateless bool) string {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "v0.0.1"}, nil)
	opts := g.options()
	require.NoError(t, mcpserver.AddTools(server, g.reg, opts))
	var handler http.Handler = mcpserver.HTTPHandler(server, &mcpserver.HTTPOptions{Stateless: stateless})
	handler = mcpserver.ScopeChallenge(g.reg, opts)(handler)
	handler = auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: resourceMetadata})(handler)
	ts := httptest.NewServer(handler)
	t.Cleanup(ts.Close)
	return ts.URL
}

// connectHTTP connects a client with the token; elicit, when not nil,
// answers the server's confirmation questions.
func connectHTTP(t *testing.T, url, token, version string, elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) (*mcp.ClientSession, *recorder) {
	t.Helper()
	rec := &recorder{token: token}
	client := mcp.NewClient(&mcp.Implementation{Name: "gate-client", Version: "v0.0.1"}, &mcp.ClientOptions{ElicitationHandler: elicit})
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rec}},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs, rec
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	return data
}

// serveRaw serves the shop, with its batch tool, behind the SDK's bearer
// token middleware and ScopeChallenge.
func (g *gateShop) serveRaw(t *testing.T, stateless bool) string {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "v0.0.1"}, nil)
	opts := g.options()
	opts.Batch = &mcpserver.BatchTool{}
	require.NoError(t, mcpserver.AddTools(server, g.reg, opts))
	h := mcpserver.HTTPHandler(server, &mcpserver.HTTPOptions{Stateless: stateless})
	var handler http.Handler = mcpserver.ScopeChallenge(g.reg, opts)(h)
	handler = auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: resourceMetadata})(handler)
	ts := httptest.NewServer(handler)
	t.Cleanup(ts.Close)
	return ts.URL
}

// rawAs returns a raw client of url sending the bearer token, its session
// opened.
func rawAs(t *testing.T, url, token string) *rawClient {
	t.Helper()
	c := newRawClient(url)
	c.header = []string{"Authorization", "Bearer " + token}
	c.initialize(t)
	return c
}

func callParams(params string) string {
	return `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":` + params + `}`
}

// heldShop is a gated registry: shop/stock reads, shop/restock adds, and
// shop/discard deletes and needs a person's confirmation. Who calls is
// the principal the test sets (editor by default; "" for a caller without
// identity), with stock.write unless revoked.
type heldShop struct {
	reg       *actions.Registry
	principal atomic.Value // string
	revoked   atomic.Bool
	callers   atomic.Int32 // calls of Options.Caller
	restocked atomic.Int32
	discarded atomic.Int32

	mu      sync.Mutex
	records []store.Record
}

func newHeldShop(t *testing.T) *heldShop {
	t.Helper()
	h := &heldShop{}
	h.principal.Store("editor")
	h.reg = actions.NewRegistry(&actions.Options{
		// Its people may answer in their MCP client (elicitation).
		Gate: &actions.GateOptions{DecideFrom: []identity.Surface{identity.SurfaceUI, identity.SurfaceMCP}},
		OnRecord: func(rec store.Record) {
			h.mu.Lock()
			h.records = append(h.records, rec)
			h.mu.Unlock()
		},
	})
	h.reg.MustRegister(
		actions.New(actions.Definition{ID: "shop/stock", Title: "Stock", Effect: actions.EffectRead, Capability: "stock.read"},
			func(context.Context, map[string]any, *actions.Trace) (any, error) {
				return map[string]any{"apples": 3}, nil
			}),
		actions.New(actions.Definition{ID: "shop/restock", Title: "Restock", Effect: actions.EffectWrite, Additive: true, Capability: "stock.write",
			Parameters: `{"type":"object","properties":{"item":{"type":"string"},"count":{"type":"integer","minimum":1}},"required":["item","count"]}`},
			func(_ context.Context, p map[string]any, _ *actions.Trace) (any, error) {
				h.restocked.Add(1)
				return map[string]any{"restocked": p["item"]}, nil
			}),
		actions.New(actions.Definition{ID: "shop/discard", Title: "Discard stock", Effect: actions.EffectDelete, Capability: "stock.write",
			NeedsConfirmation: true,
			Parameters: `{"type":"object","properties":{"item":{"type":"string"},"note":{"type":"string"},"target":{"type":"string"}},
				"required":["item"],"additionalProperties":false}`},
			func(_ context.Context, p map[string]any, _ *actions.Trace) (any, error) {
				h.discarded.Add(1)
				return map[string]any{"discarded": p["item"]}, nil
			}),
	)
	return h
}

// caller is who calls as the host sees it now.
func (h *heldShop) caller() *identity.Caller {
	c := &identity.Caller{Principal: h.principal.Load().(string), Capabilities: []string{"stock.read", "stock.write"}}
	if h.revoked.Load() {
		c.Capabilities = []string{"stock.read"}
	}
	return c
}

// person is the same principal on the host's own screen.
func (h *heldShop) person() *identity.Caller {
	c := h.caller()
	c.Surface = identity.SurfaceUI
	return c
}

// recordsAt returns the records made so far whose audit stage is stage.
func (h *heldShop) recordsAt(stage store.Stage) []store.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []store.Record
	for _, rec := range h.records {
		if rec.Audit.Stage == stage {
			out = append(out, rec)
		}
	}
	return out
}

// connect serves the shop with its batch tool and connects a client
// asking for version; elicit, when set, answers the server's questions
// (the client then declares form elicitation).
func (h *heldShop) connect(t *testing.T, version string, elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ClientSession {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "v0.0.1"}, nil)
	require.NoError(t, mcpserver.AddTools(server, h.reg, &mcpserver.Options{
		Caller: func(context.Context, *auth.TokenInfo, http.Header) *identity.Caller {
			h.callers.Add(1)
			return h.caller()
		},
		Batch: &mcpserver.BatchTool{},
	}))
	ctx := context.Background()
	serverT, clientT := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, serverT, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v0"}, &mcp.ClientOptions{ElicitationHandler: elicit}).
		Connect(ctx, clientT, &mcp.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	require.Equal(t, version, cs.InitializeResult().ProtocolVersion)
	return cs
}

// bothVersions runs test at 2025-11-25 and at 2026-07-28.
func bothVersions(t *testing.T, test func(t *testing.T, version string)) {
	for _, v := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(v, func(t *testing.T) { test(t, v) })
	}
}

// structured decodes a result's structuredContent into v.
func structured(t *testing.T, res *mcp.CallToolResult, v any) {
	t.Helper()
	require.NotNil(t, res.StructuredContent, "structuredContent")
	require.NoError(t, json.Unmarshal(mustJSON(t, res.StructuredContent), v))
}

// heldBatch restocks, then discards: its step 1 needs confirmation.
var heldBatch = json.RawMessage(`{"commands":[
	{"call":"shop-restock","with":{"item":"milk","count":2}},
	{"call":"shop-discard","with":{"item":"eggs"}}]}`)

// receiptJSON is the structured content of a held call.
type receiptJSON struct {
	Code    codes.Code       `json:"code"`
	Retry   codes.Retry      `json:"retry"`
	Pending *actions.Receipt `json:"pending"`
}

// connectSDK connects the SDK's own client to url (127.0.0.1) at
// protocol 2025-11-25, closed when the test ends.
func connectSDK(t *testing.T, url string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "harden", Version: "v0"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// serveHTTP serves h on 127.0.0.1 and closes it, and h, when the test ends.
func serveHTTP(t *testing.T, h *mcpserver.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), eventually)
		defer cancel()
		assert.NoError(t, h.Shutdown(ctx))
		srv.Close()
	})
	return srv.URL
}

func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }

func shutdown(t *testing.T, h *mcpserver.Handler) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), eventually)
	defer cancel()
	require.NoError(t, h.Shutdown(ctx))
}

const blockBatch = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_batch","arguments":{"commands":[{"call":"wait/block"}]}}}`

// inMemoryClient connects an SDK client to server over in-memory
// transports; both sessions close when the test ends.
func inMemoryClient(t *testing.T, server *mcp.Server) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := server.Connect(ctx, st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v1"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

const initializedLine = `{"jsonrpc":"2.0","method":"notifications/initialized"}`

// echoCall is a tools/call of wait/echo with the given id.
func echoCall(id int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"wait-echo","arguments":{"n":%d}}}`, id, id)
}

// serveInput serves input (then the end of input) and returns what the
// server wrote, and Serve's error.
func serveInput(t *testing.T, s *mcp.Server, input string, opts *mcpserver.ServeOptions) (string, error) {
	t.Helper()
	var out lockedBuffer
	err := mcpserver.Serve(context.Background(), s, &mcp.IOTransport{
		Reader: io.NopCloser(strings.NewReader(input)),
		Writer: nopWriteCloser{&out},
	}, opts)
	out.mu.Lock()
	defer out.mu.Unlock()
	return out.b.String(), err
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// pipeSession serves one session over OS pipes, as a parent process
// would, and gives the test the client's ends.
type pipeSession struct {
	in     *os.File // the client writes requests here
	out    *os.File // and reads answers here
	cancel context.CancelFunc
	done   chan error
}

func servePipes(t *testing.T, s *mcp.Server, opts *mcpserver.ServeOptions) *pipeSession {
	t.Helper()
	inR, inW, err := os.Pipe()
	require.NoError(t, err)
	outR, outW, err := os.Pipe()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	p := &pipeSession{in: inW, out: outR, cancel: cancel, done: make(chan error, 1)}
	go func() {
		p.done <- mcpserver.Serve(ctx, s, &mcp.IOTransport{Reader: inR, Writer: outW}, opts)
		inR.Close()
		outW.Close()
	}()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		outR.Close()
	})
	return p
}

// lines reads the client's end line by line into a channel.
func (p *pipeSession) lines() <-chan string {
	ch := make(chan string, 1024)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(p.out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			ch <- sc.Text()
		}
	}()
	return ch
}

func (p *pipeSession) send(t *testing.T, lines ...string) {
	t.Helper()
	for _, l := range lines {
		_, err := io.WriteString(p.in, l+"\n")
		require.NoError(t, err)
	}
}

// awaitAnswer reads lines until the answer to id, failing on an answer to
// any id in never.
func awaitAnswer(t *testing.T, lines <-chan string, id float64, never ...float64) string {
	t.Helper()
	timeout := time.After(eventually)
	for {
		select {
		case line, ok := <-lines:
			require.True(t, ok, "the output ended before the answer to %v", id)
			got := answers(t, line)
			for _, n := range never {
				_, answered := got[n]
				require.False(t, answered, "request %v was answered: %s", n, line)
			}
			if _, ok := got[id]; ok {
				return line
			}
		case <-timeout:
			t.Fatalf("no answer to %v in time", id)
		}
	}
}
