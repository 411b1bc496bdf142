package sqlstore_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/internal/dbtest"
	"github.com/actionreg/actions/sqlstore"
	"github.com/actionreg/actions/store"
)

// txEnv gives the bodies the unit's transaction itself (nil outside a
// unit).
func txOf(ctx context.Context) *sql.Tx {
	tx, _ := sqlstore.Tx(ctx)
	return tx
}

// entriesOf are the entries of a result's records, in order.
func entriesOf(res actions.Result) []store.RunEntry {
	out := make([]store.RunEntry, len(res.Records))
	for i, r := range res.Records {
		out[i] = r.Entry
	}
	return out
}

// createModel makes the model table of the atomicity tests, with three
// rows a rollback must leave as they are.
func createModel(t testing.TB, db *dbtest.DB) {
	t.Helper()
	for _, q := range []string{
		"CREATE TABLE model_rows (n INTEGER PRIMARY KEY, action TEXT NOT NULL, params TEXT NOT NULL)",
		"INSERT INTO model_rows (n, action, params) VALUES (1, 'seed', '{}'), (2, 'seed', '[]'), (3, 'seed', 'é')",
	} {
		_, err := db.Exec(q)
		require.NoError(t, err)
	}
}

// dump is the model table as text, row by row.
func dump(t testing.TB, db *dbtest.DB) string {
	t.Helper()
	rows, err := db.Query("SELECT n, action, params FROM model_rows ORDER BY n")
	require.NoError(t, err)
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var n int
		var action, params string
		require.NoError(t, rows.Scan(&n, &action, &params))
		fmt.Fprintf(&b, "%d\t%s\t%s\n", n, action, params)
	}
	require.NoError(t, rows.Err())
	return b.String()
}

// writeRow is what every body of the atomicity tests does first: it adds
// a row naming its action and parameters, and touches a seeded row.
func writeRow(ctx context.Context, db *dbtest.DB, tx *sql.Tx, action string, p map[string]any) error {
	text, err := actions.CanonicalJSON(p)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, db.Q("INSERT INTO model_rows (n, action, params) SELECT coalesce(max(n), 0) + 1, ?, ? FROM model_rows"), action, string(text)); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, "UPDATE model_rows SET params = params || '+' WHERE n = 1")
	return err
}

// batchFixture is a file of testdata/batches (see its README).
type batchFixture struct {
	Limits struct {
		MaxBatchCalls        int `json:"max_batch_calls"`
		MaxPlaceholderLength int `json:"max_placeholder_length"`
		MaxPlaceholders      int `json:"max_placeholders"`
	} `json:"limits"`
	Actions []struct {
		ID         string          `json:"id"`
		Parameters json.RawMessage `json:"parameters"`
		Returns    json.RawMessage `json:"returns"`
		Fails      string          `json:"fails"`
	} `json:"actions"`
	Batch     json.RawMessage `json:"batch"`
	BatchText string          `json:"batch_text"`
	Expect    struct {
		Entries []json.RawMessage `json:"entries"`
		Error   *struct {
			Code string `json:"code"`
		} `json:"error"`
	} `json:"expect"`
}

// fixtureRegistry registers a fixture's actions, on store s, with bodies
// that write to the model through the transaction before they answer.
func fixtureRegistry(t *testing.T, db *dbtest.DB, s *sqlstore.Store, f *batchFixture) *actions.Registry {
	t.Helper()
	reg := actions.NewRegistry(&actions.Options{Store: s, Limits: actions.Limits{
		MaxBatchCalls: f.Limits.MaxBatchCalls, MaxPlaceholderLength: f.Limits.MaxPlaceholderLength,
		MaxPlaceholders: f.Limits.MaxPlaceholders,
	}})
	for _, a := range f.Actions {
		schema := any(map[string]any{"type": "object"})
		if len(a.Parameters) > 0 {
			schema = json.RawMessage(a.Parameters)
		}
		returns, fails, id := a.Returns, a.Fails, a.ID
		require.NoError(t, reg.Register(actions.Action{
			Definition: actions.Definition{ID: id, Parameters: schema},
			Run: func(ctx context.Context, p map[string]any, _ *actions.Trace) (any, error) {
				tx := txOf(ctx)
				if err := writeRow(ctx, db, tx, id, p); err != nil {
					return nil, err
				}
				if fails != "" {
					return nil, actions.NewRefusal(codes.Code(fails), "the fixture's body refuses")
				}
				if string(returns) == `"$params"` {
					return p, nil
				}
				if len(returns) == 0 || string(returns) == "null" {
					return nil, nil
				}
				dec := json.NewDecoder(bytes.NewReader(returns))
				dec.UseNumber()
				var v any
				return v, dec.Decode(&v)
			},
		}), id)
	}
	return reg
}

