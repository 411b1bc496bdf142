package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/internal/dbtest"
	"github.com/actionreg/actions/mcpserver"
	"github.com/actionreg/actions/sqlstore"
)

// taskServer serves shop-report (long: inserts a row, then waits for
// release or its ctx) and shop-quick (not long) over streamable HTTP,
// stateless, on a database store; the principal is the X-User header.
type taskServer struct {
	url      string
	db       *dbtest.DB
	started  chan struct{}
	release  chan struct{}
	sawDone  chan struct{}
	once     sync.Once
	doneOnce sync.Once
}

func newTaskServer(t *testing.T, db *dbtest.DB) *taskServer {
	t.Helper()
	ts := &taskServer{db: db, started: make(chan struct{}), release: make(chan struct{}), sawDone: make(chan struct{})}
	_, err := db.Exec("CREATE TABLE reports (n TEXT NOT NULL)")
	require.NoError(t, err)
	s, err := sqlstore.New(db.DB, db.Dialect, nil)
	require.NoError(t, err)
	require.NoError(t, s.Migrate(context.Background()))
	reg := actions.NewRegistry(&actions.Options{Store: s})
	params := `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`
	require.NoError(t, reg.Register(
		actions.Action{Definition: actions.Definition{ID: "shop/report", Parameters: params, Long: true},
			Run: func(ctx context.Context, p map[string]any, _ *actions.Trace) (any, error) {
				tx, _ := sqlstore.Tx(ctx)
				if _, err := tx.ExecContext(ctx, db.Dialect.Rebind("INSERT INTO reports (n) VALUES (?)"), p["n"].(json.Number).String()); err != nil {
					return nil, err
				}
				ts.once.Do(func() { close(ts.started) })
				select {
				case <-ts.release:
					return map[string]any{"rows": 1}, nil
				case <-ctx.Done():
					ts.doneOnce.Do(func() { close(ts.sawDone) })
					return nil, ctx.Err()
				}
			}},
		actions.Action{Definition: actions.Definition{ID: "shop/quick", Parameters: params},
			Run: func(ctx context.Context, p map[string]any, _ *actions.Trace) (any, error) {
				return map[string]any{"quick": true}, nil
			}},
	))
	server := mcp.NewServer(&mcp.Implementation{Name: "tasks", Version: "v0"}, nil)
	require.NoError(t, mcpserver.AddTools(server, reg, &mcpserver.Options{
		Caller: func(_ context.Context, _ *auth.TokenInfo, h http.Header) *identity.Caller {
			if h == nil {
				return nil
			}
			return &identity.Caller{Principal: h.Get("X-User")}
		},
	}))
	h := mcpserver.HTTPHandler(server, &mcpserver.HTTPOptions{Stateless: true})
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		select {
		case <-ts.release:
		default:
			close(ts.release)
		}
		shutdown(t, h)
		srv.Close()
	})
	ts.url = srv.URL
	return ts
}

func (ts *taskServer) rows(t *testing.T) int {
	t.Helper()
	var n int
	require.NoError(t, ts.db.QueryRow("SELECT COUNT(*) FROM reports").Scan(&n))
	return n
}

// rpcAnswer is one JSON-RPC response: its result or its error.
type rpcAnswer struct {
	Result map[string]any `json:"result"`
	Error  *struct {
		Code    int64          `json:"code"`
		Message string         `json:"message"`
		Data    map[string]any `json:"data"`
	} `json:"error"`
	raw json.RawMessage // the result's text
}

