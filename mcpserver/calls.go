package mcpserver

import (
	"context"
	"errors"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/internal/overrun"
)

// Why a call's context is done, when the server ended it: the cause
// ([context.Cause]) of the context the body sees, and what OnError's error
// wraps (errors.Is). A body sees ctx.Err() == context.Canceled either way.
var (
	// ErrClientGone: the client went away while the call ran (its HTTP
	// request ended, on a stateless server or under protocol 2026-07-28;
	// its input ended, over stdio, and the call outlived the drain time).
	ErrClientGone = errors.New("mcpserver: the client went away")
	// ErrSessionClosed: the client ended its session (HTTP DELETE).
	ErrSessionClosed = errors.New("mcpserver: the session was closed")
	// ErrSessionExpired: the session was idle longer than its timeout.
	ErrSessionExpired = errors.New("mcpserver: the session was idle too long")
	// ErrShuttingDown: the server is shutting down and the drain time is
	// over.
	ErrShuttingDown = errors.New("mcpserver: the server is shutting down")
)

// defaultMaxCallsInFlight is the number of tool calls one session may have
// running at once, unless the options say otherwise.
const defaultMaxCallsInFlight = 32

// codeBusy is the JSON-RPC error code of a call refused because its
// session has as many calls running as it may: the first of JSON-RPC's
// implementation-defined server errors.
const codeBusy = -32000

// trackerKey is the context key of the *tracker that serves a session:
// set on the context a transport connects with, so every handler of the
// session sees it.
type trackerKey struct{}

// requestKey is the context key of the HTTP request a stateless session
// lives in: the session ends with it.
type requestKey struct{}

// tracker follows the tool calls in flight of the sessions one endpoint
// (an HTTP handler, one Serve) serves: it bounds them per session, and
// cancels them when their session ends or the server shuts down, so that
// no body waits forever on a client that is gone and no session close
// waits forever on a body.
type tracker struct {
	max int // calls per session; <= 0: no bound

	mu       sync.Mutex
	sessions map[*mcp.ServerSession]*sessionCalls // sessions with calls in flight
	ended    map[string]error                     // sessions (by id) being closed, and why
	closing  error                                // set when the server shuts down
	seq      uint64

	running gauge // calls in flight, all sessions

	// Server-wide bounds (load.go); <= 0: none.
	maxTotal int
	maxBytes int64
	total    int   // calls counted in, all sessions
	bytes    int64 // their arguments' bytes
}

type sessionCalls struct {
	n       int
	cancels map[uint64]context.CancelCauseFunc
}

func newTracker(max int) *tracker {
	return &tracker{max: max, sessions: map[*mcp.ServerSession]*sessionCalls{}, ended: map[string]error{}}
}

// track starts following a tool call, if a tracker serves its session: it
// returns the context the call runs with, the function to call with the
// call's error when it ends, and the error to answer with instead when
// the call may not start.
func track(ctx context.Context, req *mcp.CallToolRequest) (context.Context, func(error), error) {
	t, _ := ctx.Value(trackerKey{}).(*tracker)
	if t == nil || req == nil || req.Session == nil {
		return ctx, func(error) {}, nil
	}
	return t.begin(ctx, req)
}

// answersCancelled reports whether err is the answer of a call that ended
// because it was cancelled: the only answer a cancelled request goes
// without. A call that ended otherwise (its work done despite the
// cancellation, or refused for another reason) ran and was recorded as
// such, so it is answered (MCP: a receiver MAY ignore a cancellation of a
// request whose processing completed).
func answersCancelled(err error) bool {
	var je *jsonrpc.Error
	// Code 0 is the SDK's answer to a request it stopped handling because
	// its context was done (a tool handler never answers with code 0).
	return errors.As(err, &je) && (je.Code == CodeRequestCancelled || je.Code == 0)
}

// enterLocked admits a call of req's session, with t.mu held: it refuses
// one while the server shuts down or the session closes, or when the
// session or the server is busy; it returns the session's calls and the
// size of the call's arguments, which the server's budget holds.
func (t *tracker) enterLocked(req *mcp.CallToolRequest) (*sessionCalls, int64, error) {
	ss := req.Session
	if t.closing != nil {
		return nil, 0, refusedAtDoor("cancelled: the server is shutting down")
	}
	if id := ss.ID(); id != "" {
		if _, ended := t.ended[id]; ended {
			return nil, 0, refusedAtDoor("cancelled: the session is closing")
		}
	}
	sc := t.sessions[ss]
	if sc == nil {
		sc = &sessionCalls{cancels: map[uint64]context.CancelCauseFunc{}}
		t.sessions[ss] = sc
	}
	if t.max > 0 && sc.n >= t.max {
		return nil, 0, busyError()
	}
	var size int64
	if req.Params != nil {
		size = int64(len(req.Params.Arguments))
	}
	if !t.admitLocked(size) {
		return nil, 0, serverBusyError()
	}
	return sc, size, nil
}

