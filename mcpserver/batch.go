package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/actionreg/actions"
)

// BatchTool is the opt-in tool that runs a call-only batch of the other
// tools' actions as one unit ([Options].Batch): a model that plans several
// calls sends them together, and a refused step undoes the steps before it
// when Run runs the batch in a transaction.
type BatchTool[C any] struct {
	// Name is the tool's name (default "run_batch"): 1 to 128 characters
	// of [A-Za-z0-9_.-], as MCP requires; it must not be the
	// name of an action's tool.
	Name string
	// Description replaces the default description, which says what a
	// batch is and that it runs as one unit.
	Description string
	// Run runs the checked batch as one unit, with the host built for the
	// request ([Options].Host, its Caller from [Options].Caller, so that
	// the gate checks each step): typically in one database transaction,
	// as sqlstore.Runner.RunBatch does with a TxHost that binds host's Env
	// to it. It returns what [actions.Registry.RunBatch] returns. Nil runs
	// Registry.RunBatch, with no transaction: the calls done before a
	// refused one stay done, and the tool's description says so.
	Run func(ctx context.Context, b actions.Batch, host *actions.Host[C]) (any, []actions.RunEntry, error)
}

// defaultBatchToolName is BatchTool.Name when left empty.
const defaultBatchToolName = "run_batch"

func (b *BatchTool[C]) name() string {
	if b.Name == "" {
		return defaultBatchToolName
	}
	return b.Name
}

// batchHandler serves the batch tool.
type batchHandler[C any] struct {
	toolHandler[C]
	batch    *BatchTool[C]
	callable map[string]bool // the action ids a step may call
	ids      []any           // the same, in the listed tools' order
}

// checkBatchName refuses a batch tool name MCP does not accept (1 to 128
// characters of [A-Za-z0-9_.-]) or one an action's tool holds.
func checkBatchName(name string, tools []actions.Tool) error {
	if len(name) > actions.MaxToolNameLength || strings.IndexFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-')
	}) >= 0 {
		return errors.New("mcpserver: the batch tool's name is not an MCP tool name (1 to 128 characters of A-Z a-z 0-9 _ . -)")
	}
	for _, t := range tools {
		if t.Name == name {
			return fmt.Errorf("mcpserver: the batch tool's name %s is an action's tool name", name)
		}
	}
	return nil
}

// addBatchTool adds the batch tool over the actions of tools.
func addBatchTool[C any](s *mcp.Server, reg *actions.Registry[C], opts Options[C], tools []actions.Tool) (*batchHandler[C], error) {
	bt := opts.Batch
	name := bt.name()
	ids := make([]any, 0, len(tools))
	callable := map[string]bool{}
	for _, t := range tools { // the name was checked by checkBatchName
		id, err := actions.ActionID(t.Name)
		if err != nil {
			return nil, fmt.Errorf("mcpserver: tool %s: %w", t.Name, err)
		}
		ids = append(ids, id)
		callable[id] = true
	}
	schema, err := actions.CanonicalJSON(batchSchema(ids, reg.Limits().MaxBatchCalls))
	if err != nil {
		return nil, fmt.Errorf("mcpserver: batch tool schema: %w", err)
	}
	desc := bt.Description
	if desc == "" {
		desc = batchDescription
		if bt.Run == nil {
			desc = batchDescriptionNoTx
		}
	}
	falseHint, trueHint := false, true
	h := &batchHandler[C]{
		toolHandler: toolHandler[C]{reg: reg, id: "", name: name, opts: opts},
		batch:       bt,
		callable:    callable,
		ids:         ids,
	}
	s.AddTool(&mcp.Tool{
		Name:        name,
		Title:       "Run several calls as one unit",
		Description: desc,
		InputSchema: json.RawMessage(schema),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: &trueHint, OpenWorldHint: &falseHint},
	}, h.call)
	return h, nil
}

