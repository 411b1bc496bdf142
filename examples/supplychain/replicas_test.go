package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/internal/dbtest"
	"github.com/actionreg/actions/sqlstore"
	"github.com/actionreg/actions/store"
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

// TestReplicasSideBySide runs two example hosts on one database (two
// stores, as two replicas), under the order they open it with
// (sqlstore.OrderLocks, no Serial), with 8 clients each making a fixed
// number of conflicting calls: every client overwrites the same two
// actors' emissions, creates actors of the same ids, and runs batches that
// record on those new actors and total the period. Then:
//
//   - no update is lost: on each emission row, the successful calls'
//     answers (each names the value it replaced) chain from the seed, or
//     from nothing, through every one of them to the row's final value;
//   - each contested id was created once, the others refused id_taken,
//     and the actor counter moved once per creation;
//   - the whole log, replayed in Seq order on a fresh model, gives every
//     entry again and ends on the database's model.
//
// On SQLite both orders are the commit order; the test holds there too.
// It runs again with the hosts opened as "serve -serial" opens them
// (sqlstore.Options.Serial), the option kept for hosts that want it.
func TestReplicasSideBySide(t *testing.T) {
	if testing.Short() {
		t.Skip("256 calls from 16 clients")
	}
	const (
		replicas, clients, calls = 2, 8, 16
		period                   = "2031" // no row yet: the first writers insert
	)
	for _, serial := range []bool{false, true} {
		name := map[bool]string{false: "locks", true: "serial"}[serial]
		t.Run(name, func(t *testing.T) { sideBySide(t, serial, replicas, clients, calls, period) })
	}
}

