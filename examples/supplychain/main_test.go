package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/mcpserver"
	"github.com/actionreg/actions/store"
)

// visibleTools are the tool names the example publishes.
var visibleTools = []string{
	"carbon-record_emissions", "carbon-total_emissions", "supply-create_actor",
	"supply-delete_actor", "supply-get_actor", "supply-list_actors",
}

// servedTools are the tools the server lists: the actions' and the batch
// tool.
var servedTools = []string{
	"carbon-record_emissions", "carbon-total_emissions", "run_batch", "supply-create_actor",
	"supply-delete_actor", "supply-get_actor", "supply-list_actors",
}

// sections splits the default job's output into its four parts.
func sections(t *testing.T, out string) (result string, entries, replays []string, tools string) {
	t.Helper()
	rest, ok := strings.CutPrefix(out, "result:\n")
	require.True(t, ok, "output starts with the result:\n%s", out)
	result, rest, ok = strings.Cut(rest, "\nrun entries:\n")
	require.True(t, ok, "run entries section")
	lines, rest, ok := strings.Cut(rest, "replay on a fresh model:\n")
	require.True(t, ok, "replay section")
	verdicts, tools, ok := strings.Cut(rest, "tools:\n")
	require.True(t, ok, "tools section")
	return result, strings.Split(strings.TrimSuffix(lines, "\n"), "\n"), strings.Split(strings.TrimSuffix(verdicts, "\n"), "\n"), tools
}

func TestDefaultJob(t *testing.T) {
	var out, errOut bytes.Buffer
	require.NoError(t, run(context.Background(), nil, &out, &errOut), errOut.String())
	result, lines, replays, toolsText := sections(t, out.String())

	assert.Equal(t, `{"actors":5,"period":"2024","total_co2_t":2248.5}`, result)

	var b actions.Batch
	err := json.Unmarshal(batchJSON, &b)
	require.NoError(t, err)
	require.Len(t, lines, len(b.Steps), "one entry per call")
	for i, line := range lines {
		var e store.RunEntry
		require.NoError(t, json.Unmarshal([]byte(line), &e), "entry %d", i)
		canon, err := actions.CanonicalJSON(json.RawMessage(line))
		require.NoError(t, err)
		assert.Equal(t, string(canon), line, "entry %d is canonical JSON", i)
		assert.Equal(t, b.Steps[i].Call, e.Action)
		assert.Equal(t, store.OutcomeDone, e.Outcome, "entry %d", i)
	}

	// The French display name resolved to the actor's key; the placeholder
	// to the new actor's id, then to its key.
	assert.Contains(t, lines[1], `"parameters":"{\"actor\":\"act_6\",\"co2_t\":310.25,\"period\":\"2024\"}"`)
	assert.Contains(t, lines[2], `\"actor\":\"act_2\"`)
	// delete_actor's nested call to the hidden action is a step of its entry.
	var del store.RunEntry
	require.NoError(t, json.Unmarshal([]byte(lines[3]), &del))
	require.Len(t, del.Steps, 2)
	require.NotNil(t, del.Steps[0].Call)
	assert.Equal(t, "carbon/clear_emissions", del.Steps[0].Call.Action)
	assert.True(t, del.Steps[0].Call.AsHost, "a hidden action is called as the host, and the entry says so")
	assert.JSONEq(t, `{"op":"delete","schema":"actor","key":"act_3","by":"batch"}`, string(del.Steps[1].Command))

	// Each entry replays on a fresh model step for step.
	require.Len(t, replays, len(lines), "one replay verdict per entry")
	for i, v := range replays {
		assert.Equal(t, fmt.Sprintf("%d %s: same", i, b.Steps[i].Call), v)
	}

	var tools []actions.Tool
	require.NoError(t, json.Unmarshal([]byte(toolsText), &tools))
	names := make([]string, len(tools))
	for i, tl := range tools {
		names[i] = tl.Name
	}
	assert.Equal(t, visibleTools, names, "the hidden action is not a tool")
	assert.Contains(t, toolsText, "Localized text in en, fr")
}

