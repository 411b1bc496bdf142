// Package mcpserver serves the visible actions of an [*actions.Registry]
// as MCP tools, on the official Go SDK
// (github.com/modelcontextprotocol/go-sdk, v1.8.0). It is the only package
// of the module that imports the SDK: the registry itself knows nothing of
// MCP beyond the tool definitions ([actions.Registry.Tools]).
//
// [AddTools](s, registry, opts) adds one tool per visible action to an
// *mcp.Server. Each tools/call is then one [actions.Call] of the registry's
// Run, and the answer to a confirmation one [actions.Decision] of its
// Decide: the registry is the only way anything runs, and mcpserver adds
// transport only. So the gate checks the caller [Options].Caller built,
// the parameters are checked by the action's full schema, refs are
// resolved by the registry's Options.Resolve, the body gets the call's
// context and trace, and the records reach the
// registry's Store and OnRecord; a registry whose Options.Store is a
// sqlstore.Store runs each call, batch and confirmation in one
// transaction with its records. There are no hooks of mcpserver's own
// that run a call. What the client gets back:
//
//   - a result: isError false, one text content item holding the result's
//     canonical JSON (RFC 8785), and structuredContent holding the same
//     value when it is a JSON object, or whatever it is for a tool with
//     an output schema called at protocol 2026-07-28 or later;
//   - a refusal the model can act on (invalid_parameters, a body's own
//     domain refusal, every code whose transport is tool-result): isError
//     true, a text listing the code, each issue's path, keyword and
//     message, and the next action (MCP SEP-1303), and, on every tool,
//     the refusal as structuredContent: {"code", "message", "issues",
//     "retry", "nextAction"}, with "pending" for a held call's receipt
//     (and "confirmUrl" when Options.ConfirmURL is set);
//   - a result that breaks the tool's output schema (output_invalid):
//     JSON-RPC error -32603, the refusal with its issues going to OnError;
//   - a body's plain error: isError true with a generic text; the error
//     itself goes to [Options].OnError only, since its text may hold
//     anything (a value, a path on the server);
//   - an unknown tool, or one the caller may not see: JSON-RPC error
//     -32602 (invalid params), the same answer, data included, whether
//     the SDK knows no such tool or the gate hides it;
//   - a recovered panic (refusal code internal) and every other refusal
//     whose transport is protocol: JSON-RPC error -32603 (internal error)
//     with a generic message, the cause going to OnError.
//
// Output schemas (docs/typed.md): a tool lists its action's output schema
// as outputSchema in an anyOf with the refusal's object, so that a client
// validating structuredContent accepts a result, a refusal and a receipt
// alike: {"type": "object", "$defs": ..., "anyOf": [result, refusal]}
// ("type" only for an object root; one whose root is not an object is
// listed only to requests at 2026-07-28 or later, since 2025-11-25 allows
// nothing else).
//
// The gate (docs/gate.md): with [Options].Caller, who calls comes from
// the verified token and the request, never from the arguments. tools/list
// then shows each caller only the tools it may call (cacheScope
// "private"); a tool it may not call answers as an unknown one;
// [ScopeChallenge] turns a call whose token lacks the read or write scope
// into HTTP 403 with an RFC 6750 challenge; a deprecated alias's tool
// name calls its action without being listed. A call held for
// confirmation asks the person through elicitation when the client
// supports it (elicitation/create on 2025-11-25, an input request on
// 2026-07-28), showing the whole arguments; the answer is decided as the
// caller is built again then (a capability revoked meanwhile is revoked
// for the confirmation too): accept runs the call, anything else rejects
// the change (code rejected), and nothing runs. A client that cannot ask
// gets the receipt, to confirm on the host's own screen. A caller without
// identity (no principal) is refused an action that needs confirmation,
// with no receipt: nothing is held and nobody is asked.
//
// The batch tool ([Options].Batch, [BatchTool]) runs a call-only batch of
// the listed tools as one Call: its steps name tools as tools/list shows
// them (supply-create_actor) or by action id; a refused step is named by
// its pointer and tool name ("at", "step"); a batch holding a step that
// needs confirmation is held whole as one pending change, before any step
// runs, and goes through the person as one call does.
//
// [ServeStdio] (or [Serve], on any stream transport) and [HTTPHandler]
// run a server on the SDK's own stdio and streamable HTTP transports,
// wrapped so that serving is safe by default: a foreign Origin refused,
// sessions bounded in number and idle time, calls bounded per session, and
// every call ended, cancelled if need be, when its client or session or
// the server goes ([Handler.Shutdown]). A call whose context was done is
// recorded as cancelled and answered, when anyone still listens, with
// JSON-RPC [CodeRequestCancelled]. docs/mcp.md in the repository has the
// full mapping table, how a call ends on each transport, what HTTP
// refuses by default, and the commands to try a server with the MCP
// Inspector.
package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
)

