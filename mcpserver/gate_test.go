package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
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

const resourceMetadata = "https://shop.example/.well-known/oauth-protected-resource"

// gateShop is a registry with a gate: a read, an additive write, a delete
// that needs confirmation (with a deprecated alias), and a read touching
// protected personal data, offered on ui only.
type gateShop struct {
	reg       *actions.Registry
	discarded atomic.Int32
	restocked atomic.Int32
	mu        sync.Mutex
	audits    []actions.Audit
}

func newGateShop(t *testing.T) *gateShop {
	t.Helper()
	// Its people may answer in their MCP client (elicitation).
	return newGateShopWith(t, actions.GateOptions{ResourceMetadata: resourceMetadata, DecideFrom: []actions.Surface{actions.SurfaceUI, actions.SurfaceMCP}})
}

func newGateShopWith(t *testing.T, gate actions.GateOptions) *gateShop {
	t.Helper()
	g := &gateShop{}
	g.reg = actions.NewRegistry(&actions.Options{
		Gate: &gate,
		OnRecord: func(rec actions.Record) {
			g.mu.Lock()
			g.audits = append(g.audits, rec.Audit)
			g.mu.Unlock()
		},
	})
	g.reg.MustRegister(
		actions.New(actions.Definition{ID: "shop/stock", Title: "Stock", Effect: actions.EffectRead, Capability: "stock.read", Idempotent: true},
			func(context.Context, map[string]any, *actions.Trace) (any, error) {
				return map[string]any{"apples": 3}, nil
			}),
		actions.New(actions.Definition{ID: "shop/restock", Title: "Restock", Effect: actions.EffectWrite, Additive: true, Capability: "stock.write",
			Parameters: `{"type":"object","properties":{"item":{"type":"string"},"count":{"type":"integer","minimum":1}},"required":["item","count"]}`},
			func(context.Context, map[string]any, *actions.Trace) (any, error) {
				g.restocked.Add(1)
				return map[string]any{"ok": true}, nil
			}),
		actions.New(actions.Definition{ID: "shop/discard", Title: "Discard stock", Effect: actions.EffectDelete, Capability: "stock.write",
			NeedsConfirmation: true, DeprecatedAliases: []string{"shop/throw_away"},
			Refusals:   []actions.DeclaredRefusal{{Code: "not_in_stock", Retry: actions.RetryAfterEdit}},
			Parameters: `{"type":"object","properties":{"item":{"type":"string"}},"required":["item"]}`},
			func(_ context.Context, p map[string]any, _ *actions.Trace) (any, error) {
				g.discarded.Add(1)
				return map[string]any{"discarded": p["item"]}, nil
			}),
		actions.New(actions.Definition{ID: "shop/tenants", Effect: actions.EffectRead, Capability: "stock.read",
			PersonalData: []actions.PersonalData{"name", actions.PersonalProtected}},
			func(context.Context, map[string]any, *actions.Trace) (any, error) { return nil, nil }),
	)
	return g
}

// principals: what the host derives from a token's user.
var capabilitiesOf = map[string][]string{
	"viewer": {"stock.read"},
	"editor": {"stock.read", "stock.write"},
}

// tokens the test verifier knows: the user and the scopes of each.
var tokens = map[string]auth.TokenInfo{
	"viewer-token":      {UserID: "viewer", Scopes: []string{"mcp:read"}},
	"editor-token":      {UserID: "editor", Scopes: []string{"mcp:read", "mcp:write"}},
	"editor-read-token": {UserID: "editor", Scopes: []string{"mcp:read"}},
	"no-scope-token":    {UserID: "editor"},
}

func verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	ti, ok := tokens[token]
	if !ok {
		return nil, auth.ErrInvalidToken
	}
	ti.Expiration = time.Now().Add(time.Hour)
	return &ti, nil
}

func (g *gateShop) options() *mcpserver.Options {
	return &mcpserver.Options{
		Caller: func(_ context.Context, token *auth.TokenInfo, _ http.Header) *actions.Caller {
			if token == nil {
				return &actions.Caller{Principal: "editor", Capabilities: capabilitiesOf["editor"]}
			}
			return &actions.Caller{Principal: token.UserID, Capabilities: capabilitiesOf[token.UserID]}
		},
	}
}

