package mcpserver

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
)

// protocolMultiRoundTrip is the first MCP version whose servers send no
// requests of their own: elicitation travels as input requests in a
// tools/call result (SEP-2322), and ServerSession.Elicit is refused.
const protocolMultiRoundTrip = "2026-07-28"

// confirmInput is the id of the one input request a held call asks.
const confirmInput = "confirm"

// callerOf builds the caller of a request with opts.Caller; without
// opts.Caller, or when it builds none, the caller is anonymous: no
// principal, no capability, surface mcp. The surface defaults to mcp;
// Token and Scopes always come from the verified token (the transport's
// own knowledge), whatever the builder said.
func (o *Options) callerOf(ctx context.Context, token *auth.TokenInfo, header http.Header) *identity.Caller {
	var c *identity.Caller
	if o.Caller != nil {
		c = o.Caller(ctx, token, header)
	}
	if c == nil {
		c = &identity.Caller{}
	}
	cp := *c
	cp.Capabilities = slices.Clone(c.Capabilities)
	if cp.Surface == "" {
		cp.Surface = identity.SurfaceMCP
	}
	cp.Token, cp.Scopes = token != nil, nil
	if token != nil {
		cp.Scopes = slices.Clone(token.Scopes)
	}
	cp.PendingChange = ""
	return &cp
}

// extraOf returns the token and header of a request, nil for none.
func extraOf(req mcp.Request) (*auth.TokenInfo, http.Header) {
	if req == nil {
		return nil, nil
	}
	if ex := req.GetExtra(); ex != nil {
		return ex.TokenInfo, ex.Header
	}
	return nil, nil
}

// callerNow builds the caller of a request again, as the transport sees
// it now (never the one built when the call came in).
func (s *server) callerNow(ctx context.Context, req *mcp.CallToolRequest) *identity.Caller {
	token, header := extraOf(req)
	c := s.opts.callerOf(ctx, token, header)
	if c.Client == nil {
		// The connected app, as it named itself at initialize: what the
		// host's builder cannot see over stdio.
		if name := clientName(req); name != "" {
			c.Client = &identity.Client{ID: name}
		}
	}
	return c
}

// clientName is the name the client gave at initialize, "" when unknown.
func clientName(req *mcp.CallToolRequest) (name string) {
	defer func() {
		if recover() != nil {
			name = ""
		}
	}()
	if req == nil || req.Session == nil {
		return ""
	}
	if p := req.Session.InitializeParams(); p != nil && p.ClientInfo != nil {
		return p.ClientInfo.Name
	}
	return ""
}

// callerKey is the context key of the caller the gate middleware built
// for a tools/call, so that the handler builds it no second time.
type callerKey struct{}

// callerOfRequest is the caller of a tool call: the one the middleware
// built, or one built now.
func (s *server) callerOfRequest(ctx context.Context, req *mcp.CallToolRequest) *identity.Caller {
	if c, ok := ctx.Value(callerKey{}).(*identity.Caller); ok {
		return c
	}
	return s.callerNow(ctx, req)
}

// gateMiddleware filters tools/list per caller and routes calls of a
// deprecated alias's tool name to its action.
func gateMiddleware(srv *server, aliases map[string]*toolHandler, batch *batchHandler, ids map[string]string) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case "tools/call":
				if cr, ok := req.(*mcp.CallToolRequest); ok && cr.Params != nil {
					if id, served := ids[cr.Params.Name]; served {
						caller := srv.callerOfRequest(ctx, cr)
						// The answer to a confirmation (a request state)
						// is the resume's to gate: it records the refusal.
						if cr.Params.RequestState == "" && srv.conceals(ctx, cr, id, caller) {
							return nil, unknownTool()
						}
						ctx = context.WithValue(ctx, callerKey{}, caller)
					}
					if h := aliases[cr.Params.Name]; h != nil {
						return h.call(ctx, cr)
					}
				}
			case "tools/list":
				token, header := extraOf(req)
				caller := srv.opts.callerOf(ctx, token, header)
				return listPerCaller(ctx, req, next, func(lr *mcp.ListToolsResult) { srv.filterTools(lr, caller, batch) })
			}
			return next(ctx, method, req)
		}
	}
}

