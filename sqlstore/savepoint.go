package sqlstore

import (
	"context"
	"errors"
	"strconv"
	"sync"
)

// savepoints are the SQL savepoints open in one unit's transaction, as a
// stack: a nested call's savepoint sits inside its caller's.
type savepoints struct {
	mu   sync.Mutex
	open []int // ids, innermost last
	next int
	// interleaved: a savepoint was wanted while a sibling's was open
	// (nested calls made concurrently): an undo may then take a
	// sibling's writes with it.
	interleaved bool
}

// spKey is the context key of the innermost savepoint a context is in.
type spKey struct{}

// errInterleaved is the error of a savepoint wanted, or undone, while
// nested calls of one unit ran concurrently.
var errInterleaved = errors.New("sqlstore: nested calls of one unit ran concurrently: their writes cannot be undone apart")

// Savepoint makes *Store an [store.Savepointer]: it runs SAVEPOINT in
// the transaction of the unit ctx belongs to, before a nested call, and
// end runs ROLLBACK TO SAVEPOINT (undo) or RELEASE SAVEPOINT (keep),
// both engines alike. On PostgreSQL, ROLLBACK TO SAVEPOINT also clears
// the error state a failed statement of the nested call left, so the
// outer body's later statements run.
//
// Nested calls made one after another, or inside each other, each get
// their savepoint. One wanted while a sibling's is open (a body making
// nested calls concurrently) gets none, and the undo of any savepoint of
// that unit then returns an error: the registry does not commit the unit
// rather than keep writes its entries say were undone.
//
// Outside a unit (ctx from no [Store.Atomic]) it returns ctx and a nil
// end.
func (s *Store) Savepoint(ctx context.Context) (context.Context, func(undo bool) error, error) {
	u := unitOf(ctx)
	if u == nil || u.sps == nil {
		return ctx, nil, nil
	}
	sps, tx := u.sps, u.tx
	inside, _ := ctx.Value(spKey{}).(int)
	sps.mu.Lock()
	top := 0
	if n := len(sps.open); n > 0 {
		top = sps.open[n-1]
	}
	if top != inside {
		sps.interleaved = true
		sps.mu.Unlock()
		return ctx, nil, errInterleaved
	}
	sps.next++
	id := sps.next
	name := "actions_sp_" + strconv.Itoa(id)
	// The statements outlive the call's own context (a nested call that
	// timed out must still be undone).
	wctx := context.WithoutCancel(ctx)
	if _, err := tx.ExecContext(wctx, "SAVEPOINT "+name); err != nil {
		sps.mu.Unlock()
		return ctx, nil, err
	}
	sps.open = append(sps.open, id)
	sps.mu.Unlock()
	end := func(undo bool) error {
		sps.mu.Lock()
		defer sps.mu.Unlock()
		if n := len(sps.open); n > 0 && sps.open[n-1] == id {
			sps.open = sps.open[:n-1]
		}
		if undo {
			if _, err := tx.ExecContext(wctx, "ROLLBACK TO SAVEPOINT "+name); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(wctx, "RELEASE SAVEPOINT "+name)
		if err == nil && undo && sps.interleaved {
			err = errInterleaved
		}
		return err
	}
	return context.WithValue(ctx, spKey{}, id), end, nil
}
