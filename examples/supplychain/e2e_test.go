package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/internal/dbtest"
	"github.com/actionreg/actions/sqlstore"
	"github.com/actionreg/actions/store"
)

// The end-to-end tests, on the example host's own
// registry (NewRegistry on OpenModel: sqlstore.Store as its Store, the
// gate's pending changes in the same database) and on each engine: SQLite
// in memory, SQLite in a file, and PostgreSQL (skipped, saying so, when
// ACTIONS_TEST_POSTGRES is not set). Each scenario ends by replaying the
// whole log so far on a fresh database seeded the same way: every record
// replays with no divergence, and the fresh model ends equal to the
// database's.

// engine is a database the end-to-end tests run on.
type engine struct {
	name string
	// fresh returns the -db value of a new, empty database.
	fresh func(t *testing.T) string
}

var (
	sqliteMemory = engine{"sqlite-memory", func(*testing.T) string { return memoryDSN }}
	sqliteFile   = engine{"sqlite-file", func(t *testing.T) string { return filepath.Join(t.TempDir(), "supplychain.db") }}
	postgres     = engine{"postgresql", func(t *testing.T) string { return dbtest.Postgres(t).DSN }}
)

// eachEngine runs fn as a subtest per engine.
func eachEngine(t *testing.T, engines []engine, fn func(t *testing.T, eng engine)) {
	t.Helper()
	for _, eng := range engines {
		t.Run(eng.name, func(t *testing.T) { fn(t, eng) })
	}
}

// person is a principal of the example (gate.go) on a surface.
func person(principal string, surface identity.Surface) *identity.Caller {
	return &identity.Caller{Principal: principal, Capabilities: principals[principal], Surface: surface}
}

var (
	editorMCP = person("editor", identity.SurfaceMCP)
	editorUI  = person("editor", identity.SurfaceUI) // the host's own screen, where changes are decided
	viewerMCP = person("viewer", identity.SurfaceMCP)
	viewerUI  = person("viewer", identity.SurfaceUI)
)

// host is the example host on one database, with what OnRecord saw.
type host struct {
	eng   engine
	model *Model
	reg   *actions.Registry

	mu   sync.Mutex
	seen []store.Record
}

func openHost(t *testing.T, eng engine) *host {
	t.Helper()
	h := &host{eng: eng}
	model, reg, err := setupDB(context.Background(), eng.fresh(t), "e2e", func(rec store.Record) {
		h.mu.Lock()
		h.seen = append(h.seen, rec)
		h.mu.Unlock()
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = model.Close() })
	h.model, h.reg = model, reg
	return h
}

// since returns the records OnRecord saw after the first n.
func (h *host) since(n int) []store.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.seen[n:])
}

func (h *host) seenCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.seen)
}

// dump is the model as it is now.
func (h *host) dump(t *testing.T) string {
	t.Helper()
	d, err := h.model.Dump(context.Background())
	require.NoError(t, err)
	return d
}

// ids are the ids of the model's actors, sorted.
func (h *host) ids(t *testing.T) []string {
	t.Helper()
	all, err := h.model.Actors(context.Background(), "")
	require.NoError(t, err)
	var out []string
	for _, a := range all {
		out = append(out, a.ID)
	}
	return out
}

// pendingIDs are the ids of the changes c proposed that wait.
func (h *host) pendingIDs(t *testing.T, c *identity.Caller) []string {
	t.Helper()
	list, err := h.reg.PendingChanges(context.Background(), c)
	require.NoError(t, err)
	var out []string
	for _, pc := range list {
		out = append(out, pc.ID)
	}
	return out
}

// heldReceipt checks that err holds a call for confirmation and returns
// its receipt.
func heldReceipt(t *testing.T, err error) *actions.Receipt {
	t.Helper()
	require.ErrorIs(t, err, codes.ConfirmationRequired)
	var r *actions.Refusal
	require.ErrorAs(t, err, &r)
	require.NotNil(t, r.Pending, "a receipt")
	require.NotEmpty(t, r.Pending.ID)
	return r.Pending
}

