package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/mcpserver"
)

// These tests attack the gate as a hostile client would, over raw
// streamable HTTP: a caller without rights must not tell a tool it may not
// call from one that does not exist, whatever it sends.

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

// exchange sends body and returns the status and the JSON-RPC answer of
// id 9 (the data line of an SSE stream, or the JSON body), with the whole
// text received.
func exchange(t *testing.T, c *rawClient, body string) (int, string, string) {
	t.Helper()
	resp, err := c.post(context.Background(), body)
	require.NoError(t, err)
	var head strings.Builder
	for k, vs := range resp.Header {
		for _, v := range vs {
			fmt.Fprintf(&head, "%s: %s\n", k, v)
		}
	}
	text := readAll(t, resp)
	answer := ""
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimPrefix(line, "data: ")
		if strings.HasPrefix(line, "{") && strings.Contains(line, `"id":9`) {
			answer = line
		}
	}
	return resp.StatusCode, answer, head.String() + text
}

func callParams(params string) string {
	return `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":` + params + `}`
}

// TestAttackForbiddenReadsAsUnknown: a viewer calls tools it may not see
// (a write it lacks the capability for, the deprecated alias of a delete,
// an action with protected data) in every shape of call a client can send:
// each answer is exactly that of a tool that does not exist.
func TestAttackForbiddenReadsAsUnknown(t *testing.T) {
	shapes := map[string]string{
		"plain":             `{"name":%q,"arguments":{}}`,
		"no arguments":      `{"name":%q}`,
		"values":            `{"name":%q,"arguments":{"item":"` + marker + `","count":"` + marker + `"}}`,
		"string arguments":  `{"name":%q,"arguments":"` + marker + `"}`,
		"array arguments":   `{"name":%q,"arguments":[1]}`,
		"request state":     `{"name":%q,"arguments":{},"requestState":"` + marker + `.00"}`,
		"input responses":   `{"name":%q,"arguments":{},"requestState":"x.y","inputResponses":{"confirm":{"action":"accept"}}}`,
		"meta":              `{"name":%q,"arguments":{},"_meta":{"progressToken":"` + marker + `"}}`,
		"task":              `{"name":%q,"arguments":{},"task":{"ttl":1000}}`,
		"null arguments":    `{"name":%q,"arguments":null}`,
		"nested arguments":  `{"name":%q,"arguments":{"a":{"b":[{"c":"` + marker + `"}]}}}`,
		"duplicate members": `{"name":%q,"arguments":{"item":"a","item":"b"}}`,
	}
	for _, stateless := range []bool{false, true} {
		t.Run(fmt.Sprintf("stateless=%v", stateless), func(t *testing.T) {
			g := newGateShop(t)
			url := g.serveRaw(t, stateless)
			c := rawAs(t, url, "viewer-token")
			for shape, params := range shapes {
				status, want, _ := exchange(t, c, callParams(fmt.Sprintf(params, "shop-nothing")))
				require.NotEmpty(t, want, "%s: the unknown tool's answer", shape)
				for _, name := range []string{"shop-restock", "shop-discard", "shop-throw_away", "shop-tenants"} {
					st, got, all := exchange(t, c, callParams(fmt.Sprintf(params, name)))
					assert.Equal(t, status, st, "%s %s: HTTP status", shape, name)
					assert.Equal(t, want, got, "%s %s: the answer of a forbidden tool is that of a missing one", shape, name)
					assert.NotContains(t, all, marker, "%s %s", shape, name)
				}
			}
			assert.Zero(t, g.restocked.Load())
			assert.Zero(t, g.discarded.Load())
		})
	}
}

