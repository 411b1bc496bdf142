package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/mcpserver"
)

// These tests hold mcpserver to the promises of the one call path and of the gate's hardening, over the wire with the SDK's
// client on in-memory transports, at both protocol versions: 2025-11-25
// asks the person through elicitation/create, 2026-07-28 through an input
// request in the result (multi round-trip).

// heldShop is a gated registry: shop/stock reads, shop/restock adds, and
// shop/discard deletes and needs a person's confirmation. Who calls is
// the principal the test sets (editor by default; "" for a caller without
// identity), with stock.write unless revoked.
type heldShop struct {
	reg       *actions.Registry
	pending   *actions.MemoryPendingStore
	principal atomic.Value // string
	revoked   atomic.Bool
	callers   atomic.Int32 // calls of Options.Caller
	restocked atomic.Int32
	discarded atomic.Int32

	mu      sync.Mutex
	records []actions.Record
}

func newHeldShop(t *testing.T) *heldShop {
	t.Helper()
	h := &heldShop{pending: &actions.MemoryPendingStore{}}
	h.principal.Store("editor")
	h.reg = actions.NewRegistry(&actions.Options{
		// Its people may answer in their MCP client (elicitation).
		Gate: &actions.GateOptions{Pending: h.pending, DecideFrom: []actions.Surface{actions.SurfaceUI, actions.SurfaceMCP}},
		OnRecord: func(rec actions.Record) {
			h.mu.Lock()
			h.records = append(h.records, rec)
			h.mu.Unlock()
		},
	})
	h.reg.MustRegister(
		actions.New(actions.Definition{ID: "shop/stock", Title: "Stock", Effect: actions.EffectRead, Capability: "stock.read"},
			func(context.Context, map[string]any, *actions.Trace) (any, error) {
				return map[string]any{"apples": 3}, nil
			}),
		actions.New(actions.Definition{ID: "shop/restock", Title: "Restock", Effect: actions.EffectWrite, Additive: true, Capability: "stock.write",
			Parameters: `{"type":"object","properties":{"item":{"type":"string"},"count":{"type":"integer","minimum":1}},"required":["item","count"]}`},
			func(_ context.Context, p map[string]any, _ *actions.Trace) (any, error) {
				h.restocked.Add(1)
				return map[string]any{"restocked": p["item"]}, nil
			}),
		actions.New(actions.Definition{ID: "shop/discard", Title: "Discard stock", Effect: actions.EffectDelete, Capability: "stock.write",
			NeedsConfirmation: true,
			Parameters: `{"type":"object","properties":{"item":{"type":"string"},"note":{"type":"string"},"target":{"type":"string"}},
				"required":["item"],"additionalProperties":false}`},
			func(_ context.Context, p map[string]any, _ *actions.Trace) (any, error) {
				h.discarded.Add(1)
				return map[string]any{"discarded": p["item"]}, nil
			}),
	)
	return h
}

// caller is who calls as the host sees it now.
func (h *heldShop) caller() *actions.Caller {
	c := &actions.Caller{Principal: h.principal.Load().(string), Capabilities: []string{"stock.read", "stock.write"}}
	if h.revoked.Load() {
		c.Capabilities = []string{"stock.read"}
	}
	return c
}

// person is the same principal on the host's own screen.
func (h *heldShop) person() *actions.Caller {
	c := h.caller()
	c.Surface = actions.SurfaceUI
	return c
}

// recordsAt returns the records made so far whose audit stage is stage.
func (h *heldShop) recordsAt(stage actions.Stage) []actions.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []actions.Record
	for _, rec := range h.records {
		if rec.Audit.Stage == stage {
			out = append(out, rec)
		}
	}
	return out
}

// connect serves the shop with its batch tool and connects a client
// asking for version; elicit, when set, answers the server's questions
// (the client then declares form elicitation).
func (h *heldShop) connect(t *testing.T, version string, elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ClientSession {
	t.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "v0.0.1"}, nil)
	require.NoError(t, mcpserver.AddTools(server, h.reg, &mcpserver.Options{
		Caller: func(context.Context, *auth.TokenInfo, http.Header) *actions.Caller {
			h.callers.Add(1)
			return h.caller()
		},
		Batch: &mcpserver.BatchTool{},
	}))
	ctx := context.Background()
	serverT, clientT := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, serverT, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v0"}, &mcp.ClientOptions{ElicitationHandler: elicit}).
		Connect(ctx, clientT, &mcp.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	require.Equal(t, version, cs.InitializeResult().ProtocolVersion)
	return cs
}