// conceals reports whether the caller of a call of the action id may not
// see it, and if so answers it here, before any hook of the host runs:
// the answer is the unknown tool's, and it leaves as fast as one, so
// that neither its text nor its time tells a forbidden tool from a
// missing one (docs/security.md). The refused call is still recorded,
// after the answer, by a bounded number of background calls (see
// maxConcealedRecords).
func (s *server) conceals(ctx context.Context, cr *mcp.CallToolRequest, id string, caller *identity.Caller) bool {
	if actions.CodeOf(s.r.Admit(ctx, id, caller)) != codes.UnknownAction {
		return false
	}
	call := actions.Call{Action: id, Params: arguments(cr), Caller: caller}
	select {
	case s.recording <- struct{}{}:
		go func() {
			defer func() { <-s.recording }()
			_, _ = s.r.Run(context.WithoutCancel(ctx), call)
		}()
	default:
		s.report(ctx, cr.Params.Name, errConcealedUnrecorded)
	}
	return true
}

// maxConcealedRecords bounds the background calls that record concealed
// refusals: past it, a flood of forbidden calls is answered alike but
// not recorded, and OnError says so.
const maxConcealedRecords = 64

// errConcealedUnrecorded is what OnError gets for a concealed call left
// unrecorded.
var errConcealedUnrecorded = errors.New("mcpserver: a call of a tool hidden from its caller was not recorded: too many at once")

// unknownTool is the answer to a call of a tool the caller may not see,
// the same as the answer to one the server does not have.
func unknownTool() error {
	return protocolError(jsonrpc.CodeInvalidParams, unknownToolMessage, actions.NewRefusal(codes.UnknownAction, ""))
}

// sees reports whether caller c may see the action id: the gate would
// not answer its call as unknown (surface and capability).
func (s *server) sees(id string, c *identity.Caller) bool {
	return actions.CodeOf(s.r.Admit(context.Background(), id, c)) != codes.UnknownAction
}

// filterTools keeps the tools the caller may see and marks the list
// private: it varies by authorization, so a cache must not share it
// between callers (MCP 2026-07-28 cacheScope; older clients ignore the
// member, and the list is filtered on every request whatever the
// version).
func (s *server) filterTools(lr *mcp.ListToolsResult, c *identity.Caller, batch *batchHandler) {
	lr.Tools = slices.DeleteFunc(lr.Tools, func(t *mcp.Tool) bool {
		if batch != nil && t.Name == batch.name {
			return false // each step is gated as a call of its own
		}
		if s.search != nil {
			if t.Name == searchToolName || t.Name == describeToolName {
				return false // each answers for the caller
			}
			if !s.search.lists(t.Name) {
				return true // found on demand
			}
		}
		id, err := actions.ActionID(t.Name)
		if err != nil {
			return true
		}
		return !s.sees(id, c)
	})
	if lr.Tools == nil {
		lr.Tools = []*mcp.Tool{}
	}
	if batch != nil {
		// Its schema lists the actions a step may call: only this
		// caller's.
		for i, t := range lr.Tools {
			if t.Name == batch.name {
				lr.Tools[i] = batch.toolFor(t, c)
			}
		}
	}
	lr.CacheScope = "private"
}

// aliasHandlers maps the tool name of each deprecated alias of the tools'
// actions to a handler calling the action by that alias (recorded under
// the id, the alias in the audit). Aliases are never listed.
func (s *server) aliasHandlers(handlers []*toolHandler) map[string]*toolHandler {
	out := map[string]*toolHandler{}
	for _, h := range handlers {
		d, ok := s.defs[h.id]
		if !ok {
			continue
		}
		for _, alias := range d.DeprecatedAliases {
			name := actions.ToolName(alias)
			hc := *h
			hc.id, hc.name = alias, name
			out[name] = &hc
		}
	}
	return out
}

// renderer answers a decided change: its result, or its refusal, at the
// request's protocol version.
type renderer func(ctx context.Context, res actions.Result, err error, version string) (*mcp.CallToolResult, error)

