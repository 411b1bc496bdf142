package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
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
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/mcpserver"
	"github.com/actionreg/actions/store"
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
			onMCP := &identity.Caller{Principal: "editor", Capabilities: capabilitiesOf["editor"], Surface: identity.SurfaceMCP}
			_, err = g.reg.Decide(context.Background(), actions.Decision{Change: out.Pending.ID, Confirm: true, Caller: onMCP})
			require.ErrorIs(t, err, codes.ForbiddenSurface)
			onScreen := &identity.Caller{Principal: "editor", Capabilities: capabilitiesOf["editor"], Surface: identity.SurfaceUI}
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
	a := &actions.Approval{Surfaces: []identity.Surface{identity.SurfaceUI, identity.SurfaceMCP},
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
	require.NoError(t, mcpserver.AddTools(server, reg, &mcpserver.Options{Caller: func(context.Context, *auth.TokenInfo, http.Header) *identity.Caller {
		return &identity.Caller{Principal: "agent"}
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

// TestAttackElicitationNeverAnswered: a client that declares elicitation
// and never answers the question holds neither the call nor its pending
// change past Options.ConfirmWait: the call is answered "nothing ran",
// the change is rejected, and nothing runs.
func TestAttackElicitationNeverAnswered(t *testing.T) {
	g := newGateShop(t)
	server := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "v0.0.1"}, nil)
	opts := g.options()
	opts.ConfirmWait = 200 * time.Millisecond
	var held []string
	opts.OnError = func(_ context.Context, _ string, err error) { held = append(held, err.Error()) }
	require.NoError(t, mcpserver.AddTools(server, g.reg, opts))
	h := mcpserver.HTTPHandler(server, nil)
	ts := httptest.NewServer(auth.RequireBearerToken(verify, nil)(h))
	defer ts.Close()
	asked, gone := make(chan struct{}, 1), make(chan struct{})
	never := func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked <- struct{}{}
		select { // the person walked away
		case <-ctx.Done():
		case <-gone: // the test ends: let the client close
		}
		return nil, errors.New("gone")
	}
	cs, _ := connectHTTP(t, ts.URL, "editor-token", "2025-11-25", never)
	ctx, cancel := context.WithTimeout(context.Background(), eventually)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "shop-discard", Arguments: map[string]any{"item": "milk"}})
	require.NoError(t, err, "the call is answered once the wait is over")
	<-asked
	assert.True(t, res.IsError)
	assert.Contains(t, textOf(t, res), "nothing ran")
	assert.Zero(t, g.discarded.Load())
	g.mu.Lock()
	audit := g.audits[len(g.audits)-1]
	g.mu.Unlock()
	require.NotEmpty(t, audit.PendingChange)
	_, err = g.reg.PendingChange(context.Background(), audit.PendingChange, &identity.Caller{Principal: "editor"})
	assert.ErrorIs(t, err, codes.UnknownChange, "the unanswered change was rejected")
	close(gone)
	cs.Close()
	require.NoError(t, h.Shutdown(ctx))
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
				Code codes.Code `json:"code"`
			}
			require.NoError(t, json.Unmarshal(mustJSON(t, res.StructuredContent), &out))
			assert.Equal(t, codes.Rejected, out.Code)
			assert.Equal(t, int32(0), g.discarded.Load())
			g.mu.Lock()
			last := g.audits[len(g.audits)-1]
			g.mu.Unlock()
			assert.Equal(t, store.StageRejected, last.Stage, "the change was rejected")
			_, err = g.reg.Decide(context.Background(), actions.Decision{Change: last.PendingChange, Confirm: true,
				Caller: &identity.Caller{Principal: "editor", Capabilities: capabilitiesOf["editor"], Surface: identity.SurfaceUI}})
			assert.ErrorIs(t, err, codes.UnknownChange, "a rejected change is gone")
			assert.Equal(t, int32(0), g.discarded.Load())
		})
	}
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