// TestAtomicityOverBatchFixtures runs every batch fixture in one
// transaction whose bodies write to the model: a batch refused part-way
// leaves the model byte-identical and its entries in the log marked
// rolled back; a done batch leaves its rows and its entries, committed.
func TestAtomicityOverBatchFixtures(t *testing.T) {
	files, err := filepath.Glob("../testdata/batches/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		ctx := context.Background()
		createModel(t, db)
		s := newStore(t, db, nil)
		var refusedPartWay, done int
		for _, file := range files {
			name := strings.TrimSuffix(filepath.Base(file), ".json")
			var f batchFixture
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(data, &f), name)
			reg := fixtureRegistry(t, db, s, &f)
			text := []byte(f.Batch)
			if f.BatchText != "" {
				text = []byte(f.BatchText)
			}
			b, err := reg.DecodeBatch(text)
			if err != nil {
				continue // refused before any transaction
			}
			last := lastSeq(t, s)
			before := dump(t, db)
			res, runErr := reg.Run(ctx, actions.Call{Batch: &b})
			entries := entriesOf(res)

			var want []string
			for _, e := range f.Expect.Entries {
				c, err := actions.CanonicalJSON(json.RawMessage(e))
				require.NoError(t, err)
				want = append(want, string(c))
			}
			got := texts(t, entries)
			require.Equal(t, want, got, "%s: the entries", name)
			recs, err := s.Read(ctx, sqlstore.Filter{After: last, Kept: sqlstore.KeptAndUndone})
			require.NoError(t, err)
			var stored []string
			for i, r := range recs {
				stored = append(stored, r.Text)
				assert.Equal(t, f.Expect.Error != nil, r.RolledBack, "%s: rolled back", name)
				assert.Equal(t, f.Expect.Error != nil, res.Records[i].RolledBack, "%s: the result's records say rolled back too", name)
				assert.True(t, r.Audit.Batch, "%s: the audit record is kept, a batch's step", name)
				assert.Nil(t, r.Audit.Caller, "%s: the host's own call", name)
			}
			assert.Equal(t, want, stored, "%s: the log holds the entries once, in order", name)

			after := dump(t, db)
			if f.Expect.Error != nil {
				require.Error(t, runErr, name)
				assert.Equal(t, before, after, "%s: the model is as it was", name)
				if len(entries) > 0 {
					refusedPartWay++
				}
				continue
			}
			require.NoError(t, runErr, name)
			done++
			assert.Equal(t, len(entries), strings.Count(after, "\n")-strings.Count(before, "\n"), "%s: one row per call, kept", name)
		}
		t.Logf("%d batches refused part-way, %d done", refusedPartWay, done)
		assert.Positive(t, refusedPartWay)
		assert.Positive(t, done)
	})
}

func lastSeq(t testing.TB, s *sqlstore.Store) int64 {
	t.Helper()
	recs, err := s.Read(context.Background(), sqlstore.Filter{Kept: sqlstore.KeptAndUndone})
	require.NoError(t, err)
	if len(recs) == 0 {
		return 0
	}
	return recs[len(recs)-1].Seq
}

func texts(t testing.TB, entries []store.RunEntry) []string {
	t.Helper()
	var out []string
	for _, e := range entries {
		c, err := actions.CanonicalJSON(e)
		require.NoError(t, err)
		out = append(out, string(c))
	}
	return out
}

