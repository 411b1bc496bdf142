package actions

import (
	"context"
	"errors"
	"time"
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
	r := NewRefusal(CodeTimeout, "the action ran past its time limit")
	switch {
	case err == nil || asRefusal(err) != nil:
		err = ctx.Err()
	case !isCancel(err):
		err = errors.Join(ctx.Err(), err)
	}
	r.cause = err
	return r
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
