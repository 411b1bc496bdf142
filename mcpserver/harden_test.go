package mcpserver_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions/mcpserver"
)

// These tests hold the fixes of issue 25 (hardening the serving): each
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