// writerRegistry has one action, t/write, whose body writes a row and
// then, for the step whose parameters say last, runs hook (when not
// nil); its calls run on store s, and onRecord (when not nil) sees their
// records.
func writerRegistry(t testing.TB, db *dbtest.DB, s *sqlstore.Store, hook func(ctx context.Context, tx *sql.Tx) error, onRecord func(store.Record)) *actions.Registry {
	t.Helper()
	reg := actions.NewRegistry(&actions.Options{Store: s, OnRecord: onRecord})
	require.NoError(t, reg.Register(actions.Action{
		Definition: actions.Definition{ID: "t/write", Parameters: `{"type":"object"}`},
		Run: func(ctx context.Context, p map[string]any, _ *actions.Trace) (any, error) {
			tx := txOf(ctx)
			if err := writeRow(ctx, db, tx, "t/write", p); err != nil {
				return nil, err
			}
			if hook != nil && p["last"] == true {
				return nil, hook(ctx, tx)
			}
			return nil, nil
		},
	}))
	return reg
}

var twoWrites = actions.Batch{Steps: []actions.Step{
	{Call: "t/write", With: map[string]any{"n": 1}},
	{Call: "t/write", With: map[string]any{"n": 2, "last": true}},
}}

// assertNeither checks that the model is as before and that no committed
// entry was written.
func assertNeither(t *testing.T, db *dbtest.DB, s *sqlstore.Store, before string) {
	t.Helper()
	assert.Equal(t, before, dump(t, db), "no change kept")
	committed, err := s.Read(context.Background(), sqlstore.Filter{})
	require.NoError(t, err)
	assert.Empty(t, committed, "no entry committed")
}

// assertUndone checks that the records a unit gave back, and those
// OnRecord saw, are n and all marked rolled back: nothing reports a
// change that was not kept.
func assertUndone(t *testing.T, res actions.Result, seen []store.Record, n int) {
	t.Helper()
	require.Len(t, res.Records, n, "the result's records")
	require.Len(t, seen, n, "OnRecord saw each record once")
	for i := range n {
		assert.True(t, res.Records[i].RolledBack, "result record %d is marked rolled back", i)
		assert.True(t, seen[i].RolledBack, "OnRecord's record %d is marked rolled back", i)
	}
}

// recorder collects what OnRecord receives.
type recorder struct {
	mu   sync.Mutex
	recs []store.Record
}

func (r *recorder) add(rec store.Record) {
	r.mu.Lock()
	r.recs = append(r.recs, rec)
	r.mu.Unlock()
}

func (r *recorder) all() []store.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]store.Record(nil), r.recs...)
}

// TestKillBetweenChangesAndCommit ends the transaction after the bodies
// changed the model and before the commit: by cancelling the context (in
// the last body, which then returns done, and just before the commit),
// and by closing the connection (PostgreSQL: the server ends the
// backend). Neither the changes nor committed entries are left, and
// the records the caller and OnRecord get are marked rolled back.
func TestKillBetweenChangesAndCommit(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		createModel(t, db)
		s := newStore(t, db, nil)
		before := dump(t, db)

		t.Run("cancel in the body", func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var seen recorder
			reg := writerRegistry(t, db, s, func(context.Context, *sql.Tx) error { cancel(); return nil }, seen.add)
			res, err := reg.Run(ctx, actions.Call{Batch: &twoWrites})
			require.ErrorIs(t, err, context.Canceled)
			assert.Equal(t, codes.Cancelled, actions.CodeOf(err))
			assertUndone(t, res, seen.all(), 2)
			assertNeither(t, db, s, before)
		})
		t.Run("cancel before the commit", func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cs := newStore(t, db, &sqlstore.Options{BeforeCommit: func(context.Context, *sql.Tx) error { cancel(); return nil }})
			var seen recorder
			res, err := writerRegistry(t, db, cs, nil, seen.add).Run(ctx, actions.Call{Batch: &twoWrites})
			require.ErrorIs(t, err, context.Canceled)
			assert.Equal(t, codes.Cancelled, actions.CodeOf(err))
			assertUndone(t, res, seen.all(), 2)
			assertNeither(t, db, s, before)
		})
		if db.Dialect == sqlstore.PostgreSQL {
			t.Run("connection closed before the commit", func(t *testing.T) {
				ks := newStore(t, db, &sqlstore.Options{BeforeCommit: func(ctx context.Context, tx *sql.Tx) error {
					var pid int
					if err := tx.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
						return err
					}
					_, err := db.ExecContext(ctx, "SELECT pg_terminate_backend($1)", pid)
					return err
				}})
				var seen recorder
				res, err := writerRegistry(t, db, ks, nil, seen.add).Run(context.Background(), actions.Call{Batch: &twoWrites})
				require.Error(t, err)
				assert.Equal(t, codes.Internal, actions.CodeOf(err), "the store's failure: %v", err)
				assertUndone(t, res, seen.all(), 2)
				assertNeither(t, db, s, before)
			})
		}
		rolled, err := s.Read(context.Background(), sqlstore.Filter{Kept: sqlstore.UndoneOnly})
		require.NoError(t, err)
		assert.NotEmpty(t, rolled, "the undone batches left their trail, marked rolled back")
	})
}

