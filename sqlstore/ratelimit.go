package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"strconv"
	"time"
)

// rateTable holds the shared rate-limit buckets: per (principal,
// action), the theoretical arrival time (GCRA) in Unix microseconds.
func rateTable(integer string) string {
	return `CREATE TABLE IF NOT EXISTS actions_rate (
		principal TEXT NOT NULL,
		action TEXT NOT NULL,
		tat ` + integer + ` NOT NULL,
		PRIMARY KEY (principal, action))`
}

// RateLimits keeps the gate's rate-limit buckets in the table
// actions_rate of the store's database ([actions.RateLimiter]), so that
// replicas sharing the database share the limits: pass it as
// actions.GateOptions.Limiter. Without it each process keeps its own
// buckets (the default), and N replicas allow N times the rate.
//
// Each take is one statement (an upsert of the bucket's row, kept only
// when the call may pass: the generic cell rate algorithm, which allows
// what a token bucket of the same rate and burst allows, to the
// microsecond). On PostgreSQL it runs outside the unit's transaction, on
// the database, so that a bucket's row is never held while a body runs:
// a call counts even if its unit rolls back, as with the in-process
// buckets. On SQLite it runs in the unit's transaction when ctx carries
// one (the unit holds the database's one write lock already), and a unit
// that rolls back gives its call back.
//
// It is safe for concurrent use.
type RateLimits struct {
	s *Store
	// take and read are the queries, in the store's dialect.
	take, read string
}

// RateLimits returns the store's shared rate limits.
func (s *Store) RateLimits() *RateLimits {
	greatest := "MAX"
	if s.dialect == PostgreSQL {
		greatest = "GREATEST"
	}
	// Numbered parameters: the take reads now and the interval twice.
	p := func(n int) string {
		switch {
		case s.dialect != PostgreSQL:
			return "?" + strconv.Itoa(n)
		case n >= 3: // microseconds: PostgreSQL infers no type for $3 + $4
			return "CAST(" + s.param(n) + " AS BIGINT)"
		}
		return s.param(n)
	}
	return &RateLimits{
		s: s,
		take: "INSERT INTO actions_rate (principal, action, tat) VALUES (" + p(1) + ", " + p(2) + ", " + p(3) + " + " + p(4) + ")" +
			" ON CONFLICT (principal, action) DO UPDATE SET tat = " + greatest + "(actions_rate.tat, " + p(3) + ") + " + p(4) +
			" WHERE " + greatest + "(actions_rate.tat, " + p(3) + ") + " + p(4) + " - " + p(5) + " <= " + p(3) +
			" RETURNING tat",
		read: "SELECT tat FROM actions_rate WHERE principal = " + p(1) + " AND action = " + p(2),
	}
}

// Take takes one call of action by principal at now from a bucket of
// burst calls refilled at perSecond calls per second: see
// [actions.RateLimiter]. A rate above 10^6 per second counts as 10^6 (the
// table's unit is the microsecond); an infinite rate takes nothing.
// Errors: the database's.
func (l *RateLimits) Take(ctx context.Context, principal, action string, perSecond float64, burst int, now time.Time) (time.Time, bool, error) {
	if err := l.s.made(); err != nil {
		return time.Time{}, false, err
	}
	if math.IsInf(perSecond, 1) || perSecond == math.MaxFloat64 {
		return time.Time{}, true, nil
	}
	interval := int64(math.Max(1, math.Round(1e6/perSecond))) // µs per call
	tau := interval * int64(max(burst, 1))
	t := now.UnixMicro()
	q := queryer(l.s.db)
	if tx, ok := Tx(ctx); ok && l.s.dialect == SQLite {
		q = tx
	}
	var tat int64
	err := q.QueryRowContext(ctx, l.take, principal, action, t, interval, tau).Scan(&tat)
	if err == nil {
		return time.Time{}, true, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, false, err
	}
	if err := q.QueryRowContext(ctx, l.read, principal, action).Scan(&tat); err != nil {
		return time.Time{}, false, err
	}
	return time.UnixMicro(max(tat, t) + interval - tau), false, nil
}
