package actions

import (
	"context"
	"strconv"
	"time"
)

// AtomicOnce runs fn at most once under k within its window, as
// [Store].AtomicOnce says, in this process's memory: a RunLog shared by
// the registries of one process serves them all, never other processes.
// A retry waiting for a running unit waits at most k.Wait, or until ctx
// ends (its error is then returned as it is).
func (l *RunLog) AtomicOnce(ctx context.Context, k UnitKey, fn func(ctx context.Context) Unit) ([]Record, *Recorded, error) {
	id := runLogKey{k.Principal, k.Action, k.Key}
	var timer <-chan time.Time
	for {
		l.mu.Lock()
		ku := l.keys.m[id]
		if ku != nil && ku.rec != nil && !k.Now.Before(ku.expires) {
			delete(l.keys.m, id) // the window passed
			ku = nil
		}
		switch {
		case ku != nil && ku.rec == nil && !k.Replace:
			done := ku.done
			l.mu.Unlock()
			if timer == nil {
				t := time.NewTimer(k.Wait)
				defer t.Stop()
				timer = t.C
			}
			select {
			case <-done:
				continue
			case <-timer:
				return nil, nil, k.InProgress()
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		case ku != nil && !k.Replace:
			defer l.mu.Unlock()
			if ku.digest != k.Digest {
				return nil, nil, k.Conflict()
			}
			line := ku.rec.AuditLine(k.Audit)
			l.records = append(l.records, line.clone())
			rec := *ku.rec
			rec.Records = cloneRecords(ku.rec.Records)
			return []Record{line}, &rec, nil
		}
		claim := &keyedUnit{digest: k.Digest, done: make(chan struct{})}
		if ku != nil && ku.rec == nil {
			claim.done = ku.done // a decision replacing a unit still running: rare, share its signal
		}
		l.keys.sweep(k.Now)
		if l.keys.m == nil {
			l.keys.m = map[runLogKey]*keyedUnit{}
		}
		l.keys.m[id] = claim
		l.mu.Unlock()
		return l.runKeyed(ctx, k, id, claim, ku, fn)
	}
}

// runKeyed runs fn for the claim and settles it: recorded when the unit
// commits or is kept ([Unit].Keep, its records rolled back), dropped (or
// the replaced unit put back) otherwise.
func (l *RunLog) runKeyed(ctx context.Context, k UnitKey, id runLogKey, claim, old *keyedUnit, fn func(ctx context.Context) Unit) (recs []Record, _ *Recorded, err error) {
	settled := false
	defer func() {
		if !settled { // fn panicked: free the key
			l.mu.Lock()
			l.dropClaim(id, claim, old)
			l.mu.Unlock()
		}
	}()
	u := fn(ctx)
	for i := range u.Records {
		u.Records[i].RolledBack = !u.Commit
	}
	cp := cloneRecords(u.Records)
	l.mu.Lock()
	defer l.mu.Unlock()
	settled = true
	l.records = append(l.records, cp...)
	if !u.Commit && !u.Keep {
		l.dropClaim(id, claim, old)
		return u.Records, nil, u.Err
	}
	l.keys.units++
	claim.rec = &Recorded{Unit: "runlog:" + strconv.Itoa(l.keys.units), Answer: u.Answer, Records: cloneRecords(u.Records)}
	claim.expires = k.Until(u.Answer)
	if l.keys.m[id] == claim {
		closeOnce(claim.done)
	}
	return u.Records, nil, u.Err
}

// dropClaim frees the key of a unit that did not commit: the unit it
// replaced, if any, answers again. Called with mu held.
func (l *RunLog) dropClaim(id runLogKey, claim, old *keyedUnit) {
	if l.keys.m[id] == claim {
		if old != nil && old.rec != nil {
			l.keys.m[id] = old
		} else {
			delete(l.keys.m, id)
		}
	}
	closeOnce(claim.done)
}

// closeOnce closes a channel that may be closed already.
func closeOnce(c chan struct{}) {
	select {
	case <-c:
	default:
		close(c)
	}
}

// sweep drops the units whose window passed, when the map doubled since
// the last sweep: the cost stays constant per call.
func (ks *runLogKeys) sweep(now time.Time) {
	if len(ks.m) < 64 || len(ks.m) < 2*ks.swept {
		return
	}
	for id, ku := range ks.m {
		if ku.rec != nil && !now.Before(ku.expires) {
			delete(ks.m, id)
		}
	}
	ks.swept = len(ks.m)
}

func cloneRecords(recs []Record) []Record {
	out := make([]Record, len(recs))
	for i, r := range recs {
		out[i] = r.clone()
	}
	return out
}
