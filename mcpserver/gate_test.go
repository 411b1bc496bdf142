package mcpserver_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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

func toolNames(t *testing.T, cs *mcp.ClientSession) ([]string, *mcp.ListToolsResult) {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names, res
}

func TestGateToolsListPerToken(t *testing.T) {
	g := newGateShop(t)
	url := g.serveHTTP(t, false)
	viewer, _ := connectHTTP(t, url, "viewer-token", "2025-11-25", nil)
	editor, _ := connectHTTP(t, url, "editor-token", "2025-11-25", nil)

	names, res := toolNames(t, viewer)
	assert.Equal(t, []string{"shop-stock"}, names, "a viewer sees what it may call")
	assert.Equal(t, "private", res.CacheScope, "a list that varies by authorization is private")
	names, _ = toolNames(t, editor)
	assert.Equal(t, []string{"shop-discard", "shop-restock", "shop-stock"}, names,
		"no alias, no action touching protected personal data")

	_, res = toolNames(t, editor)
	for _, tool := range res.Tools {
		if tool.Name == "shop-discard" {
			assert.Equal(t, "It may refuse with: not_in_stock (retry after changing the call).", tool.Description)
			assert.True(t, *tool.Annotations.DestructiveHint)
			assert.False(t, *tool.Annotations.OpenWorldHint)
		}
		if tool.Name == "shop-stock" {
			assert.True(t, tool.Annotations.IdempotentHint)
		}
	}
}

func TestGateScopeChallengeOverHTTP(t *testing.T) {
	g := newGateShop(t)
	url := g.serveHTTP(t, false)
	cs, rec := connectHTTP(t, url, "editor-read-token", "2025-11-25", nil)

	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "shop-restock", Arguments: map[string]any{"item": marker, "count": 1}})
	require.Error(t, err, "the call is refused at the HTTP layer")
	forbidden := rec.forbidden()
	require.Len(t, forbidden, 1, "one HTTP 403")
	assert.Equal(t, `Bearer error="insufficient_scope", scope="mcp:read mcp:write", resource_metadata="`+resourceMetadata+`"`,
		forbidden[0].Header.Get("WWW-Authenticate"))
	assert.Equal(t, int32(0), g.restocked.Load())

	// The SDK client ends its session on a 403; a new one with the same
	// token reads (the read scope suffices) and is never challenged.
	cs, rec = connectHTTP(t, url, "editor-read-token", "2025-11-25", nil)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "shop-stock"})
	require.NoError(t, err)
	assert.False(t, res.IsError)
	assert.Empty(t, rec.forbidden())

	// After stepping up to the scopes the challenge named, the write runs.
	cs, rec = connectHTTP(t, url, "editor-token", "2025-11-25", nil)
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "shop-restock", Arguments: map[string]any{"item": "apples", "count": 1}})
	require.NoError(t, err)
	assert.False(t, res.IsError)
	assert.Empty(t, rec.forbidden())
	assert.Equal(t, int32(1), g.restocked.Load())
}

func TestGateReceiptThenConfirm(t *testing.T) {
	g := newGateShop(t)
	url := g.serveHTTP(t, false)
	cs, _ := connectHTTP(t, url, "editor-token", "2025-11-25", nil)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "shop-discard", Arguments: map[string]any{"item": "milk"}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	var out struct {
		Code    codes.Code       `json:"code"`
		Retry   codes.Retry      `json:"retry"`
		Pending *actions.Receipt `json:"pending"`
	}
	require.NoError(t, json.Unmarshal(mustJSON(t, res.StructuredContent), &out))
	assert.Equal(t, codes.ConfirmationRequired, out.Code)
	assert.Equal(t, codes.RetryNever, out.Retry)
	require.NotNil(t, out.Pending)
	assert.Contains(t, textOf(t, res), "pending change: "+out.Pending.ID)
	assert.Equal(t, int32(0), g.discarded.Load())

	// Later, on the host's own screen, the same person confirms.
	person := &identity.Caller{Principal: "editor", Capabilities: capabilitiesOf["editor"], Surface: identity.SurfaceUI}
	confirmed, err := g.reg.Decide(context.Background(), actions.Decision{Change: out.Pending.ID, Confirm: true, Caller: person})
	require.NoError(t, err)
	assert.Equal(t, `{"discarded":"milk"}`, confirmed.Entry().Result)
	assert.Equal(t, int32(1), g.discarded.Load())
	_, err = g.reg.Decide(context.Background(), actions.Decision{Change: out.Pending.ID, Confirm: true, Caller: person})
	assert.ErrorIs(t, err, codes.UnknownChange)
	assert.Equal(t, int32(1), g.discarded.Load())
}

// TestAttackScopeChallengeNotBypassed: a token with the read scope alone
// calls a write in shapes meant to slip past the HTTP scope challenge (a
// second "Name" member that Go's decoder folds, a JSON-RPC batch under an
// old protocol version, the deprecated alias): each gets the 403 and its
// challenge, and nothing runs.
func TestAttackScopeChallengeNotBypassed(t *testing.T) {
	g := newGateShop(t)
	url := g.serveRaw(t, false)
	c := rawAs(t, url, "editor-read-token")
	restock := `{"name":"shop-restock","arguments":{"item":"x","count":1}`
	cases := map[string]struct {
		body    string
		version string
	}{
		"plain":           {body: callParams(restock + `}`)},
		"folded member":   {body: callParams(restock + `,"Name":"shop-stock"}`)},
		"folded method":   {body: `{"jsonrpc":"2.0","id":9,"method":"tools/call","Method":"ping","params":` + restock + `}}`},
		"batch":           {body: `[` + callParams(restock+`}`) + `]`, version: "2025-03-26"},
		"batch, read too": {body: `[` + callParams(`{"name":"shop-stock"}`) + `,` + strings.Replace(callParams(restock+`}`), `"id":9`, `"id":10`, 1) + `]`, version: "2025-03-26"},
		"alias":           {body: callParams(`{"name":"shop-throw_away","arguments":{"item":"x"}}`)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			header := []string{}
			if tc.version != "" {
				header = []string{"MCP-Protocol-Version", tc.version}
			}
			resp, err := c.post(context.Background(), tc.body, header...)
			require.NoError(t, err)
			body := readAll(t, resp)
			assert.Equal(t, http.StatusForbidden, resp.StatusCode, "%s", body)
			assert.Contains(t, resp.Header.Get("WWW-Authenticate"), `error="insufficient_scope"`)
		})
	}
	assert.Zero(t, g.restocked.Load())
	assert.Zero(t, g.discarded.Load())
}

// TestHardenScopeChallengeReadsWhatRuns: a read-scope token's
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

// TestHardenToolsListPagesPerCaller: with a small page size,
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
