package programs_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/internal/dbtest"
	"github.com/actionreg/actions/mcpserver"
	"github.com/actionreg/actions/programs"
)

// mcpClient serves reg over MCP (mcpserver, in memory) to a client of
// the official SDK, every request made as caller.
func mcpClient(t *testing.T, reg *actions.Registry, caller *identity.Caller) *mcp.ClientSession {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "stock", Version: "v0"}, nil)
	require.NoError(t, mcpserver.AddTools(server, reg, &mcpserver.Options{
		Caller: func(context.Context, *auth.TokenInfo, http.Header) *identity.Caller { return caller },
	}))
	ctx := context.Background()
	serverT, clientT := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, serverT, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "v0"}, nil).Connect(ctx, clientT, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// text is a tool result's text content.
func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestRunProgramOverMCP: the program action is an ordinary tool, listed
// and called over MCP with no code of its own there; each call the
// program makes is gated as the client's caller, and the program is
// kept whole or not at all.
func TestRunProgramOverMCP(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		reg, count := stockOn(t, db)
		reg.MustRegister(programs.Action(reg, nil))
		ctx := context.Background()
		tool := actions.ToolName(programs.DefaultID)
		call := func(cs *mcp.ClientSession, src string) *mcp.CallToolResult {
			t.Helper()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"program": src}})
			require.NoError(t, err)
			return res
		}

		stocker := mcpClient(t, reg, &identity.Caller{Principal: "sam", Capabilities: []string{"stock.read", "stock.write"}})
		list, err := stocker.ListTools(ctx, nil)
		require.NoError(t, err)
		var names []string
		for _, tl := range list.Tools {
			names = append(names, tl.Name)
		}
		assert.Contains(t, names, tool)

		// Done whole: both rows kept.
		res := call(stocker, `for (const item of ["pear", "plum"]) await stock.add({item}); return await stock.count();`)
		require.False(t, res.IsError, text(res))
		assert.Equal(t, "2", text(res))
		assert.Equal(t, 2, count())

		// One call refused: the program is refused whole, nothing kept.
		res = call(stocker, `await stock.add({item: "fig"}); await stock.add({item: "a name far too long for the schema"});`)
		assert.True(t, res.IsError)
		assert.Contains(t, text(res), string(programs.CodeFailed))
		assert.Contains(t, text(res), "invalid_parameters")
		assert.Equal(t, 2, count())

		// A reader's program is gated call by call: the write is not
		// offered, and reaching it by hand is refused as unknown.
		reader := mcpClient(t, reg, &identity.Caller{Principal: "rita", Capabilities: []string{"stock.read"}})
		res = call(reader, `return [typeof stock.add, await stock.count()];`)
		require.False(t, res.IsError, text(res))
		assert.Equal(t, `["undefined",2]`, text(res))
		res = call(reader, `const r = JSON.parse(__call("stock/add", '{"item":"kiwi"}')); return r.refused.code;`)
		assert.True(t, res.IsError)
		assert.Contains(t, text(res), "unknown_action")
		assert.NotContains(t, text(res), "stock.write")
		assert.Equal(t, 2, count())

		// A bound reached is a tool error too, the host unharmed.
		res = call(stocker, `while (true) {}`)
		assert.True(t, res.IsError)
		assert.Contains(t, text(res), string(programs.CodeTimeLimit))
	})
}
