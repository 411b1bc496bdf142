package mcpserver_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
)

// A client that accepts every elicitation by itself runs nothing that
// needs confirmation unless the host opted in: by default a decision
// comes from the host's own screen, so the server asks no question and
// the client gets the receipt, on 2025-11-25 (elicitation/create) as on
// 2026-07-28 (input requests). The person then confirms on the screen.
func TestAutoAcceptingClientRunsNothingByDefault(t *testing.T) {
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			g := newGateShopWith(t, actions.GateOptions{ResourceMetadata: resourceMetadata})
			url := g.serveHTTP(t, false)
			asked := 0
			yes := func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked++
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
			}
			cs, _ := connectHTTP(t, url, "editor-token", version, yes)
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "shop-discard", Arguments: map[string]any{"item": "milk"}})
			require.NoError(t, err)
			require.True(t, res.IsError, "the receipt, as a tool error")
			assert.Empty(t, res.InputRequests, "no input request either")
			assert.Zero(t, asked, "no question asked")
			assert.Zero(t, g.discarded.Load())
			var out struct {
				Code    string `json:"code"`
				Pending struct {
					ID string `json:"id"`
				} `json:"pending"`
			}
			require.NoError(t, json.Unmarshal(mustJSON(t, res.StructuredContent), &out), "%v", res.Content)
			assert.Equal(t, "confirmation_required", out.Code)
			require.NotEmpty(t, out.Pending.ID)

			// A decision the client would bring itself is refused too.
			onMCP := &actions.Caller{Principal: "editor", Capabilities: capabilitiesOf["editor"], Surface: actions.SurfaceMCP}
			_, err = g.reg.Decide(context.Background(), actions.Decision{Change: out.Pending.ID, Confirm: true, Caller: onMCP})
			require.ErrorIs(t, err, actions.CodeForbiddenSurface)
			onScreen := &actions.Caller{Principal: "editor", Capabilities: capabilitiesOf["editor"], Surface: actions.SurfaceUI}
			_, err = g.reg.Decide(context.Background(), actions.Decision{Change: out.Pending.ID, Confirm: true, Caller: onScreen})
			require.NoError(t, err)
			assert.Equal(t, int32(1), g.discarded.Load())
		})
	}
}
