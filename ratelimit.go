package actions

import (
	"context"
	"time"

	"golang.org/x/time/rate"
)

// RateLimiter keeps the buckets of the gate's rate limits outside the
// process (GateOptions.Limiter), so that replicas sharing it share the
// limits: with the gate's own in-process buckets (the default), N
// replicas allow N times the declared rate. sqlstore.RateLimits keeps
// them in the store's database. A RateLimiter is safe for concurrent
// use.
type RateLimiter interface {
	// Take takes one call from the bucket of (principal, action) at now:
	// a token bucket of burst calls refilled at lim calls per second
	// (lim > 0, burst >= 1), as golang.org/x/time/rate's. It returns
	// ok, or the earliest time a call may pass. ctx is the call's (it
	// carries the unit's transaction, see sqlstore.Tx). Its error
	// refuses the call internal, the error its cause.
	Take(ctx context.Context, principal, action string, lim rate.Limit, burst int, now time.Time) (retryAt time.Time, ok bool, err error)
}
