package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/declare"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/mcpserver"
)

// searchRegistry has n generated actions inv/item<i> (a few words in
// each description), plus three that only some callers may see:
// vault/open_safe (capability vault.open), vault/audit_safe (offered on
// ui only) and vault/list_safes (open to all).
func searchRegistry(t testing.TB, n int) *actions.Registry {
	reg := actions.NewRegistry(nil)
	words := []string{"stock", "invoice", "shipment", "supplier", "pallet"}
	echo := func(_ context.Context, p map[string]any, _ *actions.Trace) (any, error) { return p, nil }
	for i := range n {
		reg.MustRegister(actions.New(actions.Definition{
			ID:          fmt.Sprintf("inv/item%03d", i),
			Title:       fmt.Sprintf("Item %d", i),
			Description: fmt.Sprintf("Handles the %s of item %d.", words[i%len(words)], i),
			Effect:      actions.EffectRead,
			Parameters:  `{"type":"object","properties":{"quantity":{"type":"integer"}}}`,
		}, echo))
	}
	reg.MustRegister(
		actions.New(actions.Definition{ID: "vault/open_safe", Title: "Open the safe", Capability: "vault.open",
			Description: "Opens the safe.", Parameters: `{"type":"object","properties":{"combination":{"type":"string"}}}`}, echo),
		actions.New(actions.Definition{ID: "vault/audit_safe", Title: "Audit the safe", Surfaces: []identity.Surface{identity.SurfaceUI},
			Description: "Audits the safe."}, echo),
		actions.New(actions.Definition{ID: "vault/list_safes", Title: "List the safes", Effect: actions.EffectRead,
			Description: "Lists the safes."}, echo),
	)
	return reg
}

// searchClient connects an SDK client to reg served with tool search,
// as a caller holding caps.
func searchClient(t testing.TB, reg *actions.Registry, caps []string, pinned ...string) *mcp.ClientSession {
	server := mcp.NewServer(&mcp.Implementation{Name: "inv", Version: "v0"}, nil)
	require.NoError(t, mcpserver.AddTools(server, reg, &mcpserver.Options{
		Caller: func(context.Context, *auth.TokenInfo, http.Header) *identity.Caller {
			return &identity.Caller{Principal: "ann", Capabilities: caps}
		},
		ToolSearch: &mcpserver.ToolSearch{Pinned: pinned},
	}))
	ctx := context.Background()
	serverT, clientT := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, serverT, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v0"}, nil).Connect(ctx, clientT, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// found is what a tool_search answer names, in order.
func found(t *testing.T, cs *mcp.ClientSession, args map[string]any) []string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "tool_search", Arguments: args})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	var out struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	text, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(text, &out))
	names := make([]string, len(out.Tools))
	for i, tool := range out.Tools {
		names[i] = tool.Name
		assert.NotEmpty(t, tool.InputSchema, "a found tool comes with what it takes")
	}
	return names
}

// 500 actions: the list is small, and a tool is found and called in two
// round trips.
func TestToolSearchLargeRegistry(t *testing.T) {
	reg := searchRegistry(t, 500)
	cs := searchClient(t, reg, nil, "inv/item000")
	ctx := context.Background()

	list, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	assert.Equal(t, []string{"inv-item000", "tool_describe", "tool_search"}, names, "pinned by id, and the two search tools")
	text, err := json.Marshal(list)
	require.NoError(t, err)
	assert.Less(t, len(text), 8<<10, "tools/list of 503 actions stays under 8 KB")

	// Round trip 1: find. The name weighs more than the description.
	got := found(t, cs, map[string]any{"query": "item 42 stock", "limit": 3})
	require.NotEmpty(t, got)
	assert.Equal(t, "inv-item042", got[0], "the name's words and its description's rank it first")
	assert.Len(t, got, 3)
	// Round trip 2: call what was found, though it was never listed.
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: got[0], Arguments: map[string]any{"quantity": 2}})
	require.NoError(t, err)
	assert.False(t, res.IsError)
	assert.Equal(t, map[string]any{"quantity": float64(2)}, res.StructuredContent)

	// Parameter names are searched.
	assert.Contains(t, found(t, cs, map[string]any{"query": "quantity"}), "inv-item000")
	// The default bound.
	assert.Len(t, found(t, cs, map[string]any{"query": "item"}), 8)

	// Bad arguments are a tool error that quotes nothing.
	for _, args := range []map[string]any{{}, {"query": ""}, {"query": "x", "limit": 51}, {"query": string(make([]byte, 513))}} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tool_search", Arguments: args})
		require.NoError(t, err)
		assert.True(t, res.IsError, "%v", args)
	}
}

