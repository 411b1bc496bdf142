package sqlstore_test

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
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

// orphanChildEnv makes TestOrphanChild the child of
// TestKeyReplicaKilledWhileRunning: driver, dialect and DSN,
// tab-separated.
const orphanChildEnv = "SQLSTORE_ORPHAN_CHILD"

// orphanRegistry is a registry on s with shop/charge, whose body counts
// its runs and inserts a charge; a retry waits at most wait for a claim.
func orphanRegistry(t testing.TB, db *dbtest.DB, s *sqlstore.Store, wait time.Duration, now func() time.Time, runs *atomic.Int64) *actions.Registry {
	t.Helper()
	reg := actions.NewRegistry(&actions.Options{Store: s, KeyWait: wait, Now: now})
	require.NoError(t, reg.Register(actions.Action{Definition: actions.Definition{ID: "shop/charge",
		Parameters: `{"type":"object","properties":{"amount":{"type":"integer"}},"required":["amount"]}`},
		Run: func(ctx context.Context, p map[string]any, _ *actions.Trace) (any, error) {
			runs.Add(1)
			if _, err := txOf(ctx).ExecContext(ctx, db.Dialect.Rebind("INSERT INTO charges (amount) VALUES (?)"), "8"); err != nil {
				return nil, err
			}
			return map[string]any{"charged": p["amount"]}, nil
		}}))
	return reg
}

// TestKeyReplicaKilledWhileRunning: replica-a (a child process, this
// test binary) runs a keyed call whose body writes and then blocks, and
// is killed with SIGKILL while the body runs. Its claim stays
// unanswered: a retry on replica-b is refused in_progress, and the
// body's write died with its transaction. Once a store of replica-a
// settles its orphans, the retry is answered outcome_unknown (never
// retried, a tool result) every time, and the body never runs again;
// the claim of a call replica-c is running is left alone.
func TestKeyReplicaKilledWhileRunning(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		ctx := context.Background()
		createCharges(t, db)
		clock := &keyClock{t: time.Unix(1e9, 0)}

		// replica-c runs a keyed call of its own, still claimed.
		live, err := sqlstore.New(db.DB, db.Dialect, &sqlstore.Options{Origin: "replica-c"})
		require.NoError(t, err)
		require.NoError(t, live.Migrate(ctx))
		liveClaim := store.KeyRecord{Principal: "ann", Action: "shop/charge", Key: "live", Digest: "d",
			Expires: clock.now().Add(time.Hour), Unit: "claim:live"}
		found, err := live.ClaimKey(ctx, liveClaim, clock.now())
		require.NoError(t, err)
		require.Nil(t, found)

		killChildWhileRunning(t, db)

		var runs atomic.Int64
		b, err := sqlstore.New(db.DB, db.Dialect, &sqlstore.Options{Origin: "replica-b"})
		require.NoError(t, err)
		impatient := orphanRegistry(t, db, b, 20*time.Millisecond, clock.now, &runs)
		_, err = impatient.Run(ctx, chargeCall("killed-running", 8))
		assert.ErrorIs(t, err, codes.InProgress, "nobody settled the claim yet")
		assert.Equal(t, 0, chargeCount(t, db), "the body's write died with its transaction")

		n, err := b.SettleOrphans(ctx, "replica-b", clock.now())
		require.NoError(t, err)
		assert.Zero(t, n, "replica-b left nothing")

		// replica-a starts again, on a pool of its own.
		pool, err := sql.Open(db.Driver, db.DSN)
		require.NoError(t, err)
		t.Cleanup(func() { _ = pool.Close() })
		restarted, err := sqlstore.New(pool, db.Dialect, &sqlstore.Options{Origin: "replica-a"})
		require.NoError(t, err)
		require.NoError(t, restarted.Migrate(ctx))
		n, err = restarted.SettleOrphans(ctx, "replica-a", clock.now())
		require.NoError(t, err)
		assert.Equal(t, sqlstore.Orphans{Claims: 1}, n)

		reg := orphanRegistry(t, db, b, time.Minute, clock.now, &runs)
		for i := range 2 {
			_, err = reg.Run(ctx, chargeCall("killed-running", 8))
			var rf *actions.Refusal
			require.ErrorAs(t, err, &rf, "retry %d", i)
			assert.Equal(t, codes.OutcomeUnknown, rf.Code, "retry %d", i)
			assert.Equal(t, codes.RetryNever, rf.Retry)
			assert.Equal(t, codes.TransportToolResult, rf.Transport)
			assert.NotEmpty(t, rf.NextAction)
		}
		_, err = reg.Run(ctx, chargeCall("killed-running", 9))
		assert.ErrorIs(t, err, codes.IdempotencyConflict, "other parameters under the key")
		assert.Zero(t, runs.Load(), "the body never ran again")
		assert.Equal(t, 0, chargeCount(t, db))

		lines := auditLines(t, b)
		require.Len(t, lines, 2, "one audit line per answered retry")
		for _, l := range lines {
			assert.Equal(t, "shop/charge", l.Entry.Action)
			assert.Equal(t, codes.OutcomeUnknown, l.Entry.Error)
			assert.Equal(t, "killed-running", l.Audit.IdempotencyKey)
			assert.True(t, strings.HasPrefix(l.Audit.Answered, "claim:"), l.Audit.Answered)
		}

		n, err = restarted.SettleOrphans(ctx, "replica-a", clock.now())
		require.NoError(t, err)
		assert.Zero(t, n, "an answered claim stays as it is")
		found, err = live.ClaimKey(ctx, liveClaim, clock.now())
		require.NoError(t, err)
		require.NotNil(t, found)
		assert.Nil(t, found.Answer, "replica-c's claim is left alone")
		assert.Equal(t, "claim:live", found.Unit)
	})
}