// killChildEnv names the variable that makes TestKillChild the child
// process of TestProcessDiesBeforeCommit: it holds the driver and the
// DSN, tab-separated.
const killChildEnv = "SQLSTORE_KILL_CHILD"

// TestProcessDiesBeforeCommit runs a batch in a child process that exits
// once its entries are written and before the commit: the process dies
// holding the transaction, its connection closes with it.
func TestProcessDiesBeforeCommit(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		createModel(t, db)
		s := newStore(t, db, nil)
		before := dump(t, db)
		cmd := exec.Command(os.Args[0], "-test.run=^TestKillChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), killChildEnv+"="+db.Driver+"\t"+string(db.Dialect.String())+"\t"+db.DSN)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "%s", out)
		require.Equal(t, 7, exit.ExitCode(), "the child died where it should:\n%s", out)
		assertNeither(t, db, s, before)
		all, err := s.Read(context.Background(), sqlstore.Filter{Kept: sqlstore.KeptAndUndone})
		require.NoError(t, err)
		assert.Empty(t, all, "a dead process writes no trail")
	})
}

// TestKillChild is the child of TestProcessDiesBeforeCommit; it does
// nothing in a normal run.
func TestKillChild(t *testing.T) {
	spec := os.Getenv(killChildEnv)
	if spec == "" {
		t.Skip("the child process of TestProcessDiesBeforeCommit")
	}
	parts := strings.SplitN(spec, "\t", 3)
	sqlDB, err := sql.Open(parts[0], parts[2])
	require.NoError(t, err)
	dialect := sqlstore.SQLite
	if parts[1] == sqlstore.PostgreSQL.String() {
		dialect = sqlstore.PostgreSQL
	}
	db := &dbtest.DB{DB: sqlDB, Dialect: dialect, DSN: parts[2], Driver: parts[0]}
	s, err := sqlstore.New(sqlDB, dialect, &sqlstore.Options{BeforeCommit: func(context.Context, *sql.Tx) error { os.Exit(7); return nil }})
	require.NoError(t, err)
	_, err = writerRegistry(t, db, s, nil, nil).Run(context.Background(), actions.Call{Batch: &twoWrites})
	t.Fatalf("the child lived on: %v", err)
}

