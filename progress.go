package actions

import (
	"strconv"
	"sync"
	"time"
)

// Progress is one report of how far a running call has come (MCP
// notifications/progress: progress, total, message).
type Progress struct {
	// Done is how much is done so far; it increases with every report
	// delivered (a report that does not increase it is dropped).
	Done float64
	// Total is how much there is in all; 0 when unknown.
	Total float64
	// Message says what is being done, for a person; it may be empty.
	Message string
}

// DefaultProgressInterval is the least time between two progress reports
// delivered to one call's [Call].Progress, unless Options.ProgressInterval
// says otherwise.
const DefaultProgressInterval = 100 * time.Millisecond

// Progress reports how far the body has come: done of total (0 when the
// total is unknown), with a message for a person. It is delivered to the
// top-level call's [Call].Progress, if any, on the caller of Progress's
// goroutine, and never after the call returned. At most one report is
// delivered per Options.ProgressInterval (100 ms by default); a report
// that comes sooner, or whose done does not pass the last one delivered,
// is dropped (the next one carries the newer figures). The reports of
// nested calls and of batch steps are dropped: a batch reports its own
// step count. A trace from [NewTrace] drops every report.
func (t *Trace) Progress(done, total float64, message string) {
	t.mu.Lock()
	p, closing := t.progress, t.closing
	t.mu.Unlock()
	if closing {
		return
	}
	p.report(Progress{Done: done, Total: total, Message: message})
}

// progress delivers one call's progress reports, rate-limited and in
// order, until the call returns.
type progress struct {
	fn    func(Progress)
	every time.Duration // <= 0: no bound
	now   func() time.Time

	mu     sync.Mutex
	sent   bool
	last   time.Time // when the last delivered report was
	done   float64   // its Done
	closed bool
}

// report delivers pr unless the call returned, the last report is too
// recent, or pr does not advance. Delivery holds the reporter's lock, so
// reports reach fn one at a time and in order, and close waits for one
// being delivered. A panic in fn is dropped with the report.
func (p *progress) report(pr Progress) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || (p.sent && pr.Done <= p.done) {
		return
	}
	now := p.now()
	if p.sent && p.every > 0 && now.Sub(p.last) < p.every {
		return
	}
	p.sent, p.last, p.done = true, now, pr.Done
	_ = safeCall("call's Progress", func() { p.fn(pr) })
}

// close ends delivery: once it returned, fn is not called again.
func (p *progress) close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
}

// stepProgress is the report of a batch whose step i of n is done.
func stepProgress(i, n int) Progress {
	return Progress{Done: float64(i + 1), Total: float64(n), Message: "step " + strconv.Itoa(i+1) + " of " + strconv.Itoa(n) + " done"}
}
