package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/actionreg/actions/bound"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/internal/portable"
	"github.com/actionreg/actions/store"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
)

// BatchTool is the opt-in tool that runs a call-only batch of the other
// tools' actions as one unit ([Options].Batch): a model that plans several
// calls sends them together, and a refused step undoes the steps before it
// when the registry keeps units in a transaction (an [actions.Registry]
// whose Store is a sqlstore.Store). A batch holding a step that needs
// confirmation is held whole, and the person is asked once, as for one
// call.
type BatchTool struct {
	// Name is the tool's name (default "run_batch"): 1 to 128 characters
	// of [A-Za-z0-9_.-], as MCP requires; it must not be the
	// name of an action's tool.
	Name string
	// Description replaces the default description, which says what a
	// batch is and that it runs as one unit.
	Description string
}

// defaultBatchToolName is BatchTool.Name when left empty.
const defaultBatchToolName = "run_batch"

// maxIssues bounds the issues of the refusal of a batch naming tools its
// caller may not call: 100, as every refusal of package actions.
const maxIssues = 100

func (b *BatchTool) name() string {
	if b.Name == "" {
		return defaultBatchToolName
	}
	return b.Name
}

// batchHandler serves the batch tool.
type batchHandler struct {
	toolHandler
	callable map[string]bool // the action ids a step may call
	ids      []any           // the same, in the listed tools' order
	names    []any           // their tool names, in the same order
}

