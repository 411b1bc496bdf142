package sqlstore_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/internal/dbtest"
	"github.com/actionreg/actions/sqlstore"
	"github.com/actionreg/actions/store"
)

// cancelAt says where a call of TestCancelledCallsReportWhatWasKept has
// its context cancelled.
type cancelAt int

const (
	cancelNever        cancelAt = iota
	cancelInBody                // after the body's write, the body then answers done
	cancelBeforeCommit          // in BeforeCommit: after the records are appended
	cancelAnyTime               // from another goroutine, after a random wait
	cancelPoints
)

func (c cancelAt) String() string {
	return [...]string{"never", "in the body", "before the commit", "any time"}[c]
}

// cancelKey carries a call's cancel function and where to use it.
type cancelKey struct{}

type cancelPlan struct {
	at     cancelAt
	cancel context.CancelFunc
}

func planOf(ctx context.Context) cancelPlan {
	p, _ := ctx.Value(cancelKey{}).(cancelPlan)
	return p
}

// TestCancelledCallsReportWhatWasKept: calls whose
// context ends after their body and before the commit (in the body,
// after the records are appended, or at a random moment, the commit
// included) are undone, and the record OnRecord receives says so: a
// record not marked RolledBack is a change that was kept, and one marked
// RolledBack a change that was not. The log agrees with both.
func TestCancelledCallsReportWhatWasKept(t *testing.T) {
	const calls, workers = 400, 4
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		ctx := context.Background()
		createModel(t, db)
		db.SetMaxOpenConns(workers + 2)
		s := newStore(t, db, &sqlstore.Options{MaxAttempts: 100, BeforeCommit: func(ctx context.Context, _ *sql.Tx) error {
			if p := planOf(ctx); p.at == cancelBeforeCommit {
				p.cancel()
			}
			return nil
		}})
		var seen recorder
		reg := actions.NewRegistry(&actions.Options{Store: s, OnRecord: seen.add})
		reg.MustRegister(actions.New(actions.Definition{ID: "t/put",
			Parameters: `{"type":"object","required":["n"],"properties":{"n":{"type":"integer"}}}`},
			func(ctx context.Context, p map[string]any, _ *actions.Trace) (any, error) {
				tx := txOf(ctx)
				n, _ := p["n"].(json.Number).Int64()
				if _, err := tx.ExecContext(ctx, db.Q("INSERT INTO model_rows (n, action, params) VALUES (?, 't/put', '{}')"), 100+n); err != nil {
					return nil, err
				}
				if pl := planOf(ctx); pl.at == cancelInBody {
					pl.cancel()
				}
				return n, nil
			}))

		errs := make([]error, calls)
		plans := make([]cancelAt, calls)
		for i := range plans {
			plans[i] = cancelAt(rand.IntN(int(cancelPoints)))
		}
		var wg sync.WaitGroup
		next := make(chan int)
		for range workers {
			wg.Go(func() {
				for i := range next {
					cctx, cancel := context.WithCancel(ctx)
					cctx = context.WithValue(cctx, cancelKey{}, cancelPlan{at: plans[i], cancel: cancel})
					stop := func() bool { return false }
					if plans[i] == cancelAnyTime {
						stop = time.AfterFunc(time.Duration(rand.IntN(3000))*time.Microsecond, cancel).Stop
					}
					_, errs[i] = reg.Run(cctx, actions.Call{Action: "t/put", Params: map[string]any{"n": i}})
					stop()
					cancel()
				}
			})
		}
		for i := range calls {
			next <- i
		}
		close(next)
		wg.Wait()

		kept := map[int]bool{}
		rows, err := db.Query("SELECT n FROM model_rows WHERE action = 't/put'")
		require.NoError(t, err)
		for rows.Next() {
			var n int
			require.NoError(t, rows.Scan(&n))
			kept[n-100] = true
		}
		require.NoError(t, rows.Err())
		rows.Close()

		logged := map[int]bool{}
		recs, err := s.Read(ctx, sqlstore.Filter{})
		require.NoError(t, err)
		for _, r := range recs {
			logged[paramN(t, r.Entry)] = true
		}

		reported := map[int]int{}
		counts := map[string]int{}
		for _, rec := range seen.all() {
			n := paramN(t, rec.Entry)
			reported[n]++
			what := "done"
			switch {
			case rec.RolledBack:
				what = "undone"
				assert.False(t, kept[n], "call %d (cancelled %s): reported rolled back, but its change was kept", n, plans[n])
				assert.Error(t, errs[n], "call %d: an undone call is an error", n)
			default:
				assert.True(t, kept[n], "call %d (cancelled %s): reported %s, but its change was not kept", n, plans[n], rec.Entry.Outcome)
				assert.NoError(t, errs[n], "call %d: a kept call is answered done", n)
			}
			assert.Equal(t, kept[n], logged[n], "call %d: the log holds exactly the kept calls", n)
			counts[plans[n].String()+": "+what]++
		}
		for n := range calls {
			if reported[n] > 1 {
				t.Errorf("call %d reported %d times", n, reported[n])
			}
			if reported[n] == 0 {
				// Cancelled before its unit began: no record, no change.
				assert.False(t, kept[n], "call %d: a change kept without a record", n)
				assert.Error(t, errs[n])
				counts[plans[n].String()+": no record"]++
			}
		}
		t.Logf("%v", fmt.Sprint(counts))
		assert.Positive(t, counts["never: done"])
		assert.Positive(t, counts["in the body: undone"])
		assert.Positive(t, counts["before the commit: undone"])
	})
}

func paramN(t *testing.T, e store.RunEntry) int {
	t.Helper()
	var p struct {
		N int `json:"n"`
	}
	require.NoError(t, json.Unmarshal([]byte(e.Parameters), &p), e.Parameters)
	return p.N
}
