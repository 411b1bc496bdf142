package sqlstore_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"hash/fnv"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/internal/dbtest"
	"github.com/actionreg/actions/sqlstore"
	"github.com/actionreg/actions/store"
)

// TestOrderLocksReplaysInLogOrder runs, from 8 writers at read
// committed under OrderLocks, t/inc (x = x + 1) and t/copy (y = y + x,
// x read FOR SHARE: the read-write dependency a commit order can invert),
// and replays the log in Seq order on two counters: every answer must be
// what the replay computes, and the rows what the log sums to.
func TestOrderLocksReplaysInLogOrder(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		ctx := context.Background()
		for _, q := range []string{
			"CREATE TABLE ord_kv (k TEXT PRIMARY KEY, n BIGINT NOT NULL)",
			"INSERT INTO ord_kv (k, n) VALUES ('x', 0), ('y', 0)",
		} {
			_, err := db.Exec(q)
			require.NoError(t, err)
		}
		s := newStore(t, db, &sqlstore.Options{Order: sqlstore.OrderLocks, Isolation: sql.LevelReadCommitted, MaxAttempts: 200})
		share := ""
		if db.Dialect == sqlstore.PostgreSQL {
			share = " FOR SHARE"
		}
		reg := actions.NewRegistry(&actions.Options{Store: s})
		schema := `{"type":"object"}`
		reg.MustRegister(actions.New(actions.Definition{ID: "t/inc", Parameters: schema},
			func(ctx context.Context, _ map[string]any, _ *actions.Trace) (any, error) {
				tx := txOf(ctx)
				var n int64
				err := tx.QueryRowContext(ctx, "UPDATE ord_kv SET n = n + 1 WHERE k = 'x' RETURNING n").Scan(&n)
				return n, err
			}))
		reg.MustRegister(actions.New(actions.Definition{ID: "t/copy", Parameters: schema},
			func(ctx context.Context, _ map[string]any, _ *actions.Trace) (any, error) {
				tx := txOf(ctx)
				var x int64
				if err := tx.QueryRowContext(ctx, "SELECT n FROM ord_kv WHERE k = 'x'"+share).Scan(&x); err != nil {
					return nil, err
				}
				_, err := tx.ExecContext(ctx, db.Q("UPDATE ord_kv SET n = n + ? WHERE k = 'y'"), x)
				return x, err
			}))
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for i := range 25 {
					action := "t/inc"
					if (w+i)%3 == 0 {
						action = "t/copy"
					}
					_, err := reg.Run(ctx, actions.Call{Action: action, Params: []byte(`{}`)})
					assert.NoError(t, err)
				}
			})
		}
		wg.Wait()
		recs, err := s.Read(ctx, sqlstore.Filter{})
		require.NoError(t, err)
		require.Len(t, recs, 200)
		var x, y int64
		for _, r := range recs {
			var got int64
			require.NoError(t, json.Unmarshal([]byte(r.Entry.Result), &got))
			switch r.Entry.Action {
			case "t/inc":
				x++
				assert.Equal(t, x, got, "seq %d: t/inc", r.Seq)
			case "t/copy":
				assert.Equal(t, x, got, "seq %d: t/copy read x", r.Seq)
				y += got
			}
		}
		var dbx, dby int64
		require.NoError(t, db.QueryRow("SELECT n FROM ord_kv WHERE k = 'x'").Scan(&dbx))
		require.NoError(t, db.QueryRow("SELECT n FROM ord_kv WHERE k = 'y'").Scan(&dby))
		assert.Equal(t, []int64{x, y}, []int64{dbx, dby}, "the rows against the log replayed")
	})
}

// TestLockOutsideUnit refuses a lock with no unit to hold it.
func TestLockOutsideUnit(t *testing.T) {
	assert.ErrorContains(t, sqlstore.Lock(context.Background(), "k"), "outside a unit")
}

