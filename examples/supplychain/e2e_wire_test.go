package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
)

// announcer is serve's standard error: it keeps what is written and
// hands over, once, the MCP URL the server announces.
type announcer struct {
	syncBuffer
	once sync.Once
	url  chan string
}

func newAnnouncer() *announcer { return &announcer{url: make(chan string, 1)} }

func (a *announcer) Write(p []byte) (int, error) {
	n, err := a.syncBuffer.Write(p)
	if _, rest, ok := strings.Cut(a.String(), "serving MCP at "); ok {
		if url, _, ok := strings.Cut(rest, " "); ok {
			a.once.Do(func() { a.url <- url })
		}
	}
	return n, err
}

// startServe runs "serve -http 127.0.0.1:0 -db dsn" in process, as the
// command line does, and returns the server's base URL (http://ADDR) and
// a stop function that ends it as SIGTERM would and checks it drained.
func startServe(t *testing.T, dsn string) (string, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stderr := newAnnouncer()
	done := make(chan error, 1)
	go func() { done <- serve(ctx, []string{"-http", "127.0.0.1:0", "-db", dsn}, stderr) }()
	var url string
	select {
	case url = <-stderr.url:
	case err := <-done:
		cancel()
		t.Fatalf("serve ended before serving: %v\n%s", err, stderr.String())
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		require.NoError(t, <-done, "serve drains and returns nil")
	}
	t.Cleanup(stop)
	return strings.TrimSuffix(url, "/mcp"), stop
}

// connectWire connects a client to the served example with a bearer
// token at version; elicit, when set, answers the server's questions.
func connectWire(t *testing.T, base, token, version string, elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "wire", Version: "v0"}, &mcp.ClientOptions{ElicitationHandler: elicit}).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearer(token)}},
			&mcp.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// replayCommand runs "replay -db dsn" and checks that every entry
// replays the same and that the model is the same; it returns how many
// entries it replayed.
func replayCommand(t *testing.T, dsn string) int {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"replay", "-db", dsn}, &stdout, &stderr)
	require.NoError(t, err, "replay:\n%s%s", stdout.String(), stderr.String())
	return checkReplayOutput(t, stdout.String())
}

// checkReplayOutput checks the output of replay: one "SEQ ORIGIN ACTION:
// same" line per entry, then "model: same"; it returns the entries.
func checkReplayOutput(t *testing.T, out string) int {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.NotEmpty(t, lines)
	require.Equal(t, "model: same", lines[len(lines)-1], "%s", out)
	for _, l := range lines[:len(lines)-1] {
		assert.True(t, strings.HasSuffix(l, ": same"), "every entry replays the same: %s", l)
	}
	return len(lines) - 1
}

// post decides the pending change id on the host's endpoint with token;
// it returns the status and the code or outcome answered.
func post(t *testing.T, base, token, id, decision string) (int, string) {
	t.Helper()
	status, out := decide(t, base, token, id, decision)
	if c, ok := out["code"].(string); ok {
		return status, c
	}
	o, _ := out["outcome"].(string)
	return status, o
}

