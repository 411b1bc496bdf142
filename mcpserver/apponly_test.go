package mcpserver_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/mcpserver"
)

// cartRegistry has cart/show, a tool for the model, and cart/set_quantity,
// the helper its view calls (app-only).
func cartRegistry(t testing.TB) *actions.Registry {
	reg := actions.NewRegistry(nil)
	echo := func(_ context.Context, p map[string]any, _ *actions.Trace) (any, error) { return p, nil }
	reg.MustRegister(
		actions.New(actions.Definition{ID: "cart/show", Title: "Show the cart", Effect: actions.EffectRead,
			Description: "Shows the cart's quantity."}, echo),
		actions.New(actions.Definition{ID: "cart/set_quantity", Title: "Set the cart's quantity", AppOnly: true,
			Description: "Sets the cart's quantity.", Parameters: `{"type":"object","properties":{"quantity":{"type":"integer"}}}`}, echo),
	)
	return reg
}

func appClient(t testing.TB, reg *actions.Registry, search *mcpserver.ToolSearch) *mcp.ClientSession {
	server := mcp.NewServer(&mcp.Implementation{Name: "cart", Version: "v0"}, nil)
	require.NoError(t, mcpserver.AddTools(server, reg, &mcpserver.Options{
		Caller: func(context.Context, *auth.TokenInfo, http.Header) *identity.Caller {
			return &identity.Caller{Principal: "ann"}
		},
		ToolSearch: search,
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

// visibility is the tool's _meta.ui.visibility as listed, nil for none.
func visibility(t *mcp.Tool) any {
	ui, _ := t.Meta["ui"].(map[string]any)
	return ui["visibility"]
}

// TestAppOnlyToolListedForTheApp: over the wire (official SDK client), an
// app-only tool is listed with _meta.ui.visibility ["app"] and runs when
// its view calls it; a tool for the model carries no visibility; with
// tool search, the app-only tool is still listed but tool_search never
// finds it and tool_describe answers as for a missing tool.
func TestAppOnlyToolListedForTheApp(t *testing.T) {
	ctx := context.Background()
	cs := appClient(t, cartRegistry(t), nil)
	list, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	byName := map[string]*mcp.Tool{}
	for _, tl := range list.Tools {
		byName[tl.Name] = tl
	}
	require.Contains(t, byName, "cart-set_quantity")
	assert.Equal(t, []any{"app"}, visibility(byName["cart-set_quantity"]))
	assert.Nil(t, visibility(byName["cart-show"]))
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "cart-set_quantity", Arguments: map[string]any{"quantity": 3}})
	require.NoError(t, err)
	assert.False(t, res.IsError, "the view calls it")

	cs = appClient(t, cartRegistry(t), &mcpserver.ToolSearch{})
	list, err = cs.ListTools(ctx, nil)
	require.NoError(t, err)
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	assert.Contains(t, names, "cart-set_quantity", "listed for its view")
	assert.NotContains(t, names, "cart-show", "the model finds it by search")
	assert.Equal(t, []string{"cart-show"}, found(t, cs, map[string]any{"query": "cart quantity"}))
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "tool_describe", Arguments: map[string]any{"name": "cart-set_quantity"}})
	require.NoError(t, err)
	missing, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tool_describe", Arguments: map[string]any{"name": "cart-nothere"}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Equal(t, missing.Content, res.Content)
}
