package mcpserver_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/mcpserver"
)

// A gated server over streamable HTTP: the SDK checks the bearer token,
// ScopeChallenge answers a write made with a read token with HTTP 403 and
// its challenge, and Options.Caller says who calls, so that each token
// lists only the tools it may call.
func ExampleScopeChallenge() {
	reg := actions.NewRegistry(nil)
	reg.MustRegister(
		actions.New(actions.Definition{ID: "stock/count", Effect: actions.EffectRead, Capability: "stock.read"},
			func(context.Context, map[string]any, *actions.Trace) (any, error) { return 42, nil }),
		actions.New(actions.Definition{ID: "stock/add", Effect: actions.EffectWrite, Additive: true, Capability: "stock.write"},
			func(context.Context, map[string]any, *actions.Trace) (any, error) { return "added", nil }),
	)
	opts := &mcpserver.Options{
		// Who calls: the token's user, with the capabilities the host
		// gives that user (here, everyone may read and write).
		Caller: func(_ context.Context, token *auth.TokenInfo, _ http.Header) *identity.Caller {
			return &identity.Caller{Principal: token.UserID, Capabilities: []string{"stock.read", "stock.write"}}
		},
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "stock", Version: "v1.0.0"}, nil)
	if err := mcpserver.AddTools(server, reg, opts); err != nil {
		log.Fatal(err)
	}
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		if token != "read-only" {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: "ann", Scopes: []string{"mcp:read"}, Expiration: time.Now().Add(time.Hour)}, nil
	}
	handler := auth.RequireBearerToken(verify, nil)(
		mcpserver.ScopeChallenge(reg, opts)(mcpserver.HTTPHandler(server, nil)))
	ts := httptest.NewServer(handler)
	defer ts.Close()

	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"stock-add"}}`
	req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(call))
	req.Header.Set("Authorization", "Bearer read-only")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	res.Body.Close()
	fmt.Println(res.StatusCode)
	fmt.Println(res.Header.Get("WWW-Authenticate"))
	// Output:
	// 403
	// Bearer error="insufficient_scope", scope="mcp:read mcp:write"
}