// TestEndToEndOverTheWire drives the example host as a client and a
// person would, over HTTP: "serve -http 127.0.0.1:0 -db DB" with its
// bearer tokens, MCP calls, POST /pending/{id}/confirm and /reject; then
// "replay -db DB" says every entry is the same, and "model: same".
func TestEndToEndOverTheWire(t *testing.T) {
	eachEngine(t, []engine{sqliteFile, postgres}, func(t *testing.T, eng engine) {
		ctx := context.Background()
		dsn := eng.fresh(t)
		base, stop := startServe(t, dsn)
		viewer := connectWire(t, base, "viewer-demo-token", "2025-11-25", nil)
		editor := connectWire(t, base, "editor-demo-token", "2025-11-25", nil)
		call := func(cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
			t.Helper()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
			require.NoError(t, err, name)
			return res
		}

		// The viewer reads, and can neither run, batch nor confirm a write.
		list, err := viewer.ListTools(ctx, nil)
		require.NoError(t, err)
		var names []string
		for _, tl := range list.Tools {
			names = append(names, tl.Name)
		}
		assert.Equal(t, []string{"carbon-total_emissions", "run_batch", "supply-get_actor", "supply-list_actors"}, names)
		assert.False(t, call(viewer, "supply-get_actor", map[string]any{"actor": "Usine de Lyon"}).IsError)
		for _, name := range []string{"supply-create_actor", "supply-delete_actor"} {
			_, err := viewer.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"id": "v", "display_name": "V", "actor": "lyon_plant"}})
			var werr *jsonrpc.Error
			require.ErrorAs(t, err, &werr, "%s is no tool to the viewer", name)
			assert.Equal(t, int64(jsonrpc.CodeInvalidParams), werr.Code)
		}
		res := call(viewer, "run_batch", map[string]any{"commands": []any{
			map[string]any{"call": "supply-get_actor", "with": map[string]any{"actor": "lyon_plant"}},
			map[string]any{"call": "supply-delete_actor", "with": map[string]any{"actor": "lyon_plant"}},
		}})
		assert.Equal(t, codes.UnknownAction, answerOf(t, res).Code, "a batch with a write step is refused before any step")

		// Delete, confirm: held, the receipt in structuredContent; only
		// its proposer decides it, once.
		res = call(editor, "supply-delete_actor", map[string]any{"actor": "Usine de Lyon"})
		a := answerOf(t, res)
		require.Equal(t, codes.ConfirmationRequired, a.Code)
		require.NotNil(t, a.Pending)
		for _, d := range []string{"confirm", "reject"} {
			status, code := post(t, base, "viewer-demo-token", a.Pending.ID, d)
			assert.Equal(t, http.StatusConflict, status, "the viewer may not %s", d)
			assert.Equal(t, "unknown_change", code)
		}
		status, outcome := post(t, base, "editor-demo-token", a.Pending.ID, "confirm")
		require.Equal(t, http.StatusOK, status, outcome)
		assert.Equal(t, "done", outcome)
		status, code := post(t, base, "editor-demo-token", a.Pending.ID, "confirm")
		assert.Equal(t, http.StatusConflict, status, "a change runs once")
		assert.Equal(t, "unknown_change", code)

		// Delete, reject: nothing runs, and the change is gone.
		res = call(editor, "supply-delete_actor", map[string]any{"actor": "north_warehouse"})
		a = answerOf(t, res)
		require.NotNil(t, a.Pending)
		status, outcome = post(t, base, "editor-demo-token", a.Pending.ID, "reject")
		require.Equal(t, http.StatusOK, status, outcome)
		assert.Equal(t, "rejected", outcome)
		status, _ = post(t, base, "editor-demo-token", a.Pending.ID, "confirm")
		assert.Equal(t, http.StatusConflict, status, "a rejected change cannot be confirmed")
		assert.False(t, call(editor, "supply-get_actor", map[string]any{"actor": "north_warehouse"}).IsError, "the actor is still there")

		// A batch named by tool names, holding a confirmation: one
		// receipt for the whole batch, confirmed on the host's endpoint.
		res = call(editor, "run_batch", map[string]any{"commands": []any{
			map[string]any{"call": "supply-create_actor", "with": map[string]any{"id": "wire_yard", "display_name": "Wire Yard"}, "as": "yard"},
			map[string]any{"call": "carbon-record_emissions", "with": map[string]any{"actor": "${yard.id}", "co2_t": 3.5}},
			map[string]any{"call": "supply-delete_actor", "with": map[string]any{"actor": "marseille_depot"}},
		}})
		a = answerOf(t, res)
		require.Equal(t, codes.ConfirmationRequired, a.Code, "%s", textOf(res))
		require.NotNil(t, a.Pending)
		assert.Equal(t, []actions.HeldStep{{Index: 2, Action: "supply/delete_actor"}}, a.Pending.Steps)
		assert.True(t, call(editor, "supply-get_actor", map[string]any{"actor": "wire_yard"}).IsError, "no step ran yet")
		status, outcome = post(t, base, "editor-demo-token", a.Pending.ID, "confirm")
		require.Equal(t, http.StatusOK, status, outcome)
		assert.Equal(t, "done", outcome)
		assert.False(t, call(editor, "supply-get_actor", map[string]any{"actor": "wire_yard"}).IsError, "the batch ran")
		assert.True(t, call(editor, "supply-get_actor", map[string]any{"actor": "marseille_depot"}).IsError, "its delete too")

		// The same over elicitation: accepted, then declined.
		for _, answer := range []string{"accept", "decline"} {
			asker := connectWire(t, base, "editor-demo-token", "2025-11-25", func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: answer, Content: map[string]any{}}, nil
			})
			target := map[string]string{"accept": "le_havre_depot", "decline": "bordeaux_supplier"}[answer]
			res = call(asker, "run_batch", map[string]any{"commands": []any{
				map[string]any{"call": "supply-list_actors", "with": map[string]any{"type": "depot"}},
				map[string]any{"call": "supply-delete_actor", "with": map[string]any{"actor": target}},
			}})
			gone := call(editor, "supply-get_actor", map[string]any{"actor": target}).IsError
			if answer == "accept" {
				assert.False(t, res.IsError, "%s", textOf(res))
				assert.True(t, gone)
			} else {
				assert.Equal(t, codes.Rejected, answerOf(t, res).Code)
				assert.False(t, gone, "nothing ran")
			}
			_ = asker.Close()
		}
		_ = viewer.Close()
		_ = editor.Close()
		stop()

		n := replayCommand(t, dsn)
		t.Logf("figures %s over the wire: replay -db: %d entries the same, model: same", eng.name, n)
		assert.Positive(t, n)
	})
}

