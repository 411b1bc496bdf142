package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/mcpserver"
	"github.com/actionreg/actions/store"
)

func TestToolList(t *testing.T) {
	forEachVersion(t, func(t *testing.T, f *fixture) {
		want, err := f.reg.Tools(nil)
		require.NoError(t, err)
		res, err := f.session.ListTools(context.Background(), nil)
		require.NoError(t, err)
		require.Len(t, res.Tools, len(want))
		for i, got := range res.Tools {
			w := want[i]
			assert.Equal(t, w.Name, got.Name)
			assert.Equal(t, w.Title, got.Title, w.Name)
			assert.Equal(t, w.Description, got.Description, w.Name)
			assert.JSONEq(t, jsonText(t, w.InputSchema), jsonText(t, got.InputSchema), w.Name)
			require.NotNil(t, got.Annotations, w.Name)
			require.NotNil(t, got.Annotations.DestructiveHint, "%s: destructiveHint must be sent", w.Name)
			assert.Equal(t, w.Annotations.ReadOnlyHint, got.Annotations.ReadOnlyHint, w.Name)
			assert.Equal(t, w.Annotations.DestructiveHint, *got.Annotations.DestructiveHint, w.Name)
			assert.NotEqual(t, "shop-audit", got.Name, "a hidden action is listed")
		}
		// On the wire, both hints are written even when false.
		assert.Contains(t, f.wire.written(), `"destructiveHint":false`)
		assert.Contains(t, f.wire.written(), `"readOnlyHint":false`)
	})
}

func TestValidCall(t *testing.T) {
	forEachVersion(t, func(t *testing.T, f *fixture) {
		res, err := call(t, f, "shop-greet", map[string]any{"name": "Ada"})
		require.NoError(t, err)
		assert.False(t, res.IsError)
		want := `{"client":"test-client","hello":"Ada","times":1}`
		assert.Equal(t, want, textOf(t, res), "canonical JSON text")
		assert.JSONEq(t, want, jsonText(t, res.StructuredContent))
	})
}

func TestNonObjectResult(t *testing.T) {
	forEachVersion(t, func(t *testing.T, f *fixture) {
		res, err := call(t, f, "shop-list_sizes", nil)
		require.NoError(t, err)
		assert.Equal(t, `["S","M","L"]`, textOf(t, res))
		assert.Nil(t, res.StructuredContent, "structuredContent only holds objects")

		res, err = call(t, f, "shop-purge", nil)
		require.NoError(t, err)
		assert.Equal(t, "null", textOf(t, res), "a body without result")
	})
}

func TestInvalidParameters(t *testing.T) {
	forEachVersion(t, func(t *testing.T, f *fixture) {
		res, err := call(t, f, "shop-greet", map[string]any{"name": marker, "times": 0, "extra": marker})
		require.NoError(t, err, "invalid parameters are a tool result, not a protocol error")
		assert.True(t, res.IsError)
		text := textOf(t, res)
		for _, s := range []string{"invalid_parameters", "/name [pattern]", "/times [minimum]", "/extra [additionalProperties]", "next action: Fix the parameters"} {
			assert.Contains(t, text, s)
		}
		var sc struct {
			Code   string          `json:"code"`
			Issues []actions.Issue `json:"issues"`
		}
		require.NoError(t, json.Unmarshal([]byte(jsonText(t, res.StructuredContent)), &sc))
		assert.Equal(t, "invalid_parameters", sc.Code)
		assert.Len(t, sc.Issues, 3)
		// The submitted value is in no message the server wrote (the
		// name "extra" is a path, not a value).
		wire := f.wire.written()
		assert.Contains(t, wire, `"isError":true`, "the response is in the log")
		assert.NotContains(t, wire, marker)
	})
}

