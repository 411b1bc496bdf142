package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/mcpserver"
)

// countingWriter counts the bytes written to it.
type countingWriter struct{ n atomic.Int64 }

func (w *countingWriter) Write(p []byte) (int, error) { w.n.Add(int64(len(p))); return len(p), nil }

// seedActors is a model file of n actors named in English and French.
func seedActors(n int) []byte {
	type actor struct {
		Key         string            `json:"key"`
		ID          string            `json:"id"`
		Type        string            `json:"type"`
		DisplayName map[string]string `json:"display_name"`
	}
	types := []string{"plant", "warehouse", "depot", "supplier"}
	file := struct {
		Languages []string `json:"languages"`
		Actors    []actor  `json:"actors"`
	}{Languages: []string{"en", "fr"}}
	for i := range n {
		file.Actors = append(file.Actors, actor{Key: fmt.Sprintf("act_%d", i+1), ID: fmt.Sprintf("site_%04d", i), Type: types[i%4],
			DisplayName: map[string]string{"en": fmt.Sprintf("Site number %d of the network", i), "fr": fmt.Sprintf("Site numéro %d du réseau", i)}})
	}
	data, _ := json.Marshal(file)
	return data
}

// BenchmarkListBatch1000 is the bounded results' measure: one run_batch request of
// 1,000 supply/list_actors steps (each asking for 500 actors a page) over
// MCP, on the example host with 500 actors in SQLite, with the default
// limits. It reports the peak heap in use while the batch runs, the
// answer's bytes (text and structuredContent) and the run log's bytes
// written (each record as canonical JSON, as sqlstore keeps it).
func BenchmarkListBatch1000(b *testing.B) {
	ctx := context.Background()
	model, err := OpenModel(ctx, filepath.Join(b.TempDir(), "bench.db"), seedActors(500), "bench")
	require.NoError(b, err)
	defer model.Close()
	logBytes := &countingWriter{}
	w := actions.NewEntryWriter(logBytes)
	reg, err := NewRegistry(model, w.Write)
	require.NoError(b, err)
	server := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "v0"}, nil)
	require.NoError(b, mcpserver.AddTools(server, reg, &mcpserver.Options{
		Batch: &mcpserver.BatchTool{},
		Caller: func(context.Context, *auth.TokenInfo, http.Header) *identity.Caller {
			return &identity.Caller{Principal: "viewer", Capabilities: []string{capRead}}
		},
	}))
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	require.NoError(b, err)
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v0"}, nil).Connect(ctx, ct, nil)
	require.NoError(b, err)
	defer cs.Close()
	steps := make([]any, 1000)
	for i := range steps {
		steps[i] = map[string]any{"call": "supply-list_actors", "with": map[string]any{"limit": 500}}
	}
	args := map[string]any{"commands": steps}

	var peak atomic.Uint64
	done := make(chan struct{})
	go func() { // samples the heap while the batch runs
		var ms runtime.MemStats
		for {
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > peak.Load() {
					peak.Store(ms.HeapInuse)
				}
			}
		}
	}()
	var answer int
	b.ResetTimer()
	for range b.N {
		logBytes.n.Store(0)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_batch", Arguments: args})
		require.NoError(b, err)
		require.False(b, res.IsError)
		answer = 0
		for _, c := range res.Content {
			answer += len(c.(*mcp.TextContent).Text)
		}
		sc, _ := json.Marshal(res.StructuredContent)
		answer += len(sc)
	}
	b.StopTimer()
	close(done)
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(answer)/(1<<10), "answer-KiB")
	b.ReportMetric(float64(logBytes.n.Load())/(1<<10), "log-KiB")
}