// TestConflictIsRetriedEntriesOnce makes the first attempt of a call
// conflict for real: after the body read a row, another connection
// changes it and commits, and the body's own write then fails
// (PostgreSQL: serialization failure; SQLite with deferred transactions:
// SQLITE_BUSY). The call runs again, and its entry is in the log once.
func TestConflictIsRetriedEntriesOnce(t *testing.T) {
	run := func(t *testing.T, db *dbtest.DB) {
		ctx := context.Background()
		createModel(t, db)
		s := newStore(t, db, nil)
		var attempts atomic.Int32
		reg := actions.NewRegistry(&actions.Options{Store: s})
		require.NoError(t, reg.Register(actions.Action{
			Definition: actions.Definition{ID: "t/bump", Parameters: `{"type":"object"}`},
			Run: func(ctx context.Context, p map[string]any, _ *actions.Trace) (any, error) {
				tx := txOf(ctx)
				var params string
				if err := tx.QueryRowContext(ctx, "SELECT params FROM model_rows WHERE n = 2").Scan(&params); err != nil {
					return nil, err
				}
				if attempts.Add(1) == 1 {
					if _, err := db.ExecContext(ctx, "UPDATE model_rows SET params = params || 'x' WHERE n = 2"); err != nil {
						return nil, err
					}
				}
				if _, err := tx.ExecContext(ctx, db.Q("UPDATE model_rows SET params = ? WHERE n = 2"), params+"y"); err != nil {
					return nil, fmt.Errorf("bump: %w", err)
				}
				return params + "y", nil
			},
		}))
		res, err := reg.Run(ctx, actions.Call{Action: "t/bump"})
		require.NoError(t, err)
		assert.Equal(t, int32(2), attempts.Load(), "the first attempt conflicted and was run again")
		assert.Equal(t, "[]xy", res.Value, "the second attempt saw the other writer's change")
		require.Len(t, res.Records, 1, "the last attempt's record only")
		assert.False(t, res.Records[0].RolledBack)
		var params string
		require.NoError(t, db.QueryRow("SELECT params FROM model_rows WHERE n = 2").Scan(&params))
		assert.Equal(t, "[]xy", params)
		all, err := s.Read(ctx, sqlstore.Filter{Kept: sqlstore.KeptAndUndone})
		require.NoError(t, err)
		require.Len(t, all, 1, "one entry, committed")
		assert.False(t, all[0].RolledBack)
		assert.Equal(t, texts(t, []store.RunEntry{res.Entry()}), []string{all[0].Text})
	}
	t.Run("sqlite", func(t *testing.T) { run(t, dbtest.SQLiteDeferred(t)) })
	t.Run("postgresql", func(t *testing.T) { run(t, dbtest.Postgres(t)) })
}

// TestConcurrentConflictingBatches: 8 goroutines run 200 batches each,
// every batch adding to the same two counters (read, then write, in a
// random order, so that PostgreSQL also meets deadlocks). No update is
// lost, and the log holds every entry of every committed batch once.
func TestConcurrentConflictingBatches(t *testing.T) {
	const writers, perWriter = 8, 200
	run := func(t *testing.T, db *dbtest.DB, serial bool) {
		ctx := context.Background()
		for _, q := range []string{
			"CREATE TABLE counters (name TEXT PRIMARY KEY, total BIGINT NOT NULL)",
			"INSERT INTO counters (name, total) VALUES ('a', 0), ('b', 0)",
		} {
			_, err := db.Exec(q)
			require.NoError(t, err)
		}
		db.SetMaxOpenConns(writers + 2)
		var retries, most atomic.Int64
		// Eight writers on two hot rows: without Serial, each round of
		// conflicts lets one through, so an unlucky batch may need more
		// than the default 20 attempts.
		s := newStore(t, db, &sqlstore.Options{Serial: serial, MaxAttempts: 200, Backoff: func(n int) time.Duration {
			retries.Add(1)
			for m := most.Load(); int64(n) > m && !most.CompareAndSwap(m, int64(n)); m = most.Load() {
			}
			return sqlstore.DefaultBackoff(n)
		}})
		reg := actions.NewRegistry(&actions.Options{Store: s})
		require.NoError(t, reg.Register(actions.Action{
			Definition: actions.Definition{ID: "t/add", Parameters: `{"type":"object","required":["counter","amount"],
				"properties":{"counter":{"enum":["a","b"]},"amount":{"type":"integer"}}}`},
			Run: func(ctx context.Context, p map[string]any, _ *actions.Trace) (any, error) {
				tx := txOf(ctx)
				amount, _ := p["amount"].(json.Number).Int64()
				var total int64
				if err := tx.QueryRowContext(ctx, db.Q("SELECT total FROM counters WHERE name = ?"), p["counter"]).Scan(&total); err != nil {
					return nil, fmt.Errorf("add: %w", err)
				}
				if _, err := tx.ExecContext(ctx, db.Q("UPDATE counters SET total = ? WHERE name = ?"), total+amount, p["counter"]); err != nil {
					return nil, fmt.Errorf("add: %w", err)
				}
				return total + amount, nil
			},
		}))
		var sumA, sumB, failed atomic.Int64
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for i := range perWriter {
					a, b := int64(w+1), int64(i+1)
					first, second := map[string]any{"counter": "a", "amount": a}, map[string]any{"counter": "b", "amount": b}
					if rand.IntN(2) == 0 {
						first, second = second, first
					}
					batch := actions.Batch{Steps: []actions.Step{{Call: "t/add", With: first}, {Call: "t/add", With: second}}}
					if _, err := reg.Run(ctx, actions.Call{Batch: &batch}); err != nil {
						failed.Add(1)
						t.Errorf("writer %d batch %d: %v", w, i, err)
						continue
					}
					sumA.Add(a)
					sumB.Add(b)
				}
			})
		}
		wg.Wait()
		var totalA, totalB int64
		require.NoError(t, db.QueryRow("SELECT total FROM counters WHERE name = 'a'").Scan(&totalA))
		require.NoError(t, db.QueryRow("SELECT total FROM counters WHERE name = 'b'").Scan(&totalB))
		assert.Equal(t, sumA.Load(), totalA, "no update of a lost")
		assert.Equal(t, sumB.Load(), totalB, "no update of b lost")

		recs, err := s.Read(ctx, sqlstore.Filter{})
		require.NoError(t, err)
		units := map[string][]int{}
		var logA, logB int64
		for _, r := range recs {
			units[r.Unit] = append(units[r.Unit], r.Position)
			var p struct {
				Counter string `json:"counter"`
				Amount  int64  `json:"amount"`
			}
			require.NoError(t, json.Unmarshal([]byte(r.Entry.Parameters), &p))
			if p.Counter == "a" {
				logA += p.Amount
			} else {
				logB += p.Amount
			}
		}
		assert.Len(t, units, writers*perWriter-int(failed.Load()), "one unit per committed batch")
		for u, pos := range units {
			assert.Equal(t, []int{0, 1}, pos, "unit %s: each entry once, in order", u)
		}
		assert.Equal(t, totalA, logA, "the log adds up to a")
		assert.Equal(t, totalB, logB, "the log adds up to b")
		rolled, err := s.Read(ctx, sqlstore.Filter{Kept: sqlstore.UndoneOnly})
		require.NoError(t, err)
		assert.Empty(t, rolled, "retried attempts leave no trail")
		t.Logf("%d batches committed after %d retries, at most %d for one batch", len(units), retries.Load(), most.Load())
	}
	t.Run("sqlite", func(t *testing.T) { run(t, dbtest.SQLite(t), false) })
	t.Run("sqlite-deferred", func(t *testing.T) { run(t, dbtest.SQLiteDeferred(t), false) })
	t.Run("postgresql", func(t *testing.T) { run(t, dbtest.Postgres(t), false) })
	t.Run("postgresql-serial", func(t *testing.T) { run(t, dbtest.Postgres(t), true) })
}