// checkBatchName refuses a batch tool name MCP does not accept (1 to 128
// characters of [A-Za-z0-9_.-]) or one an action's tool holds.
func checkBatchName(name string, tools []actions.Tool) error {
	if len(name) > portable.MCPToolNameLength || strings.IndexFunc(name, func(r rune) bool {
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
func addBatchTool(s *mcp.Server, srv *server, tools []actions.Tool) (*batchHandler, error) {
	bt := srv.opts.Batch
	name := bt.name()
	h := &batchHandler{toolHandler: toolHandler{srv: srv, name: name}, callable: map[string]bool{}}
	for _, t := range tools { // the name was checked by checkBatchName
		id, err := actions.ActionID(t.Name)
		if err != nil {
			return nil, fmt.Errorf("mcpserver: tool %s: %w", t.Name, err)
		}
		h.ids = append(h.ids, id)
		h.names = append(h.names, t.Name)
		h.callable[id] = true
	}
	schema, err := actions.CanonicalJSON(batchSchema(h.names, h.ids, srv.r.Limits().MaxBatchCalls))
	if err != nil {
		return nil, fmt.Errorf("mcpserver: batch tool schema: %w", err)
	}
	desc := bt.Description
	if desc == "" {
		desc = batchDescription
	}
	falseHint, trueHint := false, true
	tool := &mcp.Tool{
		Name:        name,
		Title:       "Run several calls as one unit",
		Description: desc,
		InputSchema: json.RawMessage(schema),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: &trueHint, OpenWorldHint: &falseHint},
	}
	if srv.opts.ConfirmURL != nil && slices.ContainsFunc(h.ids, func(id any) bool { return srv.needsConfirmation(id.(string)) }) {
		tool.Meta = mcp.Meta{"ui": map[string]any{"resourceUri": ConfirmViewURI}}
	}
	s.AddTool(tool, h.call)
	return h, nil
}

// toolFor returns the batch tool as caller c may see it: its "call" enum
// lists only the tools c may call (offered on its surface, its
// capability held), so that the list names no action c may not see.
// tool is the tool as added, shared between sessions: it is copied.
func (h *batchHandler) toolFor(tool *mcp.Tool, c *identity.Caller) *mcp.Tool {
	var names, ids []any
	for i, id := range h.ids {
		if h.srv.sees(id.(string), c) {
			names = append(names, h.names[i])
			ids = append(ids, id)
		}
	}
	schema, err := actions.CanonicalJSON(batchSchema(names, ids, h.srv.r.Limits().MaxBatchCalls))
	cp := *tool
	if err != nil {
		cp.InputSchema = json.RawMessage(`{"type":"object","properties":{"commands":{"type":"array","maxItems":0}},"required":["commands"]}`)
	} else {
		cp.InputSchema = json.RawMessage(schema)
	}
	return &cp
}

// stepAction maps a step's call, a tool name as tools/list shows it or an
// action id, to the action id, when it is one of the batch's actions and
// caller c may see it.
func (h *batchHandler) stepAction(call string, c *identity.Caller) (string, bool) {
	id := call
	if !h.callable[id] {
		var err error
		if id, err = actions.ActionID(call); err != nil || !h.callable[id] {
			return "", false
		}
	}
	return id, h.srv.sees(id, c)
}

// batchDescription promises no undo: whether the steps before a refused
// one are undone is the host's store's to say (a host on sqlstore may
// say it in BatchTool.Description).
const batchDescription = "Runs several tool calls in order as one unit. " +
	"Each step names a tool in \"call\" (as listed), its arguments in \"with\", " +
	"and may name its result in \"as\" for later steps to use as \"${name}\" or \"${name.field}\" in their strings. " +
	"\"result\", optional, is one such placeholder: the batch's result (default: the last call's). " +
	"A refused step stops the batch; the answer names the step, such as /commands/2."

// batchSchema is the batch grammar ([actions.Batch]) as a JSON Schema
// whose "call" lists the callable tools by name (and, accepted too, by
// action id).
func batchSchema(names, ids []any, maxSteps int) map[string]any {
	if names == nil {
		names, ids = []any{}, []any{}
	}
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
						"call": map[string]any{"enum": append(append([]any{}, names...), ids...), "description": "The tool to call, by its name."},
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
	Outcome store.Outcome   `json:"outcome"`
	Error   codes.Code      `json:"error,omitempty"`
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
	Step  string        `json:"step,omitempty"` // the tool name of the step at fault
	Kept  bool          `json:"kept"`
	Steps []stepOutcome `json:"steps"`
}

// outcomes are the lines of the steps made, each with its result as the
// registry gave it back (results[i], bounded where it had to be); for a
// refused batch (results nil), the results its entries kept.
func outcomes(entries []store.RunEntry, results []any) []stepOutcome {
	out := make([]stepOutcome, len(entries))
	for i, e := range entries {
		out[i] = stepOutcome{Call: e.Action, Outcome: e.Outcome, Error: e.Error}
		switch {
		case i < len(results) && results[i] != nil:
			if text, err := actions.CanonicalJSON(clientValue(results[i])); err == nil {
				out[i].Result = json.RawMessage(text)
			}
		case results == nil && e.Result != "":
			out[i].Result = json.RawMessage(e.Result) // kept small by the entry's bound
		}
	}
	return out
}

// boundedSteps counts the results of a batch's answer that were bounded.
func boundedSteps(value any, results []any) int {
	n := 0
	for _, v := range append([]any{value}, results...) {
		if _, ok := v.(*bound.Bounded); ok {
			n++
		}
	}
	return n
}

func (h *batchHandler) call(ctx context.Context, req *mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
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
	caller := h.srv.callerOfRequest(ctx, req)
	if req.Params != nil && req.Params.RequestState != "" {
		return h.srv.resume(ctx, req, caller, "", h.name, h.render)
	}
	args, _ := arguments(req).(json.RawMessage)
	if args == nil {
		args = json.RawMessage("{}")
	}
	// Decoded and checked whole with the registry's limits (the count of
	// steps first) before any step's tool is looked up.
	b, err := h.srv.r.DecodeBatch(args)
	if err != nil {
		return h.batchRefused(ctx, err, nil)
	}
	// Steps name tools as tools/list shows them (or action ids); a step
	// calling an action its caller may not see is answered as one calling
	// an action that does not exist, before any step runs. The refusal
	// lists at most maxIssues of them.
	var unknown []actions.Issue
	more := 0
	for i, st := range b.Steps {
		id, ok := h.stepAction(st.Call, caller)
		if !ok {
			if len(unknown) == maxIssues {
				more++
				continue
			}
			unknown = append(unknown, actions.Issue{Path: fmt.Sprintf("/commands/%d/call", i), Keyword: "call",
				Message: "not the name of a tool this server lists"})
			continue
		}
		b.Steps[i].Call = id
	}
	if len(unknown) > 0 {
		msg := "a step calls a tool that is not offered"
		if more > 0 {
			msg += fmt.Sprintf(": %d steps, the first %d listed", len(unknown)+more, len(unknown))
		}
		r := actions.NewRefusal(codes.UnknownAction, msg)
		r.Issues = unknown
		r.Transport = codes.TransportToolResult
		r.NextAction = "List the tools and call them by the names listed."
		return h.batchRefused(ctx, r, nil)
	}
	result, err := h.srv.r.Run(ctx, actions.Call{Batch: &b, Caller: caller, Progress: progressOf(ctx, req), IdempotencyKey: idempotencyKey(req)})
	if rf := (*actions.Refusal)(nil); errors.As(err, &rf) && rf.Code == codes.ConfirmationRequired && rf.Pending != nil {
		return h.srv.held(ctx, req, caller, rf, h.name, h.render)
	}
	return h.render(ctx, result, err, protocolVersion(req))
}

// render answers a batch run or confirmed: its answer, or its refusal.
func (h *batchHandler) render(ctx context.Context, result actions.Result, err error, _ string) (*mcp.CallToolResult, error) {
	entries := make([]store.RunEntry, len(result.Records))
	for i, rec := range result.Records {
		entries[i] = rec.Entry
	}
	if err != nil {
		return h.batchRefused(ctx, err, result.Records)
	}
	text, err := actions.CanonicalJSON(clientValue(result.Value))
	if err != nil {
		h.report(ctx, err)
		return nil, protocolError(jsonrpc.CodeInternalError, internalMessage, actions.NewRefusal(codes.Internal, ""))
	}
	answer, err := actions.CanonicalJSON(batchAnswer{Result: text, Steps: outcomes(entries, result.StepResults)})
	if err != nil {
		h.report(ctx, err)
		return nil, protocolError(jsonrpc.CodeInternalError, internalMessage, actions.NewRefusal(codes.Internal, ""))
	}
	res := &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(answer)}},
		StructuredContent: json.RawMessage(answer),
	}
	if n := boundedSteps(result.Value, result.StepResults); n > 0 {
		res.Content = append(res.Content, &mcp.TextContent{Text: fmt.Sprintf(
			"bounded: %d of the results above were cut or left out to keep the answer within its bound; "+
				"each says so in its \"bounded\" member, with the next call that fetches the rest where there is one", n)})
	}
	return res, nil
}

