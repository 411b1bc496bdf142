package mcpserver

import (
	"context"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults of [HTTPOptions]: what a zero field stands for.
const (
	// defaultSessionTimeout: a session that receives no request for this
	// long is closed, and its calls are cancelled.
	defaultSessionTimeout = 10 * time.Minute
	// defaultMaxSessions: open sessions past which a new one is refused
	// with 503 Service Unavailable and Retry-After.
	defaultMaxSessions = 1000
	// defaultWriteTimeout: how long one write of a response (an SSE event,
	// a JSON answer) may take before the connection is given up; a stream
	// itself may last as long as it needs.
	defaultWriteTimeout = 30 * time.Second
)

// HTTPOptions configures [HTTPHandler]. The zero value, or nil, is the safe
// default; each field makes one protection stricter or looser, and turning
// one off takes a field whose name says so.
type HTTPOptions struct {
	// Stateless serves each POST as a session of its own, which ends with
	// the request: no Mcp-Session-Id, GET and DELETE answered 405, so
	// that replicas behind a load balancer can serve any request of any
	// client. Protocol 2026-07-28 is served only in this mode (the SDK's
	// rule). What it gives up: requests from the server to the client
	// (elicitation, sampling, roots) on older protocol versions, and
	// notifications outside a request; a call ends when its HTTP request
	// does.
	Stateless bool

	// TrustedOrigins are the origins ("https://app.example.com", scheme,
	// host and port as browsers send them) allowed to call besides the
	// server's own. A request with an Origin header that is neither is
	// refused with 403 before it reaches the SDK (MCP transports, "Security
	// Warning": servers MUST validate Origin). Requests without Origin,
	// as non-browser clients send them, are served. The origin "*"
	// turns the Origin check off: only for a server behind a proxy that
	// checks Origin itself.
	TrustedOrigins []string

	// SessionTimeout closes a session that received no request for this
	// long, cancelling its calls (0: 10 minutes). A request
	// in progress (a call still running with its client connected, an
	// open GET stream) keeps its session open. A negative timeout
	// turns it off.
	SessionTimeout time.Duration
	// MaxSessions bounds the open sessions (0: 1000); past
	// it a request that would open one gets 503 Service Unavailable with
	// Retry-After, and nothing is kept of it. A negative bound turns it
	// off.
	MaxSessions int
	// MaxCallsInFlight bounds the tool calls one session runs at once (0:
	// 32); a call past it gets JSON-RPC error
	// -32000 and does not run. A negative bound turns it off. A call
	// answered timeout while its body runs on past the deadline keeps
	// its place here (and in the server-wide bounds) until the body
	// returns.
	MaxCallsInFlight int
	// MaxServerCalls bounds the tool calls the handler runs at once, all
	// sessions together (0: 1024; negative: no bound),
	// and MaxServerCallBytes the bytes of arguments they hold together
	// (0: 64 MiB; negative: no bound; a call alone
	// is bounded by MaxRequestBodyBytes). A POST that calls a tool while
	// a bound is reached gets 503 Service Unavailable with Retry-After: 1
	// before the SDK reads it; a call that reaches one on the way in gets
	// JSON-RPC error -32000 with data.retryAfter 1. Neither runs, and
	// nothing is queued.
	MaxServerCalls     int
	MaxServerCallBytes int64

	// WriteTimeout bounds each write of a response (0:
	// 30 s): a client that stops reading loses its
	// connection instead of holding a goroutine and a buffer. Use it
	// instead of http.Server.WriteTimeout, which bounds a whole response
	// and so cuts every stream. A negative timeout turns it off.
	WriteTimeout time.Duration
	// MaxRequestBodyBytes bounds a request's body (0: the SDK's
	// mcp.DefaultMaxRequestBodyBytes, 4 MiB): past it, 413.
	MaxRequestBodyBytes int64

	// JSONResponse, EventStore, Logger and DisableLocalhostProtection are
	// passed to the SDK's handler (mcp.StreamableHTTPOptions). Its DNS
	// rebinding protection stays on unless DisableLocalhostProtection is
	// set: a request to a loopback address with another Host gets 403.
	JSONResponse               bool
	EventStore                 mcp.EventStore
	Logger                     *slog.Logger
	DisableLocalhostProtection bool
}

// Handler serves an MCP server over streamable HTTP: the SDK's
// StreamableHTTPHandler inside the protections [HTTPOptions] describes.
// Its methods are safe for concurrent use.
type Handler struct {
	sdk          *mcp.StreamableHTTPHandler
	origins      *http.CrossOriginProtection // nil: any origin
	stateless    bool
	timeout      time.Duration // <= 0: never
	maxSessions  int           // <= 0: no bound
	writeTimeout time.Duration // <= 0: none
	calls        *tracker
	maxBody      int64 // the SDK's bound on a request body

	mu       sync.Mutex
	sessions map[string]*httpSession
	opening  int  // requests that may open a session, in progress
	closing  bool // Shutdown was called
	closes   sync.WaitGroup
	posts    gauge // POST requests in progress: a call's answer is written by the time its POST ends
}

// httpSession is what the handler keeps of an open stateful session.
type httpSession struct {
	id        string
	ctx       context.Context // the values of the request that opened it
	refs      int             // its requests in progress
	idleSince time.Time
	timer     *time.Timer
	ending    bool
}

// HTTPHandler returns a handler serving s over MCP's streamable HTTP
// transport, on the SDK's StreamableHTTPHandler (every session shares s).
// Mount it on the path clients use, conventionally /mcp. opts may be nil:
// the defaults refuse a foreign Origin (403), close idle sessions after
// 10 minutes, bound open sessions to 1000 (503 past it) and tool calls to
// 32 per session and 1024 (holding at most 64 MiB of arguments) in all.
//
// Calls of tools added by [AddTools] end with their session: a DELETE of
// the session, its idle timeout and [Handler.Shutdown] cancel them (cause
// [ErrSessionClosed], [ErrSessionExpired], [ErrShuttingDown]) before the
// session closes, so that closing never waits on a body that waits on its
// client. On a stateful server a dropped connection alone does not cancel
// a call (MCP 2025-11-25: the client may resume); on a stateless one the
// session is the request, so its end cancels the call ([ErrClientGone]).
//
// It panics when s is nil, as http.Handle does for a nil handler.
func HTTPHandler(s *mcp.Server, opts *HTTPOptions) *Handler {
	if s == nil {
		panic("mcpserver: HTTPHandler needs a server")
	}
	var o HTTPOptions
	if opts != nil {
		o = *opts
	}
	h := &Handler{
		stateless:    o.Stateless,
		timeout:      pick(o.SessionTimeout, defaultSessionTimeout),
		maxSessions:  pick(o.MaxSessions, defaultMaxSessions),
		writeTimeout: pick(o.WriteTimeout, defaultWriteTimeout),
		calls:        newTracker(pick(o.MaxCallsInFlight, defaultMaxCallsInFlight)),
		sessions:     map[string]*httpSession{},
		maxBody:      o.MaxRequestBodyBytes,
	}
	if h.maxBody <= 0 {
		h.maxBody = mcp.DefaultMaxRequestBodyBytes
	}
	h.calls.limit(pick(o.MaxServerCalls, defaultMaxServerCalls), pick(o.MaxServerCallBytes, defaultMaxServerCallBytes))
	if !slices.Contains(o.TrustedOrigins, "*") {
		h.origins = http.NewCrossOriginProtection()
		for _, origin := range o.TrustedOrigins {
			// AddTrustedOrigin refuses only a malformed origin; such an
			// origin matches no request, so leaving it out changes nothing.
			_ = h.origins.AddTrustedOrigin(origin)
		}
	}
	h.sdk = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{
		Stateless:                  o.Stateless,
		JSONResponse:               o.JSONResponse,
		EventStore:                 o.EventStore,
		Logger:                     o.Logger,
		DisableLocalhostProtection: o.DisableLocalhostProtection,
		MaxRequestBodyBytes:        o.MaxRequestBodyBytes,
		// The session timeout is the handler's own (it cancels the
		// session's calls first); the SDK's would wait on them.
		SessionTimeout:               0,
		PropagateRequestCancellation: true,
	})
	return h
}