// TestReplayWhileWriting replays ("replay -db DB") a database that two
// writers (another pool each, as replicas) keep writing to: calls,
// batches, held changes confirmed and rejected. The log and the model
// are read in one snapshot (Store.View), so every replay says every
// entry is the same and "model: same", however the writes interleave.
// The writers may write a bounded number of units during each replay, so
// that the log stays small however slow the replay is.
func TestReplayWhileWriting(t *testing.T) {
	const rounds, unitsPerRound, duringReplay = 3, 12, 24
	eachEngine(t, []engine{sqliteFile, postgres}, func(t *testing.T, eng engine) {
		ctx := context.Background()
		dsn := eng.fresh(t)
		var units, budget atomic.Int64
		budget.Store(unitsPerRound)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range 2 {
			model, reg, err := setupDB(ctx, dsn, fmt.Sprintf("writer%d", w), nil)
			require.NoError(t, err)
			t.Cleanup(func() { _ = model.Close() })
			wg.Go(func() { writeUntil(t, reg, w, stop, &units, &budget) })
		}
		var counts []int
		for round := 1; round <= rounds; round++ {
			target := int64(round * unitsPerRound)
			budget.Store(max(budget.Load(), target))
			for units.Load() < target && !t.Failed() {
				time.Sleep(time.Millisecond)
			}
			require.False(t, t.Failed(), "a writer failed")
			before := units.Load()
			budget.Store(before + duringReplay) // the writers go on during the replay
			var stdout, stderr bytes.Buffer
			err := replayLog(ctx, []string{"-db", dsn}, &stdout, &stderr)
			during := units.Load() - before
			require.NoError(t, err, "round %d:\n%s%s", round, stdout.String(), stderr.String())
			n := checkReplayOutput(t, stdout.String())
			counts = append(counts, n)
			t.Logf("%s round %d: %d entries the same, model: same; %d units committed meanwhile", eng.name, round, n, during)
		}
		close(stop)
		wg.Wait()
		final := replayCommand(t, dsn)
		t.Logf("figures %s while writing: replays of %v entries, then %d once the writers stopped (%d units written)", eng.name, counts, final, units.Load())
	})
}

// writeUntil makes calls as the editor until stop is closed, while fewer
// than budget units are committed, counting them: emissions overwritten on a row both writers touch, new
// actors, a batch, and deletes held then confirmed or rejected.
func writeUntil(t *testing.T, reg *actions.Registry, w int, stop <-chan struct{}, units, budget *atomic.Int64) {
	ctx := context.Background()
	for i := 0; ; i++ {
		for units.Load() >= budget.Load() {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
		select {
		case <-stop:
			return
		default:
		}
		site := fmt.Sprintf("live_%d_%d", w, i)
		var err error
		switch i % 4 {
		case 0:
			_, err = reg.Run(ctx, actions.Call{Action: "carbon/record_emissions", Caller: editorMCP,
				Params: map[string]any{"actor": "lyon_plant", "period": "2030", "co2_t": float64(w*1000 + i)}})
		case 1:
			_, err = reg.Run(ctx, actions.Call{Action: "supply/create_actor", Caller: editorMCP,
				Params: map[string]any{"id": site, "display_name": "Live " + site}})
		case 2:
			b := actions.Batch{Steps: []actions.Step{
				{Call: "supply/create_actor", With: map[string]any{"id": site, "display_name": "Live " + site}, As: "s"},
				{Call: "carbon/record_emissions", With: map[string]any{"actor": "${s.id}", "co2_t": float64(i)}},
				{Call: "carbon/total_emissions", With: map[string]any{}},
			}}
			_, err = reg.Run(ctx, actions.Call{Batch: &b, Caller: editorMCP})
		case 3:
			// Held, then confirmed (the actor made at i-2) or rejected.
			var rf *actions.Refusal
			_, err = reg.Run(ctx, actions.Call{Action: "supply/delete_actor", Caller: editorMCP,
				Params: map[string]any{"actor": fmt.Sprintf("live_%d_%d", w, i-2)}})
			if !assert.ErrorAs(t, err, &rf) || !assert.NotNil(t, rf.Pending) {
				return
			}
			units.Add(1)
			_, err = reg.Decide(ctx, actions.Decision{Change: rf.Pending.ID, Confirm: i%8 == 3, Caller: editorUI})
		}
		if !assert.NoError(t, err, "writer %d call %d", w, i) {
			return
		}
		units.Add(1)
	}
}