// Options configures [AddTools] and [ScopeChallenge]. The zero value, or
// nil, is every default.
type Options struct {
	// OnError receives, for the host's logs only, what the client is not
	// told: a body's plain error, the cause of an internal refusal (a
	// recovered panic with its stack, in [actions.Refusal.Cause]), a
	// protocol refusal other than unknown_action, and a panic while
	// serving. tool is the tool name called. Nil drops them. It may be
	// called concurrently.
	OnError func(ctx context.Context, tool string, err error)
	// Languages are the dataset's ordered languages, the source language
	// first, passed to the export ([actions.ToolOptions]): each
	// localized text parameter's description then names them.
	Languages []string
	// Caller builds who calls from what the transport authenticated: the
	// verified bearer token (nil without one, and over stdio) and the
	// HTTP header (nil over stdio); never from the call's arguments. The
	// surface is mcp when it names none; Token and Scopes always come
	// from the token. It also decides what tools/list shows (see
	// [AddTools]) and what [ScopeChallenge] answers. Nil (or a nil
	// result): every client is an anonymous caller, safe by default: no
	// principal and no capability, on the surface mcp, so it sees and
	// calls only the actions offered on mcp that need no capability, and
	// an action that needs confirmation is refused (nobody could confirm
	// it). It may be called concurrently.
	Caller func(ctx context.Context, token *auth.TokenInfo, header http.Header) *identity.Caller
	// RequestStateKey signs the request state of a confirmation asked
	// through a 2026-07-28 input request (HMAC-SHA256). Servers behind
	// one address share it; nil: a random key per AddTools.
	RequestStateKey []byte
	// ConfirmWait bounds how long a person is asked to confirm a held
	// call through elicitation/create (0: 10 minutes): a client
	// that never answers gets, once it is over, the answer to a person
	// who declined (nothing ran), and the pending change is rejected. It
	// does not bound a 2026-07-28 input request, which holds nothing on
	// the server while the person thinks (the change expires instead).
	ConfirmWait time.Duration
	// ConfirmURL, when set, gives the absolute URL of the host's own
	// screen where the person confirms the pending change id; a held
	// call's receipt carries it (structured data and text).
	ConfirmURL func(id string) string
	// Batch, when set, adds one more tool that runs a call-only batch of
	// the listed tools' actions as one unit (see [BatchTool]). Nil: no
	// batch tool.
	Batch *BatchTool
	// ToolSearch, when set, lists only the pinned tools and finds the
	// others on demand (see [ToolSearch]). Nil: tools/list shows every
	// tool the caller may see.
	ToolSearch *ToolSearch
	// Tasks configures the MCP Tasks extension (see [Tasks]): a call of
	// a long action ([actions.Definition].Long) from a client declaring
	// the extension on its request becomes a task. Nil: the defaults.
	Tasks *Tasks
}