// pick returns v, or def when v is zero, or 0 (off) when v is negative,
// as net/http reads its limits.
func pick[T int | int64 | time.Duration](v, def T) T {
	switch {
	case v < 0:
		return 0
	case v == 0:
		return def
	}
	return v
}

// sessionIDHeader is the streamable HTTP transport's session header.
const sessionIDHeader = "Mcp-Session-Id"

// ServeHTTP serves one request of MCP's streamable HTTP transport.
func (h *Handler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if h.origins != nil && !h.sameOriginOrTrusted(req) {
		// The Origin is not echoed: it is submitted text.
		http.Error(w, "Forbidden: cross-origin request", http.StatusForbidden)
		return
	}
	rw := &responseWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: h.writeTimeout}
	defer rw.extend() // time for the server to end the response
	if h.refuseWhenFull(rw, req) {
		return
	}
	if req.Method == http.MethodPost {
		h.posts.add(1)
		defer h.posts.add(-1)
	}
	ctx := context.WithValue(req.Context(), trackerKey{}, h.calls)
	if h.stateless {
		if h.refuseWhenClosing(w) {
			return
		}
		ctx = context.WithValue(ctx, requestKey{}, req.Context())
		h.sdk.ServeHTTP(rw, req.WithContext(ctx))
		return
	}
	id := req.Header.Get(sessionIDHeader)
	if id == "" {
		h.serveOpening(rw, req.WithContext(ctx))
		return
	}
	h.serveSession(rw, req, id)
}