// TestAtomicPanicGivesTheSlotBack: a unit's work that panics (the store
// does not recover it: the panic is its caller's) rolls the transaction
// back and gives its slot of the writers' queue back, so that the next
// unit runs instead of waiting for a slot nobody will free.
func TestAtomicPanicGivesTheSlotBack(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		ctx := context.Background()
		s := newStore(t, db, &sqlstore.Options{Writers: 1})
		_, err := db.Exec("CREATE TABLE marks (n INTEGER NOT NULL)")
		require.NoError(t, err)
		func() {
			defer func() { assert.NotNil(t, recover(), "the panic goes on") }()
			_, _ = s.Atomic(ctx, func(ctx context.Context) store.Unit {
				tx, _ := sqlstore.Tx(ctx)
				_, err := tx.ExecContext(ctx, "INSERT INTO marks (n) VALUES (1)")
				require.NoError(t, err)
				panic("the unit's work failed")
			})
		}()
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		_, err = s.Atomic(cctx, func(ctx context.Context) store.Unit {
			tx, _ := sqlstore.Tx(ctx)
			_, err := tx.ExecContext(ctx, "INSERT INTO marks (n) VALUES (2)")
			return store.Unit{Commit: err == nil, Err: err}
		})
		require.NoError(t, err, "the next unit ran")
		var marks []int
		rows, err := db.Query("SELECT n FROM marks")
		require.NoError(t, err)
		defer rows.Close()
		for rows.Next() {
			var n int
			require.NoError(t, rows.Scan(&n))
			marks = append(marks, n)
		}
		require.NoError(t, rows.Err())
		assert.Equal(t, []int{2}, marks, "the panicking unit was rolled back")
	})
}