// AddTools adds each visible action of r to s as a tool, named and
// described by r.Tools (hidden actions are neither listed nor callable).
// Each call of a tool is one [actions.Call] of r.Run, with the request's
// arguments as JSON text, so the registry's I-JSON decoding (RFC 7493: no
// duplicate member names, valid UTF-8) and its full schema apply; absent
// or null arguments stand for {}. r is the one way anything runs: an
// [*actions.Registry] whose Options.Store is a sqlstore.Store runs each
// call, batch and confirmation in one transaction. See the package
// documentation for what the client gets back.
//
// The tool list is what r holds when AddTools runs: an action registered
// later is not added. A tool already on s under the same name is replaced
// (Server.AddTool). AddTools also installs receiving middleware on s that
// answers a call of an unknown (or hidden) tool with -32602 and a message
// that does not quote the name sent.
//
// Errors, before any tool is added: a nil s or r, a tool name that r
// cannot export (longer than 128 characters, MCP's limit; the
// *actions.Refusal is wrapped), a tool whose name does not map back to an
// action id, or a batch tool name ([BatchTool].Name) that MCP refuses or
// that an action's tool holds.
func AddTools(s *mcp.Server, r *actions.Registry, opts *Options) error {
	if s == nil || r == nil {
		return errors.New("mcpserver: AddTools needs a server and a registry")
	}
	srv, err := newServer(r, opts)
	if err != nil {
		return err
	}
	tools, err := r.Tools(&actions.ToolOptions{Languages: srv.opts.Languages})
	if err != nil {
		return fmt.Errorf("mcpserver: %w", err)
	}
	type pending struct {
		tool    *mcp.Tool
		handler *toolHandler
	}
	all := make([]pending, 0, len(tools))
	later := map[string]json.RawMessage{} // output schemas for 2026-07-28 only
	for _, t := range tools {
		id, err := actions.ActionID(t.Name)
		if err != nil {
			return fmt.Errorf("mcpserver: tool %s: %w", t.Name, err)
		}
		mt, err := sdkTool(t)
		if err != nil {
			return err
		}
		out, err := outputOf(t)
		if err != nil {
			return err
		}
		if out.objectRoot {
			mt.OutputSchema = out.listed
		} else if out.schema != nil {
			later[t.Name] = out.listed
		}
		all = append(all, pending{mt, &toolHandler{srv: srv, id: id, name: t.Name, output: out}})
	}
	if srv.opts.Batch != nil {
		if err := checkBatchName(srv.opts.Batch.name(), tools); err != nil {
			return err
		}
	}
	var held []*mcp.Tool // the tools whose calls may be held for confirmation
	for _, p := range all {
		if srv.needsConfirmation(p.handler.id) {
			held = append(held, p.tool)
		}
	}
	srv.addConfirmView(s, held)
	handlers := make([]*toolHandler, 0, len(all))
	for _, p := range all {
		s.AddTool(p.tool, p.handler.call)
		handlers = append(handlers, p.handler)
	}
	var batch *batchHandler
	if srv.opts.Batch != nil {
		if batch, err = addBatchTool(s, srv, tools); err != nil {
			return err
		}
	}
	if ts := srv.opts.ToolSearch; ts != nil {
		found, ids := make([]*mcp.Tool, len(all)), make([]string, len(all))
		for i, p := range all {
			found[i], ids[i] = p.tool, p.handler.id
		}
		srv.search = newSearcher(srv, ts, found, ids, tools)
		srv.search.add(s)
	}
	ids := map[string]string{} // every tool name served, alias or not, to its action
	for _, h := range handlers {
		ids[h.name] = h.id
	}
	aliases := srv.aliasHandlers(handlers)
	for name, h := range aliases {
		ids[name] = h.id
	}
	s.AddReceivingMiddleware(hideUnknownToolName, gateMiddleware(srv, aliases, batch, ids))
	if len(later) > 0 {
		s.AddReceivingMiddleware(listOutputSchemas(later))
	}
	s.AddReceivingMiddleware(scrubErrors)
	// Outside scrubErrors: the task methods' errors quote nothing sent,
	// and -32021 keeps its data.
	return srv.addTasks(s, handlers)
}

// server is what every tool of one AddTools shares: the registry, the
// options, the request-state key and the actions' definitions.
type server struct {
	r         *actions.Registry
	recording chan struct{} // the background calls recording concealed refusals
	opts      Options
	state     *requestState
	defs      map[string]actions.Definition // by id and by alias
	search    *searcher                     // with Options.ToolSearch
}

func newServer(r *actions.Registry, opts *Options) (*server, error) {
	srv := &server{r: r, defs: map[string]actions.Definition{}, recording: make(chan struct{}, maxConcealedRecords)}
	if opts != nil {
		srv.opts = *opts
	}
	var err error
	if srv.state, err = newRequestState(srv.opts.RequestStateKey); err != nil {
		return nil, err
	}
	for _, d := range r.Definitions() {
		srv.defs[d.ID] = d
		for _, a := range d.DeprecatedAliases {
			srv.defs[a] = d
		}
	}
	return srv, nil
}