// toolFor returns the batch tool as caller c may see it: its "call" enum
// lists only the actions c may call (offered on its surface, its
// capability held), so that the list names no action c may not see.
// tool is the tool as added, shared between sessions: it is copied.
func (h *batchHandler[C]) toolFor(tool *mcp.Tool, c *actions.Caller) *mcp.Tool {
	ids := make([]any, 0, len(h.ids))
	for _, id := range h.ids {
		if h.sees(id.(string), c) {
			ids = append(ids, id)
		}
	}
	schema, err := actions.CanonicalJSON(batchSchema(ids, h.reg.Limits().MaxBatchCalls))
	cp := *tool
	if err != nil {
		cp.InputSchema = json.RawMessage(`{"type":"object","properties":{"commands":{"type":"array","maxItems":0}},"required":["commands"]}`)
	} else {
		cp.InputSchema = json.RawMessage(schema)
	}
	return &cp
}

// sees reports whether caller c may see the action id among the batch's:
// it is one of the listed tools' actions and the gate would not answer a
// call of it as unknown (surface and capability; a nil caller, the host,
// sees all).
func (h *batchHandler[C]) sees(id string, c *actions.Caller) bool {
	if !h.callable[id] {
		return false
	}
	if c == nil {
		return true
	}
	return actions.CodeOf(h.reg.Admit(context.Background(), id, c)) != actions.CodeUnknownAction
}

const batchDescription = "Runs several tool calls in order as one unit: either every call is done, or none is kept. " +
	"Each step names an action id in \"call\" (a tool's name with its first '-' written '/'), its arguments in \"with\", " +
	"and may name its result in \"as\" for later steps to use as \"${name}\" or \"${name.field}\" in their strings. " +
	"\"result\", optional, is one such placeholder: the batch's result (default: the last call's). " +
	"A refused step stops the batch and undoes the steps before it; the answer names the step, such as /commands/2."

const batchDescriptionNoTx = "Runs several tool calls in order: a refused step stops the batch, and the steps before it stay done. " +
	"Each step names an action id in \"call\" (a tool's name with its first '-' written '/'), its arguments in \"with\", " +
	"and may name its result in \"as\" for later steps to use as \"${name}\" or \"${name.field}\" in their strings. " +
	"\"result\", optional, is one such placeholder: the batch's result (default: the last call's). " +
	"The answer names a refused step, such as /commands/2."

// batchSchema is the batch grammar ([actions.Batch]) as a JSON Schema
// whose "call" lists the callable action ids.
func batchSchema(ids []any, maxSteps int) map[string]any {
	return map[string]any{
		"type":                 "object",
		"additionalProperties": false,
		"required":             []any{"commands"},
		"properties": map[string]any{
			"commands": map[string]any{
				"type":     "array",
				"maxItems": maxSteps,
				"items": map[string]any{
					"type":                 "object",
					"additionalProperties": false,
					"required":             []any{"call"},
					"properties": map[string]any{
						"call": map[string]any{"enum": ids, "description": "The action id to call."},
						"with": map[string]any{"type": "object", "description": "The call's arguments; strings may hold ${name.path} placeholders."},
						"as":   map[string]any{"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$", "description": "A name for this call's result."},
					},
				},
			},
			"result": map[string]any{"type": "string", "description": "One placeholder naming the batch's result, such as ${total}."},
		},
	}
}