// sameOriginOrTrusted applies Go's cross-origin protection to every
// method: it lets GET, HEAD and OPTIONS through (safe methods, for
// browsers), but MCP opens streams with GET, so they are checked as POST.
func (h *Handler) sameOriginOrTrusted(req *http.Request) bool {
	if req.Header.Get("Origin") == "" && req.Header.Get("Sec-Fetch-Site") == "" {
		return true
	}
	r := *req
	r.Method = http.MethodPost
	return h.origins.Check(&r) == nil
}

// refuseWhenClosing answers 503 while the handler shuts down.
func (h *Handler) refuseWhenClosing(w http.ResponseWriter) bool {
	h.mu.Lock()
	closing := h.closing
	h.mu.Unlock()
	if closing {
		unavailable(w, 5*time.Second, "Service Unavailable: the server is shutting down")
	}
	return closing
}

// serveOpening serves a request without a session id: on a POST the SDK
// opens a session (an initialize), unless the bound is reached.
func (h *Handler) serveOpening(rw *responseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		h.sdk.ServeHTTP(rw, req) // the SDK's own 400 or 405
		return
	}
	h.mu.Lock()
	if h.closing {
		h.mu.Unlock()
		unavailable(rw, 5*time.Second, "Service Unavailable: the server is shutting down")
		return
	}
	if h.maxSessions > 0 && len(h.sessions)+h.opening >= h.maxSessions {
		wait := h.retryAfterLocked()
		h.mu.Unlock()
		unavailable(rw, wait, "Service Unavailable: too many open sessions")
		return
	}
	h.opening++
	h.mu.Unlock()

	var opened atomic.Pointer[httpSession]
	rw.onHeader = func(header http.Header) {
		// The SDK names the new session in its answer's header: keep it
		// before the client can read it and come back.
		if id := header.Get(sessionIDHeader); id != "" {
			opened.Store(h.open(id, req))
		}
	}
	h.sdk.ServeHTTP(rw, req)
	if s := opened.Load(); s != nil {
		h.release(s) // open counted it among the sessions already
		return
	}
	h.mu.Lock()
	h.opening--
	h.mu.Unlock()
}

// serveSession serves a request of the session id.
func (h *Handler) serveSession(rw *responseWriter, req *http.Request, id string) {
	s := h.acquire(id)
	if s == nil {
		h.sdk.ServeHTTP(rw, req) // unknown or closing: the SDK's 404
		return
	}
	if req.Method == http.MethodDelete && sameUser(s.ctx, req.Context()) {
		// The SDK's DELETE closes the session, which waits for its calls:
		// cancel them first.
		h.calls.endSession(id, ErrSessionClosed)
		defer h.calls.forget(id)
	}
	h.sdk.ServeHTTP(rw, req)
	if status := rw.status.Load(); status == http.StatusNotFound || (req.Method == http.MethodDelete && status/100 == 2) {
		h.drop(s) // closed by the client, or by the SDK on its own
		return
	}
	h.release(s)
}

// sameUser reports whether a request may end the session opened with
// ctx, by the SDK's rule: the same token user id, when the session has one.
func sameUser(opened, now context.Context) bool {
	owner := auth.TokenInfoFromContext(opened)
	if owner == nil || owner.UserID == "" {
		return true
	}
	caller := auth.TokenInfoFromContext(now)
	return caller != nil && caller.UserID == owner.UserID
}

