package mcpserver_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/mcpserver"
)

// A missing server, transport or runner is the host's mistake, told
// where it is made: Serve returns an error, as AddTools does, and the
// constructors of handlers panic with a message naming what is missing
// (as http.Handle does for a nil handler), instead of a nil dereference
// on the first request.
func TestMissingServerOrRegistry(t *testing.T) {
	ctx := context.Background()
	s := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "v0"}, nil)
	err := mcpserver.Serve(ctx, nil, &mcp.InMemoryTransport{}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "server")
	err = mcpserver.Serve(ctx, s, nil, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "transport")
	assert.PanicsWithValue(t, "mcpserver: HTTPHandler needs a server", func() { mcpserver.HTTPHandler(nil, nil) })
	assert.PanicsWithValue(t, "mcpserver: ScopeChallenge needs a registry", func() {
		mcpserver.ScopeChallenge(nil, &mcpserver.Options{})
	})
	// A typed nil registry is nil too.
	assert.Error(t, mcpserver.AddTools(s, (*actions.Registry)(nil), nil))
	// A server and a runner: no panic, and a request is served.
	h := mcpserver.HTTPHandler(s, nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", strings.NewReader("")))
	assert.NotZero(t, rec.Code)
}

// The batch tool's name is checked before any tool is added, as every
// other fault of AddTools: a name MCP refuses (1 to 128 characters of
// [A-Za-z0-9_.-]) or an action's tool name leaves the server as it was.
func TestBatchToolNameCheckedFirst(t *testing.T) {
	reg := actions.NewRegistry(nil)
	reg.MustRegister(actions.New(actions.Definition{ID: "a/b"},
		func(context.Context, map[string]any, *actions.Trace) (any, error) { return nil, nil }))
	for _, name := range []string{"a-b", "bad name!", strings.Repeat("x", 129)} {
		s := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "v0"}, nil)
		err := mcpserver.AddTools(s, reg, &mcpserver.Options{Batch: &mcpserver.BatchTool{Name: name}})
		require.Error(t, err, name)
		ct, st := mcp.NewInMemoryTransports()
		go func() { _ = s.Run(context.Background(), st) }()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c"}, nil).Connect(context.Background(), ct, nil)
		require.NoError(t, err)
		list, err := cs.ListTools(context.Background(), nil)
		require.NoError(t, err)
		assert.Empty(t, list.Tools, "%s: a tool was added before the error", name)
		require.NoError(t, cs.Close())
	}
}