// A caller never finds, nor has described, a tool it may not call: by
// capability or by surface.
func TestToolSearchHidesWhatTheCallerMayNotSee(t *testing.T) {
	reg := searchRegistry(t, 5)
	ctx := context.Background()
	describe := func(cs *mcp.ClientSession, name string) *mcp.CallToolResult {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tool_describe", Arguments: map[string]any{"name": name}})
		require.NoError(t, err)
		return res
	}

	plain := searchClient(t, reg, nil)
	assert.Equal(t, []string{"vault-list_safes"}, found(t, plain, map[string]any{"query": "safe"}),
		"neither the capability-gated tool nor the ui-only one is found")
	assert.Empty(t, found(t, plain, map[string]any{"query": "combination"}), "nor hinted by a parameter's name")
	missing := describe(plain, "vault-nothing")
	require.True(t, missing.IsError)
	for _, hidden := range []string{"vault-open_safe", "vault-audit_safe"} {
		res := describe(plain, hidden)
		assert.True(t, res.IsError, hidden)
		assert.Equal(t, missing.Content, res.Content, "%s: answered as a missing tool", hidden)
		call, err := plain.CallTool(ctx, &mcp.CallToolParams{Name: hidden})
		assert.Error(t, err, "%s: a call by name is refused as an unknown tool", hidden)
		assert.Nil(t, call)
	}

	holder := searchClient(t, reg, []string{"vault.open"})
	assert.Equal(t, []string{"vault-open_safe", "vault-list_safes"}, found(t, holder, map[string]any{"query": "safe"}),
		"the capability's holder finds its tool; the ui-only one stays hidden on mcp")
	res := describe(holder, "vault-open_safe")
	require.False(t, res.IsError)
	assert.Contains(t, fmt.Sprint(res.StructuredContent), "combination")
	assert.True(t, describe(holder, "vault-audit_safe").IsError)
}

// tool_describe gives the tool's TypeScript declaration beside its
// definition: as a field of the structured content and as a second text
// block, the same text declare.TypeScript writes for that tool.
func TestToolDescribeDeclaration(t *testing.T) {
	reg := searchRegistry(t, 3)
	cs := searchClient(t, reg, []string{"vault.open"})
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "tool_describe", Arguments: map[string]any{"name": "vault-open_safe"}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.Len(t, res.Content, 2)
	decl := res.Content[1].(*mcp.TextContent).Text
	assert.Equal(t, decl, res.StructuredContent.(map[string]any)["declaration"])

	tools, err := reg.Tools(&actions.ToolOptions{Caller: &identity.Caller{Surface: identity.SurfaceMCP, Capabilities: []string{"vault.open"}}})
	require.NoError(t, err)
	for _, tool := range tools {
		if tool.Name == "vault-open_safe" {
			want, err := declare.TypeScript([]actions.Tool{tool})
			require.NoError(t, err)
			assert.Equal(t, want, decl)
		}
	}
	assert.Contains(t, decl, "declare const vault: {")
	assert.Contains(t, decl, "open_safe(params?: vault.OpenSafeParams): Promise<unknown>;")
	assert.Contains(t, decl, "combination?: string;")
	assert.NotContains(t, decl, "list_safes", "one tool's declaration only")
}