// recorder keeps the HTTP responses the client received, and sends the
// bearer token.
type recorder struct {
	token string
	mu    sync.Mutex
	seen  []*http.Response
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+r.token)
	res, err := http.DefaultTransport.RoundTrip(req)
	if err == nil {
		r.mu.Lock()
		r.seen = append(r.seen, res)
		r.mu.Unlock()
	}
	return res, err
}

func (r *recorder) forbidden() []*http.Response {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*http.Response
	for _, res := range r.seen {
		if res.StatusCode == http.StatusForbidden {
			out = append(out, res)
		}
	}
	return out
}

// serveHTTP serves the shop over streamable HTTP behind the SDK's bearer
// token middleware and ScopeChallenge.
func (g *gateShop) serveHTTP(t *testing.T, stateless bool) string {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "v0.0.1"}, nil)
	opts := g.options()
	require.NoError(t, mcpserver.AddTools(server, g.reg, opts))
	var handler http.Handler = mcpserver.HTTPHandler(server, &mcpserver.HTTPOptions{Stateless: stateless})
	handler = mcpserver.ScopeChallenge(g.reg, opts)(handler)
	handler = auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: resourceMetadata})(handler)
	ts := httptest.NewServer(handler)
	t.Cleanup(ts.Close)
	return ts.URL
}

// connectHTTP connects a client with the token; elicit, when not nil,
// answers the server's confirmation questions.
func connectHTTP(t *testing.T, url, token, version string, elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) (*mcp.ClientSession, *recorder) {
	t.Helper()
	rec := &recorder{token: token}
	client := mcp.NewClient(&mcp.Implementation{Name: "gate-client", Version: "v0.0.1"}, &mcp.ClientOptions{ElicitationHandler: elicit})
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rec}},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs, rec
}

func toolNames(t *testing.T, cs *mcp.ClientSession) ([]string, *mcp.ListToolsResult) {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names, res
}

func TestGateToolsListPerToken(t *testing.T) {
	g := newGateShop(t)
	url := g.serveHTTP(t, false)
	viewer, _ := connectHTTP(t, url, "viewer-token", "2025-11-25", nil)
	editor, _ := connectHTTP(t, url, "editor-token", "2025-11-25", nil)

	names, res := toolNames(t, viewer)
	assert.Equal(t, []string{"shop-stock"}, names, "a viewer sees what it may call")
	assert.Equal(t, "private", res.CacheScope, "a list that varies by authorization is private")
	names, _ = toolNames(t, editor)
	assert.Equal(t, []string{"shop-discard", "shop-restock", "shop-stock"}, names,
		"no alias, no action touching protected personal data")

	_, res = toolNames(t, editor)
	for _, tool := range res.Tools {
		if tool.Name == "shop-discard" {
			assert.Equal(t, "It may refuse with: not_in_stock (retry after changing the call).", tool.Description)
			assert.True(t, *tool.Annotations.DestructiveHint)
			assert.False(t, *tool.Annotations.OpenWorldHint)
		}
		if tool.Name == "shop-stock" {
			assert.True(t, tool.Annotations.IdempotentHint)
		}
	}
}

func TestGateScopeChallengeOverHTTP(t *testing.T) {
	g := newGateShop(t)
	url := g.serveHTTP(t, false)
	cs, rec := connectHTTP(t, url, "editor-read-token", "2025-11-25", nil)

	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "shop-restock", Arguments: map[string]any{"item": marker, "count": 1}})
	require.Error(t, err, "the call is refused at the HTTP layer")
	forbidden := rec.forbidden()
	require.Len(t, forbidden, 1, "one HTTP 403")
	assert.Equal(t, `Bearer error="insufficient_scope", scope="mcp:read mcp:write", resource_metadata="`+resourceMetadata+`"`,
		forbidden[0].Header.Get("WWW-Authenticate"))
	assert.Equal(t, int32(0), g.restocked.Load())

	// The SDK client ends its session on a 403; a new one with the same
	// token reads (the read scope suffices) and is never challenged.
	cs, rec = connectHTTP(t, url, "editor-read-token", "2025-11-25", nil)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "shop-stock"})
	require.NoError(t, err)
	assert.False(t, res.IsError)
	assert.Empty(t, rec.forbidden())

	// After stepping up to the scopes the challenge named, the write runs.
	cs, rec = connectHTTP(t, url, "editor-token", "2025-11-25", nil)
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "shop-restock", Arguments: map[string]any{"item": "apples", "count": 1}})
	require.NoError(t, err)
	assert.False(t, res.IsError)
	assert.Empty(t, rec.forbidden())
	assert.Equal(t, int32(1), g.restocked.Load())
}