// bothVersions runs test at 2025-11-25 and at 2026-07-28.
func bothVersions(t *testing.T, test func(t *testing.T, version string)) {
	for _, v := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(v, func(t *testing.T) { test(t, v) })
	}
}

// structured decodes a result's structuredContent into v.
func structured(t *testing.T, res *mcp.CallToolResult, v any) {
	t.Helper()
	require.NotNil(t, res.StructuredContent, "structuredContent")
	require.NoError(t, json.Unmarshal(mustJSON(t, res.StructuredContent), v))
}

// heldBatch restocks, then discards: its step 1 needs confirmation.
var heldBatch = json.RawMessage(`{"commands":[
	{"call":"shop-restock","with":{"item":"milk","count":2}},
	{"call":"shop-discard","with":{"item":"eggs"}}]}`)

// receiptJSON is the structured content of a held call.
type receiptJSON struct {
	Code    actions.Code     `json:"code"`
	Retry   actions.Retry    `json:"retry"`
	Pending *actions.Receipt `json:"pending"`
}

// TestBatchHeldReceiptConfirmedByDecide: a batch holding a step that needs
// confirmation, from a client that cannot ask its person, is held whole
// before any step runs: one receipt (structuredContent pending.id,
// pending.steps), one pending change, and reg.Decide runs the whole batch
// once.
func TestBatchHeldReceiptConfirmedByDecide(t *testing.T) {
	bothVersions(t, func(t *testing.T, version string) {
		h := newHeldShop(t)
		cs := h.connect(t, version, nil)
		ctx := context.Background()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_batch", Arguments: heldBatch})
		require.NoError(t, err)
		require.True(t, res.IsError, "held, not run")
		var out receiptJSON
		structured(t, res, &out)
		assert.Equal(t, actions.CodeConfirmationRequired, out.Code)
		require.NotNil(t, out.Pending, "the receipt")
		assert.NotEmpty(t, out.Pending.ID)
		assert.Equal(t, []actions.HeldStep{{Index: 1, Action: "shop/discard"}}, out.Pending.Steps)
		assert.Contains(t, textOf(t, res), "pending change: "+out.Pending.ID)
		assert.Contains(t, textOf(t, res), "steps held: #1 shop/discard")
		assert.Zero(t, h.restocked.Load(), "no step runs before the confirmation")
		assert.Zero(t, h.discarded.Load())
		changes, err := h.reg.PendingChanges(ctx, h.person())
		require.NoError(t, err)
		require.Len(t, changes, 1, "one pending change for the whole batch")
		assert.Equal(t, out.Pending.ID, changes[0].ID)
		require.NotNil(t, changes[0].Batch)
		assert.Len(t, changes[0].Batch.Steps, 2)

		confirmed, err := h.reg.Decide(ctx, actions.Decision{Change: out.Pending.ID, Confirm: true, Caller: h.person()})
		require.NoError(t, err)
		assert.Equal(t, int32(1), h.restocked.Load(), "the whole batch runs once")
		assert.Equal(t, int32(1), h.discarded.Load())
		require.Len(t, confirmed.Records, 2)
		for i, rec := range confirmed.Records {
			assert.Equal(t, actions.OutcomeDone, rec.Entry.Outcome, "step %d", i)
			assert.Equal(t, actions.StageConfirmed, rec.Audit.Stage, "step %d", i)
			assert.Equal(t, out.Pending.ID, rec.Audit.PendingChange, "step %d", i)
		}
		assert.Equal(t, map[string]any{"discarded": "eggs"}, confirmed.Value, "the batch's result: its last step's")

		_, err = h.reg.Decide(ctx, actions.Decision{Change: out.Pending.ID, Confirm: true, Caller: h.person()})
		assert.ErrorIs(t, err, actions.CodeUnknownChange, "decided once")
		assert.Equal(t, int32(1), h.restocked.Load())
		assert.Equal(t, int32(1), h.discarded.Load())
	})
}