func TestBatchFlagAndRefusal(t *testing.T) {
	// A duplicate display name is refused; the batch stops there.
	path := filepath.Join(t.TempDir(), "batch.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"commands":[
		{"call":"supply/get_actor","with":{"actor":"Lyon Plant"}},
		{"call":"supply/get_actor","with":{"actor":"Harbour Depot"}},
		{"call":"supply/list_actors"}]}`), 0o600))
	var out bytes.Buffer
	err := run(context.Background(), []string{"-batch", path}, &out, io.Discard)
	require.ErrorIs(t, err, codes.InvalidParameters)
	lines := strings.Split(strings.TrimSpace(strings.TrimPrefix(out.String(), "run entries:\n")), "\n")
	require.Len(t, lines, 2, out.String())
	assert.Contains(t, lines[1], `"error":"invalid_parameters"`)

	assert.Error(t, run(context.Background(), []string{"nonsense"}, io.Discard, io.Discard))
	assert.Error(t, run(context.Background(), []string{"serve", "-nope"}, io.Discard, io.Discard))
}

// TestReplayDeparts replays the default job's records where they cannot
// give the same entries: the job says where, and why.
func TestReplayDeparts(t *testing.T) {
	ctx := context.Background()
	_, reg, err := setup()
	require.NoError(t, err)
	b, err := reg.DecodeBatch(batchJSON)
	require.NoError(t, err)
	res, err := reg.Run(ctx, actions.Call{Batch: &b})
	require.NoError(t, err)

	// Made by a person, replayed as the host: every command says "by"
	// (the caller's principal), and the first step of each writing call
	// departs. Replay calls as the record's audit says (the caller
	// travels with the entry), so the audit is what is changed here.
	// The batch deletes an actor: the person's batch is held, then
	// confirmed.
	_, reg2, err := setup()
	require.NoError(t, err)
	someone := &identity.Caller{Principal: "someone", Capabilities: principals["editor"], Surface: identity.SurfaceUI}
	_, err = reg2.Run(ctx, actions.Call{Batch: &b, Caller: someone})
	var held *actions.Refusal
	require.ErrorAs(t, err, &held)
	require.NotNil(t, held.Pending)
	other, err := reg2.Decide(ctx, actions.Decision{Change: held.Pending.ID, Confirm: true, Caller: someone})
	require.NoError(t, err)
	asHost := make([]store.Record, len(other.Records))
	for i, rec := range other.Records {
		rec.Audit.Caller = nil
		asHost[i] = rec
	}
	var out bytes.Buffer
	require.NoError(t, replayJob(ctx, asHost, &out))
	// A replay that departs is not kept: the fresh model has no new
	// actor, so the emissions recorded for it find none, and the list
	// and the total then differ too.
	const body = ": the body does otherwise today"
	assert.Equal(t, "replay on a fresh model:\n"+
		"0 supply/create_actor: departs at /steps/0/command"+body+"\n"+
		"1 carbon/record_emissions: departs at /steps/0: the call is refused today (not_found)\n"+
		"2 carbon/record_emissions: departs at /steps/0/command"+body+"\n"+
		"3 supply/delete_actor: departs at /steps/1/command"+body+"\n"+
		"4 supply/list_actors: departs at /result"+body+"\n"+
		"5 carbon/total_emissions: departs at /result"+body+"\n", out.String())

	// Out of order, the second entry finds no actor under the key the
	// first one created: the body refuses before the command it recorded.
	out.Reset()
	require.NoError(t, replayJob(ctx, res.Records[1:2], &out))
	assert.Equal(t, "replay on a fresh model:\n0 carbon/record_emissions: departs at /steps/0: the call is refused today (not_found)\n", out.String())
}

// connectInMemory serves a fresh example over in-memory transports;
// records, when not nil, gets each record as a line of canonical JSON.
func connectInMemory(t *testing.T, records io.Writer) *mcp.ClientSession {
	t.Helper()
	var onRecord func(store.Record)
	if records != nil {
		onRecord = actions.NewEntryWriter(records).Write
	}
	model, reg, err := setupDB(context.Background(), memoryDSN, "", onRecord)
	require.NoError(t, err)
	t.Cleanup(func() { _ = model.Close() })
	server, err := newServer(model, reg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	serverT, clientT := mcp.NewInMemoryTransports()
	ss, err := server.Connect(context.Background(), serverT, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "example-test", Version: "v0"}, nil).Connect(context.Background(), clientT, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func exerciseServer(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	ctx := context.Background()
	list, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
		if tl.Name != "run_batch" {
			assert.NotNil(t, tl.OutputSchema, "%s lists an output schema", tl.Name)
		}
	}
	assert.Equal(t, servedTools, names)

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "supply-get_actor", Arguments: map[string]any{"actor": "Dépôt du port"}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, `"id":"marseille_depot"`)
	assert.NotNil(t, res.StructuredContent, "a typed tool answers structuredContent")

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "supply-get_actor", Arguments: map[string]any{"actor": "Harbour Depot"}})
	require.NoError(t, err)
	assert.True(t, res.IsError, "a name two actors share is refused")
	assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, "/actor [ref]")
	// A refusal is structured data on every tool, an output schema or
	// not; the listed output schema admits it.
	assert.Equal(t, "invalid_parameters", refusalCode(t, res), "the refusal's structuredContent")

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "supply-create_actor", Arguments: map[string]any{"id": "lyon_plant", "display_name": "Lyon"}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, "id_taken")

	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "carbon-clear_emissions", Arguments: map[string]any{"actor": "act_1"}})
	var werr *jsonrpc.Error
	require.ErrorAs(t, err, &werr, "the hidden action is not callable")
	assert.Equal(t, int64(jsonrpc.CodeInvalidParams), werr.Code)
}

func TestServeInMemory(t *testing.T) {
	var records syncBuffer
	cs := connectInMemory(t, &records)
	exerciseServer(t, cs)
	// Each call's record is written once its unit is settled; the bodies
	// write who called (the caller's principal: over stdio, the editor).
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "supply-create_actor",
		Arguments: map[string]any{"id": "lille_depot", "type": "depot", "display_name": "Lille Depot"}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	lines := strings.Split(strings.TrimSpace(records.String()), "\n")
	// The hidden action is no tool: the SDK answers its call, which
	// never reaches the registry.
	require.Len(t, lines, 4, "one record per call that reached the registry")
	var last store.Record
	require.NoError(t, json.Unmarshal([]byte(lines[3]), &last))
	assert.Contains(t, lines[3], `"by":"editor"`)
	assert.Equal(t, "editor", last.Audit.Caller.Principal)
	assert.Equal(t, identity.SurfaceMCP, last.Audit.Caller.Surface)
	assert.False(t, last.RolledBack)
}

// refusalCode is the code of a refused tool result's structuredContent.
func refusalCode(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	require.True(t, res.IsError)
	require.NotNil(t, res.StructuredContent, "a refusal carries structuredContent")
	text, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var out struct {
		Code string `json:"code"`
	}
	require.NoError(t, json.Unmarshal(text, &out))
	return out.Code
}

func TestServeHTTP(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		t.Run(fmt.Sprintf("stateless=%v", stateless), func(t *testing.T) {
			model, reg, err := setup()
			require.NoError(t, err)
			defer model.Close()
			server, err := newServer(model, reg, slog.New(slog.NewTextHandler(io.Discard, nil)))
			require.NoError(t, err)
			h := mcpserver.HTTPHandler(server, &mcpserver.HTTPOptions{Stateless: stateless})
			httpServer := httptest.NewServer(h)
			defer httpServer.Close()
			defer func() { require.NoError(t, h.Shutdown(context.Background())) }()

			for _, version := range []string{"", "2025-11-25"} {
				t.Run("protocol "+version, func(t *testing.T) {
					var opts *mcp.ClientSessionOptions
					if version != "" {
						opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
					}
					cs, err := mcp.NewClient(&mcp.Implementation{Name: "http-test", Version: "v0"}, nil).
						Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: httpServer.URL}, opts)
					require.NoError(t, err)
					defer cs.Close()
					exerciseServer(t, cs)
				})
			}
		})
	}
}

// TestServeHTTPCommand runs "serve -http 127.0.0.1:0 [-stateless]" as the
// command line does, calls it, and stops it as SIGTERM would (ctx ends):
// it drains and returns nil.
func TestServeHTTPCommand(t *testing.T) {
	for _, args := range [][]string{{"-http", "127.0.0.1:0"}, {"-http", "127.0.0.1:0", "-stateless"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			stderr := &syncBuffer{}
			done := make(chan error, 1)
			go func() { done <- serve(ctx, args, stderr) }()
			var url string
			require.Eventually(t, func() bool {
				_, rest, ok := strings.Cut(stderr.String(), "serving MCP at ")
				url, _, _ = strings.Cut(rest, " ")
				return ok && strings.HasSuffix(url, "/mcp")
			}, 10*time.Second, 10*time.Millisecond, "the server did not start")
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "cmd-test", Version: "v0"}, nil).
				Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer("editor-demo-token")}},
					&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			require.NoError(t, err)
			exerciseServer(t, cs)
			cs.Close()
			cancel()
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(drainTime + 5*time.Second):
				t.Fatal("serve did not return after ctx ended")
			}
		})
	}
	err := serve(context.Background(), []string{"-stateless"}, io.Discard)
	require.ErrorContains(t, err, "-stateless needs -http")
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
