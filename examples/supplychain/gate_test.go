package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/mcpserver"
)

type bearer string

func (b bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(req)
}

func gatedServer(t *testing.T) (string, *actions.Registry) {
	t.Helper()
	model, reg, err := setup()
	require.NoError(t, err)
	t.Cleanup(func() { _ = model.Close() })
	server, err := newServer(model, reg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	mux := http.NewServeMux()
	protect(mux, mcpserver.HTTPHandler(server, nil), reg)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts.URL, reg
}

func connectAs(t *testing.T, url, token string) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "gate-test", Version: "v0"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url + "/mcp", HTTPClient: &http.Client{Transport: bearer(token)}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// heldAnswer is the structuredContent of a held call's tool result.
type heldAnswer struct {
	Code    codes.Code       `json:"code"`
	Pending *actions.Receipt `json:"pending"`
}

// receiptOf reads the receipt of a held call's tool result.
func receiptOf(t *testing.T, res *mcp.CallToolResult) heldAnswer {
	t.Helper()
	require.True(t, res.IsError)
	text, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var out heldAnswer
	require.NoError(t, json.Unmarshal(text, &out), "%s", text)
	require.Equal(t, codes.ConfirmationRequired, out.Code)
	require.NotNil(t, out.Pending, "%s", text)
	return out
}

func decide(t *testing.T, url, token, id, decision string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/pending/"+id+"/"+decision, nil)
	require.NoError(t, err)
	res, err := (&http.Client{Transport: bearer(token)}).Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(body, &out), "%d %s", res.StatusCode, body)
	return res.StatusCode, out
}

func TestViewerAndEditor(t *testing.T) {
	url, _ := gatedServer(t)
	viewer := connectAs(t, url, "viewer-demo-token")
	editor := connectAs(t, url, "editor-demo-token")
	ctx := context.Background()

	names := func(cs *mcp.ClientSession) []string {
		list, err := cs.ListTools(ctx, nil)
		require.NoError(t, err)
		var out []string
		for _, tl := range list.Tools {
			out = append(out, tl.Name)
		}
		return out
	}
	assert.Equal(t, []string{"carbon-total_emissions", "run_batch", "supply-get_actor", "supply-list_actors"}, names(viewer),
		"the batch tool is listed to both: each of its steps is gated")
	assert.Equal(t, servedTools, names(editor))

	_, err := viewer.CallTool(ctx, &mcp.CallToolParams{Name: "supply-create_actor", Arguments: map[string]any{"id": "x", "display_name": "X"}})
	require.Error(t, err, "a viewer cannot tell a write from a tool that does not exist")
	assert.Contains(t, err.Error(), "unknown tool")

	// The editor's delete is held; the client has no elicitation, so it
	// gets the receipt, and the person confirms on the host's endpoint.
	res, err := editor.CallTool(ctx, &mcp.CallToolParams{Name: "supply-delete_actor", Arguments: map[string]any{"actor": "Dépôt du port"}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	// delete_actor is typed, its tool has an output schema; the receipt
	// is structured data all the same (its listed output schema admits
	// a refusal), so a client needs no prose to find the change's id.
	text := res.Content[0].(*mcp.TextContent).Text
	require.Contains(t, text, "refused: "+string(codes.ConfirmationRequired))
	held := receiptOf(t, res)
	require.NotEmpty(t, held.Pending.ID)
	assert.Contains(t, text, "pending change: "+held.Pending.ID, "the text names the change too")

	// The editor's token with the read scope only confirms nothing, and
	// rejects nothing: 403 with the scope challenge, as over MCP.
	for _, decision := range []string{"confirm", "reject"} {
		status, out := decide(t, url, "editor-read-demo-token", held.Pending.ID, decision)
		assert.Equal(t, http.StatusForbidden, status, "%s: %v", decision, out)
		assert.Equal(t, "insufficient_scope", out["code"], decision)
	}
	status, out := decide(t, url, "viewer-demo-token", held.Pending.ID, "confirm")
	assert.Equal(t, http.StatusConflict, status, "only the person who proposed it confirms")
	assert.Equal(t, "unknown_change", out["code"])
	status, out = decide(t, url, "editor-demo-token", held.Pending.ID, "confirm")
	require.Equal(t, http.StatusOK, status, "%v", out)
	assert.Equal(t, "done", out["outcome"])
	status, _ = decide(t, url, "editor-demo-token", held.Pending.ID, "confirm")
	assert.Equal(t, http.StatusConflict, status, "a change runs once")

	res, err = editor.CallTool(ctx, &mcp.CallToolParams{Name: "supply-get_actor", Arguments: map[string]any{"actor": "Dépôt du port"}})
	require.NoError(t, err)
	assert.True(t, res.IsError, "the actor is gone")
}

func TestReadTokenGetsScopeChallenge(t *testing.T) {
	url, _ := gatedServer(t)
	// The editor with a token of the read scope only: every check before
	// the scope passes, so the answer is the challenge.
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"supply-create_actor","arguments":{}}}`
	req, err := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := (&http.Client{Transport: bearer("editor-read-demo-token")}).Do(req)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusForbidden, res.StatusCode)
	assert.Equal(t, `Bearer error="insufficient_scope", scope="mcp:read mcp:write"`, res.Header.Get("WWW-Authenticate"))
}
