package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/internal/dbtest"
	"github.com/actionreg/actions/mcpserver"
	"github.com/actionreg/actions/sqlstore"
)

// batchClient serves reg with the batch tool and returns a client of it.
func batchClient(t *testing.T, reg *actions.Registry) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "bounds", Version: "v0.0.1"}, nil)
	require.NoError(t, mcpserver.AddTools(server, reg, &mcpserver.Options{Batch: &mcpserver.BatchTool{}}))
	serverT, clientT := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, serverT, nil)
	require.NoError(t, err)
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "planner", Version: "v0.0.1"}, nil).Connect(ctx, clientT, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	return cs
}

// unknownSteps is a batch of n steps each calling a tool no server lists.
func unknownSteps(n int) json.RawMessage {
	var b strings.Builder
	b.WriteString(`{"commands":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"call":"nope/unlisted"}`)
	}
	b.WriteString(`]}`)
	return json.RawMessage(b.String())
}

type refusedBatch struct {
	Code    string          `json:"code"`
	Message string          `json:"message"`
	Issues  []actions.Issue `json:"issues"`
}

func refusedOf(t *testing.T, res *mcp.CallToolResult) refusedBatch {
	t.Helper()
	require.True(t, res.IsError)
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var r refusedBatch
	require.NoError(t, json.Unmarshal(raw, &r))
	return r
}

// TestBatchToolStepBoundBeforeLookup: 250,000 steps naming unlisted
// tools (a 6 MB request) are refused at the step bound, with one issue,
// before any step's tool is looked up (an unknown_action refusal would
// say the lookups ran); the answer is a few hundred bytes, not one issue
// per step.
func TestBatchToolStepBoundBeforeLookup(t *testing.T) {
	reg := actions.NewRegistry(nil)
	reg.MustRegister(actions.New(actions.Definition{ID: "t/echo", Parameters: `{"type":"object"}`},
		func(_ context.Context, p map[string]any, _ *actions.Trace) (any, error) { return p, nil }))
	cs := batchClient(t, reg)
	args := unknownSteps(250_000)
	require.Greater(t, len(args), 4<<20)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_batch", Arguments: args})
	require.NoError(t, err)
	r := refusedOf(t, res)
	assert.Equal(t, string(actions.CodeInvalidScriptStep), r.Code)
	require.Len(t, r.Issues, 1)
	assert.Equal(t, "/commands", r.Issues[0].Path)
	assert.Contains(t, r.Issues[0].Message, "more than 1000 steps")
	raw, err := json.Marshal(res)
	require.NoError(t, err)
	assert.Less(t, len(raw), 4<<10, "the refusal is small")
}

// TestBatchToolUnknownStepsCapped: 1,000 steps (the step bound) each
// calling an unlisted tool are refused with the first 100
// listed, the message saying how many there were.
func TestBatchToolUnknownStepsCapped(t *testing.T) {
	reg := actions.NewRegistry(nil)
	reg.MustRegister(actions.New(actions.Definition{ID: "t/echo", Parameters: `{"type":"object"}`},
		func(_ context.Context, p map[string]any, _ *actions.Trace) (any, error) { return p, nil }))
	cs := batchClient(t, reg)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_batch", Arguments: unknownSteps(1000)})
	require.NoError(t, err)
	r := refusedOf(t, res)
	assert.Equal(t, string(actions.CodeUnknownAction), r.Code)
	require.Len(t, r.Issues, 100)
	assert.Equal(t, "/commands/99/call", r.Issues[99].Path)
	assert.Contains(t, r.Message, "1000 steps, the first 100 listed")
	raw, err := json.Marshal(res)
	require.NoError(t, err)
	assert.Less(t, len(raw), 32<<10, "the refusal is bounded by the issue cap")
}

// TestKeyedBatchRetryGetsTheFirstAnswer: a keyed batch of 40 steps each
// returning 50 KB is answered within the 64 KiB bound, later steps cut
// or omitted; its retry under the same key gets that answer byte for
// byte (the text and the structured content), on SQLite, PostgreSQL and
// the in-memory run log.
func TestKeyedBatchRetryGetsTheFirstAnswer(t *testing.T) {
	check := func(t *testing.T, store actions.Store) {
		ctx := context.Background()
		runs := 0
		reg := actions.NewRegistry(&actions.Options{Store: store})
		reg.MustRegister(actions.New(actions.Definition{ID: "t/fifty", Parameters: `{"type":"object","properties":{"i":{"type":"integer"}}}`},
			func(_ context.Context, p map[string]any, _ *actions.Trace) (any, error) {
				runs++
				return map[string]any{"i": p["i"], "s": strings.Repeat("y", 50_000)}, nil
			}))
		server := mcp.NewServer(&mcp.Implementation{Name: "bounds", Version: "v0.0.1"}, nil)
		require.NoError(t, mcpserver.AddTools(server, reg, &mcpserver.Options{Batch: &mcpserver.BatchTool{},
			Caller: func(context.Context, *auth.TokenInfo, http.Header) *actions.Caller {
				return &actions.Caller{Principal: "ann", Surface: actions.SurfaceMCP}
			}}))
		serverT, clientT := mcp.NewInMemoryTransports()
		ss, err := server.Connect(ctx, serverT, nil)
		require.NoError(t, err)
		defer ss.Close()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "v0.0.1"}, nil).Connect(ctx, clientT, nil)
		require.NoError(t, err)
		defer cs.Close()

		var steps []string
		for i := range 40 {
			steps = append(steps, fmt.Sprintf(`{"call":"t-fifty","with":{"i":%d}}`, i))
		}
		args := json.RawMessage(`{"commands":[` + strings.Join(steps, ",") + `]}`)
		call := func() []byte {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_batch", Arguments: args, Meta: mcp.Meta{actions.IdempotencyKeyMeta: "k-1"}})
			require.NoError(t, err)
			require.False(t, res.IsError, "%v", res.Content)
			raw, err := json.Marshal(res)
			require.NoError(t, err)
			return raw
		}
		first := call()
		assert.Contains(t, string(first), `"omitted":true`, "later steps are omitted")
		retry := call()
		assert.Equal(t, 40, runs, "the retry runs nothing")
		assert.Equal(t, string(first), string(retry), "the retry's answer is the first, byte for byte")
	}
	t.Run("runlog", func(t *testing.T) { check(t, actions.NewRunLog()) })
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		store, err := sqlstore.New(db.DB, db.Dialect, nil)
		require.NoError(t, err)
		require.NoError(t, store.Migrate(context.Background()))
		check(t, store)
	})
}
