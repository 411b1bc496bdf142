package mcpserver_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/mcpserver"
	"github.com/actionreg/actions/store"
)

// TestForbiddenAnsweredAsUnknownBeforeHooks: a call of a
// tool its caller may not see is answered exactly as a call of a tool the
// server does not have, and without waiting on any hook of the host: here
// OnRecord blocks until the test has both answers, so an answer that
// waited on it would never come. The refused call is recorded afterwards,
// with the host's code.
func TestForbiddenAnsweredAsUnknownBeforeHooks(t *testing.T) {
	release := make(chan struct{})
	recorded := make(chan store.Record, 1)
	reg := actions.NewRegistry(&actions.Options{OnRecord: func(rec store.Record) {
		<-release
		recorded <- rec
	}})
	reg.MustRegister(actions.New(actions.Definition{ID: "shop/restock", Capability: "stock.write"},
		func(context.Context, map[string]any, *actions.Trace) (any, error) { return "ok", nil }))
	server := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "v1"}, nil)
	require.NoError(t, mcpserver.AddTools(server, reg, &mcpserver.Options{
		Caller: func(context.Context, *auth.TokenInfo, http.Header) *identity.Caller {
			return &identity.Caller{Principal: "mallory"} // no capability
		},
	}))
	ctx := context.Background()
	cs := inMemoryClient(t, server)

	answer := func(name string) string {
		done := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"x": "MARKER"}})
			done <- err
		}()
		select {
		case err := <-done:
			require.Error(t, err)
			return err.Error()
		case <-time.After(30 * time.Second):
			t.Fatal("the answer waited on the host's hook")
			return ""
		}
	}
	forbidden := answer("shop-restock")
	unknown := answer("shop-nothing")
	assert.Equal(t, unknown, forbidden, "a forbidden tool reads as a missing one")
	assert.NotContains(t, forbidden, "MARKER")
	close(release)
	select {
	case rec := <-recorded:
		assert.Equal(t, codes.ForbiddenCapability, rec.Entry.Error, "the host's record keeps the truth")
		assert.Equal(t, "mallory", rec.Audit.Caller.Principal)
	case <-time.After(30 * time.Second):
		t.Fatal("the concealed call was never recorded")
	}
}

// A caller who may not see a tool learns nothing from the scope check: it
// gets the unknown-tool answer, never a 403 naming scopes.
func TestGateForbiddenLooksUnknownOverHTTP(t *testing.T) {
	g := newGateShop(t)
	url := g.serveHTTP(t, false)
	cs, rec := connectHTTP(t, url, "viewer-token", "2025-11-25", nil)
	var answers []string
	for _, name := range []string{"shop-restock", "shop-nothing", "shop-tenants"} {
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{"item": marker}})
		require.Error(t, err, name)
		var werr *jsonrpc.Error
		require.ErrorAs(t, err, &werr, name)
		answers = append(answers, string(mustJSON(t, werr)))
		assert.Contains(t, err.Error(), "unknown tool: list the tools and call one of them", name)
		assert.NotContains(t, err.Error(), marker)
		assert.NotContains(t, err.Error(), "item")
	}
	assert.Equal(t, answers[1], answers[0], "a forbidden tool and a missing one give the same error, data included")
	assert.Equal(t, answers[1], answers[2])
	assert.Empty(t, rec.forbidden())
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
