package mcpserver_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/mcpserver"
)

// These tests hold the fixes of the serving's hardening: each
// failed before its fix.

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

// TestHardenLargeArgumentsSaySize (item 15): arguments under the HTTP
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

// TestHardenScopeChallengeReadsWhatRuns (item 7): a read-scope token's
// write hidden where the challenge used to not look (after the first JSON
// value, which the SDK runs whatever follows it; in a step of the batch
// tool) gets the 403 and its challenge, and nothing runs. A read and a
// write together are challenged for both scopes at once.
func TestHardenScopeChallengeReadsWhatRuns(t *testing.T) {
	g := newGateShop(t)
	url := g.serveRaw(t, false)
	c := rawAs(t, url, "editor-read-token")
	restock := callParams(`{"name":"shop-restock","arguments":{"item":"x","count":1}}`)
	stepRestock := `{"call":"shop/restock","with":{"item":"x","count":1}}`
	cases := map[string]string{
		"trailing bytes":    restock + ` x`,
		"trailing garbage":  restock + `}]`,
		"second value":      restock + callParams(`{"name":"shop-stock"}`),
		"batch then bytes":  `[` + restock + `] x`,
		"batch tool step":   callParams(`{"name":"run_batch","arguments":{"commands":[` + stepRestock + `]}}`),
		"batch tool, later": callParams(`{"name":"run_batch","arguments":{"commands":[{"call":"shop/stock"},` + stepRestock + `]}}`),
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			header := []string{}
			if strings.HasPrefix(body, "[") {
				header = []string{"MCP-Protocol-Version", "2025-03-26"}
			}
			resp, err := c.post(context.Background(), body, header...)
			require.NoError(t, err)
			text := readAll(t, resp)
			assert.Equal(t, http.StatusForbidden, resp.StatusCode, "%s", text)
			assert.Contains(t, resp.Header.Get("WWW-Authenticate"), `error="insufficient_scope"`)
		})
	}
	assert.Zero(t, g.restocked.Load(), "no write ran")

	t.Run("every scope in one challenge", func(t *testing.T) {
		c := rawAs(t, url, "no-scope-token")
		resp, err := c.post(context.Background(), `[`+callParams(`{"name":"shop-stock"}`)+`,`+
			strings.Replace(restock, `"id":9`, `"id":10`, 1)+`]`, "MCP-Protocol-Version", "2025-03-26")
		require.NoError(t, err)
		readAll(t, resp)
		assert.Equal(t, http.StatusForbidden, resp.StatusCode)
		assert.Contains(t, resp.Header.Get("WWW-Authenticate"), `scope="mcp:read mcp:write"`)
	})
}

// TestHardenToolsListPagesPerCaller (item 6): with a small page size,
// the pages a caller gets hold only its tools, full but for the last,
// and no cursor decodes to (or contains) a tool it may not see; the pages
// together are its whole list, each once. A cursor the server did not
// give is invalid params.
func TestHardenToolsListPagesPerCaller(t *testing.T) {
	g := newGateShop(t)
	for _, id := range []string{"shop/a_write", "shop/b_write", "shop/c_write", "shop/d_write"} {
		g.reg.MustRegister(actions.New(actions.Definition{ID: id, Effect: actions.EffectWrite, Capability: "stock.write"},
			func(context.Context, map[string]any, *actions.Trace) (any, error) { return nil, nil }))
	}
	for _, id := range []string{"shop/e_read", "shop/f_read", "shop/g_read"} {
		g.reg.MustRegister(actions.New(actions.Definition{ID: id, Effect: actions.EffectRead, Capability: "stock.read"},
			func(context.Context, map[string]any, *actions.Trace) (any, error) { return nil, nil }))
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "v0"}, &mcp.ServerOptions{PageSize: 2})
	require.NoError(t, mcpserver.AddTools(server, g.reg, g.options()))
	handler := auth.RequireBearerToken(verify, nil)(mcpserver.HTTPHandler(server, nil))
	ts := httptest.NewServer(handler)
	t.Cleanup(ts.Close)

	list := func(t *testing.T, token string) (names []string, pages [][]string, cursors []string) {
		cs, _ := connectHTTP(t, ts.URL, token, "2025-11-25", nil)
		cursor := ""
		for range 20 {
			res, err := cs.ListTools(context.Background(), &mcp.ListToolsParams{Cursor: cursor})
			require.NoError(t, err)
			var page []string
			for _, tool := range res.Tools {
				page = append(page, tool.Name)
			}
			names, pages = append(names, page...), append(pages, page)
			if res.NextCursor == "" {
				return names, pages, cursors
			}
			cursor = res.NextCursor
			cursors = append(cursors, cursor)
		}
		t.Fatal("the pages never ended")
		return
	}
	names, pages, cursors := list(t, "viewer-token")
	assert.Equal(t, []string{"shop-e_read", "shop-f_read", "shop-g_read", "shop-stock"}, names, "the viewer's tools, each once")
	assert.Equal(t, [][]string{{"shop-e_read", "shop-f_read"}, {"shop-g_read", "shop-stock"}}, pages, "full pages")
	hidden := []string{"write", "restock", "discard", "tenants"}
	for _, c := range cursors {
		text := c // and what it decodes to, whatever the encoding
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
			if b, err := enc.DecodeString(strings.TrimPrefix(c, "v1.")); err == nil {
				text += " " + string(b)
			}
			if b, err := enc.DecodeString(c); err == nil {
				text += " " + string(b)
			}
		}
		for _, h := range hidden {
			assert.NotContains(t, text, h, "a cursor names a hidden tool")
		}
	}

	names, _, _ = list(t, "editor-token")
	assert.Equal(t, []string{"shop-a_write", "shop-b_write", "shop-c_write", "shop-d_write", "shop-discard",
		"shop-e_read", "shop-f_read", "shop-g_read", "shop-restock", "shop-stock"}, names, "the editor's tools, each once")

	cs, _ := connectHTTP(t, ts.URL, "viewer-token", "2025-11-25", nil)
	_, err := cs.ListTools(context.Background(), &mcp.ListToolsParams{Cursor: "not-a-cursor"})
	var je *jsonrpc.Error
	require.ErrorAs(t, err, &je)
	assert.Equal(t, int64(jsonrpc.CodeInvalidParams), je.Code)
}

// TestHardenShutdownAnswersCutCalls (item 10): calls cut by Shutdown are
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
	w.awaitCancelled(t, sessions*perSession, 10*time.Second, mcpserver.ErrShuttingDown)
}

// TestHardenServerWideCallBound (item 9): the calls in flight of all
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