// assertStage checks each record: kept (not rolled back), at stage, for
// pending change id, in a batch or not, with outcome and error code.
func assertStage(t *testing.T, recs []store.Record, stage store.Stage, id string, batch bool, outcome store.Outcome, code codes.Code) {
	t.Helper()
	require.NotEmpty(t, recs)
	for i, rec := range recs {
		assert.False(t, rec.RolledBack, "record %d is kept", i)
		assert.Equal(t, stage, rec.Audit.Stage, "record %d: stage", i)
		assert.Equal(t, id, rec.Audit.PendingChange, "record %d: the pending change", i)
		assert.Equal(t, batch, rec.Audit.Batch, "record %d: a batch's step", i)
		assert.Equal(t, outcome, rec.Entry.Outcome, "record %d: outcome", i)
		assert.Equal(t, code, rec.Entry.Error, "record %d: error", i)
	}
}

// figures counts the records a replay replayed, by what they record.
type figures struct {
	Records, Done, Held, Confirmed, Rejected, BatchSteps, Nested int
}

func (f figures) String() string {
	return fmt.Sprintf("%d records replayed (%d done, %d held, %d confirmed, %d rejected; %d batch steps, %d with a nested call)",
		f.Records, f.Done, f.Held, f.Confirmed, f.Rejected, f.BatchSteps, f.Nested)
}

// replayAll reads the whole log and the model in one snapshot
// (Store.View), replays every record in order on a fresh database of the
// same engine seeded the same way (reg.Replay), and checks that none
// departs and that the fresh model ends equal to the database's.
func (h *host) replayAll(t *testing.T) figures {
	t.Helper()
	ctx := context.Background()
	var (
		recs []sqlstore.Record
		want string
	)
	require.NoError(t, h.model.Store().View(ctx, func(ctx context.Context) error {
		var err error
		if recs, err = h.model.Store().Read(ctx, sqlstore.Filter{}); err != nil {
			return err
		}
		tx, _ := sqlstore.Tx(ctx)
		want, err = h.model.On(tx).Dump(ctx)
		return err
	}))
	fresh, reg, err := setupDB(ctx, h.eng.fresh(t), "replay", nil)
	require.NoError(t, err)
	defer fresh.Close()
	var f figures
	for _, r := range recs {
		_, err := reg.Replay(ctx, r.Record)
		require.NoError(t, err, "record %d (%s, stage %q, outcome %s) replays", r.Seq, r.Entry.Action, r.Audit.Stage, r.Entry.Outcome)
		f.Records++
		switch {
		case r.Audit.Stage == store.StageHeld:
			f.Held++
		case r.Audit.Stage == store.StageRejected:
			f.Rejected++
		case r.Audit.Stage == store.StageConfirmed:
			f.Confirmed++
		case r.Entry.Outcome == store.OutcomeDone:
			f.Done++
		}
		if r.Audit.Batch {
			f.BatchSteps++
		}
		if slices.ContainsFunc(r.Entry.Steps, func(s store.RunStep) bool { return s.Call != nil }) {
			f.Nested++
		}
	}
	got, err := fresh.Dump(ctx)
	require.NoError(t, err)
	require.Equal(t, want, got, "the replayed model is the database's")
	return f
}

// toolAnswer is the structuredContent of a tool result: a refusal or a
// receipt (code, pending), a batch's refusal (at, step, kept, steps) or
// a batch's answer (result, steps).
type toolAnswer struct {
	Code    codes.Code       `json:"code"`
	Pending *actions.Receipt `json:"pending"`
	At      string           `json:"at"`
	Step    string           `json:"step"`
	Kept    bool             `json:"kept"`
	Result  json.RawMessage  `json:"result"`
	Steps   []struct {
		Call    string        `json:"call"`
		Outcome store.Outcome `json:"outcome"`
		Error   codes.Code    `json:"error"`
	} `json:"steps"`
}

