package sqlstore_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/internal/cpuclock"
	"github.com/actionreg/actions/internal/dbtest"
	"github.com/actionreg/actions/sqlstore"
	"github.com/actionreg/actions/store"
)

// benchEntry is a typical entry: a write with one command, about 300
// bytes of canonical JSON.
var benchEntry = store.RunEntry{
	Action:     "carbon/record_emissions",
	Parameters: `{"actor":"act_6","co2_t":310.25,"period":"2024"}`,
	Steps:      []store.RunStep{{Command: []byte(`{"by":"batch","op":"upsert","schema":"emission","values":{"actor":"act_6","co2_t":310.25,"period":"2024"}}`)}},
	Outcome:    store.OutcomeDone,
	Result:     `{"actor":"grenoble_plant","co2_t":310.25,"period":"2024"}`,
}

// eachDB runs a benchmark on SQLite (a WAL file) and on PostgreSQL.
func eachDB(b *testing.B, fn func(b *testing.B, db *dbtest.DB)) {
	b.Run("sqlite", func(b *testing.B) { fn(b, dbtest.SQLite(b)) })
	b.Run("postgresql", func(b *testing.B) { fn(b, dbtest.Postgres(b)) })
}

// BenchmarkAppend appends one entry per transaction (Store.Write), from
// one writer and from 8 at once; entries/s is the throughput.
func BenchmarkAppend(b *testing.B) {
	eachDB(b, func(b *testing.B, db *dbtest.DB) {
		for _, writers := range []int{1, 8} {
			b.Run(map[int]string{1: "writers=1", 8: "writers=8"}[writers], func(b *testing.B) {
				db.SetMaxOpenConns(writers + 1)
				s := newStore(b, db, nil)
				ctx := context.Background()
				b.ResetTimer()
				var wg sync.WaitGroup
				for w := range writers {
					n := b.N / writers
					if w < b.N%writers {
						n++
					}
					wg.Go(func() {
						for range n {
							if err := s.Write(ctx, sqlstore.NewUnit(), store.Record{Entry: benchEntry}); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "entries/s")
			})
		}
	})
}

// benchRegistry has t/set, a write of one row, as a host's typical call,
// its calls kept by store; txOf gives the body its transaction (nil: no
// row is written).
func benchRegistry(b *testing.B, db *dbtest.DB, store store.Store, txOf func(context.Context) *sql.Tx) *actions.Registry {
	b.Helper()
	reg := actions.NewRegistry(&actions.Options{Store: store})
	reg.MustRegister(actions.New(actions.Definition{ID: "t/set",
		Parameters: `{"type":"object","required":["k","v"],"properties":{"k":{"type":"string"},"v":{"type":"number"}}}`},
		func(ctx context.Context, p map[string]any, _ *actions.Trace) (any, error) {
			tx := txOf(ctx)
			if tx == nil {
				return p, nil
			}
			_, err := tx.ExecContext(ctx, db.Q("UPDATE kv SET v = ?, n = n + 1 WHERE k = ?"), p["v"].(interface{ String() string }).String(), p["k"])
			return p, err
		}))
	return reg
}

// hostTxKey carries the transaction a host opened itself (tx-no-store).
type hostTxKey struct{}

func hostTx(ctx context.Context) *sql.Tx {
	tx, _ := ctx.Value(hostTxKey{}).(*sql.Tx)
	return tx
}

// BenchmarkCallStore compares one call made three ways: Registry.Run
// with the in-memory RunLog as its store (no database: the peer),
// Registry.Run in a transaction the host opens itself, its body changing
// one row and the record kept in a RunLog (what a host pays without the
// SQL store), the same work written by hand with the record's bytes
// inserted (hand-tx, the floor: see handTx), and Registry.Run with the
// sqlstore.Store as its store (the same transaction and row, the record
// appended in it). The target: store ≤ 1.3× hand-tx.
func BenchmarkCallStore(b *testing.B) {
	params := []byte(`{"k":"a","v":1.5}`)
	b.Run("memory-log", func(b *testing.B) {
		reg := benchRegistry(b, nil, actions.NewRunLog(), txOf)
		ctx := context.Background()
		done := cpuPerOp(b)
		for b.Loop() {
			if _, err := reg.Run(ctx, actions.Call{Action: "t/set", Params: params}); err != nil {
				b.Fatal(err)
			}
		}
		done()
	})
	eachDB(b, func(b *testing.B, db *dbtest.DB) {
		if _, err := db.Exec("CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT NOT NULL, n BIGINT NOT NULL)"); err != nil {
			b.Fatal(err)
		}
		if _, err := db.Exec("INSERT INTO kv (k, v, n) VALUES ('a', '0', 0)"); err != nil {
			b.Fatal(err)
		}
		s := newStore(b, db, nil)
		ctx := context.Background()
		b.Run("tx-no-store", func(b *testing.B) {
			reg := benchRegistry(b, db, actions.NewRunLog(), hostTx)
			done := cpuPerOp(b)
			for b.Loop() {
				tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelSerializable})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := reg.Run(context.WithValue(ctx, hostTxKey{}, tx), actions.Call{Action: "t/set", Params: params}); err != nil {
					b.Fatal(err)
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
			}
			done()
		})
		b.Run("hand-tx", func(b *testing.B) { handTx(b, db, params, false) })
		b.Run("store", func(b *testing.B) {
			reg := benchRegistry(b, db, s, txOf)
			done := cpuPerOp(b)
			for b.Loop() {
				if _, err := reg.Run(ctx, actions.Call{Action: "t/set", Params: params}); err != nil {
					b.Fatal(err)
				}
			}
			done()
		})
	})
}

// storedRecord returns the audit and entry texts the store writes for
// one t/set call with params, read back from a store in memory: the bytes
// the hand-written transaction inserts.
func storedRecord(b *testing.B, params []byte) (audit, entry string) {
	b.Helper()
	db := memoryDB(b)
	reg := benchRegistry(b, db, newStore(b, db, nil), txOf)
	if _, err := reg.Run(context.Background(), actions.Call{Action: "t/set", Params: params}); err != nil {
		b.Fatal(err)
	}
	if err := db.QueryRow("SELECT audit, entry FROM actions_run_log ORDER BY seq DESC LIMIT 1").Scan(&audit, &entry); err != nil {
		b.Fatal(err)
	}
	return audit, entry
}

// handTx is the floor a host would write by hand in place of the store:
// per call, one transaction (serializable, the store's default) that
// decodes the parameters into a struct, does t/set's work (the same
// UPDATE of one row of kv, which must exist, sent as text as the body
// sends it) and inserts the record's bytes the store writes (the entry's
// canonical JSON and the audit, taken from a real call) into a table of
// its own with a prepared statement (as the store's insert is), then
// commits. No check, no gate, no canonical text made
// per call: the least a durable log of the same size costs.
//
// With shaped set, the same bytes go into the store's own table, its
// columns and indexes as Migrate made them, one fresh unit id per row:
// the floor of a log that can be read back by unit, by action and by
// stage, which tells the cost of the table's shape from our code's.
func handTx(b *testing.B, db *dbtest.DB, params []byte, shaped bool) {
	audit, entry := storedRecord(b, params)
	ddl := "CREATE TABLE IF NOT EXISTS hand_log (seq INTEGER PRIMARY KEY, audit TEXT NOT NULL, entry TEXT NOT NULL)"
	if db.Dialect == sqlstore.PostgreSQL {
		ddl = "CREATE TABLE IF NOT EXISTS hand_log (seq BIGSERIAL PRIMARY KEY, audit TEXT NOT NULL, entry TEXT NOT NULL)"
	}
	if _, err := db.Exec(ddl); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	update := db.Q("UPDATE kv SET v = ?, n = n + 1 WHERE k = ?")
	q := "INSERT INTO hand_log (audit, entry) VALUES (?, ?)"
	if shaped {
		newStore(b, db, nil) // its tables and indexes
		q = "INSERT INTO actions_run_log (recorded_at, unit, position, origin, action, outcome, rolled_back, audit, entry, error, principal, surface, pending_change, stage)" +
			" VALUES (?, ?, 0, '', 't/set', 'done', ?, ?, ?, '', '', '', '', '')"
	}
	insert, err := db.PrepareContext(ctx, db.Q(q))
	if err != nil {
		b.Fatal(err)
	}
	defer insert.Close()
	done := cpuPerOp(b)
	for b.Loop() {
		var p struct {
			K string      `json:"k"`
			V json.Number `json:"v"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			b.Fatal(err)
		}
		tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelSerializable})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, update, p.V.String(), p.K); err != nil {
			b.Fatal(err)
		}
		args := []any{audit, entry}
		if shaped {
			args = []any{time.Now().UnixMicro(), sqlstore.NewUnit(), false, audit, entry}
		}
		if _, err := tx.StmtContext(ctx, insert).ExecContext(ctx, args...); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	done()
	b.ReportMetric(float64(len(audit)+len(entry)), "record-B")
}

// memoryDB is SQLite in memory on one connection (each connection to
// :memory: is a database of its own), as the example host's default.
func memoryDB(b *testing.B) *dbtest.DB {
	b.Helper()
	db, err := sql.Open("sqlite", "file::memory:")
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	db.SetConnMaxIdleTime(0)
	db.SetConnMaxLifetime(0)
	b.Cleanup(func() { _ = db.Close() })
	d := &dbtest.DB{DB: db, Dialect: sqlstore.SQLite, Driver: "sqlite"}
	for _, q := range []string{
		"CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT NOT NULL, n BIGINT NOT NULL)",
		"INSERT INTO kv (k, v, n) VALUES ('a', '0', 0)",
	} {
		if _, err := db.Exec(q); err != nil {
			b.Fatal(err)
		}
	}
	return d
}

// BenchmarkCallMemory is the store's cost per call with no disk under
// it: t/set (one row's update) on SQLite in memory, in a transaction the
// host opens with its record kept by the in-memory RunLog (tx-runlog, the
// peer), by hand with the same record's bytes inserted into a table of
// its own (hand-tx, the floor: see handTx) and into a table shaped as the
// store's (hand-tx-log), and through sqlstore.Store, the same
// transaction holding the record's insert (store); registry-alone is
// the same call with no store and no SQL, the registry's own share. The
// target: store ≤ 1.3× hand-tx.
func BenchmarkCallMemory(b *testing.B) {
	params := []byte(`{"k":"a","v":1.5}`)
	ctx := context.Background()
	b.Run("tx-runlog", func(b *testing.B) {
		db := memoryDB(b)
		reg := benchRegistry(b, db, actions.NewRunLog(), hostTx)
		done := cpuPerOp(b)
		for b.Loop() {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := reg.Run(context.WithValue(ctx, hostTxKey{}, tx), actions.Call{Action: "t/set", Params: params}); err != nil {
				b.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
		}
		done()
	})
	b.Run("hand-tx", func(b *testing.B) { handTx(b, memoryDB(b), params, false) })
	b.Run("hand-tx-log", func(b *testing.B) { handTx(b, memoryDB(b), params, true) })
	b.Run("registry-alone", func(b *testing.B) {
		reg := benchRegistry(b, nil, nil, func(context.Context) *sql.Tx { return nil })
		done := cpuPerOp(b)
		for b.Loop() {
			if _, err := reg.Run(ctx, actions.Call{Action: "t/set", Params: params}); err != nil {
				b.Fatal(err)
			}
		}
		done()
	})
	b.Run("store", func(b *testing.B) {
		db := memoryDB(b)
		reg := benchRegistry(b, db, newStore(b, db, nil), txOf)
		done := cpuPerOp(b)
		for b.Loop() {
			if _, err := reg.Run(ctx, actions.Call{Action: "t/set", Params: params}); err != nil {
				b.Fatal(err)
			}
		}
		done()
	})
}

// BenchmarkBatchMemory runs batches of t/set through the store on SQLite
// in memory, each batch one transaction; ns/step is the time per step.
// The target: steps=1000 ≤ 1.2× steps=10 per step.
func BenchmarkBatchMemory(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{10, 1000} {
		b.Run("steps="+strconv.Itoa(n), func(b *testing.B) {
			db := memoryDB(b)
			reg := benchRegistry(b, db, newStore(b, db, nil), txOf)
			batch := &actions.Batch{Steps: make([]actions.Step, n)}
			for i := range batch.Steps {
				batch.Steps[i] = actions.Step{Call: "t/set", With: map[string]any{"k": "a", "v": float64(i)}}
			}
			done := cpuPerOp(b)
			for b.Loop() {
				if _, err := reg.Run(ctx, actions.Call{Batch: batch}); err != nil {
					b.Fatal(err)
				}
			}
			done()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/step")
		})
	}
}

// cpuPerOp starts the count of the process's CPU time per call
// (cpu-ns/op), reported by the function it returns: on a machine shared
// with other work, a call's wall time includes its waits for a core.
func cpuPerOp(b *testing.B) func() {
	return cpuclock.PerOp(b.ReportMetric, func() int { return b.N })
}
