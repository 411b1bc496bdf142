package mcpserver_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/internal/dbtest"
	"github.com/actionreg/actions/mcpserver"
	"github.com/actionreg/actions/sqlstore"
	"github.com/actionreg/actions/store"
)

// txEnv gives each body the transaction of its unit (sqlstore.Tx).
func txOf(ctx context.Context) *sql.Tx {
	tx, _ := sqlstore.Tx(ctx)
	return tx
}

// stockRegistry has two actions on a stock table reached through the
// transaction: t/add puts units of an item in stock, t/take takes them
// out and refuses (out_of_stock) when there are not enough. Each unit
// runs in one transaction of store (opts.Store), with its records.
func stockRegistry(t *testing.T, db *dbtest.DB, opts *actions.Options) *actions.Registry {
	t.Helper()
	reg := actions.NewRegistry(opts)
	schema := `{"type":"object","additionalProperties":false,"required":["item","n"],
		"properties":{"item":{"type":"string","minLength":1},"n":{"type":"integer","minimum":1}}}`
	reg.MustRegister(
		actions.New(actions.Definition{ID: "stock/add", Additive: true, Parameters: schema},
			func(ctx context.Context, p map[string]any, _ *actions.Trace) (any, error) {
				tx := txOf(ctx)
				n, _ := p["n"].(json.Number).Int64()
				_, err := tx.ExecContext(ctx, db.Q("INSERT INTO stock (item, n) VALUES (?, ?) ON CONFLICT (item) DO UPDATE SET n = stock.n + excluded.n"), p["item"], n)
				return map[string]any{"item": p["item"], "added": n}, err
			}),
		actions.New(actions.Definition{ID: "stock/take", Additive: true, Parameters: schema},
			func(ctx context.Context, p map[string]any, _ *actions.Trace) (any, error) {
				tx := txOf(ctx)
				n, _ := p["n"].(json.Number).Int64()
				var have int64
				err := tx.QueryRowContext(ctx, db.Q("SELECT n FROM stock WHERE item = ?"), p["item"]).Scan(&have)
				if errors.Is(err, sql.ErrNoRows) || (err == nil && have < n) {
					return nil, actions.NewRefusal("out_of_stock", "not enough units in stock")
				}
				if err != nil {
					return nil, err
				}
				_, err = tx.ExecContext(ctx, db.Q("UPDATE stock SET n = n - ? WHERE item = ?"), n, p["item"])
				return map[string]any{"item": p["item"], "left": have - n}, err
			}),
	)
	return reg
}