// rpc sends one request at protocol 2026-07-28 as user, declaring the
// Tasks extension when tasks is true, and returns its answer.
func (ts *taskServer) rpc(t *testing.T, user, method string, params map[string]any, tasks bool) rpcAnswer {
	t.Helper()
	ext := map[string]any{}
	if tasks {
		ext[mcpserver.TasksExtension] = map[string]any{}
	}
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "0"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": ext},
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	require.NoError(t, err)
	name, _ := params["taskId"].(string)
	if n, ok := params["name"].(string); ok {
		name = n
	}
	c := newRawClient(ts.url)
	resp, err := c.post(context.Background(), string(body), "Mcp-Method", method, "Mcp-Name", name, "X-User", user,
		"MCP-Protocol-Version", "2026-07-28")
	require.NoError(t, err)
	text := readAll(t, resp)
	if i := strings.Index(text, "data: "); i >= 0 { // an event stream: its one message
		text = text[i+len("data: "):]
		text = text[:strings.IndexByte(text, '\n')]
	}
	var out struct {
		rpcAnswer
		Result json.RawMessage `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(text), &out), text)
	a := out.rpcAnswer
	a.raw = out.Result
	if len(out.Result) > 0 {
		require.NoError(t, json.Unmarshal(out.Result, &a.Result))
	}
	return a
}

func (ts *taskServer) call(t *testing.T, user, tool string, n int, tasks bool) rpcAnswer {
	t.Helper()
	return ts.rpc(t, user, "tools/call", map[string]any{"name": tool, "arguments": map[string]any{"n": n}}, tasks)
}

func (ts *taskServer) task(t *testing.T, user, method, id string) rpcAnswer {
	t.Helper()
	return ts.rpc(t, user, method, map[string]any{"taskId": id}, true)
}

// poll polls tasks/get as ann until the task is terminal.
func (ts *taskServer) poll(t *testing.T, id string) rpcAnswer {
	t.Helper()
	var last rpcAnswer
	require.Eventually(t, func() bool {
		last = ts.task(t, "ann", "tasks/get", id)
		require.Nil(t, last.Error)
		s := last.Result["status"]
		return s == "completed" || s == "cancelled" || s == "failed"
	}, eventually, 5*time.Millisecond)
	return last
}

// taskSchema compiles one definition of the extension's schema.
func taskSchema(t *testing.T, def string) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open("testdata/mcp-ext-tasks/schema.json")
	require.NoError(t, err)
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	const id = "https://modelcontextprotocol.io/ext-tasks/schema.json"
	require.NoError(t, c.AddResource(id, doc))
	s, err := c.Compile(id + "#/$defs/" + def)
	require.NoError(t, err)
	return s
}

// conforms checks a result's text against a definition of the schema.
func conforms(t *testing.T, def string, raw json.RawMessage) {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	require.NoError(t, err)
	assert.NoError(t, taskSchema(t, def).Validate(v), "%s: %s", def, raw)
}

func TestTasksPollToCompletion(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		ts := newTaskServer(t, db)
		created := ts.call(t, "ann", "shop-report", 1, true)
		require.Nil(t, created.Error)
		assert.Equal(t, "task", created.Result["resultType"])
		assert.Equal(t, "working", created.Result["status"])
		conforms(t, "CreateTaskResult", created.raw)
		id := created.Result["taskId"].(string)
		<-ts.started
		working := ts.task(t, "ann", "tasks/get", id)
		require.Nil(t, working.Error)
		assert.Equal(t, "complete", working.Result["resultType"])
		assert.Equal(t, "working", working.Result["status"])
		conforms(t, "GetTaskResult", working.raw)
		close(ts.release)
		done := ts.poll(t, id)
		assert.Equal(t, "completed", done.Result["status"])
		conforms(t, "GetTaskResult", done.raw)
		result := done.Result["result"].(map[string]any)
		assert.Equal(t, map[string]any{"rows": float64(1)}, result["structuredContent"])
		assert.Equal(t, 1, ts.rows(t))
	})
}

func TestTasksOptInOnly(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		ts := newTaskServer(t, db)
		// A quick action is answered at once, even to a client that
		// declares the extension.
		quick := ts.call(t, "ann", "shop-quick", 1, true)
		require.Nil(t, quick.Error)
		assert.NotEqual(t, "task", quick.Result["resultType"])
		assert.Equal(t, map[string]any{"quick": true}, quick.Result["structuredContent"])
		// A client without the extension waits for a long call's answer.
		close(ts.release)
		waited := ts.call(t, "ann", "shop-report", 1, false)
		require.Nil(t, waited.Error)
		assert.NotEqual(t, "task", waited.Result["resultType"])
		assert.Equal(t, map[string]any{"rows": float64(1)}, waited.Result["structuredContent"])
		// The task methods need the extension on the request: -32021.
		missing := ts.rpc(t, "ann", "tasks/get", map[string]any{"taskId": "x"}, false)
		require.NotNil(t, missing.Error)
		assert.Equal(t, int64(mcpserver.CodeMissingCapability), missing.Error.Code)
		assert.Equal(t, map[string]any{"extensions": map[string]any{mcpserver.TasksExtension: map[string]any{}}}, missing.Error.Data["requiredCapabilities"])
	})
}

func TestTasksCancel(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		ts := newTaskServer(t, db)
		created := ts.call(t, "ann", "shop-report", 1, true)
		require.Nil(t, created.Error)
		id := created.Result["taskId"].(string)
		<-ts.started
		ack := ts.task(t, "ann", "tasks/cancel", id)
		require.Nil(t, ack.Error)
		assert.Equal(t, "complete", ack.Result["resultType"])
		conforms(t, "CancelTaskResult", ack.raw)
		<-ts.sawDone
		done := ts.poll(t, id)
		assert.Equal(t, "cancelled", done.Result["status"])
		conforms(t, "GetTaskResult", done.raw)
		assert.Equal(t, 0, ts.rows(t), "nothing the body did was kept")
	})
}

func TestTasksLateCancelKeepsCompleted(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		ts := newTaskServer(t, db)
		close(ts.release)
		created := ts.call(t, "ann", "shop-report", 1, true)
		require.Nil(t, created.Error)
		id := created.Result["taskId"].(string)
		ts.poll(t, id)
		require.Nil(t, ts.task(t, "ann", "tasks/cancel", id).Error)
		after := ts.task(t, "ann", "tasks/get", id)
		assert.Equal(t, "completed", after.Result["status"])
		assert.Equal(t, 1, ts.rows(t))
	})
}

func TestTasksOwnerOnly(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		ts := newTaskServer(t, db)
		created := ts.call(t, "ann", "shop-report", 1, true)
		require.Nil(t, created.Error)
		id := created.Result["taskId"].(string)
		<-ts.started
		unknown := ts.task(t, "bob", "tasks/get", "no-such-task")
		for _, method := range []string{"tasks/get", "tasks/cancel", "tasks/update"} {
			other := ts.task(t, "bob", method, id)
			require.NotNil(t, other.Error, method)
			assert.Equal(t, unknown.Error, other.Error, "%s: another principal's task answers as an unknown one", method)
		}
		assert.Equal(t, int64(-32602), unknown.Error.Code)
		close(ts.release)
		assert.Equal(t, "completed", ts.poll(t, id).Result["status"], "bob's cancel did not reach it")
	})
}

func TestTasksRefusedCallCompletesWithIsError(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		ts := newTaskServer(t, db)
		created := ts.rpc(t, "ann", "tools/call", map[string]any{"name": "shop-report", "arguments": map[string]any{"n": "x"}}, true)
		require.Nil(t, created.Error)
		done := ts.poll(t, created.Result["taskId"].(string))
		assert.Equal(t, "completed", done.Result["status"])
		result := done.Result["result"].(map[string]any)
		assert.Equal(t, true, result["isError"])
		assert.NotContains(t, fmt.Sprint(result), `"x"`)
	})
}

func TestTasksKeyedRetrySameTask(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		ts := newTaskServer(t, db)
		params := func() map[string]any {
			return map[string]any{"name": "shop-report", "arguments": map[string]any{"n": 1}}
		}
		first := ts.rpcKeyed(t, params(), "key-1")
		require.Nil(t, first.Error)
		<-ts.started
		retry := ts.rpcKeyed(t, params(), "key-1")
		require.Nil(t, retry.Error)
		assert.Equal(t, first.Result["taskId"], retry.Result["taskId"])
		close(ts.release)
		ts.poll(t, first.Result["taskId"].(string))
		assert.Equal(t, 1, ts.rows(t), "the body ran once")
	})
}

// rpcKeyed is a tools/call as ann, declaring the extension, under the
// idempotency key (the Idempotency-Key header).
func (ts *taskServer) rpcKeyed(t *testing.T, params map[string]any, key string) rpcAnswer {
	t.Helper()
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "0"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{mcpserver.TasksExtension: map[string]any{}}},
		mcpserver.IdempotencyKeyMeta:                 key,
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
	require.NoError(t, err)
	resp, err := newRawClient(ts.url).post(context.Background(), string(body), "Mcp-Method", "tools/call", "Mcp-Name", "shop-report",
		"X-User", "ann", "MCP-Protocol-Version", "2026-07-28")
	require.NoError(t, err)
	text := readAll(t, resp)
	if i := strings.Index(text, "data: "); i >= 0 {
		text = text[i+len("data: "):]
		text = text[:strings.IndexByte(text, '\n')]
	}
	var a rpcAnswer
	require.NoError(t, json.Unmarshal([]byte(text), &a), text)
	return a
}

// The official SDK client sees the extension advertised at initialize.
func TestTasksAdvertised(t *testing.T) {
	ts := newTaskServer(t, dbtest.SQLite(t))
	client := mcp.NewClient(&mcp.Implementation{Name: "sdk-client", Version: "v0"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)
	defer cs.Close()
	assert.Contains(t, cs.InitializeResult().Capabilities.Extensions, mcpserver.TasksExtension)
}
