package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/internal/dbtest"
	"github.com/actionreg/actions/mcpserver"
	"github.com/actionreg/actions/sqlstore"
)

// batchWatch counts, by batch, the steps whose call started: a batch
// whose first step started has calls to record.
type batchWatch struct {
	mu      sync.Mutex
	started int // batches whose first step's call started
}

func (w *batchWatch) Start(ctx context.Context, op actions.Operation) (context.Context, actions.Observation) {
	if op.Kind == actions.OpCall && op.Step == 0 {
		w.mu.Lock()
		w.started++
		w.mu.Unlock()
	}
	return ctx, actions.Observation{}
}

// TestStressCancelBatchOnPostgreSQL: batches of 200 writing steps on
// PostgreSQL, each cancelled by the SDK's client (notifications/cancelled)
// at a random moment in its first 800 ms, twelve at once. No panic reaches the server's
// error log, and every batch whose first step started left its records
// in the log: one unit per batch, rolled back unless it committed whole.
// Run it many times (-count) under -race and load to hunt a rare race.
func TestStressCancelBatchOnPostgreSQL(t *testing.T) {
	db := dbtest.Postgres(t)
	ctx := context.Background()
	_, err := db.Exec("CREATE TABLE stock (item TEXT PRIMARY KEY, n BIGINT NOT NULL)")
	require.NoError(t, err)
	store, err := sqlstore.New(db.DB, db.Dialect, nil)
	require.NoError(t, err)
	require.NoError(t, store.Migrate(ctx))
	watch := &batchWatch{}
	reg := stockRegistry(t, db, &actions.Options{Store: store, Observer: watch})
	var (
		mu     sync.Mutex
		faults []string
	)
	server := mcp.NewServer(&mcp.Implementation{Name: "stock", Version: "v0.0.1"}, nil)
	require.NoError(t, mcpserver.AddTools(server, reg, &mcpserver.Options{Batch: &mcpserver.BatchTool{},
		OnError: func(_ context.Context, tool string, err error) {
			if strings.Contains(err.Error(), "panic") {
				mu.Lock()
				faults = append(faults, tool+": "+err.Error())
				mu.Unlock()
			}
		}}))
	serverT, clientT := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, serverT, nil)
	require.NoError(t, err)
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "planner", Version: "v0.0.1"}, nil).Connect(ctx, clientT, nil)
	require.NoError(t, err)
	defer cs.Close()

	const batches = 12
	var wg sync.WaitGroup
	for b := range batches {
		steps := make([]string, 200)
		for i := range steps {
			steps[i] = fmt.Sprintf(`{"call":"stock/add","with":{"item":"b%d-i%d","n":1}}`, b, i%7)
		}
		batch := json.RawMessage(`{"commands":[` + strings.Join(steps, ",") + `]}`)
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithCancel(ctx)
			time.AfterFunc(time.Duration(rand.IntN(int(800*time.Millisecond))), cancel)
			_, _ = cs.CallTool(cctx, &mcp.CallToolParams{Name: "run_batch", Arguments: batch})
			cancel()
		}()
	}
	wg.Wait()
	// A cancelled call's records are written after its answer: wait for
	// the server's calls to end, then read the log.
	require.Eventually(t, func() bool {
		var units int
		require.NoError(t, db.QueryRow("SELECT COUNT(DISTINCT unit) FROM actions_run_log").Scan(&units))
		watch.mu.Lock()
		defer watch.mu.Unlock()
		return units == watch.started
	}, 30*time.Second, 10*time.Millisecond, "a batch whose steps started left no record")
	mu.Lock()
	assert.Empty(t, faults)
	mu.Unlock()
	var torn int
	require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM (SELECT unit FROM actions_run_log GROUP BY unit
		HAVING COUNT(DISTINCT rolled_back) > 1) t`).Scan(&torn))
	assert.Zero(t, torn, "a unit is kept whole or undone whole")
	var undone, kept int
	require.NoError(t, db.QueryRow("SELECT COUNT(DISTINCT unit) FROM actions_run_log WHERE rolled_back").Scan(&undone))
	require.NoError(t, db.QueryRow("SELECT COUNT(DISTINCT unit) FROM actions_run_log WHERE NOT rolled_back").Scan(&kept))
	t.Logf("%d batches: %d started, %d undone, %d kept", batches, watch.started, undone, kept)
}