// TestBatchToolRollsBackARefusedBatch: the SDK's client sends a batch
// whose third step is refused; the batch runs in one transaction, so the
// two steps before it leave nothing in the database, their entries are in
// the log marked rolled back, and the answer names /commands/2.
func TestBatchToolRollsBackARefusedBatch(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		ctx := context.Background()
		_, err := db.Exec("CREATE TABLE stock (item TEXT PRIMARY KEY, n BIGINT NOT NULL)")
		require.NoError(t, err)
		_, err = db.Exec("INSERT INTO stock (item, n) VALUES ('bolt', 5)")
		require.NoError(t, err)
		store, err := sqlstore.New(db.DB, db.Dialect, nil)
		require.NoError(t, err)
		require.NoError(t, store.Migrate(ctx))
		reg := stockRegistry(t, db, &actions.Options{Store: store})

		server := mcp.NewServer(&mcp.Implementation{Name: "stock", Version: "v0.0.1"}, nil)
		require.NoError(t, mcpserver.AddTools(server, reg, &mcpserver.Options{Batch: &mcpserver.BatchTool{}}))
		serverT, clientT := mcp.NewInMemoryTransports()
		ss, err := server.Connect(ctx, serverT, nil)
		require.NoError(t, err)
		defer ss.Close()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "planner", Version: "v0.0.1"}, nil).Connect(ctx, clientT, nil)
		require.NoError(t, err)
		defer cs.Close()

		// The tool's input schema is the batch grammar listing the tool
		// names as tools/list shows them, and the action ids.
		list, err := cs.ListTools(ctx, nil)
		require.NoError(t, err)
		var batchTool *mcp.Tool
		for _, tool := range list.Tools {
			if tool.Name == "run_batch" {
				batchTool = tool
			}
		}
		require.NotNil(t, batchTool, "the batch tool is listed")
		schema, err := json.Marshal(batchTool.InputSchema)
		require.NoError(t, err)
		assert.Contains(t, string(schema), `"call":{"description":"The tool to call, by its name.","enum":["stock-add","stock-take","stock/add","stock/take"]}`)

		stockOf := func() map[string]int64 {
			rows, err := db.Query("SELECT item, n FROM stock ORDER BY item")
			require.NoError(t, err)
			defer rows.Close()
			out := map[string]int64{}
			for rows.Next() {
				var item string
				var n int64
				require.NoError(t, rows.Scan(&item, &n))
				out[item] = n
			}
			return out
		}
		before := stockOf()

		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_batch", Arguments: json.RawMessage(`{"commands":[
			{"call":"stock/add","with":{"item":"nut","n":10},"as":"nuts"},
			{"call":"stock/take","with":{"item":"bolt","n":2}},
			{"call":"stock/take","with":{"item":"${nuts.item}","n":11}}]}`)})
		require.NoError(t, err)
		require.True(t, res.IsError, "the batch is refused")
		text := res.Content[0].(*mcp.TextContent).Text
		assert.Contains(t, text, "step /commands/2 (stock-take) was refused; nothing of the batch was kept")
		assert.Contains(t, text, "refused: out_of_stock")
		var answer struct {
			Code  string `json:"code"`
			At    string `json:"at"`
			Step  string `json:"step"`
			Kept  bool   `json:"kept"`
			Steps []struct {
				Call, Outcome, Error string
			} `json:"steps"`
		}
		raw, err := json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(raw, &answer))
		assert.Equal(t, "out_of_stock", answer.Code)
		assert.Equal(t, "/commands/2", answer.At)
		assert.Equal(t, "stock-take", answer.Step, "the step at fault by its tool name")
		assert.False(t, answer.Kept)
		require.Len(t, answer.Steps, 3)
		assert.Equal(t, "done", answer.Steps[0].Outcome)
		assert.Equal(t, "done", answer.Steps[1].Outcome)
		assert.Equal(t, "refused", answer.Steps[2].Outcome)

		assert.Equal(t, before, stockOf(), "nothing of steps one and two is left")
		committed, err := store.Read(ctx, sqlstore.Filter{})
		require.NoError(t, err)
		assert.Empty(t, committed)
		rolled, err := store.Read(ctx, sqlstore.Filter{Kept: sqlstore.UndoneOnly})
		require.NoError(t, err)
		require.Len(t, rolled, 3, "the three entries are kept as an audit trail")

		// An invalid step's issues point into the batch.
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_batch", Arguments: json.RawMessage(`{"commands":[
			{"call":"stock/add","with":{"item":"nut","n":1}},
			{"call":"stock/add","with":{"item":"","n":1}}]}`)})
		require.NoError(t, err)
		require.True(t, res.IsError)
		assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, "/commands/1/with/item [minLength]")

		// A step calling an action no tool offers is refused before any runs.
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_batch", Arguments: json.RawMessage(`{"commands":[
			{"call":"stock/burn","with":{}}]}`)})
		require.NoError(t, err)
		require.True(t, res.IsError)
		assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, "no step ran")
		assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, "/commands/0/call [call]")

		// A batch that is done is kept whole, with its entries.
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_batch", Arguments: json.RawMessage(`{"commands":[
			{"call":"stock/add","with":{"item":"nut","n":10},"as":"nuts"},
			{"call":"stock/take","with":{"item":"${nuts.item}","n":4},"as":"left"}],"result":"${left}"}`)})
		require.NoError(t, err)
		require.False(t, res.IsError, "%v", res.Content)
		assert.Equal(t, `{"result":{"item":"nut","left":6},"steps":[{"call":"stock/add","outcome":"done","result":{"added":10,"item":"nut"}},{"call":"stock/take","outcome":"done","result":{"item":"nut","left":6}}]}`,
			res.Content[0].(*mcp.TextContent).Text)
		assert.Equal(t, map[string]int64{"bolt": 5, "nut": 6}, stockOf())
		committed, err = store.Read(ctx, sqlstore.Filter{})
		require.NoError(t, err)
		assert.Len(t, committed, 2)
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
				Code   codes.Code      `json:"code"`
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
			assert.Equal(t, codes.InvalidParameters, out.Code)
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
		assert.Equal(t, codes.ConfirmationRequired, out.Code)
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
			assert.Equal(t, store.OutcomeDone, rec.Entry.Outcome, "step %d", i)
			assert.Equal(t, store.StageConfirmed, rec.Audit.Stage, "step %d", i)
			assert.Equal(t, out.Pending.ID, rec.Audit.PendingChange, "step %d", i)
		}
		assert.Equal(t, map[string]any{"discarded": "eggs"}, confirmed.Value, "the batch's result: its last step's")

		_, err = h.reg.Decide(ctx, actions.Decision{Change: out.Pending.ID, Confirm: true, Caller: h.person()})
		assert.ErrorIs(t, err, codes.UnknownChange, "decided once")
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
				held := h.recordsAt(store.StageHeld)
				require.Len(t, held, 2, "held whole: a record per step")
				change := held[0].Audit.PendingChange
				require.NotEmpty(t, change)

				if answer == "decline" {
					require.True(t, res.IsError)
					var out receiptJSON
					structured(t, res, &out)
					assert.Equal(t, codes.Rejected, out.Code)
					assert.Nil(t, out.Pending)
					assert.Contains(t, textOf(t, res), "refused: rejected")
					assert.Zero(t, h.restocked.Load(), "nothing runs")
					assert.Zero(t, h.discarded.Load())
					rejected := h.recordsAt(store.StageRejected)
					require.Len(t, rejected, 2)
					for _, rec := range rejected {
						assert.Equal(t, codes.Rejected, rec.Entry.Error)
						assert.Equal(t, change, rec.Audit.PendingChange)
					}
					_, err := h.reg.Decide(context.Background(), actions.Decision{Change: change, Confirm: true, Caller: h.person()})
					assert.ErrorIs(t, err, codes.UnknownChange, "a rejected batch cannot be confirmed later")
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
				confirmed := h.recordsAt(store.StageConfirmed)
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
