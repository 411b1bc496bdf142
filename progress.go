package actions

import (
	"strconv"
	"sync"
	"time"
)

// defaultProgressInterval is the least time between two progress reports
// delivered to one call's [Call].Progress, unless Options.ProgressInterval
// says otherwise.
const defaultProgressInterval = 100 * time.Millisecond

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