// held answers a call the registry held as a pending change (refusal r,
// confirmation_required with its receipt) on the tool name. When the
// change's approval lets this caller decide it from this surface
// ([actions.Registry.MayDecide]: by default it does not, since a client
// may answer an elicitation by itself; the host opts in with
// actions.GateOptions.DecideFrom or the action's Approval.Surfaces) and
// the client can ask its person, the server asks: on 2025-11-25 sessions
// through elicitation/create (ServerSession.Elicit), on 2026-07-28
// through an input request in the result (multi round-trip), whose
// request state binds the answer to this change, this principal and
// these arguments. Accept confirms the change (every check again, as the
// caller is now); decline, cancel or no answer rejects it and nothing
// runs. Otherwise the client gets r as a tool result: the receipt, to be
// confirmed later on the host's own screen.
func (s *server) held(ctx context.Context, req *mcp.CallToolRequest, caller *identity.Caller, r *actions.Refusal, name string, render renderer) (*mcp.CallToolResult, error) {
	rc := r.Pending
	caps := req.ClientCapabilities()
	if caps == nil || caps.Elicitation == nil || (caps.Elicitation.Form == nil && caps.Elicitation.URL != nil) {
		// No one to ask, or only by URL (a form asks yes or no): the
		// receipt, confirmed later on the host's own screen.
		return s.toolError(r), nil
	}
	if s.r.MayDecide(ctx, rc.ID, caller) != nil {
		// Not a decision this client may bring (the default, four eyes,
		// a capability the caller lacks): the receipt, for the person
		// the policy names, on the surface it names.
		return s.toolError(r), nil
	}
	ask := &mcp.ElicitParams{Mode: "form", Message: s.question(ctx, rc, name, req, caller),
		RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}}}
	if req.ProtocolVersion() >= protocolMultiRoundTrip {
		return &mcp.CallToolResult{
			InputRequests: mcp.InputRequestMap{confirmInput: ask},
			RequestState:  s.state.sign(rc.ID, caller.Principal, name, arguments(req)),
		}, nil
	}
	if req.Session == nil {
		return s.toolError(r), nil
	}
	// A client that never answers holds neither the call nor the change
	// for long.
	wait := s.opts.ConfirmWait
	if wait <= 0 {
		wait = defaultConfirmWait
	}
	askCtx, cancel := context.WithTimeout(ctx, wait)
	answer, err := req.Session.Elicit(askCtx, ask)
	cancel()
	if err != nil {
		s.report(ctx, name, err)
	}
	accept := err == nil && answer != nil && answer.Action == "accept"
	// The person answered now: who decides is the caller as the
	// transport sees it now (a capability revoked while the person
	// thought is revoked for the confirmation too).
	return s.decide(ctx, s.callerNow(ctx, req), rc.ID, accept, req.ProtocolVersion(), name, render)
}

// resume answers the retry of a call whose result asked for input
// (2026-07-28): the request state must be the one this server signed for
// this principal, tool and arguments; the answer decides the change.
func (s *server) resume(ctx context.Context, req *mcp.CallToolRequest, caller *identity.Caller, id, name string, render renderer) (*mcp.CallToolResult, error) {
	change, ok := s.state.verify(req.Params.RequestState, caller.Principal, name, arguments(req))
	if !ok {
		// The gate first, as for any call: a caller who may not see the
		// tool gets the answer of an unknown tool, never one about
		// request states.
		if id != "" {
			if err := s.r.Admit(ctx, id, caller); err != nil {
				return render(ctx, actions.Result{}, err, req.ProtocolVersion())
			}
		}
		return s.toolError(staleRequest()), nil
	}
	// A state this server signed for this principal, tool and arguments:
	// the registry decides, as the caller is now, and records the decision,
	// a confirmation the gate refuses (a capability lost meanwhile)
	// included, as on 2025-11-25.
	answer, _ := req.Params.InputResponses[confirmInput].(*mcp.ElicitResult)
	return s.decide(ctx, caller, change, answer != nil && answer.Action == "accept", req.ProtocolVersion(), name, render)
}

// decide confirms the pending change id as caller, or rejects it, and
// renders the outcome.
func (s *server) decide(ctx context.Context, caller *identity.Caller, id string, accept bool, version, name string, render renderer) (*mcp.CallToolResult, error) {
	if !accept {
		// The answer ends the change even when the call was cancelled.
		if _, err := s.r.Decide(context.WithoutCancel(ctx), actions.Decision{Change: id, Confirm: false, Caller: caller}); err != nil && !errors.Is(err, codes.UnknownChange) {
			s.report(ctx, name, err)
		}
		return s.toolError(declined()), nil
	}
	res, err := s.r.Decide(ctx, actions.Decision{Change: id, Confirm: true, Caller: caller})
	return render(ctx, res, err, version)
}