// batchRefused answers a refused batch: a refusal whose issues point into
// the batch (a step's issues under its pointer, /commands/2/with/name),
// the step at fault, and the outcome of the steps made. A refusal whose
// transport is protocol (internal, a cancelled call) is answered as a
// tool's is.
func (h *batchHandler) batchRefused(ctx context.Context, err error, recs []store.Record) (*mcp.CallToolResult, error) {
	entries := make([]store.RunEntry, len(recs))
	kept := len(recs) > 0
	for i, rec := range recs {
		entries[i] = rec.Entry
		kept = kept && !rec.RolledBack
	}
	var se *actions.StepError
	at, step := "", ""
	if errors.As(err, &se) {
		at = se.Pointer()
		step = actions.ToolName(se.Action)
	}
	var r *actions.Refusal
	if !errors.As(err, &r) || r == nil {
		if cancelled(err) {
			return h.refused(ctx, err)
		}
		h.report(ctx, err)
		r = plainRefusal(err)
	} else if r.Policy().Transport == codes.TransportProtocol && r.Code != codes.UnknownAction {
		return h.refused(ctx, err)
	}
	located := *r
	located.Issues = make([]actions.Issue, len(r.Issues))
	for i, is := range r.Issues {
		if se != nil {
			prefix := at
			if r.Code == codes.InvalidParameters {
				prefix += "/with"
			}
			is.Path = prefix + is.Path
		}
		located.Issues[i] = is
	}
	var b strings.Builder
	if at != "" {
		fmt.Fprintf(&b, "step %s (%s) was refused; ", at, step)
	}
	switch {
	case len(entries) == 0:
		b.WriteString("no step ran\n")
	case kept:
		b.WriteString("the steps before it stay done\n")
	default:
		b.WriteString("nothing of the batch was kept\n")
	}
	d := refusalData(&located)
	if located.Pending != nil && h.srv.opts.ConfirmURL != nil {
		d.ConfirmURL = h.srv.opts.ConfirmURL(located.Pending.ID)
	}
	b.WriteString(refusalText(&located, d.ConfirmURL))
	data := batchRefusal{refusalJSON: d, At: at, Step: step, Kept: kept, Steps: outcomes(entries, nil)}
	res := &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}}
	if raw, err := json.Marshal(data); err == nil {
		res.StructuredContent = json.RawMessage(raw)
	}
	return res, nil
}
