package mcpserver

import (
	"bytes"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Bounds on the calls in flight of a whole HTTP handler, across its
// sessions: each session is bounded (MaxCallsInFlight) and so is the
// number of sessions, but their product (32,000 by default) is far more
// than a host should run at once. Past a bound a call is refused at once,
// never queued, with an answer that says to retry later.
const (
	// defaultMaxServerCalls is [HTTPOptions].MaxServerCalls when zero:
	// the tool calls one handler runs at once, all sessions together.
	defaultMaxServerCalls = 1024
	// defaultMaxServerCallBytes is [HTTPOptions].MaxServerCallBytes when
	// zero: the bytes of arguments the calls in flight hold, together.
	defaultMaxServerCallBytes = 64 << 20
	// serverBusyRetryAfter is the Retry-After of a call refused so, in
	// seconds: calls end at times nobody knows, so a short wait.
	serverBusyRetryAfter = 1
)

// serverBusyError is the answer to a call past a server-wide bound: the
// same retryable code as a session's bound (-32000), and in its data the
// seconds to wait (retryAfter), as the HTTP answer's Retry-After says.
func serverBusyError() error {
	return &jsonrpc.Error{
		Code:    codeBusy,
		Message: "busy: the server has as many calls running as it may; call again in a moment",
		Data:    []byte(`{"retry":"after-backoff","retryAfter":1,"nextAction":"Wait a second, then call again."}`),
	}
}

// limit sets the server-wide bounds of t: calls in flight and the bytes of
// their arguments (<= 0: no bound).
func (t *tracker) limit(calls int, bytes int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.maxTotal, t.maxBytes = calls, bytes
}

// admitLocked counts a call of n argument bytes in, unless it would pass
// a server-wide bound. t.mu is held.
func (t *tracker) admitLocked(n int64) bool {
	if t.maxTotal > 0 && t.total >= t.maxTotal {
		return false
	}
	if t.maxBytes > 0 && t.bytes+n > t.maxBytes && t.total > 0 {
		return false // one call alone is bounded by the body's own bound
	}
	t.total++
	t.bytes += n
	return true
}

// releaseLocked counts out a call of n argument bytes. t.mu is held.
func (t *tracker) releaseLocked(n int64) {
	t.total--
	t.bytes -= n
}

// mayRefuse reports whether a POST of contentLength bytes (-1: not
// known) may hold a call that a server-wide bound refuses now: only then
// is its body read.
func (t *tracker) mayRefuse(contentLength int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.maxTotal > 0 && t.total >= t.maxTotal {
		return true
	}
	return t.maxBytes > 0 && t.total > 0 && (contentLength < 0 || t.bytes+contentLength > t.maxBytes)
}

// fits reports whether a call of n argument bytes would be counted in now.
func (t *tracker) fits(n int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return !(t.maxTotal > 0 && t.total >= t.maxTotal) && !(t.maxBytes > 0 && t.total > 0 && t.bytes+n > t.maxBytes)
}

// refuseWhenFull answers 503 with Retry-After to a POST that calls a tool
// which a server-wide bound refuses now, before the SDK reads it: a client that speaks HTTP learns to wait without parsing the
// answer. Other requests (a notification, a response to the server's own
// request, a tools/list) pass, and so does a call when there is room;
// a call that finds the bound reached once inside gets the JSON-RPC
// answer of [serverBusyError]. The body is read only when a bound may
// refuse it (at most the SDK's body bound) and put back.
func (h *Handler) refuseWhenFull(w http.ResponseWriter, req *http.Request) bool {
	if req.Method != http.MethodPost || req.Body == nil || !h.calls.mayRefuse(req.ContentLength) {
		return false
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, h.maxBody+1))
	req.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(body), req.Body), req.Body}
	if err != nil || int64(len(body)) > h.maxBody {
		return false // the SDK answers it (413)
	}
	calls, _ := bodyCalls(body, "")
	refused := false
	for _, c := range calls {
		refused = refused || !h.calls.fits(c.args)
	}
	if !refused {
		return false
	}
	w.Header().Set("Retry-After", "1")
	http.Error(w, "Service Unavailable: the server has as many calls running as it may", http.StatusServiceUnavailable)
	return true
}
