// Package dbtest opens the real databases the tests run on: an SQLite file
// in the test's temp dir (modernc.org/sqlite, in process), and a fresh
// PostgreSQL database on the server ACTIONS_TEST_POSTGRES names (pgx's
// stdlib driver). Tests only: the library itself imports no driver.
package dbtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver
	_ "modernc.org/sqlite"             // the "sqlite" driver

	"github.com/actionreg/actions/sqlstore"
)

// EnvPostgres names the variable holding the PostgreSQL DSN of the tests,
// such as postgres://postgres@/postgres?host=/tmp/pg&sslmode=disable.
// .ci/run always sets it (scripts/pg-cluster.sh starts the server).
const EnvPostgres = "ACTIONS_TEST_POSTGRES"

// DB is an open test database and how to reach it again.
type DB struct {
	*sql.DB
	Dialect sqlstore.Dialect
	// DSN opens the same database again (another pool, another process).
	DSN string
	// Driver is the database/sql driver name: "sqlite" or "pgx".
	Driver string
}

// Name is the dialect's name, for subtest names.
func (d *DB) Name() string { return d.Dialect.String() }

// Each runs fn as a subtest on SQLite, then on PostgreSQL; the PostgreSQL
// subtest skips, saying why, when ACTIONS_TEST_POSTGRES is not set.
func Each(t *testing.T, fn func(t *testing.T, db *DB)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) { fn(t, SQLite(t)) })
	t.Run("postgresql", func(t *testing.T) { fn(t, Postgres(t)) })
}

// SQLiteDSN is the DSN of an SQLite file at path as the tests and the
// example host open it: write-ahead log, transactions that take the write
// lock when they begin, and a 10 s wait on a busy database.
func SQLiteDSN(path string) string {
	return "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(wal)&_pragma=foreign_keys(1)&_txlock=immediate"
}

// SQLite opens a new SQLite file in the test's temp dir, closed at the
// test's end.
func SQLite(t testing.TB) *DB {
	t.Helper()
	return openSQLite(t, SQLiteDSN(filepath.Join(t.TempDir(), "test.db")))
}

// SQLiteDeferred is [SQLite] with transactions that begin deferred (a
// plain BEGIN): they read without the write lock, so that two writers
// conflict when the second writes, with SQLITE_BUSY.
func SQLiteDeferred(t testing.TB) *DB {
	t.Helper()
	dsn := strings.Replace(SQLiteDSN(filepath.Join(t.TempDir(), "test.db")), "_txlock=immediate", "_txlock=deferred", 1)
	return openSQLite(t, dsn)
}

func openSQLite(t testing.TB, dsn string) *DB {
	t.Helper()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return &DB{DB: db, Dialect: sqlstore.SQLite, DSN: dsn, Driver: "sqlite"}
}

// skipNotice prints the PostgreSQL skip once per test binary.
var skipNotice sync.Once

// Postgres creates a fresh database on the server ACTIONS_TEST_POSTGRES
// names, dropped at the test's end; it skips the test when the variable is
// not set.
func Postgres(t testing.TB) *DB {
	t.Helper()
	base := os.Getenv(EnvPostgres)
	if base == "" {
		// go test shows a skip only under -v: say once, on stderr, which
		// engine went untested, so a plain run does not look complete.
		skipNotice.Do(func() {
			fmt.Fprintln(os.Stderr, "dbtest: PostgreSQL tests skipped: "+EnvPostgres+" is not set (scripts/pg-cluster.sh start prints it)")
		})
		t.Skip("PostgreSQL: " + EnvPostgres + " is not set (scripts/pg-cluster.sh start prints it); .ci/run always sets it")
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "actions_test_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("PostgreSQL at %s: %v", EnvPostgres, err)
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	dsn := u.String()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = db.Close()
		admin, err := sql.Open("pgx", base)
		if err != nil {
			return
		}
		defer admin.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	return &DB{DB: db, Dialect: sqlstore.PostgreSQL, DSN: dsn, Driver: "pgx"}
}

// Q rewrites the ? parameters of q as $1, $2... for PostgreSQL.
func (d *DB) Q(q string) string { return Rebind(d.Dialect, q) }

// Rebind rewrites the ? parameters of q as $1, $2... for PostgreSQL; for
// SQLite it returns q. q must hold no ? inside a literal.
func Rebind(dialect sqlstore.Dialect, q string) string {
	return dialect.Rebind(q)
}
