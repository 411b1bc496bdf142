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
