package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/mcpserver"
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

// helpdeskServer serves tickets/delete: a delete whose held calls the
// proposer may decide from mcp (opted in per action) unless fourEyes,
// with a default the client does not send and the host's description.
func helpdeskServer(t *testing.T, fourEyes bool, ran *atomic.Int32) *mcp.Server {
	t.Helper()
	a := &actions.Approval{Surfaces: []actions.Surface{actions.SurfaceUI, actions.SurfaceMCP},
		Describe: func(_ context.Context, c actions.CheckedCall) (string, error) {
			return fmt.Sprintf("Ticket #%v, Printer on fire, 3 comments.", c.Params["id"]), nil
		}}
	if fourEyes {
		a.Proposer = actions.ProposerNever
	}
	reg := actions.NewRegistry(&actions.Options{Gate: &actions.GateOptions{}})
	reg.MustRegister(actions.New(actions.Definition{ID: "tickets/delete", Title: "Delete a ticket", Effect: actions.EffectDelete,
		NeedsConfirmation: true, Approval: a,
		Parameters: `{"type":"object","properties":{"id":{"type":"integer"},"note":{"type":"string","default":"no note"}},"required":["id"]}`},
		func(context.Context, map[string]any, *actions.Trace) (any, error) { ran.Add(1); return "deleted", nil }))
	server := mcp.NewServer(&mcp.Implementation{Name: "helpdesk", Version: "v1"}, nil)
	require.NoError(t, mcpserver.AddTools(server, reg, &mcpserver.Options{Caller: func(context.Context, *auth.TokenInfo, http.Header) *actions.Caller {
		return &actions.Caller{Principal: "agent"}
	}}))
	return server
}

func elicitingClient(t *testing.T, server *mcp.Server, asked *[]string) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := server.Connect(ctx, st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })
	yes := func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		*asked = append(*asked, req.Params.Message)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v1"}, &mcp.ClientOptions{ElicitationHandler: yes}).Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// The question shows the call as it will run (the default filled in) and
// the host's description of it.
func TestElicitationShowsWhatRuns(t *testing.T) {
	var ran atomic.Int32
	var asked []string
	cs := elicitingClient(t, helpdeskServer(t, false, &ran), &asked)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "tickets-delete", Arguments: map[string]any{"id": 2}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	require.Len(t, asked, 1)
	assert.Equal(t, `Run Delete a ticket (tickets-delete) with {"id":2,"note":"no note"}? Ticket #2, Printer on fire, 3 comments. Nothing runs unless you accept.`, asked[0])
	assert.Equal(t, int32(1), ran.Load())
}

// Four eyes: even where mcp may decide, the proposer is not asked.
func TestElicitationNeverAsksTheProposerUnderFourEyes(t *testing.T) {
	var ran atomic.Int32
	var asked []string
	cs := elicitingClient(t, helpdeskServer(t, true, &ran), &asked)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "tickets-delete", Arguments: map[string]any{"id": 2}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	assert.Empty(t, asked)
	assert.Zero(t, ran.Load())
}
