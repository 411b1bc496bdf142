package actions

import (
	"context"
	"errors"
	"github.com/actionreg/actions/store"
	"strconv"
	"time"
)

// runLogKeys are a RunLog's rows of idempotency keys, by (principal,
// action, key). Guarded by the RunLog's mu.
type runLogKeys struct {
	m     map[runLogKey]store.KeyRecord
	units int // units recorded so far: their ids are "runlog:1", ...
	swept int // len(m) after the last sweep of expired rows
}

type runLogKey struct{ principal, action, key string }

func keyOfRecord(r store.KeyRecord) runLogKey { return runLogKey{r.Principal, r.Action, r.Key} }

// runLogUnit is what the attempt of a RunLog's unit tells it beside its
// records: what it leaves under a key ([RunLog.SettleKey]).
type runLogUnit struct {
	log          *RunLog
	settled      bool
	done, undone store.KeyRecord
}

type runLogUnitKey struct{}

// ClaimKey claims the key of claim, as [store.KeyStore] says, in this
// process's memory: a RunLog shared by the registries of one process
// serves them all, never other processes. A claim is kept as soon as it
// is made.
func (l *RunLog) ClaimKey(_ context.Context, claim store.KeyRecord, now time.Time) (*store.KeyRecord, error) {
	id := keyOfRecord(claim)
	l.mu.Lock()
	defer l.mu.Unlock()
	if row, ok := l.keys.m[id]; ok && row.Expires.After(now) {
		row.Answer = append([]byte(nil), row.Answer...)
		row.Records = cloneRecords(row.Records)
		return &row, nil
	}
	l.keys.sweep(now)
	if l.keys.m == nil {
		l.keys.m = map[runLogKey]store.KeyRecord{}
	}
	claim.Answer, claim.Records = nil, nil
	l.keys.m[id] = claim
	return nil, nil
}

// SettleKey says, inside a unit of l ([RunLog.Atomic]), what the unit
// leaves under a key, as [store.KeyStore] says: the row is written when the
// unit's records are appended, under the same lock, so that a retry
// never finds an answer without its records. The unit's id is
// "runlog:N"; the row keeps a copy of its records.
func (l *RunLog) SettleKey(ctx context.Context, done, undone store.KeyRecord) error {
	lu, _ := ctx.Value(runLogUnitKey{}).(*runLogUnit)
	if lu == nil || lu.log != l {
		return errNotInUnit
	}
	lu.settled, lu.done, lu.undone = true, done, undone
	return nil
}

var errNotInUnit = errors.New("actions: RunLog.SettleKey called outside a unit of the log")

// settle writes what the unit's attempt settled under a key, with its
// records recs (rolled back unless commit). Called with mu held.
func (l *RunLog) settle(lu *runLogUnit, commit bool, recs []store.Record) {
	if !lu.settled {
		return
	}
	row := lu.undone
	if commit {
		row = lu.done
	}
	switch {
	case row.Answer != nil:
		l.keys.units++
		row.Unit = "runlog:" + strconv.Itoa(l.keys.units)
		row.Answer = append([]byte(nil), row.Answer...)
		row.Records = cloneRecords(recs)
		if l.keys.m == nil {
			l.keys.m = map[runLogKey]store.KeyRecord{}
		}
		l.keys.m[keyOfRecord(row)] = row
	case row.Unit != "":
		id := keyOfRecord(row)
		if cur, ok := l.keys.m[id]; ok && cur.Answer == nil && cur.Unit == row.Unit {
			delete(l.keys.m, id)
		}
	}
}

// sweep drops the rows whose window passed, when the map doubled since
// the last sweep: the cost stays constant per call.
func (ks *runLogKeys) sweep(now time.Time) {
	if len(ks.m) < 64 || len(ks.m) < 2*ks.swept {
		return
	}
	for id, row := range ks.m {
		if !row.Expires.After(now) {
			delete(ks.m, id)
		}
	}
	ks.swept = len(ks.m)
}

func cloneRecords(recs []store.Record) []store.Record {
	out := make([]store.Record, len(recs))
	for i, r := range recs {
		out[i] = cloneRecord(r)
	}
	return out
}