func TestInvalidJSONText(t *testing.T) {
	forEachVersion(t, func(t *testing.T, f *fixture) {
		// Arguments reach the registry as JSON text, so I-JSON applies:
		// a duplicate member name is refused, not silently merged.
		res, err := call(t, f, "shop-greet", json.RawMessage(`{"name":"Ada","name":"Bob"}`))
		require.NoError(t, err)
		assert.True(t, res.IsError)
		assert.Contains(t, textOf(t, res), "[json] duplicate member name")
	})
}

func TestUnknownAndHiddenTool(t *testing.T) {
	forEachVersion(t, func(t *testing.T, f *fixture) {
		for _, name := range []string{"shop-nothing", "shop-audit", "not a tool", "shop-" + marker} {
			t.Run(name, func(t *testing.T) {
				res, err := call(t, f, name, nil)
				assert.Nil(t, res)
				var werr *jsonrpc.Error
				require.ErrorAs(t, err, &werr)
				assert.Equal(t, int64(jsonrpc.CodeInvalidParams), werr.Code)
				assert.NotContains(t, werr.Message, name, "the submitted name is not echoed")
			})
		}
		for _, e := range f.runEntries() {
			assert.NotEqual(t, "shop/audit", e.Action, "the hidden action ran")
		}
	})
}

func TestDomainRefusal(t *testing.T) {
	forEachVersion(t, func(t *testing.T, f *fixture) {
		res, err := call(t, f, "shop-order", map[string]any{"qty": 3})
		require.NoError(t, err)
		assert.True(t, res.IsError)
		text := textOf(t, res)
		assert.Contains(t, text, "out_of_stock")
		assert.Contains(t, text, "the item is out of stock")
		assert.Contains(t, text, "next action: Offer the customer another size.")
		assert.Contains(t, text, "retry: never")
	})
}

func TestPanickingBody(t *testing.T) {
	forEachVersion(t, func(t *testing.T, f *fixture) {
		res, err := call(t, f, "shop-crash", nil)
		assert.Nil(t, res)
		var werr *jsonrpc.Error
		require.ErrorAs(t, err, &werr)
		assert.Equal(t, int64(jsonrpc.CodeInternalError), werr.Code)
		assert.NotContains(t, werr.Message, marker)
		wire := f.wire.written()
		assert.Contains(t, wire, `"code":-32603`, "the response is in the log")
		assert.NotContains(t, wire, marker)

		logged := f.loggedErrors()
		require.Len(t, logged, 1)
		assert.ErrorIs(t, logged[0], codes.Internal)
		var r *actions.Refusal
		require.ErrorAs(t, logged[0], &r)
		require.Error(t, r.Cause())
		assert.Contains(t, r.Cause().Error(), marker, "OnError gets the panic value, in the refusal's cause")

		// The server keeps serving.
		res, err = call(t, f, "shop-greet", map[string]any{"name": "Ada"})
		require.NoError(t, err)
		assert.False(t, res.IsError)
	})
}