// TestOpenSQLiteQueuesWriters runs 8 writers on the pools of OpenSQLite:
// the units run one at a time, every call is kept, and a View reads from
// the read pool while a unit is running.
func TestOpenSQLiteQueuesWriters(t *testing.T) {
	ctx := context.Background()
	w, r, err := sqlstore.OpenSQLite("sqlite", filepath.Join(t.TempDir(), "q.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.Close(); _ = r.Close() })
	s, err := sqlstore.New(w, sqlstore.SQLite, &sqlstore.Options{Readers: r})
	require.NoError(t, err)
	require.NoError(t, s.Migrate(ctx))
	_, err = w.Exec("CREATE TABLE q_kv (k TEXT PRIMARY KEY, n INTEGER NOT NULL)")
	require.NoError(t, err)
	_, err = w.Exec("INSERT INTO q_kv (k, n) VALUES ('a', 0)")
	require.NoError(t, err)

	var running, most atomic.Int32
	inUnit, release := make(chan struct{}), make(chan struct{})
	var first sync.Once
	reg := actions.NewRegistry(&actions.Options{Store: s})
	reg.MustRegister(actions.New(actions.Definition{ID: "t/add", Parameters: `{"type":"object"}`},
		func(ctx context.Context, _ map[string]any, _ *actions.Trace) (any, error) {
			tx := txOf(ctx)
			n := running.Add(1)
			defer running.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			first.Do(func() { close(inUnit); <-release })
			_, err := tx.ExecContext(ctx, "UPDATE q_kv SET n = n + 1 WHERE k = 'a'")
			return nil, err
		}))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				_, err := reg.Run(ctx, actions.Call{Action: "t/add", Params: []byte(`{}`)})
				assert.NoError(t, err)
			}
		})
	}
	<-inUnit
	// A unit holds the writer; the read pool still answers.
	err = s.View(ctx, func(ctx context.Context) error {
		_, err := s.Read(ctx, sqlstore.Filter{})
		return err
	})
	assert.NoError(t, err)
	close(release)
	wg.Wait()
	assert.Equal(t, int32(1), most.Load(), "units at once")
	var n int
	require.NoError(t, r.QueryRow("SELECT n FROM q_kv WHERE k = 'a'").Scan(&n))
	assert.Equal(t, 160, n)
	recs, err := s.Read(ctx, sqlstore.Filter{})
	require.NoError(t, err)
	assert.Len(t, recs, 160)
}

// TestOpenSQLiteRefusesMemory: ":memory:" (or an empty path) would give
// each pool its own empty database, so that reads find no tables; it is
// refused rather than opened.
func TestOpenSQLiteRefusesMemory(t *testing.T) {
	for _, path := range []string{":memory:", "", "file::memory:?cache=shared"} {
		w, r, err := sqlstore.OpenSQLite("sqlite", path)
		require.Error(t, err, path)
		assert.Nil(t, w)
		assert.Nil(t, r)
	}
}

// TestLockSharedAndClauses holds a key shared and another exclusively in
// a unit, and asks from another connection, without waiting, for each:
// a shared lock of the shared key is granted, an exclusive one is not,
// and the exclusive key is refused both ways. In the unit the clauses are
// " FOR SHARE" and " FOR UPDATE" on PostgreSQL, empty on SQLite (where
// the locks do nothing), and empty in a View and outside a unit.
func TestLockSharedAndClauses(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		ctx := context.Background()
		s := newStore(t, db, &sqlstore.Options{Order: sqlstore.OrderLocks})
		pg := db.Dialect == sqlstore.PostgreSQL
		hash := func(key string) int64 {
			h := fnv.New64a()
			_, _ = h.Write([]byte(key))
			return int64(h.Sum64())
		}
		try := func(fn string, key string) bool {
			conn, err := db.Conn(ctx)
			require.NoError(t, err)
			defer conn.Close()
			var ok bool
			require.NoError(t, conn.QueryRowContext(ctx, "SELECT "+fn+"($1)", hash(key)).Scan(&ok))
			if ok {
				_, err = conn.ExecContext(ctx, "SELECT pg_advisory_unlock_all()")
				require.NoError(t, err)
			}
			return ok
		}
		_, err := s.Atomic(ctx, func(ctx context.Context) store.Unit {
			require.NoError(t, sqlstore.LockShared(ctx, "report", "range"))
			require.NoError(t, sqlstore.Lock(ctx, "row", "name"))
			require.NoError(t, sqlstore.Lock(ctx))
			if !pg {
				assert.Empty(t, sqlstore.ForShare(ctx))
				assert.Empty(t, sqlstore.ForUpdate(ctx))
				return store.Unit{Commit: true}
			}
			assert.Equal(t, " FOR SHARE", sqlstore.ForShare(ctx))
			assert.Equal(t, " FOR UPDATE", sqlstore.ForUpdate(ctx))
			assert.True(t, try("pg_try_advisory_lock_shared", "report"), "shared beside shared")
			assert.False(t, try("pg_try_advisory_lock", "report"), "exclusive beside shared")
			assert.False(t, try("pg_try_advisory_lock_shared", "row"), "shared beside exclusive")
			assert.False(t, try("pg_try_advisory_lock", "range"), "the second key of LockShared")
			assert.False(t, try("pg_try_advisory_lock_shared", "name"), "the second key of Lock")
			return store.Unit{Commit: true}
		})
		require.NoError(t, err)
		if pg {
			assert.True(t, try("pg_try_advisory_lock", "report"), "released at the unit's end")
			assert.True(t, try("pg_try_advisory_lock", "row"), "released at the unit's end")
			assert.True(t, try("pg_try_advisory_lock", "name"), "released at the unit's end")
		}
		require.NoError(t, s.View(ctx, func(ctx context.Context) error {
			assert.Empty(t, sqlstore.ForShare(ctx), "a View is read only")
			return sqlstore.LockShared(ctx, "report")
		}))
		assert.Empty(t, sqlstore.ForShare(ctx))
		assert.ErrorContains(t, sqlstore.LockShared(ctx, "report"), "outside a unit")
	})
}
