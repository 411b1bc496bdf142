package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/store"
)

// The MCP Tasks extension (io.modelcontextprotocol/tasks, SEP-2663, as
// the ext-tasks repository specifies it): a tools/call of a long action
// ([actions.Definition].Long) from a client that declares the extension
// on that request is answered at once with a task handle (resultType
// "task"), and the client polls tasks/get for the answer. The call is
// [actions.Registry.Start]: the same call the tool would make, whose
// answer is deferred.

// TasksExtension is the Tasks extension's identifier, the key a client
// lists under _meta["io.modelcontextprotocol/clientCapabilities"].extensions
// on a request, and the server under its capabilities' extensions.
const TasksExtension = "io.modelcontextprotocol/tasks"

// CodeMissingCapability is JSON-RPC -32021 (Missing Required Client
// Capability): a tasks/* request from a client that did not declare the
// Tasks extension on it.
const CodeMissingCapability = -32021

// clientCapabilitiesMeta is the _meta member carrying a request's client
// capabilities (MCP 2026-07-28, per-request capabilities).
const clientCapabilitiesMeta = "io.modelcontextprotocol/clientCapabilities"

// Tasks configures the tasks [AddTools] creates. The zero value, or nil,
// is every default.
type Tasks struct {
	// TTL is how long an ended task is kept, counted from its creation
	// (0: one hour). A running task is kept whatever its TTL.
	TTL time.Duration
	// PollInterval is the pollIntervalMs suggested to clients (0: one
	// second).
	PollInterval time.Duration
	// MaxRunning bounds one principal's tasks running at once in this
	// process (0: 16; negative: no bound): past it a call is answered
	// with a rate_limited result (isError), and no task is made.
	MaxRunning int
}

// The task methods.
const (
	methodTaskGet    = "tasks/get"
	methodTaskUpdate = "tasks/update"
	methodTaskCancel = "tasks/cancel"
)

// taskParams are the params of tasks/get, tasks/update and tasks/cancel.
type taskParams struct {
	mcp.ParamsBase
	TaskID         string          `json:"taskId"`
	InputResponses json.RawMessage `json:"inputResponses,omitempty"`
}

// taskResult is a task as the extension writes it: CreateTaskResult
// (resultType "task") or GetTaskResult (resultType "complete").
type taskResult struct {
	mcp.ResultBase
	ResultType     string     `json:"resultType"`
	TaskID         string     `json:"taskId"`
	Status         string     `json:"status"`
	StatusMessage  string     `json:"statusMessage,omitempty"`
	CreatedAt      string     `json:"createdAt"`
	LastUpdatedAt  string     `json:"lastUpdatedAt"`
	TTLMs          *int64     `json:"ttlMs"`
	PollIntervalMs int64      `json:"pollIntervalMs,omitempty"`
	Result         any        `json:"result,omitempty"`
	Error          *taskError `json:"error,omitempty"`
}

// taskError is the JSON-RPC error of a failed task.
type taskError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// ackResult is the empty acknowledgement of tasks/update and tasks/cancel.
type ackResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
}

// taskSlot is where a tools/call's handler leaves the task it started,
// for the middleware to answer with.
type taskSlot struct {
	task *store.Task
}

type taskSlotKey struct{}

// declaresTasks reports whether a request's _meta declares the Tasks
// extension among its client capabilities.
func declaresTasks(meta map[string]any) bool {
	caps, _ := meta[clientCapabilitiesMeta].(map[string]any)
	ext, _ := caps["extensions"].(map[string]any)
	_, ok := ext[TasksExtension]
	return ok
}

// startTask starts req's call as a task and returns true when it should
// be one: the action is long, the client declared the extension on this
// request, the caller has a principal (a task is its owner's alone), and
// the call will not be held for confirmation (that question is settled
// before any task exists). When the registry's Store keeps no tasks the
// call runs as usual.
func (h *toolHandler) startTask(ctx context.Context, req *mcp.CallToolRequest, call actions.Call) (bool, *mcp.CallToolResult, error) {
	slot, _ := ctx.Value(taskSlotKey{}).(*taskSlot)
	d, ok := h.srv.defs[h.id]
	if slot == nil || !ok || !d.Long || d.NeedsConfirmation || req.Params == nil || !declaresTasks(req.Params.Meta) ||
		call.Caller == nil || call.Caller.Principal == "" {
		return false, nil, nil
	}
	call.Progress = nil
	task, err := h.srv.r.Start(ctx, call, actions.TaskOptions{TTL: h.srv.tasks().TTL, MaxRunning: h.srv.tasks().MaxRunning})
	if err != nil {
		res, rerr := h.refused(ctx, err)
		return true, res, rerr
	}
	slot.task = &task
	return true, &mcp.CallToolResult{}, nil
}

// tasks returns the task options with their defaults.
func (s *server) tasks() Tasks {
	var t Tasks
	if s.opts.Tasks != nil {
		t = *s.opts.Tasks
	}
	if t.PollInterval <= 0 {
		t.PollInterval = time.Second
	}
	return t
}