// A body that returns the refusal of its nested call fails as a server
// fault: the client is not told "unknown tool" for a tool it listed, nor
// asked to fix parameters it never sent, and OnError hears of it: an
// internal refusal whose cause is the nested refusal, whole (one code per
// error: errors.Is matches internal only, the nested code is the cause's).
func TestNestedRefusalIsNotTheClients(t *testing.T) {
	reg := actions.NewRegistry(nil)
	reg.MustRegister(
		actions.New(actions.Definition{ID: "shop/strict", Parameters: `{"type":"object","required":["sku"]}`},
			func(context.Context, map[string]any, *actions.Trace) (any, error) { return nil, nil }),
		actions.New(actions.Definition{ID: "shop/missing"}, func(ctx context.Context, _ map[string]any, t *actions.Trace) (any, error) {
			return t.Call(ctx, "shop/gone", nil)
		}),
		actions.New(actions.Definition{ID: "shop/badcall"}, func(ctx context.Context, _ map[string]any, t *actions.Trace) (any, error) {
			return t.Call(ctx, "shop/strict", nil)
		}),
	)
	var mu sync.Mutex
	var logged []error
	s := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	require.NoError(t, mcpserver.AddTools(s, reg, &mcpserver.Options{
		OnError: func(_ context.Context, _ string, err error) { mu.Lock(); logged = append(logged, err); mu.Unlock() },
	}))
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := s.Connect(ctx, st, nil)
	require.NoError(t, err)
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	defer cs.Close()
	for name, nested := range map[string]codes.Code{"shop-missing": codes.UnknownAction, "shop-badcall": codes.InvalidParameters} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name})
		assert.Nil(t, res)
		var werr *jsonrpc.Error
		require.ErrorAs(t, err, &werr, name)
		assert.Equal(t, int64(jsonrpc.CodeInternalError), werr.Code, name)
		assert.NotContains(t, werr.Message, "unknown tool")
		mu.Lock()
		require.NotEmpty(t, logged, "OnError hears of it")
		last := logged[len(logged)-1]
		mu.Unlock()
		assert.Equal(t, codes.Internal, actions.CodeOf(last), name)
		assert.ErrorIs(t, last, codes.Internal, name)
		var r *actions.Refusal
		require.ErrorAs(t, last, &r, name)
		assert.Equal(t, nested, actions.CodeOf(r.Cause()), "%s: the host gets the nested refusal whole, as the cause", name)
	}
}

// Without Options.Caller every client is an anonymous caller: it neither
// sees nor calls an action that needs a capability, and an action that
// needs confirmation is refused, never run, and nothing is held: nobody
// could confirm it.
func TestNoCallerIsAnonymous(t *testing.T) {
	var held atomic.Int32
	reg := actions.NewRegistry(&actions.Options{OnRecord: func(rec store.Record) {
		if rec.Audit.Stage == store.StageHeld {
			held.Add(1)
		}
	}})
	var ran sync.Map
	body := func(id string) actions.Body {
		return func(context.Context, map[string]any, *actions.Trace) (any, error) {
			ran.Store(id, true)
			return "ok", nil
		}
	}
	reg.MustRegister(
		actions.New(actions.Definition{ID: "shop/open", Effect: actions.EffectRead}, body("open")),
		actions.New(actions.Definition{ID: "shop/admin", Effect: actions.EffectRead, Capability: "admin"}, body("admin")),
		actions.New(actions.Definition{ID: "shop/wipe", Effect: actions.EffectDelete, NeedsConfirmation: true}, body("wipe")),
	)
	s := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	require.NoError(t, mcpserver.AddTools(s, reg, nil))
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := s.Connect(ctx, st, nil)
	require.NoError(t, err)
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	defer cs.Close()

	list, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	assert.Contains(t, names, "shop-open")
	assert.NotContains(t, names, "shop-admin", "an anonymous caller holds no capability")

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "shop-open"})
	require.NoError(t, err)
	assert.False(t, res.IsError)
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "shop-admin"})
	var werr *jsonrpc.Error
	require.ErrorAs(t, err, &werr)
	assert.Equal(t, int64(jsonrpc.CodeInvalidParams), werr.Code, "as unknown as a tool that does not exist")
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "shop-wipe"})
	require.NoError(t, err)
	assert.True(t, res.IsError, "refused: it needs a confirmation")
	assert.Contains(t, textOf(t, res), "confirmation_required")
	assert.NotContains(t, textOf(t, res), "pending change", "no receipt: nobody could confirm it")
	assert.Zero(t, held.Load(), "nothing is held")
	_, admin := ran.Load("admin")
	_, wipe := ran.Load("wipe")
	assert.False(t, admin)
	assert.False(t, wipe, "a delete needing confirmation never runs for an anonymous caller")
}

