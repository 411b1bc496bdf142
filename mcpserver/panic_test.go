package mcpserver_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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

// stepPanics is an Observer whose End of the batch step at index step
// dereferences a nil pointer: a fault in the call path outside any body,
// which the registry does not guard as it guards bodies.
type stepPanics struct{ step int }

func (o stepPanics) Start(ctx context.Context, op actions.Operation) (context.Context, actions.Observation) {
	if op.Kind != actions.OpCall || op.Step != o.step {
		return ctx, actions.Observation{}
	}
	return ctx, actions.Observation{End: func(actions.Result, error) {
		var rec *store.Record
		_ = rec.Entry.Action // nil pointer dereference
	}}
}

// TestBatchToolPanicKeepsTheRecords: a panic in the call path while a
// batch's third step runs (its Observer's End) over MCP, with the SDK's
// client, on a store with one writer's slot. The batch is answered
// internal (JSON-RPC -32603), nothing of it is kept, and every step made
// is in the log, rolled back: the two done, the third refused internal.
// The store's slot is given back: the next call runs.
func TestBatchToolPanicKeepsTheRecords(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		ctx := context.Background()
		_, err := db.Exec("CREATE TABLE stock (item TEXT PRIMARY KEY, n BIGINT NOT NULL)")
		require.NoError(t, err)
		st, err := sqlstore.New(db.DB, db.Dialect, &sqlstore.Options{Writers: 1})
		require.NoError(t, err)
		require.NoError(t, st.Migrate(ctx))
		var seen []store.Record
		reg := stockRegistry(t, db, &actions.Options{Store: st, Observer: stepPanics{step: 2},
			OnRecord: func(r store.Record) { seen = append(seen, r) }})

		server := mcp.NewServer(&mcp.Implementation{Name: "stock", Version: "v0.0.1"}, nil)
		require.NoError(t, mcpserver.AddTools(server, reg, &mcpserver.Options{Batch: &mcpserver.BatchTool{}}))
		serverT, clientT := mcp.NewInMemoryTransports()
		ss, err := server.Connect(ctx, serverT, nil)
		require.NoError(t, err)
		defer ss.Close()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "planner", Version: "v0.0.1"}, nil).Connect(ctx, clientT, nil)
		require.NoError(t, err)
		defer cs.Close()

		_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_batch", Arguments: json.RawMessage(`{"commands":[
			{"call":"stock/add","with":{"item":"nut","n":10}},
			{"call":"stock/add","with":{"item":"bolt","n":2}},
			{"call":"stock/add","with":{"item":"nut","n":1}},
			{"call":"stock/add","with":{"item":"nut","n":1}}]}`)})
		var je *jsonrpc.Error
		require.ErrorAs(t, err, &je)
		assert.Equal(t, int64(jsonrpc.CodeInternalError), je.Code)

		var n int
		require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM stock").Scan(&n))
		assert.Zero(t, n, "nothing of the batch is kept")
		undone, err := st.Read(ctx, sqlstore.Filter{Kept: sqlstore.UndoneOnly})
		require.NoError(t, err)
		require.Len(t, undone, 3, "every step made is recorded")
		for i, r := range undone {
			assert.True(t, r.RolledBack, "step %d", i)
			assert.Equal(t, "stock/add", r.Entry.Action, "step %d", i)
			assert.Equal(t, i, r.Position, "step %d", i)
		}
		assert.Equal(t, store.OutcomeDone, undone[1].Entry.Outcome)
		assert.Equal(t, store.OutcomeRefused, undone[2].Entry.Outcome)
		assert.Equal(t, codes.Internal, undone[2].Entry.Error)
		assert.Len(t, seen, 3, "OnRecord heard of each")

		// The unit gave its writer's slot back.
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "stock-add", Arguments: map[string]any{"item": "nut", "n": 1}})
		require.NoError(t, err)
		assert.False(t, res.IsError)
		require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM stock").Scan(&n))
		assert.Equal(t, 1, n)
	})
}

// TestToolPanicKeepsTheRecord: the same fault in one tool call (its
// Observer's End): answered internal, and the call is in the log, refused
// internal, rolled back.
func TestToolPanicKeepsTheRecord(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		ctx := context.Background()
		_, err := db.Exec("CREATE TABLE stock (item TEXT PRIMARY KEY, n BIGINT NOT NULL)")
		require.NoError(t, err)
		st, err := sqlstore.New(db.DB, db.Dialect, &sqlstore.Options{Writers: 1})
		require.NoError(t, err)
		require.NoError(t, st.Migrate(ctx))
		reg := stockRegistry(t, db, &actions.Options{Store: st, Observer: stepPanics{step: -1}})
		server := mcp.NewServer(&mcp.Implementation{Name: "stock", Version: "v0.0.1"}, nil)
		require.NoError(t, mcpserver.AddTools(server, reg, nil))
		serverT, clientT := mcp.NewInMemoryTransports()
		ss, err := server.Connect(ctx, serverT, nil)
		require.NoError(t, err)
		defer ss.Close()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "planner", Version: "v0.0.1"}, nil).Connect(ctx, clientT, nil)
		require.NoError(t, err)
		defer cs.Close()

		_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "stock-add", Arguments: map[string]any{"item": "nut", "n": 1}})
		var je *jsonrpc.Error
		require.ErrorAs(t, err, &je)
		assert.Equal(t, int64(jsonrpc.CodeInternalError), je.Code)
		var n int
		require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM stock").Scan(&n))
		assert.Zero(t, n)
		undone, err := st.Read(ctx, sqlstore.Filter{Kept: sqlstore.UndoneOnly})
		require.NoError(t, err)
		require.Len(t, undone, 1)
		assert.Equal(t, "stock/add", undone[0].Entry.Action)
		assert.Equal(t, codes.Internal, undone[0].Entry.Error)
		assert.True(t, undone[0].RolledBack)
	})
}
