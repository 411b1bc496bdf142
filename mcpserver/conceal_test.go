package mcpserver_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/mcpserver"
)

// TestForbiddenAnsweredAsUnknownBeforeHooks: a call of a
// tool its caller may not see is answered exactly as a call of a tool the
// server does not have, and without waiting on any hook of the host: here
// OnRecord blocks until the test has both answers, so an answer that
// waited on it would never come. The refused call is recorded afterwards,
// with the host's code.
func TestForbiddenAnsweredAsUnknownBeforeHooks(t *testing.T) {
	release := make(chan struct{})
	recorded := make(chan actions.Record, 1)
	reg := actions.NewRegistry(&actions.Options{OnRecord: func(rec actions.Record) {
		<-release
		recorded <- rec
	}})
	reg.MustRegister(actions.New(actions.Definition{ID: "shop/restock", Capability: "stock.write"},
		func(context.Context, map[string]any, *actions.Trace) (any, error) { return "ok", nil }))
	server := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "v1"}, nil)
	require.NoError(t, mcpserver.AddTools(server, reg, &mcpserver.Options{
		Caller: func(context.Context, *auth.TokenInfo, http.Header) *actions.Caller {
			return &actions.Caller{Principal: "mallory"} // no capability
		},
	}))
	ctx := context.Background()
	cs := inMemoryClient(t, server)

	answer := func(name string) string {
		done := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"x": "MARKER"}})
			done <- err
		}()
		select {
		case err := <-done:
			require.Error(t, err)
			return err.Error()
		case <-time.After(30 * time.Second):
			t.Fatal("the answer waited on the host's hook")
			return ""
		}
	}
	forbidden := answer("shop-restock")
	unknown := answer("shop-nothing")
	assert.Equal(t, unknown, forbidden, "a forbidden tool reads as a missing one")
	assert.NotContains(t, forbidden, "MARKER")
	close(release)
	select {
	case rec := <-recorded:
		assert.Equal(t, actions.CodeForbiddenCapability, rec.Entry.Error, "the host's record keeps the truth")
		assert.Equal(t, "mallory", rec.Audit.Caller.Principal)
	case <-time.After(30 * time.Second):
		t.Fatal("the concealed call was never recorded")
	}
}
