package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/mcpserver"
	"github.com/actionreg/actions/programs"
)

// programClient serves the example host, with the program action, over
// MCP in memory to an official SDK client calling as caller.
func programClient(t *testing.T, reg *actions.Registry, caller *identity.Caller) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "supplychain", Version: "v0"}, nil)
	require.NoError(t, mcpserver.AddTools(server, reg, &mcpserver.Options{
		Caller: func(context.Context, *auth.TokenInfo, http.Header) *identity.Caller { return caller },
	}))
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "v0"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestProgramAgainstDeclarations runs testdata/program.js, the program
// scripts/tsc/check.sh type-checks against testdata/supplychain.d.ts
// with tsc --strict, on the example host over MCP: each call gated as
// the caller, the whole program one unit, refused whole when one call
// is refused.
func TestProgramAgainstDeclarations(t *testing.T) {
	ctx := context.Background()
	model, err := OpenModel(ctx, filepath.Join(t.TempDir(), "programs.db"), modelJSON, "test")
	require.NoError(t, err)
	t.Cleanup(func() { _ = model.Close() })
	reg, err := NewRegistry(model, nil)
	require.NoError(t, err)
	require.NoError(t, reg.Register(programs.Action(reg, nil)))
	src, err := os.ReadFile(filepath.Join("testdata", "program.js"))
	require.NoError(t, err)
	tool := actions.ToolName(programs.DefaultID)
	call := func(cs *mcp.ClientSession, program string) (string, bool) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"program": program}})
		require.NoError(t, err)
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String(), res.IsError
	}
	count := `return (await supply.list_actors({})).items.length;`

	viewer := programClient(t, reg, &identity.Caller{Principal: "vic", Capabilities: []string{capRead}})
	got, isErr := call(viewer, string(src))
	require.False(t, isErr, got)
	var out struct {
		Heavy     []string `json:"heavy"`
		Actors    int      `json:"actors"`
		TotalCO2T float64  `json:"total_co2_t"`
	}
	require.NoError(t, json.Unmarshal([]byte(got), &out))
	before, isErr := call(viewer, count)
	require.False(t, isErr, before)
	assert.Equal(t, before, strings.TrimSpace(jsonInt(out.Actors)), "total_emissions counts every actor the list gives")
	assert.NotEmpty(t, out.Heavy)
	assert.Positive(t, out.TotalCO2T)

	// Gated per call: the viewer may not create; reaching the write by
	// hand is refused as an unknown action, and the program whole.
	got, isErr = call(viewer, `return typeof supply.create_actor;`)
	require.False(t, isErr, got)
	assert.Equal(t, `"undefined"`, got)
	got, isErr = call(viewer, `JSON.parse(__call("supply/create_actor", '{"id":"mill_9","display_name":"Mill 9"}'));`)
	assert.True(t, isErr)
	assert.Contains(t, got, "unknown_action")

	// One unit: an editor's program that creates an actor, then makes a
	// call refused, keeps nothing.
	editor := programClient(t, reg, &identity.Caller{Principal: "eve", Capabilities: []string{capRead, capWrite}})
	got, isErr = call(editor, `
		await supply.create_actor({id: "mill_9", display_name: "Mill 9"});
		await supply.get_actor({actor: "no such actor"});
	`)
	assert.True(t, isErr)
	assert.Contains(t, got, string(programs.CodeFailed))
	after, isErr := call(viewer, count)
	require.False(t, isErr, after)
	assert.Equal(t, before, after, "the created actor is not kept")

	// Done whole: kept.
	got, isErr = call(editor, `return (await supply.create_actor({id: "mill_9", display_name: "Mill 9"})).id;`)
	require.False(t, isErr, got)
	assert.Equal(t, `"mill_9"`, got)
	after, _ = call(viewer, count)
	assert.NotEqual(t, before, after)
}

func jsonInt(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