// TestBatchHeldElicitation: a client that can ask its person is asked
// once for the whole held batch; accept runs every step once and answers
// the batch's result, decline runs nothing and answers code rejected (a
// record per step, stage rejected).
func TestBatchHeldElicitation(t *testing.T) {
	bothVersions(t, func(t *testing.T, version string) {
		for _, answer := range []string{"accept", "decline"} {
			t.Run(answer, func(t *testing.T) {
				h := newHeldShop(t)
				var mu sync.Mutex
				var asked []string
				cs := h.connect(t, version, func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					mu.Lock()
					asked = append(asked, req.Params.Message)
					mu.Unlock()
					return &mcp.ElicitResult{Action: answer, Content: map[string]any{}}, nil
				})
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_batch", Arguments: heldBatch})
				require.NoError(t, err)
				mu.Lock()
				require.Len(t, asked, 1, "one question for the whole batch")
				question := asked[0]
				mu.Unlock()
				assert.True(t, strings.HasPrefix(question, "Run the batch (run_batch) with {\"commands\":["), question)
				assert.Contains(t, question, "The batch holds steps that need your confirmation: #1 Discard stock (shop-discard).")
				held := h.recordsAt(actions.StageHeld)
				require.Len(t, held, 2, "held whole: a record per step")
				change := held[0].Audit.PendingChange
				require.NotEmpty(t, change)

				if answer == "decline" {
					require.True(t, res.IsError)
					var out receiptJSON
					structured(t, res, &out)
					assert.Equal(t, actions.CodeRejected, out.Code)
					assert.Nil(t, out.Pending)
					assert.Contains(t, textOf(t, res), "refused: rejected")
					assert.Zero(t, h.restocked.Load(), "nothing runs")
					assert.Zero(t, h.discarded.Load())
					rejected := h.recordsAt(actions.StageRejected)
					require.Len(t, rejected, 2)
					for _, rec := range rejected {
						assert.Equal(t, actions.CodeRejected, rec.Entry.Error)
						assert.Equal(t, change, rec.Audit.PendingChange)
					}
					_, err := h.reg.Decide(context.Background(), actions.Decision{Change: change, Confirm: true, Caller: h.person()})
					assert.ErrorIs(t, err, actions.CodeUnknownChange, "a rejected batch cannot be confirmed later")
					assert.Zero(t, h.discarded.Load())
					return
				}
				require.False(t, res.IsError, "%s", textOf(t, res))
				assert.Equal(t, int32(1), h.restocked.Load(), "every step runs once")
				assert.Equal(t, int32(1), h.discarded.Load())
				var out struct {
					Result json.RawMessage `json:"result"`
					Steps  []struct {
						Call    string `json:"call"`
						Outcome string `json:"outcome"`
					} `json:"steps"`
				}
				structured(t, res, &out)
				assert.JSONEq(t, `{"discarded":"eggs"}`, string(out.Result))
				require.Len(t, out.Steps, 2)
				assert.Equal(t, "shop/restock", out.Steps[0].Call)
				assert.Equal(t, "done", out.Steps[0].Outcome)
				assert.Equal(t, "shop/discard", out.Steps[1].Call)
				assert.Equal(t, "done", out.Steps[1].Outcome)
				confirmed := h.recordsAt(actions.StageConfirmed)
				require.Len(t, confirmed, 2)
				for _, rec := range confirmed {
					assert.Equal(t, change, rec.Audit.PendingChange)
				}
				changes, err := h.reg.PendingChanges(context.Background(), h.person())
				require.NoError(t, err)
				assert.Empty(t, changes, "the change is used up")
			})
		}
	})
}