func answerOf(t *testing.T, res *mcp.CallToolResult) toolAnswer {
	t.Helper()
	require.NotNil(t, res.StructuredContent, "structuredContent")
	text, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var a toolAnswer
	require.NoError(t, json.Unmarshal(text, &a), "%s", text)
	return a
}

func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// connect serves the host's registry as the example does (newServer:
// mcpserver.AddTools with the batch tool) over in-memory transports, to a
// client of version; elicit, when set, answers the server's questions.
// The caller is the example's stdio caller: the editor, on mcp.
func (h *host) connect(t *testing.T, version string, elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	server, err := newServer(h.model, h.reg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	serverT, clientT := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, serverT, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v0"}, &mcp.ClientOptions{ElicitationHandler: elicit}).
		Connect(ctx, clientT, &mcp.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	require.Equal(t, version, cs.InitializeResult().ProtocolVersion)
	return cs
}

// TestEndToEnd runs the end-to-end scenarios in order on one database
// per engine, each ending with a replay of the whole log so far.
func TestEndToEnd(t *testing.T) {
	eachEngine(t, []engine{sqliteMemory, sqliteFile, postgres}, func(t *testing.T, eng engine) {
		ctx := context.Background()
		h := openHost(t, eng)
		replayed := func(t *testing.T) {
			t.Helper()
			f := h.replayAll(t)
			t.Logf("%s: %v", eng.name, f)
		}

		t.Run("delete, confirm, replay", func(t *testing.T) {
			before, n := h.dump(t), h.seenCount()
			res, err := h.reg.Run(ctx, actions.Call{Action: "supply/delete_actor", Params: `{"actor":"Usine de Lyon"}`, Caller: editorMCP})
			rc := heldReceipt(t, err)
			assert.Equal(t, "supply/delete_actor", rc.Action)
			assert.Empty(t, rc.Steps, "one call, no steps")
			assertStage(t, res.Records, store.StageHeld, rc.ID, false, store.OutcomeRefused, codes.ConfirmationRequired)
			assert.Equal(t, `{"actor":"act_1"}`, res.Records[0].Entry.Parameters, "held checked, its ref resolved")
			assert.Equal(t, before, h.dump(t), "nothing ran")
			assert.Contains(t, h.pendingIDs(t, editorUI), rc.ID)

			res, err = h.reg.Decide(ctx, actions.Decision{Change: rc.ID, Confirm: true, Caller: editorUI})
			require.NoError(t, err)
			assertStage(t, res.Records, store.StageConfirmed, rc.ID, false, store.OutcomeDone, "")
			e := res.Entry()
			require.Len(t, e.Steps, 2)
			require.NotNil(t, e.Steps[0].Call)
			assert.True(t, e.Steps[0].Call.AsHost, "the hidden action is called as the host")
			assert.Equal(t, identity.SurfaceUI, res.Records[0].Audit.Caller.Surface, "decided on the host's screen")
			assert.NotContains(t, h.ids(t), "lyon_plant")
			assert.Len(t, h.since(n), 2, "OnRecord: the held call, then the confirmed one")

			_, err = h.reg.Decide(ctx, actions.Decision{Change: rc.ID, Confirm: true, Caller: editorUI})
			require.ErrorIs(t, err, codes.UnknownChange, "a change runs once")
			assert.Len(t, h.since(n), 2, "a refused decision makes no record")
			replayed(t)
		})

		t.Run("delete, reject, replay", func(t *testing.T) {
			before := h.dump(t)
			_, err := h.reg.Run(ctx, actions.Call{Action: "supply/delete_actor", Params: `{"actor":"north_warehouse"}`, Caller: editorMCP})
			rc := heldReceipt(t, err)
			res, err := h.reg.Decide(ctx, actions.Decision{Change: rc.ID, Caller: editorUI})
			require.NoError(t, err)
			assertStage(t, res.Records, store.StageRejected, rc.ID, false, store.OutcomeRefused, codes.Rejected)
			assert.Equal(t, before, h.dump(t), "nothing ran")
			assert.NotContains(t, h.pendingIDs(t, editorUI), rc.ID)
			_, err = h.reg.Decide(ctx, actions.Decision{Change: rc.ID, Confirm: true, Caller: editorUI})
			require.ErrorIs(t, err, codes.UnknownChange, "a rejected change is gone")
			replayed(t)
		})

		t.Run("batch holding a confirmation, receipt confirmed", func(t *testing.T) {
			before := h.dump(t)
			b := actions.Batch{Steps: []actions.Step{
				{Call: "supply/create_actor", With: map[string]any{"id": "e2e_yard", "type": "depot",
					"display_name": map[string]any{"en": "E2E Yard", "fr": "Cour E2E"}}, As: "yard"},
				{Call: "carbon/record_emissions", With: map[string]any{"actor": "${yard.id}", "co2_t": 42.5}},
				{Call: "supply/delete_actor", With: map[string]any{"actor": "marseille_depot"}, As: "gone"},
			}, Result: "${gone}"}
			res, err := h.reg.Run(ctx, actions.Call{Batch: &b, Caller: editorMCP})
			rc := heldReceipt(t, err)
			assert.Equal(t, []actions.HeldStep{{Index: 2, Action: "supply/delete_actor"}}, rc.Steps, "the receipt names the held step")
			require.Len(t, res.Records, 3, "one record per step, held with the batch")
			assertStage(t, res.Records, store.StageHeld, rc.ID, true, store.OutcomeRefused, codes.ConfirmationRequired)
			assert.Equal(t, before, h.dump(t), "no step ran before the confirmation")

			res, err = h.reg.Decide(ctx, actions.Decision{Change: rc.ID, Confirm: true, Caller: editorUI})
			require.NoError(t, err)
			require.Len(t, res.Records, 3, "the whole batch ran, once")
			assertStage(t, res.Records, store.StageConfirmed, rc.ID, true, store.OutcomeDone, "")
			v, _ := res.Value.(map[string]any)
			assert.Equal(t, "marseille_depot", v["deleted"], "the batch's result")
			ids := h.ids(t)
			assert.Contains(t, ids, "e2e_yard")
			assert.NotContains(t, ids, "marseille_depot")
			replayed(t)
		})

		t.Run("batch over MCP, elicitation", func(t *testing.T) {
			for i, version := range []string{"2025-11-25", "2026-07-28"} {
				t.Run(version, func(t *testing.T) {
					target := []string{"le_havre_depot", "bordeaux_supplier"}[i]
					site := fmt.Sprintf("mcp_site_%d", i)
					batch := func(site, target string) map[string]any {
						return map[string]any{"commands": []any{
							map[string]any{"call": "supply-create_actor", "with": map[string]any{"id": site, "display_name": "MCP Site"}, "as": "site"},
							map[string]any{"call": "carbon-record_emissions", "with": map[string]any{"actor": "${site.id}", "co2_t": 5}},
							map[string]any{"call": "supply-delete_actor", "with": map[string]any{"actor": target}},
						}}
					}
					var mu sync.Mutex
					var asked []string
					answer := "accept"
					elicit := func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
						mu.Lock()
						defer mu.Unlock()
						asked = append(asked, req.Params.Message)
						return &mcp.ElicitResult{Action: answer, Content: map[string]any{}}, nil
					}
					cs := h.connect(t, version, elicit)

					t.Run("accepted", func(t *testing.T) {
						n := h.seenCount()
						res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_batch", Arguments: batch(site, target)})
						require.NoError(t, err)
						require.False(t, res.IsError, "%s", textOf(res))
						a := answerOf(t, res)
						require.Len(t, a.Steps, 3)
						for _, st := range a.Steps {
							assert.Equal(t, store.OutcomeDone, st.Outcome, st.Call)
						}
						mu.Lock()
						require.Len(t, asked, 1, "the person is asked once for the whole batch")
						assert.Contains(t, asked[0], "#2 Delete an actor (supply-delete_actor)", "the question lists the held step")
						mu.Unlock()
						ids := h.ids(t)
						assert.Contains(t, ids, site)
						assert.NotContains(t, ids, target)
						recs := h.since(n)
						require.Len(t, recs, 6, "three steps held, then three confirmed")
						id := recs[0].Audit.PendingChange
						assertStage(t, recs[:3], store.StageHeld, id, true, store.OutcomeRefused, codes.ConfirmationRequired)
						assertStage(t, recs[3:], store.StageConfirmed, id, true, store.OutcomeDone, "")
					})
					t.Run("declined", func(t *testing.T) {
						mu.Lock()
						answer, asked = "decline", nil
						mu.Unlock()
						before, n := h.dump(t), h.seenCount()
						res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_batch", Arguments: batch(site+"_no", "north_warehouse")})
						require.NoError(t, err)
						require.True(t, res.IsError)
						assert.Equal(t, codes.Rejected, answerOf(t, res).Code)
						assert.Equal(t, before, h.dump(t), "nothing ran")
						recs := h.since(n)
						require.Len(t, recs, 6, "three steps held, then three rejected")
						id := recs[0].Audit.PendingChange
						assertStage(t, recs[:3], store.StageHeld, id, true, store.OutcomeRefused, codes.ConfirmationRequired)
						assertStage(t, recs[3:], store.StageRejected, id, true, store.OutcomeRefused, codes.Rejected)
						assert.NotContains(t, h.pendingIDs(t, editorUI), id)
					})
				})
			}
			replayed(t)
		})

		t.Run("batch named by tool names", func(t *testing.T) {
			cs := h.connect(t, "2025-11-25", nil)
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_batch", Arguments: map[string]any{"commands": []any{
				map[string]any{"call": "supply-create_actor", "with": map[string]any{"id": "named_site", "display_name": "Named Site"}, "as": "site"},
				map[string]any{"call": "carbon-record_emissions", "with": map[string]any{"actor": "${site.id}", "co2_t": 7.25}},
				map[string]any{"call": "supply/get_actor", "with": map[string]any{"actor": "${site.id}"}, "as": "got"},
			}, "result": "${got.co2_t}"}})
			require.NoError(t, err)
			require.False(t, res.IsError, "%s", textOf(res))
			a := answerOf(t, res)
			var calls []string
			for _, st := range a.Steps {
				calls = append(calls, st.Call)
			}
			assert.Equal(t, []string{"supply/create_actor", "carbon/record_emissions", "supply/get_actor"}, calls,
				"tool names (and an id) are called as the actions they name")
			assert.JSONEq(t, `{"2024":7.25}`, string(a.Result))

			// Refused at a step: the answer points at it by index and tool
			// name, and nothing of the batch is kept.
			before := h.dump(t)
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_batch", Arguments: map[string]any{"commands": []any{
				map[string]any{"call": "supply-create_actor", "with": map[string]any{"id": "named_site_2", "display_name": "Other"}},
				map[string]any{"call": "carbon-record_emissions", "with": map[string]any{"actor": "named_site_2", "co2_t": -1}},
			}}})
			require.NoError(t, err)
			require.True(t, res.IsError)
			a = answerOf(t, res)
			assert.Equal(t, codes.InvalidParameters, a.Code)
			assert.Equal(t, "/commands/1", a.At)
			assert.Equal(t, "carbon-record_emissions", a.Step)
			assert.False(t, a.Kept)
			assert.Equal(t, before, h.dump(t), "nothing of the refused batch is kept")
			replayed(t)
		})

		t.Run("a viewer can neither run, batch nor confirm a write", func(t *testing.T) {
			before, n := h.dump(t), h.seenCount()
			res, err := h.reg.Run(ctx, actions.Call{Action: "supply/get_actor", Params: `{"actor":"Entrepôt Nord"}`, Caller: viewerMCP})
			require.NoError(t, err, "a viewer reads")
			assert.False(t, res.Records[0].RolledBack)

			res, err = h.reg.Run(ctx, actions.Call{Action: "supply/create_actor", Params: `{"id":"v_site","display_name":"V"}`, Caller: viewerMCP})
			require.ErrorIs(t, err, codes.UnknownAction, "the viewer learns nothing of the write")
			assert.NotErrorIs(t, err, codes.ForbiddenCapability)
			require.Len(t, res.Records, 1)
			assert.True(t, res.Records[0].RolledBack)
			assert.Equal(t, codes.ForbiddenCapability, res.Records[0].Entry.Error, "the host's view")

			_, err = h.reg.Run(ctx, actions.Call{Action: "supply/delete_actor", Params: `{"actor":"north_warehouse"}`, Caller: viewerMCP})
			require.ErrorIs(t, err, codes.UnknownAction, "refused before anything is held")
			assert.Empty(t, h.pendingIDs(t, viewerUI))

			write := actions.Batch{Steps: []actions.Step{
				{Call: "supply/get_actor", With: map[string]any{"actor": "north_warehouse"}},
				{Call: "supply/create_actor", With: map[string]any{"id": "v_site", "display_name": "V"}},
			}}
			res, err = h.reg.Run(ctx, actions.Call{Batch: &write, Caller: viewerMCP})
			require.ErrorIs(t, err, codes.UnknownAction)
			var se *actions.StepError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, 1, se.Index)
			for _, rec := range res.Records {
				assert.True(t, rec.RolledBack, "nothing of the batch is kept")
			}
			held := actions.Batch{Steps: []actions.Step{
				{Call: "supply/get_actor", With: map[string]any{"actor": "north_warehouse"}},
				{Call: "supply/delete_actor", With: map[string]any{"actor": "north_warehouse"}},
			}}
			_, err = h.reg.Run(ctx, actions.Call{Batch: &held, Caller: viewerMCP})
			require.ErrorIs(t, err, codes.UnknownAction, "a batch the viewer may not run is not held either")
			assert.Empty(t, h.pendingIDs(t, viewerUI))

			// The editor's change: the viewer can neither confirm nor
			// reject it, and it waits for the editor.
			_, err = h.reg.Run(ctx, actions.Call{Action: "supply/delete_actor", Params: `{"actor":"north_warehouse"}`, Caller: editorMCP})
			rc := heldReceipt(t, err)
			for _, confirm := range []bool{true, false} {
				res, err := h.reg.Decide(ctx, actions.Decision{Change: rc.ID, Confirm: confirm, Caller: viewerUI})
				require.ErrorIs(t, err, codes.UnknownChange, "confirm %v", confirm)
				assert.Empty(t, res.Records)
			}
			assert.Contains(t, h.pendingIDs(t, editorUI), rc.ID, "the change still waits for its proposer")
			assert.Equal(t, before, h.dump(t), "nothing the viewer asked ran")
			var kept []string
			for _, rec := range h.since(n) {
				if !rec.RolledBack {
					kept = append(kept, rec.Audit.Caller.Principal+" "+rec.Entry.Action+" "+string(rec.Entry.Outcome))
				}
			}
			assert.Equal(t, []string{"viewer supply/get_actor done", "editor supply/delete_actor refused"}, kept,
				"of the viewer's calls only the read is kept; the editor's held call is")
			// The editor leaves it held: a change still pending at the
			// end replays as held.
			replayed(t)
		})

		t.Run("replay of the whole log", func(t *testing.T) {
			f := h.replayAll(t)
			t.Logf("figures %s: %v", eng.name, f)
			assert.Positive(t, f.Done)
			assert.Positive(t, f.Held)
			assert.Positive(t, f.Confirmed)
			assert.Positive(t, f.Rejected)
			assert.Positive(t, f.BatchSteps)
			assert.Positive(t, f.Nested)
			var kept int
			for _, rec := range h.since(0) {
				if !rec.RolledBack {
					kept++
				}
			}
			assert.Equal(t, kept, f.Records, "the log holds every record OnRecord saw kept")
		})
	})
}