// TestAttackBatchToolForbiddenReadsAsUnknown: the batch tool lists, and
// answers, as if the actions a caller may not see did not exist.
func TestAttackBatchToolForbiddenReadsAsUnknown(t *testing.T) {
	g := newGateShop(t)
	url := g.serveRaw(t, false)
	c := rawAs(t, url, "viewer-token")

	_, list, _ := exchange(t, c, `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`)
	require.Contains(t, list, "run_batch")
	for _, id := range []string{"shop/restock", "shop/discard", "shop/throw_away", "shop/tenants",
		"shop-restock", "shop-discard", "shop-throw_away", "shop-tenants"} {
		assert.NotContains(t, list, id, "the batch tool's schema names an action the viewer may not see")
	}
	assert.Contains(t, list, "shop/stock")
	assert.Contains(t, list, "shop-stock", "a step names a tool as listed")

	batch := func(calls ...string) string {
		var steps []string
		for _, call := range calls {
			steps = append(steps, fmt.Sprintf(`{"call":%q,"with":{"item":%q}}`, call, marker))
		}
		return callParams(`{"name":"run_batch","arguments":{"commands":[` + strings.Join(steps, ",") + `]}}`)
	}
	// By action id and by tool name, first or after a step the viewer
	// may call.
	for _, first := range [][]string{nil, {"shop/stock"}, {"shop-stock"}} {
		for _, unknown := range []string{"shop/nothing", "shop-nothing"} {
			_, want, _ := exchange(t, c, batch(append(first, unknown)...))
			require.NotEmpty(t, want)
			for _, id := range []string{"shop/restock", "shop/discard", "shop/throw_away", "shop/tenants",
				"shop-restock", "shop-discard", "shop-throw_away", "shop-tenants"} {
				_, got, all := exchange(t, c, batch(append(first, id)...))
				assert.Equal(t, want, got, "a batch step calling %s after %v", id, first)
				assert.NotContains(t, all, marker)
			}
		}
	}
	assert.Zero(t, g.restocked.Load())
	assert.Zero(t, g.discarded.Load())
}

var _ = json.Valid

