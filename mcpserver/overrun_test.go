package mcpserver_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/mcpserver"
)

// TestOverrunCountsInFlight: a call answered timeout at its deadline
// while its body runs on (ignoring its context) keeps its place in the
// session's bound until the body returns: the next call is refused busy
// meanwhile, and passes once the body returned.
func TestOverrunCountsInFlight(t *testing.T) {
	reg := actions.NewRegistry(&actions.Options{Store: actions.NewRunLog()})
	release, returned := make(chan struct{}), make(chan struct{})
	reg.MustRegister(
		actions.New(actions.Definition{ID: "t/stuck", Timeout: 200 * time.Millisecond},
			func(context.Context, map[string]any, *actions.Trace) (any, error) {
				defer close(returned)
				<-release // ignores ctx
				return "late", nil
			}),
		actions.New(actions.Definition{ID: "t/echo"},
			func(context.Context, map[string]any, *actions.Trace) (any, error) { return "echo", nil }),
	)
	server := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "v0"}, nil)
	require.NoError(t, mcpserver.AddTools(server, reg, &mcpserver.Options{
		Caller: func(context.Context, *auth.TokenInfo, http.Header) *actions.Caller {
			return &actions.Caller{Principal: "ann", Surface: actions.SurfaceMCP}
		}}))
	url := serveHTTP(t, mcpserver.HTTPHandler(server, &mcpserver.HTTPOptions{MaxCallsInFlight: 1}))
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "sdk", Version: "v0"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)
	defer cs.Close()

	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "t-stuck"})
	require.NoError(t, err)
	require.True(t, res.IsError)
	assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, string(actions.CodeTimeout))
	select {
	case <-returned:
		t.Fatal("the body returned: the call was not answered at its deadline")
	default:
	}

	_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "t-echo"})
	var je *jsonrpc.Error
	require.ErrorAs(t, err, &je, "the overrunning body still holds the session's one place")
	assert.Equal(t, int64(-32000), je.Code)

	close(release)
	<-returned
	require.Eventually(t, func() bool {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "t-echo"})
		return err == nil && !res.IsError
	}, 10*time.Second, 5*time.Millisecond, "the place is free once the body returned")
}