// question is what the person is asked: the action (for a batch, the
// batch tool, then each step that needs confirmation, by its index, title
// and tool name), the arguments exactly as the body will receive them
// (defaults filled, refs resolved: the held change's checked parameters;
// for a batch, the arguments the client sent), the host's description of
// the change and the approval rule's reason, whole, with the characters
// that change how text displays (bidi controls, zero-width and other
// format characters) written as \u escapes, so that what is shown is
// what runs.
func (s *server) question(ctx context.Context, rc *actions.Receipt, name string, req *mcp.CallToolRequest, caller *identity.Caller) string {
	title := name
	if d, ok := s.defs[rc.Action]; ok && d.Title != "" {
		title = d.Title + " (" + name + ")"
	}
	if len(rc.Steps) > 0 {
		title = "the batch (" + name + ")"
	}
	args := "{}"
	if raw, ok := arguments(req).(json.RawMessage); ok {
		if c, err := actions.CanonicalJSON(raw); err == nil {
			args = visible(string(c))
		}
	}
	pc, err := s.r.PendingChange(ctx, rc.ID, caller)
	if err == nil && pc.Parameters != "" {
		args = visible(pc.Parameters)
	}
	var b strings.Builder
	b.WriteString("Run " + title + " with " + args + "?")
	if err == nil && pc.Description != "" {
		b.WriteString(" " + visible(pc.Description))
	}
	if err == nil && pc.Reason != "" {
		b.WriteString(" (Held because: " + visible(pc.Reason) + ")")
	}
	if len(rc.Steps) > 0 {
		b.WriteString(" The batch holds steps that need your confirmation:")
		for i, st := range rc.Steps {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(" #" + strconv.Itoa(st.Index) + " ")
			tool := actions.ToolName(st.Action)
			if d, ok := s.defs[st.Action]; ok && d.Title != "" {
				b.WriteString(d.Title + " (" + tool + ")")
			} else {
				b.WriteString(tool)
			}
		}
		b.WriteString(".")
	}
	b.WriteString(" Nothing runs unless you accept.")
	return b.String()
}

