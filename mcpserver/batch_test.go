package mcpserver_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/internal/dbtest"
	"github.com/actionreg/actions/mcpserver"
	"github.com/actionreg/actions/sqlstore"
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
