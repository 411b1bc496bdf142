package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// defaultDrainTime is how long the calls in flight may run on once the
// client's input has ended or the server is asked to stop, before they
// are cancelled.
const defaultDrainTime = 10 * time.Second

// ServeOptions configures [Serve]. The zero value, or nil, is the default.
type ServeOptions struct {
	// MaxCallsInFlight bounds the requests read and not yet answered (0:
	// 32). At the bound the server stops reading
	// until it answers one, so that a client writing without reading
	// cannot make it read and hold without end. While it does not read,
	// it cannot read answers to its own requests either (an elicitation):
	// keep the bound above the calls that may wait on the client at once.
	// A negative bound turns it off.
	MaxCallsInFlight int
	// DrainTime is how long calls in flight may run on once the input has
	// ended or ctx is done (0: 10 s; negative: none, they
	// are cancelled at once); then they are
	// cancelled, with [ErrClientGone] or [ErrShuttingDown].
	DrainTime time.Duration
}

// ServeStdio serves s on standard input and output (the SDK's
// StdioTransport: one JSON-RPC message per line) until the client closes
// its input or ctx is done, as [Serve] does with opts (nil: the
// defaults). Nothing else may write to standard output meanwhile; log to
// standard error.
func ServeStdio(ctx context.Context, s *mcp.Server, opts *ServeOptions) error {
	return Serve(ctx, s, &mcp.StdioTransport{}, opts)
}

// Serve serves one session of s on t (the SDK's StdioTransport,
// IOTransport or another stream transport), until the client ends its
// input or ctx is done. It wraps the SDK's connection, not replacing it:
//
//   - At most MaxCallsInFlight requests are read and not yet answered;
//     past that the server stops reading.
//
//   - Every request read is answered. When the input ends (or a last
//     line is cut short, which counts as its end), nothing more is read,
//     the calls in flight may end for DrainTime, the ones left are
//     cancelled ([ErrClientGone]) and answered with JSON-RPC -32800, and
//     only then does the session end: a call never runs, is recorded and
//     goes unanswered, unless the client stops reading its output too.
//
//   - When ctx is done, the same happens, with [ErrShuttingDown].
//
//   - A request the client cancels with notifications/cancelled is not
//     answered (MCP, cancellation: the receiver SHOULD NOT respond); its
//     body sees its context done and its entry records cancelled.
//
//   - When the client's output is closed too (the client was killed), the
//     first answer that fails to go out ends the session: the SDK cancels
//     the calls left and writes nothing more, and nothing more is read.
//     While Serve runs, a write to a closed standard output fails with
//     EPIPE rather than ending the process with SIGPIPE (Go's default for
//     file descriptors 1 and 2): Serve asks for the signal
//     (signal.Notify) and drops it, and lets go when it returns. A host
//     that writes to standard output after Serve returns, or that serves
//     it otherwise, handles SIGPIPE itself (os/signal).
//
// It returns nil when the client ended its input, ctx.Err() when ctx did,
// an error before serving when s or t is nil, or the session's error (a
// line that is not JSON; a write to a client that is gone). The SDK's check that a client of protocol 2025-06-18 or
// later sends no JSON-RPC batch is lost behind the wrapper: batches are
// served whatever the version.
func Serve(ctx context.Context, s *mcp.Server, t mcp.Transport, opts *ServeOptions) error {
	switch {
	case s == nil:
		return errors.New("mcpserver: Serve needs a server")
	case t == nil:
		return errors.New("mcpserver: Serve needs a transport")
	}
	var o ServeOptions
	if opts != nil {
		o = *opts
	}
	// A client killed with its pipes must not take the host with it.
	defer holdSIGPIPE()()
	calls := newTracker(0) // the connection bounds the calls
	pt := &pacedTransport{
		inner: t,
		max:   pick(o.MaxCallsInFlight, defaultMaxCallsInFlight),
		drain: pick(o.DrainTime, defaultDrainTime),
		calls: calls,
	}
	ss, err := s.Connect(context.WithValue(ctx, trackerKey{}, calls), pt, nil)
	if err != nil {
		return err
	}
	ended := make(chan error, 1)
	go func() { ended <- ss.Wait() }()
	select {
	case err := <-ended:
		return err
	case <-ctx.Done():
		pt.conn.stop(ErrShuttingDown)
		<-ended
		return ctx.Err()
	}
}

// pacedTransport wraps a transport's connection in a pacedConn.
type pacedTransport struct {
	inner mcp.Transport
	max   int
	drain time.Duration
	calls *tracker
	conn  *pacedConn
}

func (t *pacedTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	stopCtx, stopRead := context.WithCancelCause(context.Background())
	t.conn = &pacedConn{
		inner: c, max: t.max, drain: t.drain, calls: t.calls,
		stopCtx: stopCtx, stopRead: stopRead,
		pending: map[jsonrpc.ID]bool{}, changed: make(chan struct{}),
	}
	return t.conn, nil
}