// visible writes each character of s that changes how text is displayed
// without being seen (Unicode general category Cf: bidi controls such as
// U+202E, zero-width characters, the BOM; and the line and paragraph
// separators) as a JSON \u escape, which reads the same to JSON.
func visible(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' {
			fmt.Fprintf(&b, "\\u%04x", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func declined() *actions.Refusal {
	r := actions.NewRefusal(codes.Rejected, "the person did not confirm the call; nothing ran")
	r.NextAction = "Do not call again unless the user asks for it."
	return r
}

func staleRequest() *actions.Refusal {
	r := actions.NewRefusal(codes.UnknownChange, "the request state does not match a change of this caller and call")
	return r
}

// requestState signs the state of a held call's input request: the
// pending change's id, bound to the principal, the tool and a digest of
// the arguments by an HMAC-SHA256 under the server's key. It is good as
// long as the change is: a change decided ([actions.Registry.Decide]
// confirms or rejects it once) or expired answers unknown_change; a
// confirmation the gate refuses leaves the change, and the state, for
// another try until the change expires.
type requestState struct{ key []byte }

func newRequestState(key []byte) (*requestState, error) {
	if len(key) == 0 {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("mcpserver: no randomness for the request-state key: %w", err)
		}
	}
	return &requestState{key: slices.Clone(key)}, nil
}

func (s *requestState) mac(id, principal, tool string, args any) []byte {
	digest := sha256.New()
	if raw, ok := args.(json.RawMessage); ok {
		if c, err := actions.CanonicalJSON(raw); err == nil {
			digest.Write(c)
		}
	}
	m := hmac.New(sha256.New, s.key)
	for _, part := range []string{"actions-confirm-v1", id, principal, tool, string(digest.Sum(nil))} {
		m.Write([]byte(part))
		m.Write([]byte{0})
	}
	return m.Sum(nil)
}

func (s *requestState) sign(id, principal, tool string, args any) string {
	return id + "." + hex.EncodeToString(s.mac(id, principal, tool, args))
}

func (s *requestState) verify(state, principal, tool string, args any) (string, bool) {
	id, sig, ok := strings.Cut(state, ".")
	if !ok {
		return "", false
	}
	got, err := hex.DecodeString(sig)
	if err != nil {
		return "", false
	}
	return id, hmac.Equal(got, s.mac(id, principal, tool, args))
}

// ScopeChallenge returns HTTP middleware that answers a tools/call whose
// caller's token lacks the scope the tool's action needs with HTTP 403 and
// the RFC 6750 challenge (WWW-Authenticate: Bearer
// error="insufficient_scope", scope="...", resource_metadata="..."), as
// the MCP authorization spec's scope challenge says (2025-11-25, runtime
// insufficient scope errors; 2026-07-28, scope challenge handling). A
// tool handler cannot set the HTTP status, so this runs before the MCP
// handler: wrap the streamable HTTP handler with it, inside the SDK's
// auth.RequireBearerToken (which puts the verified token on the request's
// context).
//
// It reads the body of a POST (at most 4 MiB, the SDK's default bound; a
// larger body passes untouched, for the SDK to refuse) and puts it back,
// reads it as the SDK will (its first JSON value, whatever follows; a
// JSON-RPC batch included; each message by the SDK's own decoder, members
// matched by their exact names), and asks r.Admit as the caller
// opts.Caller builds, for each tools/call of the body and each step of a
// call of the batch tool ([Options].Batch). One challenge names every
// scope the calls lack. A call that an earlier check refuses (an unknown
// or forbidden tool) or that passes goes on to the MCP handler, which
// answers as for any call, so that the 403 tells nothing to a caller who
// may not see the tool. A body that starts as an array but cannot be
// read as one gets 400, as the SDK answers it. Every other request passes
// untouched.
//
// It panics when r is nil, as http.Handle does for a nil handler.
func ScopeChallenge(r *actions.Registry, opts *Options) func(http.Handler) http.Handler {
	if r == nil {
		panic("mcpserver: ScopeChallenge needs a registry")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	const maxBody = mcp.DefaultMaxRequestBodyBytes
	reg := r
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost || o.Caller == nil || r.Body == nil {
				next.ServeHTTP(w, r)
				return
			}
			body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
			r.Body = struct {
				io.Reader
				io.Closer
			}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
			if err != nil || int64(len(body)) > maxBody {
				next.ServeHTTP(w, r)
				return
			}
			calls, ok := bodyCalls(body, batchToolName(o))
			if !ok {
				http.Error(w, "Bad Request: the body is not a JSON-RPC message or batch", http.StatusBadRequest)
				return
			}
			caller := o.callerOf(r.Context(), auth.TokenInfoFromContext(r.Context()), r.Header)
			if challenge := scopeChallenge(r.Context(), reg, caller, calls); challenge != "" {
				w.Header().Set("WWW-Authenticate", challenge)
				http.Error(w, "insufficient_scope: the token lacks the scope this tool needs", http.StatusForbidden)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// gateText writes the gate's particulars of a refusal for a model: the
// scopes a call needs, when to retry, the receipt of a held call.
func gateText(b *strings.Builder, r *actions.Refusal, confirmURL string) {
	if len(r.Scopes) > 0 {
		b.WriteString("\nscopes needed: ")
		b.WriteString(strings.Join(r.Scopes, " "))
	}
	if !r.RetryAt.IsZero() {
		b.WriteString("\nretry at: ")
		b.WriteString(r.RetryAt.UTC().Format(time.RFC3339))
	}
	if p := r.Pending; p != nil {
		b.WriteString("\npending change: ")
		b.WriteString(p.ID)
		b.WriteString(" (")
		b.WriteString(p.Action)
		b.WriteString("), expires ")
		b.WriteString(p.Expires.UTC().Format(time.RFC3339))
		if len(p.Steps) > 0 {
			b.WriteString("; steps held:")
			for _, st := range p.Steps {
				b.WriteString(" #" + strconv.Itoa(st.Index) + " " + st.Action)
			}
		}
		b.WriteString("; the user confirms it on the host's own screen")
		if confirmURL != "" {
			b.WriteString(": ")
			b.WriteString(confirmURL)
		}
	}
}
