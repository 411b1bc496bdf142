package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/sqlstore"
)

// counterTable runs the counter target's cells and prints its table.
func counterTable(engines, clients, replicas, works, modes string, dur time.Duration) {
	fmt.Printf("| engine | setup | work | replicas | clients | calls/s | p50 | p99 | max | errors | lost | order faults |\n")
	fmt.Printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, engine := range split(engines) {
		ms := split(modes)
		if len(ms) == 0 {
			ms = []string{"queue", "commit", "locks"}
		}
		for _, mode := range ms {
			if (engine == "postgresql") != slices.Contains([]string{"commit", "locks", "serial"}, mode) {
				continue
			}
			for _, work := range split(works) {
				for _, r := range ints(replicas) {
					if engine == "memory" && r > 1 {
						continue
					}
					for _, c := range ints(clients) {
						row, err := cell(engine, mode, work, r, c, dur)
						if err != nil {
							fail(fmt.Errorf("%s %s %s r=%d c=%d: %w", engine, mode, work, r, c, err))
						}
						fmt.Println(row)
					}
				}
			}
		}
	}
}

// replica is one store and its registry, on pools of its own.
type replica struct {
	store *sqlstore.Store
	reg   *actions.Registry
	close func()
}

// database opens a fresh database of engine; open opens one replica on
// it; drop removes it.
func database(engine, mode string) (open func(origin string) (*replica, error), dialect sqlstore.Dialect, drop func(), err error) {
	switch engine {
	case "memory":
		return memoryDatabase(mode)
	case "file":
		return fileDatabase(mode)
	case "postgresql":
		return postgresDatabase(mode)
	}
	return nil, 0, nil, fmt.Errorf("unknown engine %q", engine)
}

// memoryDatabase is an in-memory SQLite database.
func memoryDatabase(mode string) (open func(origin string) (*replica, error), dialect sqlstore.Dialect, drop func(), err error) {
	// One connection: each connection to :memory: is a database.
	var once sync.Once
	var db *sql.DB
	open = func(origin string) (*replica, error) {
		var err error
		once.Do(func() {
			db, err = sql.Open("sqlite", "file::memory:?_pragma=foreign_keys(1)")
			db.SetMaxOpenConns(1)
			db.SetConnMaxIdleTime(0)
			db.SetConnMaxLifetime(0)
		})
		if err != nil {
			return nil, err
		}
		o := &sqlstore.Options{Origin: origin}
		if mode == "plain" {
			o.Writers = -1
		}
		return newReplica(db, sqlstore.SQLite, o, func() {})
	}
	return open, sqlstore.SQLite, func() {
		if db != nil {
			_ = db.Close()
		}
	}, nil
}

// fileDatabase is a SQLite file in a temporary folder.
func fileDatabase(mode string) (open func(origin string) (*replica, error), dialect sqlstore.Dialect, drop func(), err error) {
	dir, err := os.MkdirTemp("", "actions-load")
	if err != nil {
		return nil, 0, nil, err
	}
	path := filepath.Join(dir, "load.db")
	open = func(origin string) (*replica, error) {
		if mode == "plain" {
			db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(wal)&_pragma=foreign_keys(1)&_txlock=immediate")
			if err != nil {
				return nil, err
			}
			return newReplica(db, sqlstore.SQLite, &sqlstore.Options{Origin: origin}, func() { _ = db.Close() })
		}
		w, r, err := sqlstore.OpenSQLite("sqlite", path)
		if err != nil {
			return nil, err
		}
		return newReplica(w, sqlstore.SQLite, &sqlstore.Options{Origin: origin, Readers: r}, func() { _ = w.Close(); _ = r.Close() })
	}
	return open, sqlstore.SQLite, func() { _ = os.RemoveAll(dir) }, nil
}

// postgresDatabase is a fresh database on the cluster of
// ACTIONS_TEST_POSTGRES.
func postgresDatabase(mode string) (open func(origin string) (*replica, error), dialect sqlstore.Dialect, drop func(), err error) {
	base := os.Getenv("ACTIONS_TEST_POSTGRES")
	if base == "" {
		return nil, 0, nil, fmt.Errorf("ACTIONS_TEST_POSTGRES is not set (eval \"$(scripts/pg-cluster.sh start)\")")
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		return nil, 0, nil, err
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "actions_load_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		_ = admin.Close()
		return nil, 0, nil, err
	}
	u, err := url.Parse(base)
	if err != nil {
		return nil, 0, nil, err
	}
	u.Path = "/" + name
	open = func(origin string) (*replica, error) {
		db, err := sql.Open("pgx", u.String())
		if err != nil {
			return nil, err
		}
		o := &sqlstore.Options{Origin: origin, Serial: mode == "serial"}
		if mode == "locks" {
			// The body reads its row in its UPDATE, under the row's
			// lock: what OrderLocks asks, and then read committed is
			// enough (docs/database.md).
			o.Order, o.Isolation = sqlstore.OrderLocks, sql.LevelReadCommitted
		}
		return newReplica(db, sqlstore.PostgreSQL, o, func() { _ = db.Close() })
	}
	return open, sqlstore.PostgreSQL, func() {
		_, _ = admin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
		_ = admin.Close()
	}, nil
}

