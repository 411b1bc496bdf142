package actions

import (
	"context"
	"time"
)

// RateLimiter keeps the buckets of the gate's rate limits outside the
// process (GateOptions.Limiter), so that replicas sharing it share the
// limits: with the gate's own in-process buckets (the default), N
// replicas allow N times the declared rate. sqlstore.RateLimits keeps
// them in the store's database. A RateLimiter is safe for concurrent
// use.
type RateLimiter interface {
	// Take takes one call from the bucket of (principal, action) at now:
	// a token bucket of burst calls refilled at perSecond calls per
	// second (perSecond > 0, burst >= 1). It returns
	// ok, or the earliest time a call may pass. ctx is the call's (it
	// carries the unit's transaction, see sqlstore.Tx). Its error
	// refuses the call internal, the error its cause.
	Take(ctx context.Context, principal, action string, perSecond float64, burst int, now time.Time) (retryAt time.Time, ok bool, err error)
}
