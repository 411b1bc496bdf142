package actions

import (
	"context"
	"errors"
	"time"

	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/internal/overrun"
)

// errTimedOut is the cause of a context the registry ended because its
// body ran out of time; a nested call's context inherits it.
var errTimedOut = errors.New("actions: the action's time limit passed")

// timedOut returns the timeout refusal, its cause err with the context's
// error (so that errors.Is finds context.DeadlineExceeded), when ctx ended because a time limit of the registry passed (the
// call's own, or an outer call's); otherwise nil.
func timedOut(ctx context.Context, err error) error {
	if ctx.Err() == nil || !errors.Is(context.Cause(ctx), errTimedOut) {
		return nil
	}
	switch {
	case err == nil || asRefusal(err) != nil:
		err = ctx.Err()
	case !isCancel(err):
		err = errors.Join(ctx.Err(), err)
	}
	return timeoutRefusal(err)
}

// timeoutRefusal is the timeout refusal, its cause cause (which
// errors.Is finds context.DeadlineExceeded in).
func timeoutRefusal(cause error) *Refusal {
	r := NewRefusal(codes.Timeout, "the action ran past its time limit")
	r.cause = cause
	return r
}

// overranRefusal is the refusal of a unit that would commit although a
// body of it ran past its deadline and was left running (a nested call's,
// whose refusal the outer body swallowed): that body may write yet, so
// the unit is undone.
func overranRefusal(err error) *Refusal {
	r := NewRefusal(codes.Timeout, "a call the action made ran past its time limit")
	r.cause = errors.Join(context.DeadlineExceeded, err)
	return r
}

// unsoundRefusal is the refusal of a unit that would commit although the
// writes of a nested call that was refused could not be undone apart
// from the rest: the unit is undone rather than kept with writes its
// entries say did not happen.
func unsoundRefusal(err error) *Refusal {
	r := NewRefusal(codes.Internal, "the action failed: a call it made was refused and its writes could not be undone apart")
	r.cause = err
	return r
}

// timeLimit is the time limit of one body: its deadline by the registry's
// clock, and the timer of its context. A zero deadline is no limit.
type timeLimit struct {
	now      func() time.Time
	deadline time.Time
	stop     context.CancelFunc
}

// passed reports whether the deadline has passed by the clock: a body
// that returns then did not finish in time, whatever the context's timer
// (which may fire a little later under load) says.
func (l *timeLimit) passed() bool {
	return !l.deadline.IsZero() && !l.now().Before(l.deadline)
}

// run runs body, and returns what it returned; with a limit, on a
// goroutine of its own, so that the call is answered at the deadline
// whether or not the body honours its context: overran is then true, and
// the body runs on, counted in the [overrun.Group] ctx carries until it
// returns (its results are dropped). When ctx ends for another reason
// (the caller's cancellation), run waits for the body, which sees ctx.
func (l *timeLimit) run(ctx context.Context, body func() (any, error)) (result any, err error, overran bool) {
	if l.deadline.IsZero() {
		result, err = body()
		return result, err, false
	}
	type outcome struct {
		v   any
		err error
	}
	ch := make(chan outcome, 1)
	done := overrun.Begin(ctx)
	go func() {
		defer done()
		v, err := body()
		ch <- outcome{v, err}
	}()
	select {
	case o := <-ch:
		return o.v, o.err, false
	case <-ctx.Done():
	}
	select {
	case o := <-ch: // it returned as the time ran out
		return o.v, o.err, false
	default:
	}
	if !errors.Is(context.Cause(ctx), errTimedOut) {
		o := <-ch
		return o.v, o.err, false
	}
	return nil, nil, true
}

// endedRefusal is the refusal of a call whose ctx is done before its body
// ran: timeout when a time limit passed, cancelled otherwise.
func endedRefusal(ctx context.Context, err error) error {
	if t := timedOut(ctx, err); t != nil {
		return t
	}
	return cancelRefusal(err)
}

// timeoutOf is the time limit of an action that declares d: d, or def
// when it declares none (0); <= 0 for none.
func timeoutOf(d time.Duration, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}