// newReplica makes the store on db and its registry with t/add.
func newReplica(db *sql.DB, dialect sqlstore.Dialect, o *sqlstore.Options, closeFn func()) (*replica, error) {
	s, err := sqlstore.New(db, dialect, o)
	if err != nil {
		return nil, err
	}
	if err := s.Migrate(context.Background()); err != nil {
		return nil, err
	}
	reg := actions.NewRegistry(&actions.Options{Store: s})
	q := dialect.Rebind("UPDATE load_kv SET n = n + 1 WHERE k = ? RETURNING n")
	reg.MustRegister(actions.New(actions.Definition{ID: "t/add",
		Parameters: `{"type":"object","required":["k"],"properties":{"k":{"type":"string"}}}`},
		func(ctx context.Context, p map[string]any, _ *actions.Trace) (any, error) {
			tx, _ := sqlstore.Tx(ctx)
			var n int64
			err := tx.QueryRowContext(ctx, q, p["k"]).Scan(&n)
			return map[string]any{"n": n}, err
		}))
	return &replica{store: s, reg: reg, close: closeFn}, nil
}

// cell runs one cell and returns its table row.
func cell(engine, mode, work string, nrep, nclients int, dur time.Duration) (string, error) {
	open, dialect, drop, err := database(engine, mode)
	if err != nil {
		return "", err
	}
	defer drop()
	reps := make([]*replica, nrep)
	for i := range reps {
		if reps[i], err = open("r" + strconv.Itoa(i)); err != nil {
			return "", err
		}
		defer reps[i].close()
	}
	db := reps[0].store.DB()
	keys := make([]string, nclients)
	for c := range keys {
		keys[c] = "c" + strconv.Itoa(c)
		if work == "hot" {
			keys[c] = "hot" + strconv.Itoa(c%2)
		}
	}
	if _, err := db.Exec("CREATE TABLE IF NOT EXISTS load_kv (k TEXT PRIMARY KEY, n BIGINT NOT NULL)"); err != nil {
		return "", err
	}
	for _, k := range keys {
		if _, err := db.Exec(dialect.Rebind("INSERT INTO load_kv (k, n) VALUES (?, 0) ON CONFLICT DO NOTHING"), k); err != nil {
			return "", err
		}
	}
	ctx := context.Background()
	all, nerr, elapsed := drive(ctx, reps, keys, dur)
	if nerr > 0 {
		fmt.Fprintf(os.Stderr, "load: %s %s %s r=%d c=%d: %d calls refused\n", engine, mode, work, nrep, nclients, nerr)
	}
	slices.Sort(all)
	done := len(all)
	var sum int64
	if err := db.QueryRow("SELECT COALESCE(SUM(n), 0) FROM load_kv").Scan(&sum); err != nil {
		return "", err
	}
	lost := int64(done) - sum
	faults, logged, err := orderFaults(ctx, reps[0].store)
	if err != nil {
		return "", err
	}
	if logged != done {
		fmt.Fprintf(os.Stderr, "load: %s %s %s r=%d c=%d: %d calls done, %d kept in the log\n", engine, mode, work, nrep, nclients, done, logged)
	}
	pct := func(p float64) time.Duration {
		if done == 0 {
			return 0
		}
		return all[min(done-1, int(p*float64(done)))]
	}
	var maxd time.Duration
	if done > 0 {
		maxd = all[done-1]
	}
	return fmt.Sprintf("| %s | %s | %s | %d | %d | %.0f | %s | %s | %s | %d | %d | %d |",
		engine, mode, work, nrep, nclients, float64(done)/elapsed.Seconds(),
		ms(pct(0.50)), ms(pct(0.99)), ms(maxd), nerr, lost, faults), nil
}

// drive runs one client per key for dur, client c on replica c mod
// len(reps), and returns the latencies of the calls done, the count of
// refused ones (the first is printed) and the time it took.
func drive(ctx context.Context, reps []*replica, keys []string, dur time.Duration) (all []time.Duration, nerr int, elapsed time.Duration) {
	nclients := len(keys)
	lat := make([][]time.Duration, nclients)
	errs := make([]int, nclients)
	var firstErr error
	var mu sync.Mutex
	start := time.Now()
	deadline := start.Add(dur)
	var wg sync.WaitGroup
	for c := range nclients {
		reg := reps[c%len(reps)].reg
		params := []byte(`{"k":"` + keys[c] + `"}`)
		wg.Go(func() {
			for time.Now().Before(deadline) {
				t0 := time.Now()
				_, err := reg.Run(ctx, actions.Call{Action: "t/add", Params: params})
				d := time.Since(t0)
				if err != nil {
					errs[c]++
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					continue
				}
				lat[c] = append(lat[c], d)
			}
		})
	}
	wg.Wait()
	elapsed = time.Since(start)
	for c := range nclients {
		all = append(all, lat[c]...)
		nerr += errs[c]
	}
	if firstErr != nil {
		fmt.Fprintf(os.Stderr, "load: first error: %v\n", firstErr)
	}
	return all, nerr, elapsed
}

// orderFaults reads the kept records of t/add in Seq order and counts
// the answers that are not their row's previous answer plus one.
func orderFaults(ctx context.Context, s *sqlstore.Store) (faults, logged int, err error) {
	recs, err := s.Read(ctx, sqlstore.Filter{Action: "t/add"})
	if err != nil {
		return 0, 0, err
	}
	last := map[string]int64{}
	for _, r := range recs {
		var p struct{ K string }
		var res struct{ N int64 }
		if json.Unmarshal([]byte(r.Entry.Parameters), &p) != nil || json.Unmarshal([]byte(r.Entry.Result), &res) != nil {
			faults++
			continue
		}
		if res.N != last[p.K]+1 {
			faults++
		}
		last[p.K] = res.N
	}
	return faults, len(recs), nil
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 2, 64) + " ms"
}