func TestBodyError(t *testing.T) {
	forEachVersion(t, func(t *testing.T, f *fixture) {
		res, err := call(t, f, "shop-fail", nil)
		require.NoError(t, err)
		assert.True(t, res.IsError)
		assert.Contains(t, textOf(t, res), "internal")
		assert.NotContains(t, jsonText(t, res), marker)
		wire := f.wire.written()
		assert.Contains(t, wire, `"isError":true`, "the response is in the log")
		assert.NotContains(t, wire, marker, "the body's error text reached the client")

		logged := f.loggedErrors()
		require.Len(t, logged, 1)
		assert.Contains(t, logged[0].Error(), marker, "OnError gets the real error")
	})
}

func TestOnEntrySeesEachCall(t *testing.T) {
	forEachVersion(t, func(t *testing.T, f *fixture) {
		_, err := call(t, f, "shop-greet", map[string]any{"name": "Ada"})
		require.NoError(t, err)
		_, err = call(t, f, "shop-greet", map[string]any{"name": "ada"})
		require.NoError(t, err)
		_, err = call(t, f, "shop-order", nil)
		require.NoError(t, err)
		_, _ = call(t, f, "shop-crash", nil)

		entries := f.runEntries()
		require.Len(t, entries, 4)
		f.mu.Lock()
		callers := f.callers
		f.mu.Unlock()
		assert.Equal(t, 4, callers, "the caller is built once per call")
		got := make([]string, len(entries))
		for i, e := range entries {
			got[i] = e.Action + " " + string(e.Outcome) + " " + string(e.Error)
		}
		assert.Equal(t, []string{
			"shop/greet done ",
			"shop/greet refused invalid_parameters",
			"shop/order refused out_of_stock",
			"shop/crash refused internal",
		}, got)
		assert.Equal(t, `{"name":"Ada","times":1}`, entries[0].Parameters, "defaults filled")
	})
}

func TestConcurrentCalls(t *testing.T) {
	f := connect(t, "")
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := f.session.CallTool(context.Background(), &mcp.CallToolParams{Name: "shop-greet", Arguments: map[string]any{"name": "Ada"}})
			if assert.NoError(t, err) {
				assert.False(t, res.IsError)
			}
		}()
	}
	wg.Wait()
	assert.Len(t, f.runEntries(), 16)
}

func TestLanguages(t *testing.T) {
	reg := testRegistry(t, nil)
	server := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "v0.0.1"}, nil)
	require.NoError(t, mcpserver.AddTools(server, reg, &mcpserver.Options{Languages: []string{"en", "fr"}}))
	serverT, clientT := mcp.NewInMemoryTransports()
	ss, err := server.Connect(context.Background(), serverT, nil)
	require.NoError(t, err)
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v0"}, nil).Connect(context.Background(), clientT, nil)
	require.NoError(t, err)
	defer cs.Close()

	want, err := reg.Tools(&actions.ToolOptions{Languages: []string{"en", "fr"}})
	require.NoError(t, err)
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	require.Len(t, res.Tools, len(want))
	for i := range want {
		assert.JSONEq(t, jsonText(t, want[i].InputSchema), jsonText(t, res.Tools[i].InputSchema))
	}
	assert.Contains(t, jsonText(t, res.Tools), "the source language is en")
}

func TestAddToolsErrors(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "x", Version: "v0"}, nil)
	assert.Error(t, mcpserver.AddTools(server, nil, &mcpserver.Options{}))
	assert.Error(t, mcpserver.AddTools(server, (*actions.Registry)(nil), &mcpserver.Options{}), "a nil registry")

	// A name MCP refuses never reaches AddTools: Register refuses its id.
	reg := actions.NewRegistry(nil)
	long := "n" + strings.Repeat("x", 128)
	err := reg.Register(actions.Action{
		Definition: actions.Definition{ID: long + "/a"},
		Run:        func(context.Context, map[string]any, *actions.Trace) (any, error) { return nil, nil },
	})
	assert.ErrorIs(t, err, codes.ConstraintViolation)
	require.NoError(t, mcpserver.AddTools(server, reg, nil))
}

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
