package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions/internal/dbtest"
)

// startReplica starts the built example as "serve -http 127.0.0.1:0
// -stateless" on the database dsn, named name in the run log, and returns
// its MCP URL. The process is stopped (SIGTERM, then killed) at the
// test's end.
func startReplica(t *testing.T, bin, dsn, name string) string {
	t.Helper()
	cmd := exec.Command(bin, "serve", "-http", "127.0.0.1:0", "-stateless", "-db", dsn, "-replica", name)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			if _, rest, ok := strings.Cut(sc.Text(), "serving MCP at "); ok && !sent {
				url, _, _ := strings.Cut(rest, " ")
				urls <- url
				sent = true
			}
		}
	}()
	select {
	case url := <-urls:
		return url
	case <-time.After(30 * time.Second):
		t.Fatalf("replica %s did not start", name)
		return ""
	}
}

// TestReplicasShareOnePostgreSQL runs two example processes serving MCP
// over streamable HTTP against one PostgreSQL database, and a client
// driving both at once with writes that conflict (the same actors'
// emissions), new actors, reads and batches. Then the run log, replayed
// in order on a fresh model ("replay -db"), gives every entry again, each
// replica's and the other's, and ends on the database's model: the final
// model is the serial application of the committed entries.
func TestReplicasShareOnePostgreSQL(t *testing.T) {
	db := dbtest.Postgres(t)
	if testing.Short() {
		t.Skip("builds the example and starts two processes")
	}
	bin := filepath.Join(t.TempDir(), "supplychain")
	build := exec.Command("go", "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	urls := map[string]string{}
	for _, name := range []string{"a", "b"} {
		urls[name] = startReplica(t, bin, db.DSN, name)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	connect := func(url string) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "driver", Version: "v0"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer("editor-demo-token")}},
			&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		require.NoError(t, err)
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	const workers, calls = 3, 12
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := map[string]int{}
	for name, url := range urls {
		for w := range workers {
			cs := connect(url)
			wg.Go(func() {
				for i := range calls {
					var params *mcp.CallToolParams
					switch i % 4 {
					case 0, 1: // the same two rows from every worker of both replicas
						actor := []string{"lyon_plant", "north_warehouse"}[(w+i)%2]
						params = &mcp.CallToolParams{Name: "carbon-record_emissions",
							Arguments: map[string]any{"actor": actor, "period": "2025", "co2_t": float64(w*100 + i)}}
					case 2:
						params = &mcp.CallToolParams{Name: "supply-create_actor",
							Arguments: map[string]any{"id": fmt.Sprintf("site_%s_%d_%d", name, w, i), "display_name": "Site"}}
					case 3:
						params = &mcp.CallToolParams{Name: "run_batch", Arguments: map[string]any{"commands": []any{
							map[string]any{"call": "carbon/record_emissions", "with": map[string]any{"actor": "Usine de Lyon", "co2_t": float64(i)}},
							map[string]any{"call": "carbon/total_emissions", "with": map[string]any{"period": "2025"}},
						}}}
					}
					res, err := cs.CallTool(ctx, params)
					if !assert.NoError(t, err, "replica %s worker %d call %d", name, w, i) {
						return
					}
					assert.False(t, res.IsError, "replica %s worker %d call %d: %v", name, w, i, res.Content)
					mu.Lock()
					done[name]++
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	require.Equal(t, map[string]int{"a": workers * calls, "b": workers * calls}, done)

	replay := exec.CommandContext(ctx, bin, "replay", "-db", db.DSN)
	var stdout strings.Builder
	replay.Stdout = &stdout
	replay.Stderr = io.Discard
	err = replay.Run()
	require.NoError(t, err, "replay:\n%s", stdout.String())
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	require.Equal(t, "model: same", lines[len(lines)-1], "the replayed model is the database's")
	byOrigin := map[string]int{}
	for _, l := range lines[:len(lines)-1] {
		f := strings.Fields(l)
		require.Len(t, f, 4, l)
		assert.Equal(t, "same", f[3], l)
		byOrigin[f[1]]++
	}
	// Each replica wrote its own calls' entries (a batch two), and every
	// one of them replays.
	want := workers * (calls/4*3 + calls/4*2)
	assert.Equal(t, map[string]int{"a": want, "b": want}, byOrigin)
}