// TestAttackMarkersNeverEchoed: a marker in every header, tool name,
// method, member and value a client can send; no byte the client receives
// (status line, headers, body) holds it.
func TestAttackMarkersNeverEchoed(t *testing.T) {
	g := newGateShop(t)
	url := g.serveRaw(t, false)
	editor := rawAs(t, url, "editor-token")
	type attempt struct {
		name   string
		method string
		body   string
		header []string
		fresh  bool // without the session
	}
	attempts := []attempt{
		{name: "tool name", body: callParams(`{"name":"` + marker + `","arguments":{}}`)},
		{name: "tool name with a slash", body: callParams(`{"name":"shop-` + marker + `","arguments":{}}`)},
		{name: "values and keys", body: callParams(`{"name":"shop-restock","arguments":{"item":"` + marker + `","count":"` + marker + `","` + marker + `":1}}`)},
		{name: "non-object arguments", body: callParams(`{"name":"shop-restock","arguments":"` + marker + `"}`)},
		{name: "name not a string", body: callParams(`{"name":["` + marker + `"],"arguments":{}}`)},
		{name: "meta not an object", body: callParams(`{"name":"shop-stock","arguments":{},"_meta":"` + marker + `"}`)},
		{name: "request state", body: callParams(`{"name":"shop-discard","arguments":{"item":"x"},"requestState":"` + marker + `"}`)},
		{name: "method", body: `{"jsonrpc":"2.0","id":9,"method":"` + marker + `","params":{}}`},
		{name: "prompt", body: `{"jsonrpc":"2.0","id":9,"method":"prompts/get","params":{"name":"` + marker + `"}}`},
		{name: "resource", body: `{"jsonrpc":"2.0","id":9,"method":"resources/read","params":{"uri":"file:///` + marker + `"}}`},
		{name: "malformed body", body: `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"` + marker + `"`},
		{name: "not JSON", body: marker},
		{name: "batch", body: `[` + callParams(`{"name":"`+marker+`"}`) + `]`},
		{name: "protocol version header", body: callParams(`{"name":"shop-stock"}`), header: []string{"MCP-Protocol-Version", marker}},
		{name: "session header", body: callParams(`{"name":"shop-stock"}`), header: []string{"Mcp-Session-Id", marker}},
		{name: "origin header", body: callParams(`{"name":"shop-stock"}`), header: []string{"Origin", "http://" + marker + ".example"}},
		{name: "bearer token", body: callParams(`{"name":"shop-stock"}`), header: []string{"Authorization", "Bearer " + marker}},
		{name: "host header", body: callParams(`{"name":"shop-stock"}`), header: []string{"Host", marker + ".example"}},
		{name: "last event id", method: http.MethodGet, header: []string{"Last-Event-ID", marker}},
		{name: "content type", body: callParams(`{"name":"shop-stock"}`), header: []string{"Content-Type", marker}},
		{name: "initialize", fresh: true, body: `{"jsonrpc":"2.0","id":9,"method":"initialize","params":{"protocolVersion":"` + marker + `","capabilities":{},"clientInfo":{"name":"` + marker + `","version":"` + marker + `"}}}`},
	}
	for _, a := range attempts {
		t.Run(a.name, func(t *testing.T) {
			method := a.method
			if method == "" {
				method = http.MethodPost
			}
			req, err := http.NewRequest(method, url, strings.NewReader(a.body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer editor-token")
			if !a.fresh {
				req.Header.Set("Mcp-Session-Id", editor.session)
				req.Header.Set("MCP-Protocol-Version", editor.version)
			}
			for i := 0; i+1 < len(a.header); i += 2 {
				if a.header[i] == "Host" {
					req.Host = a.header[i+1]
				}
				req.Header.Set(a.header[i], a.header[i+1])
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			resp, err := http.DefaultClient.Do(req.WithContext(ctx))
			require.NoError(t, err)
			defer resp.Body.Close()
			var all strings.Builder
			fmt.Fprintf(&all, "%s\n", resp.Status)
			for k, vs := range resp.Header {
				fmt.Fprintf(&all, "%s: %s\n", k, strings.Join(vs, ", "))
			}
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20)) // a GET stream ends with ctx
			all.Write(body)
			assert.NotContains(t, all.String(), marker, "what the client received:\n%s", all.String())
		})
	}
}

// TestAttackElicitationNeverAnswered: a client that declares elicitation
// and never answers the question holds neither the call nor its pending
// change past Options.ConfirmWait: the call is answered "nothing ran",
// the change is rejected, and nothing runs.
func TestAttackElicitationNeverAnswered(t *testing.T) {
	g := newGateShop(t)
	server := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "v0.0.1"}, nil)
	opts := g.options()
	opts.ConfirmWait = 200 * time.Millisecond
	var held []string
	opts.OnError = func(_ context.Context, _ string, err error) { held = append(held, err.Error()) }
	require.NoError(t, mcpserver.AddTools(server, g.reg, opts))
	h := mcpserver.HTTPHandler(server, nil)
	ts := httptest.NewServer(auth.RequireBearerToken(verify, nil)(h))
	defer ts.Close()
	asked, gone := make(chan struct{}, 1), make(chan struct{})
	never := func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked <- struct{}{}
		select { // the person walked away
		case <-ctx.Done():
		case <-gone: // the test ends: let the client close
		}
		return nil, errors.New("gone")
	}
	cs, _ := connectHTTP(t, ts.URL, "editor-token", "2025-11-25", never)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "shop-discard", Arguments: map[string]any{"item": "milk"}})
	require.NoError(t, err, "the call is answered once the wait is over")
	<-asked
	assert.True(t, res.IsError)
	assert.Contains(t, textOf(t, res), "nothing ran")
	assert.Zero(t, g.discarded.Load())
	g.mu.Lock()
	audit := g.audits[len(g.audits)-1]
	g.mu.Unlock()
	require.NotEmpty(t, audit.PendingChange)
	_, err = g.reg.PendingChange(context.Background(), audit.PendingChange, &actions.Caller{Principal: "editor"})
	assert.ErrorIs(t, err, actions.CodeUnknownChange, "the unanswered change was rejected")
	close(gone)
	cs.Close()
	require.NoError(t, h.Shutdown(ctx))
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