// defaultConfirmWait is how long a person is asked to confirm a held call
// when [Options].ConfirmWait is zero.
const defaultConfirmWait = 10 * time.Minute

// unknownToolMessage is what a client learns of a tool name the server
// does not know.
const unknownToolMessage = "unknown tool: list the tools and call one of them"

// hideUnknownToolName rewrites the SDK's answer to an unknown tool, which
// quotes the name the client sent, into one that quotes nothing: a name is
// submitted text, and a refusal never echoes submitted text. The code
// stays JSON-RPC -32602.
func hideUnknownToolName(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		var je *jsonrpc.Error
		if method == "tools/call" && errors.As(err, &je) && je.Code == jsonrpc.CodeInvalidParams && strings.HasPrefix(je.Message, "unknown tool") {
			// One answer, data included, whether the SDK knows no such
			// tool or the gate hides it from this caller.
			return res, unknownTool()
		}
		return res, err
	}
}

// sdkTool converts an exported tool to the SDK's type. The input schema
// goes as its canonical JSON text, so the SDK sends exactly what the
// export gave (numbers included). Both hints are set: the SDK leaves out a
// nil destructiveHint, which MCP reads as true.
func sdkTool(t actions.Tool) (*mcp.Tool, error) {
	// The SDK panics on a root other than "type": "object"; the registry
	// never exports one, but a panic at startup is a poor way to learn it.
	if t.InputSchema["type"] != "object" {
		return nil, fmt.Errorf("mcpserver: tool %s: the input schema's root is not \"type\": \"object\"", t.Name)
	}
	schema, err := actions.CanonicalJSON(t.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("mcpserver: tool %s: input schema: %w", t.Name, err)
	}
	destructive, openWorld := t.Annotations.DestructiveHint, t.Annotations.OpenWorldHint
	return &mcp.Tool{
		Meta:        t.Meta,
		Name:        t.Name,
		Title:       t.Title,
		Description: t.Description,
		InputSchema: json.RawMessage(schema),
		Annotations: &mcp.ToolAnnotations{
			ReadOnlyHint:    t.Annotations.ReadOnlyHint,
			DestructiveHint: &destructive,
			IdempotentHint:  t.Annotations.IdempotentHint,
			OpenWorldHint:   &openWorld,
		},
	}, nil
}

// toolHandler runs the calls of one tool.
type toolHandler struct {
	srv    *server
	id     string // the action id (or alias) called
	name   string // the tool name
	output output // the tool's output schema, if any
}

// call is the SDK's raw ToolHandler: it never returns a plain error (the
// SDK would send it as JSON-RPC code 0), only a *jsonrpc.Error or a result.
func (h *toolHandler) call(ctx context.Context, req *mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
	defer func() {
		// The registry recovers the body's panics; this catches the
		// serving layer's own, so that the server keeps serving.
		if p := recover(); p != nil {
			res, err = nil, panicked(ctx, h.report, h.name, p)
		}
	}()
	// The serving layer (calls.go) bounds and cancels calls per session.
	ctx, end, busy := track(ctx, req)
	if busy != nil {
		return nil, busy
	}
	defer func() { end(err) }()
	caller := h.srv.callerOfRequest(ctx, req)
	if req.Params != nil && req.Params.RequestState != "" {
		return h.srv.resume(ctx, req, caller, h.id, h.name, h.render) // the answer to a confirmation
	}
	call := actions.Call{Action: h.id, Params: arguments(req), Caller: caller, Progress: progressOf(ctx, req), IdempotencyKey: idempotencyKey(req)}
	if isTask, res, err := h.startTask(ctx, req, call); isTask {
		return res, err // a task handle (tasks.go), or the refusal to start one
	}
	result, runErr := h.srv.r.Run(ctx, call)
	if rf := (*actions.Refusal)(nil); errors.As(runErr, &rf) && rf.Code == codes.ConfirmationRequired && rf.Pending != nil {
		return h.srv.held(ctx, req, caller, rf, h.name, h.render)
	}
	if runErr != nil {
		return h.refused(ctx, runErr)
	}
	return h.done(result, protocolVersion(req)), nil
}