// TestBatchStepsByToolName: a batch whose steps name tools as tools/list
// shows them (ns-name) runs, as one naming action ids does, and the two
// may be mixed; the records name the action ids.
func TestBatchStepsByToolName(t *testing.T) {
	bothVersions(t, func(t *testing.T, version string) {
		h := newHeldShop(t)
		cs := h.connect(t, version, nil)
		list, err := cs.ListTools(context.Background(), nil)
		require.NoError(t, err)
		listed := map[string]bool{}
		for _, tool := range list.Tools {
			listed[tool.Name] = true
		}
		require.True(t, listed["shop-restock"] && listed["shop-stock"], "the names the steps use are the listed ones")
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_batch", Arguments: json.RawMessage(`{"commands":[
			{"call":"shop-restock","with":{"item":"milk","count":1},"as":"r"},
			{"call":"shop/restock","with":{"item":"${r.restocked}","count":2}},
			{"call":"shop-stock","as":"s"}],"result":"${s.apples}"}`)})
		require.NoError(t, err)
		require.False(t, res.IsError, "%s", textOf(t, res))
		assert.Equal(t, `{"result":3,"steps":[{"call":"shop/restock","outcome":"done","result":{"restocked":"milk"}},{"call":"shop/restock","outcome":"done","result":{"restocked":"milk"}},{"call":"shop/stock","outcome":"done","result":{"apples":3}}]}`,
			textOf(t, res))
		assert.Equal(t, int32(2), h.restocked.Load())
		h.mu.Lock()
		defer h.mu.Unlock()
		require.Len(t, h.records, 3)
		for i, want := range []string{"shop/restock", "shop/restock", "shop/stock"} {
			assert.Equal(t, want, h.records[i].Entry.Action)
			assert.True(t, h.records[i].Audit.Batch, "a step of a batch")
		}
	})
}

// TestBatchRefusedStepIsNamed: a refused step's answer points at it by
// its index (at: /commands/N) and its tool name (step), whatever the
// step called it by; its issues are under the step's pointer.
func TestBatchRefusedStepIsNamed(t *testing.T) {
	for _, call := range []string{"shop-restock", "shop/restock"} {
		t.Run(call, func(t *testing.T) {
			h := newHeldShop(t)
			cs := h.connect(t, "2025-11-25", nil)
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_batch", Arguments: json.RawMessage(`{"commands":[
				{"call":"shop-stock"},
				{"call":"` + call + `","with":{"item":"milk","count":0}}]}`)})
			require.NoError(t, err)
			require.True(t, res.IsError)
			var out struct {
				Code   actions.Code    `json:"code"`
				At     string          `json:"at"`
				Step   string          `json:"step"`
				Kept   bool            `json:"kept"`
				Issues []actions.Issue `json:"issues"`
				Steps  []struct {
					Call    string `json:"call"`
					Outcome string `json:"outcome"`
					Error   string `json:"error"`
				} `json:"steps"`
			}
			structured(t, res, &out)
			assert.Equal(t, actions.CodeInvalidParameters, out.Code)
			assert.Equal(t, "/commands/1", out.At)
			assert.Equal(t, "shop-restock", out.Step, "the step by its tool name")
			require.Len(t, out.Issues, 1)
			assert.Equal(t, "/commands/1/with/count", out.Issues[0].Path)
			assert.Equal(t, "minimum", out.Issues[0].Keyword)
			require.Len(t, out.Steps, 2)
			assert.Equal(t, "done", out.Steps[0].Outcome)
			assert.Equal(t, "refused", out.Steps[1].Outcome)
			assert.Equal(t, "invalid_parameters", out.Steps[1].Error)
			assert.False(t, out.Kept, "the unit did not commit")
			assert.Contains(t, textOf(t, res), "step /commands/1 (shop-restock) was refused")
			assert.Zero(t, h.restocked.Load())
		})
	}
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

		held := h.recordsAt(actions.StageHeld)
		require.Len(t, held, 1)
		change := held[0].Audit.PendingChange
		h.mu.Lock()
		last := h.records[len(h.records)-1]
		h.mu.Unlock()
		assert.Equal(t, actions.CodeForbiddenCapability, last.Audit.Code, "the host sees why")
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
			assert.Equal(t, actions.CodeConfirmationRequired, out.Code, name)
			assert.Nil(t, out.Pending, "%s: no receipt", name)
			assert.NotContains(t, textOf(t, res), "pending change", name)
		}
		assert.Zero(t, asked.Load(), "never asked")
		assert.Zero(t, h.restocked.Load())
		assert.Zero(t, h.discarded.Load())
		held, err := h.pending.List(context.Background(), "")
		require.NoError(t, err)
		assert.Empty(t, held, "nothing is held")
		assert.Empty(t, h.recordsAt(actions.StageHeld))
	})
}

type heldQuote struct {
	Item  string  `json:"item"`
	Total float64 `json:"total"`
}

// TestTypedOutputSchemaAdmitsRefusalsAndReceipts: on a typed tool (an
// output schema inferred from its result type), a result, a refusal of
// the parameters, a body's own refusal and a held call's receipt all
// carry structuredContent, and the outputSchema tools/list shows (an
// anyOf of the result's schema and a refusal's object), compiled with
// jsonschema v6 as a client would, validates each of them while still
// refusing an object that is neither.
func TestTypedOutputSchemaAdmitsRefusalsAndReceipts(t *testing.T) {
	bothVersions(t, func(t *testing.T, version string) {
		reg := actions.NewRegistry(&actions.Options{Gate: &actions.GateOptions{}})
		quoteBody := func(_ context.Context, p quoteParams, _ *actions.Trace) (heldQuote, error) {
			if p.Qty > 100 {
				return heldQuote{}, actions.NewRefusal("too_many", "at most 100 items")
			}
			return heldQuote{Item: p.Item, Total: 2.5 * float64(p.Qty)}, nil
		}
		reg.MustRegister(
			actions.Typed(actions.Definition{ID: "shop/quote", Effect: actions.EffectRead,
				Refusals: []actions.DeclaredRefusal{{Code: "too_many", Retry: actions.RetryAfterEdit}}}, quoteBody),
			actions.Typed(actions.Definition{ID: "shop/order", Effect: actions.EffectWrite, NeedsConfirmation: true}, quoteBody),
			actions.Typed(actions.Definition{ID: "shop/sizes", Effect: actions.EffectRead},
				func(context.Context, sizeParams, *actions.Trace) ([]string, error) { return []string{"S", "M"}, nil }),
		)
		server := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "v0"}, nil)
		require.NoError(t, mcpserver.AddTools(server, reg, &mcpserver.Options{
			Caller: func(context.Context, *auth.TokenInfo, http.Header) *actions.Caller {
				return &actions.Caller{Principal: "editor"}
			},
		}))
		ctx := context.Background()
		serverT, clientT := mcp.NewInMemoryTransports()
		ss, err := server.Connect(ctx, serverT, nil)
		require.NoError(t, err)
		defer ss.Close()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v0"}, nil).Connect(ctx, clientT, &mcp.ClientSessionOptions{ProtocolVersion: version})
		require.NoError(t, err)
		defer cs.Close()

		list, err := cs.ListTools(ctx, nil)
		require.NoError(t, err)
		schemas := map[string]any{}
		for _, tool := range list.Tools {
			if tool.OutputSchema != nil {
				schemas[tool.Name] = tool.OutputSchema
			}
		}
		names := []string{"shop-order", "shop-quote"}
		if version >= "2026-07-28" {
			names = append(names, "shop-sizes") // an array root: listed from 2026-07-28 only
		} else {
			assert.NotContains(t, schemas, "shop-sizes")
		}
		for _, name := range names {
			require.Contains(t, schemas, name)
			var listed struct {
				Type  string           `json:"type"`
				AnyOf []map[string]any `json:"anyOf"`
			}
			require.NoError(t, json.Unmarshal(mustJSON(t, schemas[name]), &listed))
			require.Len(t, listed.AnyOf, 3, "%s: the result's schema, a refusal's or a bounded result's", name)
			if name != "shop-sizes" {
				assert.Equal(t, "object", listed.Type, "%s: an object root stays an object root", name)
			}
			sch := compileListed(t, schemas[name])
			neither, err := jsonschemaValue(`{"nope":1}`)
			require.NoError(t, err)
			assert.Error(t, sch.Validate(neither), "%s: the listed schema still refuses what is neither", name)
		}
		quote, order := compileListed(t, schemas["shop-quote"]), compileListed(t, schemas["shop-order"])

		check := func(tool string, sch *jsonschema.Schema, args any, isError bool, code actions.Code) map[string]any {
			t.Helper()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
			require.NoError(t, err, tool)
			require.Equal(t, isError, res.IsError, "%s: %s", tool, textOf(t, res))
			var out map[string]any
			structured(t, res, &out)
			v, err := jsonschemaValue(string(mustJSON(t, res.StructuredContent)))
			require.NoError(t, err)
			assert.NoError(t, sch.Validate(v), "%s %v: structuredContent against the listed outputSchema", tool, args)
			if code != "" {
				assert.Equal(t, string(code), out["code"], tool)
			}
			return out
		}
		check("shop-quote", quote, map[string]any{"item": "bolt", "qty": 2}, false, "")
		out := check("shop-quote", quote, map[string]any{"item": "bolt", "qty": "two"}, true, actions.CodeInvalidParameters)
		assert.NotEmpty(t, out["issues"])
		out = check("shop-quote", quote, map[string]any{"item": "bolt", "qty": 101}, true, "too_many")
		assert.Equal(t, "after-edit", out["retry"], "the body's refusal with its declared retry")
		out = check("shop-order", order, map[string]any{"item": "bolt", "qty": 2}, true, actions.CodeConfirmationRequired)
		pending, _ := out["pending"].(map[string]any)
		require.NotNil(t, pending, "the receipt")
		assert.NotEmpty(t, pending["id"])
		assert.NotEmpty(t, pending["expires"])
		if version >= "2026-07-28" {
			sizes := compileListed(t, schemas["shop-sizes"])
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "shop-sizes"})
			require.NoError(t, err)
			v, err := jsonschemaValue(string(mustJSON(t, res.StructuredContent)))
			require.NoError(t, err)
			assert.NoError(t, sizes.Validate(v), "an array result")
			check("shop-sizes", sizes, map[string]any{"family": 3}, true, actions.CodeInvalidParameters)
		}
	})
}

// jsonschemaValue decodes JSON text as jsonschema v6 validates it.
func jsonschemaValue(text string) (any, error) {
	return jsonschema.UnmarshalJSON(strings.NewReader(text))
}