// killChildWhileRunning starts TestOrphanChild on db as replica-a and
// kills it with SIGKILL once its body wrote and blocks.
func killChildWhileRunning(t *testing.T, db *dbtest.DB) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestOrphanChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), orphanChildEnv+"="+db.Driver+"\t"+db.Dialect.String()+"\t"+db.DSN)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = cmd.Stdout
	require.NoError(t, cmd.Start())
	running := make(chan bool, 1)
	var seen []string
	go func() {
		lines := bufio.NewScanner(out)
		for lines.Scan() {
			if lines.Text() == "running" {
				running <- true
				return
			}
			seen = append(seen, lines.Text())
		}
		running <- false
	}()
	select {
	case ok := <-running:
		if !ok {
			_ = cmd.Wait()
			t.Fatalf("the child ended before its body ran:\n%s", strings.Join(seen, "\n"))
		}
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatal("the child's body did not start within a minute")
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	err = cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	ws, ok := exit.Sys().(syscall.WaitStatus)
	require.True(t, ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL, "the child was killed: %v", err)
}

// TestOrphanChild is the child of TestKeyReplicaKilledWhileRunning; it
// does nothing in a normal run. Its body writes a charge, says
// "running" and waits to be killed.
func TestOrphanChild(t *testing.T) {
	spec := os.Getenv(orphanChildEnv)
	if spec == "" {
		t.Skip("the child process of TestKeyReplicaKilledWhileRunning")
	}
	parts := strings.SplitN(spec, "\t", 3)
	dialect := sqlstore.SQLite
	if parts[1] == sqlstore.PostgreSQL.String() {
		dialect = sqlstore.PostgreSQL
	}
	sqlDB, err := sql.Open(parts[0], parts[2])
	require.NoError(t, err)
	s, err := sqlstore.New(sqlDB, dialect, &sqlstore.Options{Origin: "replica-a"})
	require.NoError(t, err)
	reg := actions.NewRegistry(&actions.Options{Store: s, Now: func() time.Time { return time.Unix(1e9, 0) }})
	require.NoError(t, reg.Register(actions.Action{Definition: actions.Definition{ID: "shop/charge",
		Parameters: `{"type":"object","properties":{"amount":{"type":"integer"}},"required":["amount"]}`},
		Run: func(ctx context.Context, _ map[string]any, _ *actions.Trace) (any, error) {
			if _, err := txOf(ctx).ExecContext(ctx, dialect.Rebind("INSERT INTO charges (amount) VALUES (?)"), "8"); err != nil {
				return nil, err
			}
			fmt.Println("running")
			_ = os.Stdout.Sync()
			select {} // killed while it runs
		}}))
	_, err = reg.Run(context.Background(), chargeCall("killed-running", 8))
	t.Fatalf("the call ended: %v", err)
}

// TestMigrateKeysOrigin: a database at schema version 7 (no origin
// column on actions_keys) holding an unanswered claim and an answered
// key is brought to version 8; the old rows get the empty origin, so
// that SettleOrphans with the empty origin settles the claim and leaves
// the answer as it is.
func TestMigrateKeysOrigin(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		ctx := context.Background()
		s := newStore(t, db, nil)
		for _, q := range []string{
			"ALTER TABLE actions_keys DROP COLUMN origin",
			"INSERT INTO actions_keys (principal, action, idem_key, digest, expires, unit, answer) VALUES ('ann', 'shop/charge', 'k1', 'd', 9000000000000000, 'claim:old', '')",
			`INSERT INTO actions_keys (principal, action, idem_key, digest, expires, unit, answer) VALUES ('ann', 'shop/charge', 'k2', 'd', 9000000000000000, 'u2', '{"value":"1"}')`,
			"UPDATE actions_schema SET version = 7",
		} {
			_, err := db.Exec(q)
			require.NoError(t, err, q)
		}
		require.NoError(t, s.Migrate(ctx))
		var version int
		require.NoError(t, db.QueryRow("SELECT version FROM actions_schema").Scan(&version))
		assert.Equal(t, sqlstore.SchemaVersion, version)

		n, err := s.SettleOrphans(ctx, "replica-a", time.Unix(1e9, 0))
		require.NoError(t, err)
		assert.Zero(t, n)
		n, err = s.SettleOrphans(ctx, "", time.Unix(1e9, 0))
		require.NoError(t, err)
		assert.Equal(t, sqlstore.Orphans{Claims: 1}, n)
		var answers []string
		rows, err := db.Query("SELECT answer FROM actions_keys ORDER BY idem_key")
		require.NoError(t, err)
		defer rows.Close()
		for rows.Next() {
			var a string
			require.NoError(t, rows.Scan(&a))
			answers = append(answers, a)
		}
		require.NoError(t, rows.Err())
		require.Len(t, answers, 2)
		assert.Contains(t, answers[0], `"code":"outcome_unknown"`)
		assert.Equal(t, `{"value":"1"}`, answers[1])
	})
}