func (t *tracker) begin(parent context.Context, req *mcp.CallToolRequest) (context.Context, func(error), error) {
	ss := req.Session
	t.mu.Lock()
	sc, size, err := t.enterLocked(req)
	if err != nil {
		t.mu.Unlock()
		return nil, nil, err
	}
	// The call's context ends with its parent (the SDK's: a
	// notifications/cancelled, a broken connection, the request of a
	// 2026-07-28 call), or when the tracker ends it, with a cause the body
	// and OnError can tell apart.
	//
	// A keyed call on a stateless server is the exception: it is not cut
	// short by its client leaving (its request ending), so that an effect
	// outside the database does not happen half, and the client's retry
	// (on this replica or another) waits for it and gets its answer. It
	// ends with its own time limit (the action's Timeout), the server's
	// shutdown, or its body.
	rctx, stateless := parent.Value(requestKey{}).(context.Context)
	detached := stateless && idempotencyKey(req) != ""
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(parent))
	stopParent := func() bool { return false }
	if !detached {
		stopParent = context.AfterFunc(parent, func() {
			if stateless && rctx.Err() != nil {
				cancel(ErrClientGone)
			} else {
				cancel(context.Cause(parent))
			}
		})
	}
	t.seq++
	key := t.seq
	sc.cancels[key] = cancel
	sc.n++
	t.running.add(1)
	t.mu.Unlock()
	// A body the registry stopped waiting for at its deadline runs on:
	// the call keeps its place in the bounds until that body returns.
	bodies := &overrun.Group{}
	ctx = overrun.With(ctx, bodies)

	stopRequest := func() bool { return false }
	if stateless && !detached {
		// A stateless session lives in one HTTP request: when it ends, the
		// client is gone, and so is anyone to answer.
		stopRequest = context.AfterFunc(rctx, func() { cancel(ErrClientGone) })
	}
	end := func(answer error) {
		stopParent()
		stopRequest()
		if parent.Err() != nil && context.Cause(parent) == context.Canceled && answersCancelled(answer) {
			// The client cancelled the call (notifications/cancelled) and
			// it ended so: MCP asks that it get no answer. Over streamable
			// HTTP, closing the call's stream before the answer is written
			// drops it (a no-op under 2026-07-28, where no such
			// notification exists).
			if req.Extra != nil && req.Extra.CloseSSEStream != nil {
				req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{})
			}
		}
		cancel(nil)
		bodies.End(func() {
			t.mu.Lock()
			t.releaseLocked(size)
			delete(sc.cancels, key)
			sc.n--
			if sc.n == 0 {
				delete(t.sessions, ss)
			}
			t.mu.Unlock()
			t.running.add(-1)
		})
	}
	return ctx, end, nil
}

// endSession cancels the calls of the session id with cause, and refuses
// its later ones until forget(id).
func (t *tracker) endSession(id string, cause error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ended[id] = cause
	for ss, sc := range t.sessions {
		if ss.ID() == id {
			for _, cancel := range sc.cancels {
				cancel(cause)
			}
		}
	}
}

// forget drops what endSession kept of a session that is now closed.
func (t *tracker) forget(id string) {
	t.mu.Lock()
	delete(t.ended, id)
	t.mu.Unlock()
}

// shutDown refuses every later call.
func (t *tracker) shutDown() {
	t.mu.Lock()
	if t.closing == nil {
		t.closing = ErrShuttingDown
	}
	t.mu.Unlock()
}

// cancelAll cancels every call in flight with cause.
func (t *tracker) cancelAll(cause error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, sc := range t.sessions {
		for _, cancel := range sc.cancels {
			cancel(cause)
		}
	}
}

// gauge counts things in progress, and lets one wait until none is.
type gauge struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed when n drops to 0, if someone waits
}

func (g *gauge) add(d int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n += d
	if g.n == 0 && g.zero != nil {
		close(g.zero)
		g.zero = nil
	}
}

func (g *gauge) value() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}

// wait returns nil once nothing is in progress, or ctx.Err() if ctx is
// done first.
func (g *gauge) wait(ctx context.Context) error {
	for {
		g.mu.Lock()
		if g.n == 0 {
			g.mu.Unlock()
			return nil
		}
		if g.zero == nil {
			g.zero = make(chan struct{})
		}
		zero := g.zero
		g.mu.Unlock()
		select {
		case <-zero:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// refusedAtDoor is the answer to a call that may not start because its
// session or the server is ending: it never reached the registry.
func refusedAtDoor(message string) error {
	return protocolError(CodeRequestCancelled, message, actions.NewRefusal(codes.Cancelled, ""))
}

// busyError is the answer to a call past the session's bound.
func busyError() error {
	return &jsonrpc.Error{
		Code:    codeBusy,
		Message: "busy: this session has as many calls running as it may; wait for an answer, then call again",
		Data:    []byte(`{"retry":"after-backoff","nextAction":"Wait for a call of this session to end, then call again."}`),
	}
}