// open records the session id, opened by req, still in progress: it
// moves from the requests opening a session to the sessions.
func (h *Handler) open(id string, req *http.Request) *httpSession {
	ctx := context.WithValue(context.WithoutCancel(req.Context()), hostKey{}, req.Host)
	s := &httpSession{id: id, ctx: ctx, refs: 1}
	h.mu.Lock()
	h.sessions[id] = s
	h.opening--
	h.mu.Unlock()
	return s
}

// acquire counts a request of the session id in progress; nil when the
// handler does not know the session or it is closing.
func (h *Handler) acquire(id string) *httpSession {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.sessions[id]
	if s == nil || s.ending {
		return nil
	}
	s.refs++
	if s.timer != nil {
		s.timer.Stop()
	}
	return s
}

// release ends a request of s; the last one starts its idle timer.
func (h *Handler) release(s *httpSession) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s.refs--
	if s.refs > 0 || s.ending || h.timeout <= 0 {
		return
	}
	s.idleSince = time.Now()
	if s.timer == nil {
		s.timer = time.AfterFunc(h.timeout, func() { h.expire(s) })
	} else {
		s.timer.Reset(h.timeout)
	}
}

// drop forgets a session that is closed.
func (h *Handler) drop(s *httpSession) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s.ending = true
	if s.timer != nil {
		s.timer.Stop()
	}
	if h.sessions[s.id] == s {
		delete(h.sessions, s.id)
	}
}

// expire closes s if it is still idle after its timeout.
func (h *Handler) expire(s *httpSession) {
	h.mu.Lock()
	if s.ending || s.refs > 0 {
		h.mu.Unlock()
		return
	}
	if left := h.timeout - time.Since(s.idleSince); left > 0 {
		s.timer.Reset(left) // a request came and went meanwhile
		h.mu.Unlock()
		return
	}
	s.ending = true
	h.closes.Add(1)
	h.mu.Unlock()
	defer h.closes.Done()
	h.close(s, ErrSessionExpired)
}

// close cancels the calls of s with cause, then closes it through the
// SDK's own DELETE, as the client would, and forgets it.
func (h *Handler) close(s *httpSession, cause error) {
	h.calls.endSession(s.id, cause)
	defer h.calls.forget(s.id)
	req, err := http.NewRequestWithContext(s.ctx, http.MethodDelete, "/", nil)
	if err == nil {
		req.Header.Set(sessionIDHeader, s.id)
		if r, ok := s.ctx.Value(hostKey{}).(string); ok {
			req.Host = r
		}
		h.sdk.ServeHTTP(discard{}, req)
	}
	h.drop(s)
}

// hostKey keeps the Host header of the request that opened a session, for
// the SDK's DNS rebinding check of the closing request.
type hostKey struct{}

// Shutdown ends the handler's service: new sessions and calls are refused
// (503, or JSON-RPC -32800 for a call in an open session), the calls in
// flight may end until ctx is done, then the ones left are cancelled
// ([ErrShuttingDown]), their answers (-32800) are given up to
// [ShutdownAnswerWait] to be written to the clients still reading, and
// every session is closed. It returns once they are, with ctx.Err() if
// calls had to be cancelled. A body that does not honour its context's
// cancellation holds Shutdown until it returns.
//
// Call it before http.Server.Shutdown, or at the same time: the server's
// Shutdown waits for the hanging requests (streams, calls) that this one
// ends.
func (h *Handler) Shutdown(ctx context.Context) error {
	h.mu.Lock()
	h.closing = true
	h.mu.Unlock()
	h.calls.shutDown()
	// Drained when no call runs and no POST is in progress: a call's
	// answer is written by the time its POST ends (a session closed any
	// sooner would drop it).
	err := h.calls.running.wait(ctx)
	if err == nil {
		err = h.posts.wait(ctx)
	}
	if err != nil {
		h.calls.cancelAll(ErrShuttingDown)
		h.awaitAnswers()
	}
	h.mu.Lock()
	var open []*httpSession
	for _, s := range h.sessions {
		if !s.ending {
			s.ending = true
			if s.timer != nil {
				s.timer.Stop()
			}
			open = append(open, s)
		}
	}
	h.closes.Add(len(open))
	h.mu.Unlock()
	for _, s := range open {
		go func() {
			defer h.closes.Done()
			h.close(s, ErrShuttingDown)
		}()
	}
	h.closes.Wait()
	_ = h.calls.running.wait(context.Background()) // stateless requests' calls
	return err
}