// render answers a decided change of this tool: its result, or its
// refusal.
func (h *toolHandler) render(ctx context.Context, res actions.Result, err error, version string) (*mcp.CallToolResult, error) {
	if err != nil {
		return h.refused(ctx, err)
	}
	return h.done(res, version), nil
}

// done renders a done call of this tool for a request at protocol
// version: with its output schema's rules when it has one. A bounded
// result (bound.Bounded) goes as its envelope, with a second text item
// saying what was left out and how to get it.
func (h *toolHandler) done(res actions.Result, version string) *mcp.CallToolResult {
	text, note := clientText(res)
	var out *mcp.CallToolResult
	if h.output.schema != nil {
		out = h.output.result(text, version)
	} else {
		out = resultOf(text)
	}
	if note != "" {
		out.Content = append(out.Content, &mcp.TextContent{Text: note})
	}
	return out
}

// arguments returns the call's arguments for the registry's Run: the raw JSON
// text as it came, or nil (= {}) when absent or null.
func arguments(req *mcp.CallToolRequest) any {
	if req == nil || req.Params == nil {
		return nil
	}
	args := req.Params.Arguments
	if t := strings.TrimSpace(string(args)); t == "" || t == "null" {
		return nil
	}
	return json.RawMessage(args)
}

// resultOf renders a done call: its canonical result text as the one
// content item, and as structuredContent when it is an object.
func resultOf(text string) *mcp.CallToolResult {
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
	if text[0] == '{' {
		res.StructuredContent = json.RawMessage(text)
	}
	return res
}

// panicked reports a panic recovered while serving the tool name, with
// its stack, to report, and returns the -32603 answer the client gets.
func panicked(ctx context.Context, report func(context.Context, error), name string, p any) error {
	report(ctx, fmt.Errorf("mcpserver: panic while serving tool %s: %v\n%s", name, p, debug.Stack()))
	return protocolError(jsonrpc.CodeInternalError, internalMessage, actions.NewRefusal(codes.Internal, ""))
}

// internalMessage is all a client learns of an internal failure.
const internalMessage = "internal error: the server could not run the tool"

// refused maps an error of the registry's Run or Decide to what the client
// gets.
func (h *toolHandler) refused(ctx context.Context, err error) (*mcp.CallToolResult, error) {
	var r *actions.Refusal
	if cancelled(err) && !errors.As(err, &r) {
		// The caller gave up, went away, or the server ended the call:
		// not a fault. The client gets an answer only if it still reads
		// one (see how a call ends, in cancel.go).
		h.report(ctx, cancelCause(ctx, err))
		return nil, protocolError(CodeRequestCancelled, cancelledMessage, actions.NewRefusal(codes.Cancelled, ""))
	}
	if !errors.As(err, &r) || r == nil {
		// A body's plain error, a resolver's failure, a cancelled
		// context: the text stays on the server.
		h.report(ctx, err)
		return h.toolError(plainRefusal(err)), nil
	}
	transport := r.Policy().Transport
	switch {
	case r.Code == codes.UnknownAction:
		return nil, protocolError(jsonrpc.CodeInvalidParams, fmt.Sprintf("unknown tool %q", h.name), r)
	case r.Code == codes.Cancelled:
		h.report(ctx, cancelCause(ctx, err))
		return nil, protocolError(CodeRequestCancelled, cancelledMessage, r)
	case transport == codes.TransportProtocol:
		h.report(ctx, err)
		return nil, protocolError(jsonrpc.CodeInternalError, internalMessage, r)
	}
	return h.toolError(r), nil
}

// toolError renders a refusal as a tool result, its structured content
// included whatever the tool's output schema: the output schema listed
// admits the refusal's object beside the result (see output.go).
func (h *toolHandler) toolError(r *actions.Refusal) *mcp.CallToolResult {
	return h.srv.toolError(r)
}

// plainRefusal stands for an error that is not a refusal: its code (that
// of a Code() string method, or internal) and a generic message.
func plainRefusal(err error) *actions.Refusal {
	r := actions.NewRefusal(actions.CodeOf(err), "the action failed; the server logged the cause")
	r.Transport = codes.TransportToolResult
	if r.NextAction == "" {
		r.NextAction = "Do not retry the same call; tell the user the action failed."
	}
	return r
}

