package mcpserver_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
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
	"github.com/actionreg/actions/internal/dbtest"
	"github.com/actionreg/actions/mcpserver"
	"github.com/actionreg/actions/sqlstore"
	"github.com/actionreg/actions/store"
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
		Caller: func(context.Context, *auth.TokenInfo, http.Header) *identity.Caller {
			return &identity.Caller{Principal: "ann", Surface: identity.SurfaceMCP}
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
			assert.Equal(t, "required", tool.Meta[mcpserver.IdempotencyKeyMeta])
		}
	}
	call := func(name string, args any, key string) *mcp.CallToolResult {
		p := &mcp.CallToolParams{Name: name, Arguments: args}
		if key != "" {
			p.Meta = mcp.Meta{mcpserver.IdempotencyKeyMeta: key}
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
	assert.Contains(t, refused.Content[0].(*mcp.TextContent).Text, string(codes.IdempotencyKeyRequired))

	// A key given empty is a malformed key, refused before anything
	// runs, never a call without key.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "shop-charge", Arguments: map[string]any{}, Meta: mcp.Meta{mcpserver.IdempotencyKeyMeta: ""}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, string(codes.InvalidParameters))
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
		Caller: func(context.Context, *auth.TokenInfo, http.Header) *identity.Caller {
			return &identity.Caller{Principal: "ann", Surface: identity.SurfaceMCP}
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
		assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, string(codes.InvalidParameters), "%q", empty)
	}
	assert.Equal(t, int64(2), runs.Load(), "nothing ran for an empty key")
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestKeyedBatchRetryGetsTheFirstAnswer: a keyed batch of 40 steps each
// returning 50 KB is answered within the 64 KiB bound, later steps cut
// or omitted; its retry under the same key gets that answer byte for
// byte (the text and the structured content), on SQLite, PostgreSQL and
// the in-memory run log.
func TestKeyedBatchRetryGetsTheFirstAnswer(t *testing.T) {
	check := func(t *testing.T, store store.Store) {
		ctx := context.Background()
		runs := 0
		reg := actions.NewRegistry(&actions.Options{Store: store})
		reg.MustRegister(actions.New(actions.Definition{ID: "t/fifty", Parameters: `{"type":"object","properties":{"i":{"type":"integer"}}}`},
			func(_ context.Context, p map[string]any, _ *actions.Trace) (any, error) {
				runs++
				return map[string]any{"i": p["i"], "s": strings.Repeat("y", 50_000)}, nil
			}))
		server := mcp.NewServer(&mcp.Implementation{Name: "bounds", Version: "v0.0.1"}, nil)
		require.NoError(t, mcpserver.AddTools(server, reg, &mcpserver.Options{Batch: &mcpserver.BatchTool{},
			Caller: func(context.Context, *auth.TokenInfo, http.Header) *identity.Caller {
				return &identity.Caller{Principal: "ann", Surface: identity.SurfaceMCP}
			}}))
		serverT, clientT := mcp.NewInMemoryTransports()
		ss, err := server.Connect(ctx, serverT, nil)
		require.NoError(t, err)
		defer ss.Close()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "v0.0.1"}, nil).Connect(ctx, clientT, nil)
		require.NoError(t, err)
		defer cs.Close()

		var steps []string
		for i := range 40 {
			steps = append(steps, fmt.Sprintf(`{"call":"t-fifty","with":{"i":%d}}`, i))
		}
		args := json.RawMessage(`{"commands":[` + strings.Join(steps, ",") + `]}`)
		call := func() []byte {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_batch", Arguments: args, Meta: mcp.Meta{mcpserver.IdempotencyKeyMeta: "k-1"}})
			require.NoError(t, err)
			require.False(t, res.IsError, "%v", res.Content)
			raw, err := json.Marshal(res)
			require.NoError(t, err)
			return raw
		}
		first := call()
		assert.Contains(t, string(first), `"omitted":true`, "later steps are omitted")
		retry := call()
		assert.Equal(t, 40, runs, "the retry runs nothing")
		assert.Equal(t, string(first), string(retry), "the retry's answer is the first, byte for byte")
	}
	t.Run("runlog", func(t *testing.T) { check(t, actions.NewRunLog()) })
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		store, err := sqlstore.New(db.DB, db.Dialect, nil)
		require.NoError(t, err)
		require.NoError(t, store.Migrate(context.Background()))
		check(t, store)
	})
}

