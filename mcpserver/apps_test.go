package mcpserver_test

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/mcpserver"
)

// TestConfirmViewForMCPApps: with Options.ConfirmURL, a tool whose action
// needs confirmation (and the batch tool) names the confirmation view in
// _meta.ui.resourceUri (MCP Apps, SEP-1865); the view is a
// text/html;profile=mcp-app resource that does the extension's handshake
// and opens the receipt's confirmUrl; a tool that needs none names no
// view, and without ConfirmURL nothing is added.
func TestConfirmViewForMCPApps(t *testing.T) {
	for _, withURL := range []bool{true, false} {
		reg := actions.NewRegistry(nil)
		body := func(context.Context, map[string]any, *actions.Trace) (any, error) { return "ok", nil }
		reg.MustRegister(
			actions.New(actions.Definition{ID: "shop/discard", Effect: actions.EffectDelete, NeedsConfirmation: true}, body),
			actions.New(actions.Definition{ID: "shop/count", Effect: actions.EffectRead}, body),
		)
		opts := &mcpserver.Options{Batch: &mcpserver.BatchTool{}}
		if withURL {
			opts.ConfirmURL = func(id string) string { return "https://host.example/changes/" + id }
		}
		server := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "v1"}, nil)
		require.NoError(t, mcpserver.AddTools(server, reg, opts))
		ctx := context.Background()
		cs := inMemoryClient(t, server)
		list, err := cs.ListTools(ctx, nil)
		require.NoError(t, err)
		views := map[string]any{}
		for _, tool := range list.Tools {
			if ui, ok := tool.Meta["ui"].(map[string]any); ok {
				views[tool.Name] = ui["resourceUri"]
			}
		}
		if !withURL {
			assert.Empty(t, views, "no screen to open: no view")
			continue
		}
		assert.Equal(t, map[string]any{"shop-discard": mcpserver.ConfirmViewURI, "run_batch": mcpserver.ConfirmViewURI}, views)
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: mcpserver.ConfirmViewURI})
		require.NoError(t, err)
		require.Len(t, res.Contents, 1)
		c := res.Contents[0]
		assert.Equal(t, "text/html;profile=mcp-app", c.MIMEType)
		for _, want := range []string{"<!DOCTYPE html>", `"ui/initialize"`, `"ui/notifications/initialized"`, `"ui/notifications/tool-result"`, `"ui/open-link"`, "confirmUrl"} {
			assert.True(t, strings.Contains(c.Text, want), "the view holds %s", want)
		}
	}
}