// A caller who may not see a tool learns nothing from the scope check: it
// gets the unknown-tool answer, never a 403 naming scopes.
func TestGateForbiddenLooksUnknownOverHTTP(t *testing.T) {
	g := newGateShop(t)
	url := g.serveHTTP(t, false)
	cs, rec := connectHTTP(t, url, "viewer-token", "2025-11-25", nil)
	var answers []string
	for _, name := range []string{"shop-restock", "shop-nothing", "shop-tenants"} {
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{"item": marker}})
		require.Error(t, err, name)
		var werr *jsonrpc.Error
		require.ErrorAs(t, err, &werr, name)
		answers = append(answers, string(mustJSON(t, werr)))
		assert.Contains(t, err.Error(), "unknown tool: list the tools and call one of them", name)
		assert.NotContains(t, err.Error(), marker)
		assert.NotContains(t, err.Error(), "item")
	}
	assert.Equal(t, answers[1], answers[0], "a forbidden tool and a missing one give the same error, data included")
	assert.Equal(t, answers[1], answers[2])
	assert.Empty(t, rec.forbidden())
}

func TestGateElicitationAcceptRunsOnce(t *testing.T) {
	g := newGateShop(t)
	url := g.serveHTTP(t, false)
	var asked []string
	accept := func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = append(asked, req.Params.Message)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
	}
	cs, _ := connectHTTP(t, url, "editor-token", "2025-11-25", accept)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "shop-discard", Arguments: map[string]any{"item": "milk"}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	assert.JSONEq(t, `{"discarded":"milk"}`, string(mustJSON(t, res.StructuredContent)))
	assert.Equal(t, int32(1), g.discarded.Load())
	require.Len(t, asked, 1)
	assert.Equal(t, `Run Discard stock (shop-discard) with {"item":"milk"}? Nothing runs unless you accept.`, asked[0])

	// By the deprecated alias: recorded under the id, the alias noted.
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "shop-throw_away", Arguments: map[string]any{"item": "eggs"}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	assert.Equal(t, int32(2), g.discarded.Load())
	g.mu.Lock()
	last := g.audits[len(g.audits)-1]
	g.mu.Unlock()
	assert.Equal(t, "shop/throw_away", last.Alias)
	assert.NotEmpty(t, last.PendingChange)
}

// A person who declines (or cancels, or whose client fails to ask) gets
// code rejected: the change was rejected, nothing ran, and it cannot be
// confirmed later.
func TestGateElicitationDeclineRunsNothing(t *testing.T) {
	for _, answer := range []string{"decline", "cancel", "error"} {
		t.Run(answer, func(t *testing.T) {
			g := newGateShop(t)
			url := g.serveHTTP(t, false)
			elicit := func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				if answer == "error" {
					return nil, errors.New("the person closed the window")
				}
				return &mcp.ElicitResult{Action: answer}, nil
			}
			cs, _ := connectHTTP(t, url, "editor-token", "2025-11-25", elicit)
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "shop-discard", Arguments: map[string]any{"item": "milk"}})
			require.NoError(t, err)
			assert.True(t, res.IsError)
			assert.Contains(t, textOf(t, res), "refused: rejected: the person did not confirm the call; nothing ran")
			var out struct {
				Code actions.Code `json:"code"`
			}
			require.NoError(t, json.Unmarshal(mustJSON(t, res.StructuredContent), &out))
			assert.Equal(t, actions.CodeRejected, out.Code)
			assert.Equal(t, int32(0), g.discarded.Load())
			g.mu.Lock()
			last := g.audits[len(g.audits)-1]
			g.mu.Unlock()
			assert.Equal(t, actions.StageRejected, last.Stage, "the change was rejected")
			_, err = g.reg.Decide(context.Background(), actions.Decision{Change: last.PendingChange, Confirm: true,
				Caller: &actions.Caller{Principal: "editor", Capabilities: capabilitiesOf["editor"], Surface: actions.SurfaceUI}})
			assert.ErrorIs(t, err, actions.CodeUnknownChange, "a rejected change is gone")
			assert.Equal(t, int32(0), g.discarded.Load())
		})
	}
}

