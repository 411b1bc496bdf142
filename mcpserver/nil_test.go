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

// A missing server, transport or registry is the host's mistake, told
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
		mcpserver.ScopeChallenge[*actions.Trace](nil, mcpserver.Options[*actions.Trace]{}, 0)
	})
	// A server and a registry: no panic, and a request is served.
	h := mcpserver.HTTPHandler(s, nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", strings.NewReader("")))
	assert.NotZero(t, rec.Code)
}