// stepOutcome is one step's line in the batch tool's answer.
type stepOutcome struct {
	Call    string          `json:"call"`
	Outcome actions.Outcome `json:"outcome"`
	Error   actions.Code    `json:"error,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
}

// batchAnswer is a done batch's structured content.
type batchAnswer struct {
	Result json.RawMessage `json:"result"`
	Steps  []stepOutcome   `json:"steps"`
}

// batchRefusal is a refused batch's structured content: the refusal, the
// pointer of the step at fault, and the outcome of each step made.
type batchRefusal struct {
	refusalJSON
	At    string        `json:"at"`
	Kept  bool          `json:"kept"`
	Steps []stepOutcome `json:"steps"`
}

func outcomes(entries []actions.RunEntry) []stepOutcome {
	out := make([]stepOutcome, len(entries))
	for i, e := range entries {
		out[i] = stepOutcome{Call: e.Action, Outcome: e.Outcome, Error: e.Error}
		if e.Result != "" {
			out[i].Result = json.RawMessage(e.Result)
		}
	}
	return out
}

func (h *batchHandler[C]) call(ctx context.Context, req *mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, panicked(ctx, h.report, h.name, p)
		}
	}()
	// Bounded and cancelled with its session as any tool call (calls.go).
	ctx, end, busy := track(ctx, req)
	if busy != nil {
		return nil, busy
	}
	defer func() { end(err) }()
	args, _ := arguments(req).(json.RawMessage)
	if args == nil {
		args = json.RawMessage("{}")
	}
	b, err := h.reg.DecodeBatch(args)
	if err != nil {
		return h.batchRefused(ctx, err, nil)
	}
	var host *actions.Host[C]
	if h.opts.Host != nil {
		host = h.opts.Host(ctx, req)
	}
	host = h.withCaller(ctx, req, host)
	var caller *actions.Caller
	if host != nil {
		caller = host.Caller
	}
	// A step calling an action its caller may not see is answered as one
	// calling an action that does not exist, before any step runs.
	var unknown []actions.Issue
	for i, st := range b.Steps {
		if !h.sees(st.Call, caller) {
			unknown = append(unknown, actions.Issue{Path: fmt.Sprintf("/commands/%d/call", i), Keyword: "call",
				Message: "not the id of a tool this server lists"})
		}
	}
	if len(unknown) > 0 {
		r := actions.NewRefusal(actions.CodeUnknownAction, "a step calls an action that is not offered")
		r.Issues = unknown
		r.Transport = actions.TransportToolResult
		r.NextAction = "List the tools and call their action ids (the tool name with its first '-' written '/')."
		return h.batchRefused(ctx, r, nil)
	}
	var result any
	var entries []actions.RunEntry
	if h.batch.Run != nil {
		result, entries, err = h.batch.Run(ctx, b, host)
	} else {
		result, entries, err = h.reg.RunBatch(ctx, b, host)
	}
	if err != nil {
		return h.batchRefused(ctx, err, entries)
	}
	text, err := actions.CanonicalJSON(result)
	if err != nil {
		h.report(ctx, err)
		return nil, protocolError(jsonrpc.CodeInternalError, internalMessage, actions.NewRefusal(actions.CodeInternal, ""))
	}
	answer, err := actions.CanonicalJSON(batchAnswer{Result: text, Steps: outcomes(entries)})
	if err != nil {
		h.report(ctx, err)
		return nil, protocolError(jsonrpc.CodeInternalError, internalMessage, actions.NewRefusal(actions.CodeInternal, ""))
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(answer)}},
		StructuredContent: json.RawMessage(answer),
	}, nil
}

// batchRefused answers a refused batch: a refusal whose issues point into
// the batch (a step's issues under its pointer, /commands/2/with/name),
// the step at fault, and the outcome of the steps made. A refusal whose
// transport is protocol (internal, a cancelled call) is answered as a
// tool's is.
func (h *batchHandler[C]) batchRefused(ctx context.Context, err error, entries []actions.RunEntry) (*mcp.CallToolResult, error) {
	var se *actions.StepError
	at := ""
	if errors.As(err, &se) {
		at = se.Pointer()
	}
	var r *actions.Refusal
	if !errors.As(err, &r) || r == nil {
		if cancelled(err) {
			return h.refused(ctx, err)
		}
		h.report(ctx, err)
		r = plainRefusal(err)
	} else if r.Policy().Transport == actions.TransportProtocol && r.Code != actions.CodeUnknownAction {
		return h.refused(ctx, err)
	}
	located := *r
	located.Issues = make([]actions.Issue, len(r.Issues))
	for i, is := range r.Issues {
		if se != nil {
			prefix := at
			if r.Code == actions.CodeInvalidParameters {
				prefix += "/with"
			}
			is.Path = prefix + is.Path
		}
		located.Issues[i] = is
	}
	kept := len(entries) > 0 && h.batch.Run == nil
	var b strings.Builder
	if at != "" {
		fmt.Fprintf(&b, "step %s was refused; ", at)
	}
	switch {
	case len(entries) == 0:
		b.WriteString("no step ran\n")
	case kept:
		b.WriteString("the steps before it stay done\n")
	default:
		b.WriteString("nothing of the batch was kept\n")
	}
	b.WriteString(refusalText(&located))
	data := batchRefusal{refusalJSON: refusalData(&located), At: at, Kept: kept, Steps: outcomes(entries)}
	res := &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}}
	if raw, err := json.Marshal(data); err == nil {
		res.StructuredContent = json.RawMessage(raw)
	}
	return res, nil
}