// ShutdownAnswerWait bounds how long [Handler.Shutdown] waits, once it has
// cancelled the calls left, for their answers to be written before it
// closes the sessions (closing a session ends its streams, and an answer
// not yet written is lost). A client that reads slowly is given up after
// it; one that has stopped reading is given up by the write timeout.
const ShutdownAnswerWait = 5 * time.Second

// awaitAnswers waits for the cancelled calls to return (a body that
// ignores its context holds it, as closing its session would) and then,
// up to ShutdownAnswerWait, for the POST requests that carry their
// answers to end: a call's answer is written by the time its POST ends.
func (h *Handler) awaitAnswers() {
	_ = h.calls.running.wait(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), ShutdownAnswerWait)
	defer cancel()
	_ = h.posts.wait(ctx)
}

// Sessions returns the number of open sessions (always 0 when stateless).
func (h *Handler) Sessions() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.sessions)
}

// retryAfterLocked is how long until the first idle session expires, or a
// few seconds when none is idle. h.mu is held.
func (h *Handler) retryAfterLocked() time.Duration {
	wait := 5 * time.Second
	if h.timeout <= 0 {
		return wait
	}
	first := time.Duration(math.MaxInt64)
	for _, s := range h.sessions {
		if s.refs == 0 && !s.ending {
			first = min(first, h.timeout-time.Since(s.idleSince))
		}
	}
	if first != time.Duration(math.MaxInt64) {
		wait = first
	}
	return wait
}

// unavailable answers 503 with Retry-After in whole seconds (at least 1).
func unavailable(w http.ResponseWriter, wait time.Duration, message string) {
	secs := int64(math.Ceil(wait.Seconds()))
	w.Header().Set("Retry-After", strconv.FormatInt(max(secs, 1), 10))
	http.Error(w, message, http.StatusServiceUnavailable)
}

// responseWriter gives each write of a response its own deadline, notes
// the status, and lets the handler read the header the SDK sets before it
// is sent.
type responseWriter struct {
	http.ResponseWriter
	rc       *http.ResponseController
	timeout  time.Duration
	status   atomic.Int32 // written by the goroutine that answers
	onHeader func(http.Header)
	written  bool // a text/plain error body is out (scrub.go)
}

func (w *responseWriter) WriteHeader(code int) {
	if code >= 200 && w.status.CompareAndSwap(0, int32(code)) && w.onHeader != nil {
		w.onHeader(w.Header())
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write writes p, its JSON-RPC errors and HTTP error text rewritten so
// that they quote nothing of the request (scrub.go).
func (w *responseWriter) Write(p []byte) (int, error) {
	if w.status.Load() == 0 {
		w.WriteHeader(http.StatusOK)
	}
	w.extend()
	n := len(p)
	ct := w.Header().Get("Content-Type")
	switch {
	case w.status.Load() >= 400 && strings.HasPrefix(ct, "text/plain"):
		if w.written {
			return n, nil // http.Error writes its text at once
		}
		w.written = true
		p = []byte(httpErrorText(int(w.status.Load()), string(p)) + "\n")
	case strings.HasPrefix(ct, "application/json"):
		p = scrubJSON(p)
	case strings.HasPrefix(ct, "text/event-stream"):
		p = scrubEvent(p)
	}
	if _, err := w.ResponseWriter.Write(p); err != nil {
		return 0, err
	}
	return n, nil
}

// FlushError flushes, within the write deadline (http.ResponseController).
func (w *responseWriter) FlushError() error {
	if w.status.Load() == 0 {
		w.WriteHeader(http.StatusOK)
	}
	w.extend()
	return w.rc.Flush()
}

func (w *responseWriter) Flush() { _ = w.FlushError() }

// Unwrap gives http.ResponseController the writer underneath.
func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// extend moves the write deadline to the timeout from now.
func (w *responseWriter) extend() {
	if w.timeout > 0 {
		_ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout))
	}
}

// discard is the response writer of the handler's own closing requests.
type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(p []byte) (int, error) { return len(p), nil }
func (discard) WriteHeader(int)             {}