// pacedConn is a connection that reads only while fewer than max requests
// await their answer, drains before it reports the end of the input, and
// drops the answer to a request the client cancelled.
type pacedConn struct {
	inner    mcp.Connection
	max      int // <= 0: no bound
	drain    time.Duration
	calls    *tracker
	stopCtx  context.Context // done: read nothing more
	stopRead context.CancelCauseFunc

	mu      sync.Mutex
	pending map[jsonrpc.ID]bool // requests read and not answered; true: cancelled by the client
	changed chan struct{}       // closed and replaced when pending shrinks or broken is set
	broken  error               // a write failed: no answer can go out any more
}

// errBroken ends the reading once the output is broken.
var errBroken = errors.New("mcpserver: the client's end is closed")

// signalLocked wakes the reader. c.mu is held.
func (c *pacedConn) signalLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// stop ends the reading, with why the calls left after the drain are
// cancelled.
func (c *pacedConn) stop(cause error) { c.stopRead(cause) }

func (c *pacedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		c.mu.Lock()
		full := c.max > 0 && len(c.pending) >= c.max
		changed, broken := c.changed, c.broken
		c.mu.Unlock()
		if broken != nil {
			// The SDK answers nothing more once a write failed (the client
			// is gone): nothing more is read either, lest it wait. The
			// failed write is the cause, whichever of the reader and the
			// writer ends the session first.
			return nil, fmt.Errorf("%w: %w", errBroken, broken)
		}
		if !full {
			break
		}
		select {
		case <-changed:
		case <-c.stopCtx.Done():
			return nil, c.drainThen(io.EOF, context.Cause(c.stopCtx))
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	msg, err := c.inner.Read(c.stopCtx)
	if err != nil {
		if c.stopCtx.Err() != nil {
			return nil, c.drainThen(io.EOF, context.Cause(c.stopCtx))
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = io.EOF // a last line cut short: the end of the input
		}
		return nil, c.drainThen(err, ErrClientGone)
	}
	if req, ok := msg.(*jsonrpc.Request); ok {
		c.mu.Lock()
		switch {
		case req.IsCall():
			if _, dup := c.pending[req.ID]; !dup {
				// A duplicate id is answered by the SDK with no id: it
				// is not counted, lest it be waited for.
				c.pending[req.ID] = false
			}
		case req.Method == "notifications/cancelled":
			var p struct {
				RequestID any `json:"requestId"`
			}
			if json.Unmarshal(req.Params, &p) == nil {
				if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
					if _, ok := c.pending[id]; ok {
						c.pending[id] = true
					}
				}
			}
		}
		c.mu.Unlock()
	}
	return msg, nil
}

// drainThen lets the requests read be answered, for the drain time, then
// cancels the calls left with cause and waits for their answers, and
// returns err: the end the reader reports once nothing awaits an answer.
func (c *pacedConn) drainThen(err, cause error) error {
	timer := time.NewTimer(c.drain)
	defer timer.Stop()
	cancelled := false
	for {
		c.mu.Lock()
		n := len(c.pending)
		changed, broken := c.changed, c.broken
		c.mu.Unlock()
		if n == 0 || broken != nil {
			// All answered, or none can be: after a failed write the SDK
			// cancels the calls in flight and writes nothing more.
			return err
		}
		select {
		case <-changed:
		case <-timer.C:
			if !cancelled {
				cancelled = true
				c.calls.cancelAll(cause)
			}
		}
	}
}

func (c *pacedConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	var id jsonrpc.ID
	if resp, ok := msg.(*jsonrpc.Response); ok {
		id = resp.ID
	}
	cancelled, tracked := false, false
	if id.IsValid() {
		c.mu.Lock()
		cancelled, tracked = c.pending[id]
		c.mu.Unlock()
	}
	msg = scrubMessage(msg) // quoting nothing the client sent (scrub.go)
	var err error
	// The client cancelled the request: it goes without an answer only
	// if it ended so (see answersCancelled); one that completed is
	// answered.
	if resp, ok := msg.(*jsonrpc.Response); !cancelled || !ok || !answersCancelled(resp.Error) {
		err = c.inner.Write(ctx, msg)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if tracked {
		// Counted as answered only once written, so that the drain ends
		// after the last answer is out.
		delete(c.pending, id)
		c.signalLocked()
	}
	if err != nil && ctx.Err() == nil && c.broken == nil {
		c.broken = err
		c.signalLocked()
	}
	return err
}

func (c *pacedConn) Close() error {
	c.stopRead(io.EOF)
	return c.inner.Close()
}

func (c *pacedConn) SessionID() string { return c.inner.SessionID() }