// TestConfirmRecheckedWhenThePersonAnswers: a capability revoked while
// the person is being asked is revoked for the confirmation too (issue
// 25, item 1): Options.Caller is called again when the answer comes, the
// confirmation is refused (the tool is now one this caller cannot see),
// nothing runs, and the refused confirmation uses nothing up: the change
// waits, and the person confirms it once the capability is back.
func TestConfirmRecheckedWhenThePersonAnswers(t *testing.T) {
	bothVersions(t, func(t *testing.T, version string) {
		h := newHeldShop(t)
		var builtWhenAsked int32
		cs := h.connect(t, version, func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			builtWhenAsked = h.callers.Load()
			h.revoked.Store(true) // the person loses stock.write while thinking
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		})
		before := h.callers.Load()
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "shop-discard", Arguments: map[string]any{"item": "milk"}})
		var je *jsonrpc.Error
		require.ErrorAs(t, err, &je, "refused at confirm")
		assert.Equal(t, int64(jsonrpc.CodeInvalidParams), je.Code, "as for a tool this caller may not see")
		assert.Zero(t, h.discarded.Load(), "nothing runs")
		assert.Greater(t, h.callers.Load(), builtWhenAsked, "the caller is built again when the person answers")
		assert.Greater(t, builtWhenAsked, before)

		held := h.recordsAt(store.StageHeld)
		require.Len(t, held, 1)
		change := held[0].Audit.PendingChange
		h.mu.Lock()
		last := h.records[len(h.records)-1]
		h.mu.Unlock()
		assert.Equal(t, codes.ForbiddenCapability, last.Audit.Code, "the host sees why")
		assert.Equal(t, change, last.Audit.PendingChange)

		h.revoked.Store(false)
		pc, err := h.reg.PendingChange(context.Background(), change, h.person())
		require.NoError(t, err, "a refused confirmation keeps the change")
		assert.Equal(t, "shop/discard", pc.Action)
		res, err := h.reg.Decide(context.Background(), actions.Decision{Change: change, Confirm: true, Caller: h.person()})
		require.NoError(t, err)
		assert.Equal(t, `{"discarded":"milk"}`, res.Entry().Result)
		assert.Equal(t, int32(1), h.discarded.Load())
	})
}

// TestQuestionShowsTheWholeArguments: the person is shown the exact
// arguments that run, whole (no cut at 2,000 bytes: a member after it is
// what the person confirms too), and a character that changes how text
// displays (U+202E, right-to-left override) as its JSON escape \u202e.
func TestQuestionShowsTheWholeArguments(t *testing.T) {
	bothVersions(t, func(t *testing.T, version string) {
		h := newHeldShop(t)
		var mu sync.Mutex
		var asked []string
		cs := h.connect(t, version, func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, req.Params.Message)
			mu.Unlock()
			return &mcp.ElicitResult{Action: "decline"}, nil
		})
		args := map[string]any{
			"item":   "milk",
			"note":   strings.Repeat("n", 3000) + "\u202etxt.exe",
			"target": "ALL-CUSTOMERS", // sorts after the long note
		}
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "shop-discard", Arguments: args})
		require.NoError(t, err)
		assert.True(t, res.IsError)
		canonical, err := actions.CanonicalJSON(args)
		require.NoError(t, err)
		shown := strings.ReplaceAll(string(canonical), "\u202e", `\u202e`)
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, asked, 1)
		assert.Equal(t, "Run Discard stock (shop-discard) with "+shown+"? Nothing runs unless you accept.", asked[0])
		assert.Contains(t, asked[0], `"target":"ALL-CUSTOMERS"`, "the member past 2,000 bytes is shown")
		assert.Contains(t, asked[0], `nnn\u202etxt.exe"`)
		assert.NotContains(t, asked[0], "\u202e", "no raw bidi override reaches the question")
		assert.Zero(t, h.discarded.Load())
	})
}

// TestAnonymousNeedingConfirmationIsNeverAsked: a caller without identity
// calling an action that needs confirmation, alone or as a batch step, is
// refused confirmation_required with no receipt, nothing is held, and its
// person is never asked: nobody could confirm it.
func TestAnonymousNeedingConfirmationIsNeverAsked(t *testing.T) {
	bothVersions(t, func(t *testing.T, version string) {
		h := newHeldShop(t)
		h.principal.Store("")
		var asked atomic.Int32
		cs := h.connect(t, version, func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked.Add(1)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		})
		for name, args := range map[string]any{"shop-discard": map[string]any{"item": "milk"}, "run_batch": heldBatch} {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
			require.NoError(t, err, name)
			require.True(t, res.IsError, name)
			var out receiptJSON
			structured(t, res, &out)
			assert.Equal(t, codes.ConfirmationRequired, out.Code, name)
			assert.Nil(t, out.Pending, "%s: no receipt", name)
			assert.NotContains(t, textOf(t, res), "pending change", name)
		}
		assert.Zero(t, asked.Load(), "never asked")
		assert.Zero(t, h.restocked.Load())
		assert.Zero(t, h.discarded.Load())
		assert.Empty(t, h.recordsAt(store.StageHeld), "nothing is held")
	})
}