// toolError renders a refusal as a tool result with isError set (MCP
// SEP-1303): a text a model reads, and the refusal's fields as
// structuredContent for a program (the pending change's id and expiry
// among them, and the URL of its screen when the host gives one).
func (s *server) toolError(r *actions.Refusal) *mcp.CallToolResult {
	d := refusalData(r)
	if r.Pending != nil && r.Pending.ID != "" && s.opts.ConfirmURL != nil {
		d.ConfirmURL = s.opts.ConfirmURL(r.Pending.ID)
	}
	res := &mcp.CallToolResult{
		IsError: true,
		Content: []mcp.Content{&mcp.TextContent{Text: refusalText(r, d.ConfirmURL)}},
	}
	if data, err := json.Marshal(d); err == nil {
		res.StructuredContent = json.RawMessage(data)
	}
	return res
}

// refusalText writes the refusal for a model: code and message, one line
// per issue (path, keyword, message: never a submitted value), the retry
// verdict and the next action.
func refusalText(r *actions.Refusal, confirmURL string) string {
	var b strings.Builder
	b.WriteString("refused: ")
	b.WriteString(string(r.Code))
	if r.Message != "" {
		b.WriteString(": ")
		b.WriteString(r.Message)
	}
	for _, is := range r.Issues {
		b.WriteString("\n- ")
		if is.Path == "" {
			b.WriteString("(parameters)")
		} else {
			b.WriteString(is.Path)
		}
		if is.Keyword != "" {
			b.WriteString(" [")
			b.WriteString(is.Keyword)
			b.WriteString("]")
		}
		if is.Message != "" {
			b.WriteString(" ")
			b.WriteString(is.Message)
		}
	}
	if r.Reason != "" {
		b.WriteString("\nreason given: ")
		b.WriteString(r.Reason)
	}
	if retry := r.Policy().Retry; retry != "" {
		b.WriteString("\nretry: ")
		b.WriteString(string(retry))
	}
	gateText(&b, r, confirmURL)
	if r.NextAction != "" {
		b.WriteString("\nnext action: ")
		b.WriteString(r.NextAction)
	}
	return b.String()
}

// refusalJSON is the structured form of a refusal sent to clients. It
// leaves out the transport, which the response itself shows.
type refusalJSON struct {
	Code       codes.Code      `json:"code"`
	Message    string          `json:"message,omitempty"`
	Issues     []actions.Issue `json:"issues,omitempty"`
	Retry      codes.Retry     `json:"retry,omitempty"`
	NextAction string          `json:"nextAction,omitempty"`
	// The gate's particulars (docs/gate.md).
	Scopes  []string         `json:"scopes,omitempty"`
	RetryAt time.Time        `json:"retryAt,omitzero"`
	Pending *actions.Receipt `json:"pending,omitempty"`
	// Reason is a rejecting person's reason (rejected).
	Reason string `json:"reason,omitempty"`
	// ConfirmURL is where the person confirms a held call ([Options].ConfirmURL).
	ConfirmURL string `json:"confirmUrl,omitempty"`
}

func refusalData(r *actions.Refusal) refusalJSON {
	return refusalJSON{Code: r.Code, Message: r.Message, Issues: r.Issues, Retry: r.Policy().Retry, NextAction: r.NextAction,
		Scopes: r.Scopes, RetryAt: r.RetryAt, Pending: r.Pending, Reason: r.Reason}
}

// protocolError is a JSON-RPC error whose data holds the refusal's code,
// retry verdict and next action (never its cause).
func protocolError(code int64, message string, r *actions.Refusal) *jsonrpc.Error {
	e := &jsonrpc.Error{Code: code, Message: message}
	d := refusalData(r)
	d.Message, d.Issues = "", nil
	if data, err := json.Marshal(d); err == nil {
		e.Data = data
	}
	return e
}

func (h *toolHandler) report(ctx context.Context, err error) { h.srv.report(ctx, h.name, err) }

func (s *server) report(ctx context.Context, tool string, err error) {
	if s.opts.OnError != nil {
		s.opts.OnError(ctx, tool, err)
	}
}