// TestKeyedCallOutlivesItsClient: on stateless HTTP, a keyed call whose
// client leaves mid-run is not cut short: its body sees no cancellation,
// and the client's retry on the other replica waits for it and gets its
// answer; the body ran once.
func TestKeyedCallOutlivesItsClient(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		_, err := db.Exec("CREATE TABLE charges (amount TEXT NOT NULL)")
		require.NoError(t, err)
		var runs atomic.Int64
		started, release := make(chan struct{}), make(chan struct{})
		bodyCtxErr := make(chan error, 1)
		replica := func() *mcpserver.Handler {
			pool, err := sql.Open(db.Driver, db.DSN)
			require.NoError(t, err)
			t.Cleanup(func() { _ = pool.Close() })
			s, err := sqlstore.New(pool, db.Dialect, nil)
			require.NoError(t, err)
			require.NoError(t, s.Migrate(context.Background()))
			reg := actions.NewRegistry(&actions.Options{Store: s, KeyWait: time.Minute})
			reg.MustRegister(actions.New(actions.Definition{ID: "shop/charge", NeedsIdempotencyKey: true},
				func(ctx context.Context, _ map[string]any, _ *actions.Trace) (any, error) {
					runs.Add(1)
					tx, _ := sqlstore.Tx(ctx)
					if _, err := tx.ExecContext(ctx, "INSERT INTO charges (amount) VALUES ('5')"); err != nil {
						return nil, err
					}
					close(started)
					select {
					case <-release:
					case <-ctx.Done():
					}
					bodyCtxErr <- ctx.Err()
					return map[string]any{"charged": 5}, ctx.Err()
				}))
			server := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "v0"}, nil)
			require.NoError(t, mcpserver.AddTools(server, reg, &mcpserver.Options{
				Caller: func(context.Context, *auth.TokenInfo, http.Header) *identity.Caller {
					return &identity.Caller{Principal: "ann", Surface: identity.SurfaceMCP}
				}}))
			return mcpserver.HTTPHandler(server, &mcpserver.HTTPOptions{Stateless: true})
		}
		h1, h2 := replica(), replica()
		gone := make(chan struct{}) // the first replica saw the client's request end
		srv1 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Watch") != "" {
				go func() { <-r.Context().Done(); close(gone) }()
			}
			h1.ServeHTTP(w, r)
		}))
		srv2 := httptest.NewServer(h2)
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), eventually)
			defer cancel()
			assert.NoError(t, h1.Shutdown(ctx))
			assert.NoError(t, h2.Shutdown(ctx))
			srv1.Close()
			srv2.Close()
		}()
		call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"shop-charge","arguments":{},"_meta":{"io.actionreg/idempotency-key":"k-1"}}}`

		first := newRawClient(srv1.URL)
		first.version = "2025-11-25"
		ctx, leave := context.WithCancel(context.Background())
		left := make(chan struct{})
		go func() {
			defer close(left)
			if resp, err := first.post(ctx, call, "X-Watch", "1"); err == nil {
				_ = resp.Body.Close()
			}
		}()
		<-started
		leave() // the client leaves mid-run
		<-left
		<-gone

		retry := newRawClient(srv2.URL)
		retry.version = "2025-11-25"
		answer := retry.postAsync(t, call)
		close(release)
		require.NoError(t, <-bodyCtxErr, "the body was not cancelled by its client leaving")
		body := <-answer
		assert.Contains(t, body, `{\"charged\":5}`)
		assert.NotContains(t, body, `"isError":true`)
		assert.Equal(t, int64(1), runs.Load(), "the body ran once")
		var n int
		require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM charges").Scan(&n))
		assert.Equal(t, 1, n, "the first call committed")
	})
}