// sideBySide is TestReplicasSideBySide with the hosts' stores serial or
// not.
func sideBySide(t *testing.T, serial bool, replicas, clients, calls int, period string) {
	eachEngine(t, []engine{sqliteFile, postgres}, func(t *testing.T, eng engine) {
		ctx := context.Background()
		dsn := eng.fresh(t)
		var regs []*actions.Registry
		var models []*Model
		for r := range replicas {
			model, reg, err := setupDBOrder(ctx, dsn, fmt.Sprintf("replica%d", r), serial, nil)
			require.NoError(t, err)
			t.Cleanup(func() { _ = model.Close() })
			regs, models = append(regs, reg), append(models, model)
		}
		before, err := models[0].Dump(ctx)
		require.NoError(t, err)

		// What the callers were told, per emission row: each successful
		// record's value and the value it replaced (nil: none).
		type write struct {
			co2t     float64
			previous *float64
		}
		var mu sync.Mutex
		writes := map[string][]write{}
		created, taken := map[string]int{}, map[string]int{}
		note := func(recs []store.Record) {
			mu.Lock()
			defer mu.Unlock()
			for _, rec := range recs {
				e := rec.Entry
				if e.Action != "carbon/record_emissions" || e.Outcome != store.OutcomeDone || rec.RolledBack {
					continue
				}
				var res emissionsRecord
				var p emissionsParams
				require.NoError(t, json.Unmarshal([]byte(e.Result), &res))
				require.NoError(t, json.Unmarshal([]byte(e.Parameters), &p))
				row := p.Actor + " " + p.Period
				writes[row] = append(writes[row], write{co2t: res.CO2t, previous: res.Previous})
			}
		}
		var wg sync.WaitGroup
		for r, reg := range regs {
			for c := range clients {
				wg.Go(func() {
					for i := range calls {
						value := float64(r*10000 + c*100 + i)
						shared := fmt.Sprintf("shared_%d", i/4) // every client creates these
						var call actions.Call
						switch i % 4 {
						case 0, 1:
							actor := []string{"lyon_plant", "north_warehouse"}[(c+i)%2]
							call = actions.Call{Action: "carbon/record_emissions", Caller: editorMCP,
								Params: map[string]any{"actor": actor, "period": period, "co2_t": value}}
						case 2:
							call = actions.Call{Action: "supply/create_actor", Caller: editorMCP,
								Params: map[string]any{"id": shared, "display_name": "Shared " + shared}}
						case 3:
							call = actions.Call{Caller: editorMCP, Batch: &actions.Batch{Steps: []actions.Step{
								{Call: "carbon/record_emissions", With: map[string]any{"actor": shared, "period": period, "co2_t": value}},
								{Call: "carbon/total_emissions", With: map[string]any{"period": period}},
							}}}
						}
						res, err := reg.Run(ctx, call)
						if i%4 == 2 {
							var rf *actions.Refusal
							mu.Lock()
							switch {
							case err == nil:
								created[shared]++
							case errors.As(err, &rf) && rf.Code == "id_taken":
								taken[shared]++
							default:
								assert.NoError(t, err, "replica %d client %d call %d", r, c, i)
							}
							mu.Unlock()
							continue
						}
						if !assert.NoError(t, err, "replica %d client %d call %d", r, c, i) {
							return
						}
						note(res.Records)
					}
				})
			}
		}
		wg.Wait()
		require.False(t, t.Failed())

		// Each contested id created once; the counter moved as many times.
		for k := range calls / 4 {
			id := fmt.Sprintf("shared_%d", k)
			assert.Equal(t, 1, created[id], "%s created", id)
			assert.Equal(t, replicas*clients-1, taken[id], "%s refused id_taken", id)
		}
		after, err := models[1].Dump(ctx)
		require.NoError(t, err)
		assert.Equal(t, nextActor(t, before)+calls/4, nextActor(t, after), "the actor counter")

		// No lost update: per row, the writes chain from the seed to the
		// final value, each replacing the one before it.
		rows := 0
		for row, ws := range writes {
			key, per, _ := strings.Cut(row, " ")
			var final *float64
			err := models[0].Store().View(ctx, func(ctx context.Context) error {
				tx, _ := sqlstore.Tx(ctx)
				var v float64
				err := tx.QueryRowContext(ctx, models[0].bind("SELECT co2_t FROM sc_emissions WHERE actor_key = ? AND period = ?"), key, per).Scan(&v)
				final = &v
				return err
			})
			require.NoError(t, err, row)
			next := map[string]float64{} // the value replaced -> the value written
			for _, w := range ws {
				from := "none"
				if w.previous != nil {
					from = strconv.FormatFloat(*w.previous, 'g', -1, 64)
				}
				_, dup := next[from]
				require.False(t, dup, "%s: two writes replaced %s: an update was lost", row, from)
				next[from] = w.co2t
			}
			at, steps := "none", 0
			for {
				v, ok := next[at]
				if !ok {
					break
				}
				at, steps = strconv.FormatFloat(v, 'g', -1, 64), steps+1
			}
			assert.Equal(t, len(ws), steps, "%s: every write on the chain", row)
			assert.Equal(t, strconv.FormatFloat(*final, 'g', -1, 64), at, "%s: the chain ends on the row", row)
			rows++
		}
		assert.Equal(t, 2+calls/4, rows, "emission rows written")

		n := replayCommand(t, dsn)
		t.Logf("%s serial=%v: %d replicas x %d clients x %d calls: no update lost, replay of %d entries the same, model: same", eng.name, serial, replicas, clients, calls, n)
		// Kept: two records, a batch's two, per client and round of 4 calls,
		// and one creation per contested id (an id_taken refusal rolls its
		// unit back, and a replay applies kept units only).
		assert.Equal(t, replicas*clients*(calls/4)*(2+2)+calls/4, n, "every kept entry replayed")
	})
}

// nextActor reads the actor counter off a Dump.
func nextActor(t *testing.T, dump string) int {
	t.Helper()
	i := strings.LastIndex(dump, "next actor ")
	require.GreaterOrEqual(t, i, 0, dump)
	n, err := strconv.Atoi(strings.TrimSpace(dump[i+len("next actor "):]))
	require.NoError(t, err)
	return n
}