func TestGateReceiptThenConfirm(t *testing.T) {
	g := newGateShop(t)
	url := g.serveHTTP(t, false)
	cs, _ := connectHTTP(t, url, "editor-token", "2025-11-25", nil)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "shop-discard", Arguments: map[string]any{"item": "milk"}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	var out struct {
		Code    actions.Code     `json:"code"`
		Retry   actions.Retry    `json:"retry"`
		Pending *actions.Receipt `json:"pending"`
	}
	require.NoError(t, json.Unmarshal(mustJSON(t, res.StructuredContent), &out))
	assert.Equal(t, actions.CodeConfirmationRequired, out.Code)
	assert.Equal(t, actions.RetryNever, out.Retry)
	require.NotNil(t, out.Pending)
	assert.Contains(t, textOf(t, res), "pending change: "+out.Pending.ID)
	assert.Equal(t, int32(0), g.discarded.Load())

	// Later, on the host's own screen, the same person confirms.
	person := &actions.Caller{Principal: "editor", Capabilities: capabilitiesOf["editor"], Surface: actions.SurfaceUI}
	confirmed, err := g.reg.Decide(context.Background(), actions.Decision{Change: out.Pending.ID, Confirm: true, Caller: person})
	require.NoError(t, err)
	assert.Equal(t, `{"discarded":"milk"}`, confirmed.Entry().Result)
	assert.Equal(t, int32(1), g.discarded.Load())
	_, err = g.reg.Decide(context.Background(), actions.Decision{Change: out.Pending.ID, Confirm: true, Caller: person})
	assert.ErrorIs(t, err, actions.CodeUnknownChange)
	assert.Equal(t, int32(1), g.discarded.Load())
}

// 2026-07-28 (the SDK serves it statelessly over HTTP): the confirmation
// travels as an input request in the result, and the client's retry
// carries the answer and the signed request state.
func TestGateMultiRoundTrip(t *testing.T) {
	for _, answer := range []string{"accept", "decline"} {
		t.Run(answer, func(t *testing.T) {
			g := newGateShop(t)
			url := g.serveHTTP(t, true)
			elicit := func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: answer, Content: map[string]any{}}, nil
			}
			cs, _ := connectHTTP(t, url, "editor-token", "2026-07-28", elicit)
			require.Equal(t, "2026-07-28", cs.InitializeResult().ProtocolVersion)
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "shop-discard", Arguments: map[string]any{"item": "milk"}})
			require.NoError(t, err)
			if answer == "accept" {
				require.False(t, res.IsError, "%s", textOf(t, res))
				assert.Equal(t, int32(1), g.discarded.Load())
			} else {
				assert.True(t, res.IsError)
				assert.Contains(t, textOf(t, res), "refused: rejected", "a decline rejects the change")
				assert.Equal(t, int32(0), g.discarded.Load())
			}
		})
	}
}

// A request state that this server did not sign for this caller and call
// confirms nothing.
func TestGateForgedRequestState(t *testing.T) {
	g := newGateShop(t)
	url := g.serveHTTP(t, true)
	cs, _ := connectHTTP(t, url, "editor-token", "2026-07-28", nil)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "shop-discard", Arguments: map[string]any{"item": "milk"}})
	require.NoError(t, err)
	var out struct {
		Pending *actions.Receipt `json:"pending"`
	}
	require.NoError(t, json.Unmarshal(mustJSON(t, res.StructuredContent), &out))
	require.NotNil(t, out.Pending, "no elicitation: the receipt")
	for _, state := range []string{out.Pending.ID, out.Pending.ID + ".00", "x.y"} {
		res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "shop-discard", Arguments: map[string]any{"item": "milk"},
			InputResponses: mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: "accept"}}, RequestState: state})
		require.NoError(t, err)
		assert.True(t, res.IsError)
		assert.Contains(t, textOf(t, res), "unknown_change")
	}
	assert.Equal(t, int32(0), g.discarded.Load())
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	return data
}

// A client that elicits by URL only is not asked with a form: it gets the
// receipt, and nothing runs.
func TestGateURLOnlyElicitationGetsTheReceipt(t *testing.T) {
	g := newGateShop(t)
	url := g.serveHTTP(t, false)
	rec := &recorder{token: "editor-token"}
	asked := false
	client := mcp.NewClient(&mcp.Implementation{Name: "url-only", Version: "v0"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = true
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	})
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rec}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "shop-discard", Arguments: map[string]any{"item": "milk"}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Contains(t, textOf(t, res), "pending change: ")
	assert.False(t, asked)
	assert.Equal(t, int32(0), g.discarded.Load())
}