// addTasks registers the task methods on s and the middleware that
// answers them, advertises the extension, and turns a started task into
// its CreateTaskResult. handlers are the tools, by action id, that render
// a task's answer.
func (s *server) addTasks(ms *mcp.Server, handlers []*toolHandler) error {
	byID := map[string]*toolHandler{}
	for _, h := range handlers {
		byID[h.id] = h
	}
	unreached := func(context.Context, *mcp.ServerSession, *taskParams) (*ackResult, error) {
		// The middleware answers every task method (it sees the
		// request's token and header, which this handler does not).
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
	}
	for _, m := range []string{methodTaskGet, methodTaskUpdate, methodTaskCancel} {
		if err := mcp.AddReceivingCustomMethod(ms, m, unreached); err != nil {
			return err
		}
	}
	ms.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case "tools/call":
				slot := &taskSlot{}
				res, err := next(context.WithValue(ctx, taskSlotKey{}, slot), method, req)
				if err == nil && slot.task != nil {
					return s.taskAnswer(*slot.task, "task"), nil
				}
				return res, err
			case methodTaskGet, methodTaskUpdate, methodTaskCancel:
				return s.taskMethod(ctx, method, req, byID)
			case "initialize", "server/discover":
				res, err := next(ctx, method, req)
				advertiseTasks(res)
				return res, err
			}
			return next(ctx, method, req)
		}
	})
	return nil
}

// advertiseTasks adds the extension to the capabilities of an initialize
// or server/discover result.
func advertiseTasks(res mcp.Result) {
	var caps *mcp.ServerCapabilities
	switch r := res.(type) {
	case *mcp.InitializeResult:
		caps = r.Capabilities
	case *mcp.DiscoverResult:
		caps = r.Capabilities
	}
	if caps != nil {
		caps.AddExtension(TasksExtension, nil)
	}
}

// taskMethod answers tasks/get, tasks/update or tasks/cancel as the
// request's caller: another principal's task is not found, as an
// unknown one is (-32602), with no hint.
func (s *server) taskMethod(ctx context.Context, method string, req mcp.Request, byID map[string]*toolHandler) (mcp.Result, error) {
	p, _ := req.GetParams().(*taskParams)
	if p == nil || !declaresTasks(p.Meta) {
		data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{TasksExtension: map[string]any{}}}})
		return nil, &jsonrpc.Error{Code: CodeMissingCapability, Message: "missing required client capability", Data: data}
	}
	token, header := extraOf(req)
	caller := s.opts.callerOf(ctx, token, header)
	if caller.Principal == "" {
		return nil, taskNotFound()
	}
	var err error
	switch method {
	case methodTaskGet:
		var t store.Task
		if t, err = s.r.Task(ctx, p.TaskID, caller); err == nil {
			return s.detailed(ctx, t, byID), nil
		}
	case methodTaskUpdate:
		// No task of this server asks for input: every response is to a
		// key not outstanding, which the extension says to ignore.
		_, err = s.r.Task(ctx, p.TaskID, caller)
	case methodTaskCancel:
		err = s.r.CancelTask(ctx, p.TaskID, caller)
	}
	if errors.Is(err, store.ErrTaskNotFound) {
		return nil, taskNotFound()
	}
	if err != nil {
		s.report(ctx, method, err)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
	}
	return &ackResult{ResultType: "complete"}, nil
}

// taskNotFound is the answer for a task that does not exist, expired, or
// is another principal's.
func taskNotFound() error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "failed to retrieve task: task not found"}
}

// taskAnswer is the task's common fields, with resultType kind.
func (s *server) taskAnswer(t store.Task, kind string) *taskResult {
	out := &taskResult{ResultType: kind, TaskID: t.ID, Status: string(t.Status), StatusMessage: t.Message,
		CreatedAt: t.Created.UTC().Format(time.RFC3339Nano), LastUpdatedAt: t.Updated.UTC().Format(time.RFC3339Nano),
		PollIntervalMs: s.tasks().PollInterval.Milliseconds()}
	if t.TTL > 0 {
		ms := t.TTL.Milliseconds()
		out.TTLMs = &ms
	}
	return out
}

// detailed is the GetTaskResult of t: its result inlined when completed
// (the CallToolResult the tool would have answered), its JSON-RPC error
// when failed.
func (s *server) detailed(ctx context.Context, t store.Task, byID map[string]*toolHandler) *taskResult {
	out := s.taskAnswer(t, "complete")
	if t.Status != store.TaskCompleted && t.Status != store.TaskFailed {
		return out
	}
	h := byID[t.Action]
	if h == nil {
		h = &toolHandler{srv: s, id: t.Action, name: t.Action}
	}
	res, err := actions.TaskResult(t)
	var ctr *mcp.CallToolResult
	if err == nil {
		ctr = h.done(res, "")
	} else {
		ctr, err = h.refused(ctx, err)
	}
	var je *jsonrpc.Error
	switch {
	case errors.As(err, &je):
		out.Status = string(store.TaskFailed)
		out.Error = &taskError{Code: je.Code, Message: je.Message, Data: je.Data}
	case ctr != nil:
		out.Result = ctr
	}
	return out
}
