package sqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/internal/dbtest"
	"github.com/actionreg/actions/sqlstore"
	"github.com/actionreg/actions/store"
)

// taskHost is a registry on a database with shop/report, a long call that
// inserts a charge once released: started is closed when its body first
// runs; with obey, the body also stops when its ctx is done.
type taskHost struct {
	s        *sqlstore.Store
	reg      *actions.Registry
	clock    *keyClock
	started  chan struct{}
	release  chan struct{}
	sawDone  chan struct{} // closed when the body saw its ctx done
	once     sync.Once
	doneOnce sync.Once
}

var bob = &identity.Caller{Principal: "bob", Surface: identity.SurfaceUI}

func newTaskHost(t *testing.T, db *dbtest.DB, obey bool) *taskHost {
	t.Helper()
	s, err := sqlstore.New(db.DB, db.Dialect, nil)
	require.NoError(t, err)
	require.NoError(t, s.Migrate(context.Background()))
	h := &taskHost{s: s, clock: &keyClock{t: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)},
		started: make(chan struct{}), release: make(chan struct{}), sawDone: make(chan struct{})}
	h.reg = actions.NewRegistry(&actions.Options{Now: h.clock.now, Store: s})
	params := `{"type":"object","properties":{"amount":{"type":"integer"}},"required":["amount"]}`
	require.NoError(t, h.reg.Register(actions.Action{Definition: actions.Definition{ID: "shop/report", Parameters: params},
		Run: func(ctx context.Context, p map[string]any, _ *actions.Trace) (any, error) {
			if _, err := txOf(ctx).ExecContext(ctx, db.Dialect.Rebind("INSERT INTO charges (amount) VALUES (?)"), p["amount"].(interface{ String() string }).String()); err != nil {
				return nil, err
			}
			h.once.Do(func() { close(h.started) })
			if obey {
				select {
				case <-h.release:
				case <-ctx.Done():
					h.doneOnce.Do(func() { close(h.sawDone) })
					return nil, ctx.Err()
				}
			} else {
				<-h.release
			}
			return map[string]any{"rows": 1}, nil
		}}))
	createCharges(t, db)
	return h
}

func reportCall(amount int, caller *identity.Caller) actions.Call {
	return actions.Call{Action: "shop/report", Params: map[string]any{"amount": amount}, Caller: caller}
}

// await polls the task as a client does until it is terminal.
func await(t *testing.T, reg *actions.Registry, id string) store.Task {
	t.Helper()
	var last store.Task
	require.Eventually(t, func() bool {
		var err error
		last, err = reg.Task(context.Background(), id, ann)
		require.NoError(t, err)
		return last.Status.Terminal()
	}, 20*time.Second, 2*time.Millisecond)
	return last
}

func TestTaskCompletesWithItsUnit(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		h := newTaskHost(t, db, true)
		ctx := context.Background()
		task, err := h.reg.Start(ctx, reportCall(7, ann), actions.TaskOptions{})
		require.NoError(t, err)
		assert.Len(t, task.ID, 43)
		assert.Equal(t, store.TaskWorking, task.Status)
		// Durable before answered: another store on the database finds it.
		other, err := sqlstore.New(db.DB, db.Dialect, nil)
		require.NoError(t, err)
		kept, err := other.TaskByID(ctx, task.ID)
		require.NoError(t, err)
		assert.Equal(t, "ann", kept.Principal)
		assert.Equal(t, store.TaskWorking, kept.Status)
		<-h.started
		close(h.release)
		done := await(t, h.reg, task.ID)
		assert.Equal(t, store.TaskCompleted, done.Status)
		res, err := actions.TaskResult(done)
		require.NoError(t, err)
		assert.Equal(t, `{"rows":1}`, res.Text)
		assert.Equal(t, 1, chargeCount(t, db))
		recs, err := h.s.Read(ctx, sqlstore.Filter{})
		require.NoError(t, err)
		assert.Len(t, recs, 1)
	})
}

func TestTaskCancelledCommitsNothing(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		h := newTaskHost(t, db, true)
		ctx := context.Background()
		task, err := h.reg.Start(ctx, reportCall(7, ann), actions.TaskOptions{})
		require.NoError(t, err)
		<-h.started
		require.NoError(t, h.reg.CancelTask(ctx, task.ID, ann))
		<-h.sawDone
		done := await(t, h.reg, task.ID)
		assert.Equal(t, store.TaskCancelled, done.Status)
		assert.Equal(t, 0, chargeCount(t, db), "the body's insert was undone")
		// A second cancel changes nothing.
		require.NoError(t, h.reg.CancelTask(ctx, task.ID, ann))
		again, err := h.reg.Task(ctx, task.ID, ann)
		require.NoError(t, err)
		assert.Equal(t, store.TaskCancelled, again.Status)
	})
}

func TestTaskLateCancelKeepsCompleted(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		h := newTaskHost(t, db, true)
		ctx := context.Background()
		close(h.release)
		task, err := h.reg.Start(ctx, reportCall(7, ann), actions.TaskOptions{})
		require.NoError(t, err)
		await(t, h.reg, task.ID)
		require.NoError(t, h.reg.CancelTask(ctx, task.ID, ann))
		// And a cancellation written straight to the store is refused too.
		ok, err := h.s.EndTask(ctx, task.ID, store.Task{Status: store.TaskCancelled, Updated: h.clock.now()})
		require.NoError(t, err)
		assert.False(t, ok)
		after, err := h.reg.Task(ctx, task.ID, ann)
		require.NoError(t, err)
		assert.Equal(t, store.TaskCompleted, after.Status)
		assert.Equal(t, 1, chargeCount(t, db))
	})
}

// A task ended by another process while its body still runs (and ignores
// its ctx): the unit finds it ended and commits nothing.
func TestTaskEndedElsewhereCommitsNothing(t *testing.T) {
	db := dbtest.Postgres(t) // SQLite's write lock makes the other writer wait for the unit
	h := newTaskHost(t, db, false)
	ctx := context.Background()
	task, err := h.reg.Start(ctx, reportCall(7, ann), actions.TaskOptions{})
	require.NoError(t, err)
	<-h.started
	other := actions.NewRegistry(&actions.Options{Store: h.s})
	require.NoError(t, other.CancelTask(ctx, task.ID, ann))
	close(h.release)
	done := await(t, h.reg, task.ID)
	assert.Equal(t, store.TaskCancelled, done.Status)
	assert.Equal(t, 0, chargeCount(t, db))
}

func TestTaskOwnerOnly(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		h := newTaskHost(t, db, true)
		ctx := context.Background()
		task, err := h.reg.Start(ctx, reportCall(7, ann), actions.TaskOptions{})
		require.NoError(t, err)
		<-h.started
		_, err = h.reg.Task(ctx, task.ID, bob)
		assert.ErrorIs(t, err, store.ErrTaskNotFound)
		assert.ErrorIs(t, h.reg.CancelTask(ctx, task.ID, bob), store.ErrTaskNotFound)
		_, err = h.reg.Task(ctx, "no-such-task", ann)
		assert.ErrorIs(t, err, store.ErrTaskNotFound)
		close(h.release)
		assert.Equal(t, store.TaskCompleted, await(t, h.reg, task.ID).Status)
	})
}

func TestTaskTTL(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		h := newTaskHost(t, db, true)
		ctx := context.Background()
		task, err := h.reg.Start(ctx, reportCall(7, ann), actions.TaskOptions{TTL: time.Minute})
		require.NoError(t, err)
		<-h.started
		h.clock.add(2 * time.Minute)
		running, err := h.reg.Task(ctx, task.ID, ann)
		require.NoError(t, err, "a running task is kept past its TTL")
		assert.Equal(t, store.TaskWorking, running.Status)
		close(h.release)
		require.Eventually(t, func() bool {
			got, err := h.s.TaskByID(ctx, task.ID)
			require.NoError(t, err)
			return got.Status.Terminal()
		}, 20*time.Second, 2*time.Millisecond)
		n, err := h.s.PurgeTasks(ctx, h.clock.now())
		require.NoError(t, err)
		assert.Equal(t, int64(1), n)
		_, err = h.reg.Task(ctx, task.ID, ann)
		assert.ErrorIs(t, err, store.ErrTaskNotFound, "an ended task past its TTL is gone")
	})
}

func TestTaskKeyedRetry(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		h := newTaskHost(t, db, true)
		ctx := context.Background()
		c := reportCall(7, ann)
		c.IdempotencyKey = "k-1"
		first, err := h.reg.Start(ctx, c, actions.TaskOptions{})
		require.NoError(t, err)
		<-h.started // the first task's unit runs (and holds SQLite's write lock)
		retry, err := h.reg.Start(ctx, c, actions.TaskOptions{})
		require.NoError(t, err)
		assert.Equal(t, first.ID, retry.ID)
		c.Params = map[string]any{"amount": 8}
		_, err = h.reg.Start(ctx, c, actions.TaskOptions{})
		assert.ErrorIs(t, err, codes.IdempotencyConflict)
		close(h.release)
		await(t, h.reg, first.ID)
		assert.Equal(t, 1, chargeCount(t, db))
	})
}

func TestTaskRefusedCallCompletes(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		h := newTaskHost(t, db, true)
		task, err := h.reg.Start(context.Background(), actions.Call{Action: "shop/report", Params: map[string]any{"amount": "x"}, Caller: ann}, actions.TaskOptions{})
		require.NoError(t, err)
		done := await(t, h.reg, task.ID)
		assert.Equal(t, store.TaskCompleted, done.Status)
		_, err = actions.TaskResult(done)
		var rf *actions.Refusal
		require.ErrorAs(t, err, &rf)
		assert.Equal(t, codes.InvalidParameters, rf.Code)
	})
}

// A task whose process died stays working until a replica of its origin
// starts again and settles it: completed, answered outcome_unknown.
func TestTaskSettledAfterItsProcessDied(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		ctx := context.Background()
		h := newTaskHost(t, db, true)
		dead, err := sqlstore.New(db.DB, db.Dialect, &sqlstore.Options{Origin: "replica-a"})
		require.NoError(t, err)
		now := h.clock.now()
		orphan := store.Task{ID: "orphan-task", Principal: "ann", Action: "shop/report", Status: store.TaskWorking, Created: now, Updated: now, TTL: time.Hour}
		_, created, err := dead.CreateTask(ctx, orphan)
		require.NoError(t, err)
		require.True(t, created)
		n, err := h.s.SettleOrphans(ctx, "replica-b", now)
		require.NoError(t, err)
		assert.Zero(t, n, "another origin's tasks are left alone")
		n, err = h.s.SettleOrphans(ctx, "replica-a", now)
		require.NoError(t, err)
		assert.Equal(t, sqlstore.Orphans{Tasks: 1}, n)
		got, err := h.reg.Task(ctx, orphan.ID, ann)
		require.NoError(t, err)
		assert.Equal(t, store.TaskCompleted, got.Status)
		_, rerr := actions.TaskResult(got)
		assert.ErrorIs(t, rerr, codes.OutcomeUnknown)
		n, err = h.s.SettleOrphans(ctx, "replica-a", now)
		require.NoError(t, err)
		assert.Zero(t, n, "a terminal status stays")
	})
}

// taskChildEnv makes TestTaskChild the child of TestTaskReplicaKilled:
// driver, dialect and DSN, tab-separated.
const taskChildEnv = "SQLSTORE_TASK_CHILD"

// TestTaskReplicaKilled: replica-a (a child process, this test binary)
// starts a task under an idempotency key whose body writes, then is
// killed with SIGKILL while the body runs. Another replica sees the task
// working, and nothing of the body's write (its transaction died with
// it); once replica-a starts
// again and settles its orphans, the task and its call's key are
// answered outcome_unknown, and a retry under the key runs nothing.
func TestTaskReplicaKilled(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		h := newTaskHost(t, db, true) // replica-b, and the charges table
		cmd := exec.Command(os.Args[0], "-test.run=^TestTaskChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), taskChildEnv+"="+db.Driver+"\t"+db.Dialect.String()+"\t"+db.DSN)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "%s", out)
		ws, ok := exit.Sys().(syscall.WaitStatus)
		require.True(t, ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL, "the child was killed: %v\n%s", err, out)
		id := strings.TrimSpace(string(out[strings.LastIndex(string(out), "task ")+len("task "):]))
		ctx := context.Background()

		seen, err := h.reg.Task(ctx, id, ann)
		require.NoError(t, err, "%s", out)
		assert.Equal(t, store.TaskWorking, seen.Status, "nothing ended it")
		assert.Equal(t, 0, chargeCount(t, db), "the body's write died with its transaction")

		restarted, err := sqlstore.New(db.DB, db.Dialect, &sqlstore.Options{Origin: "replica-a"})
		require.NoError(t, err)
		n, err := restarted.SettleOrphans(ctx, "replica-a", h.clock.now())
		require.NoError(t, err)
		assert.Equal(t, sqlstore.Orphans{Tasks: 1, Claims: 1}, n, "the task, and its call's key")
		settled, err := h.reg.Task(ctx, id, ann)
		require.NoError(t, err)
		assert.Equal(t, store.TaskCompleted, settled.Status)
		_, rerr := actions.TaskResult(settled)
		assert.ErrorIs(t, rerr, codes.OutcomeUnknown)

		// A retry under the key gets the settled task; nothing runs.
		retried, err := h.reg.Start(ctx, actions.Call{Action: "shop/report", Params: map[string]any{}, Caller: ann, IdempotencyKey: "report-1"}, actions.TaskOptions{})
		require.NoError(t, err)
		assert.Equal(t, id, retried.ID)
		_, rerr = actions.TaskResult(retried)
		assert.ErrorIs(t, rerr, codes.OutcomeUnknown)
		assert.Equal(t, 0, chargeCount(t, db))
	})
}

// TestTaskChild is the child of TestTaskReplicaKilled; it does nothing
// in a normal run.
func TestTaskChild(t *testing.T) {
	spec := os.Getenv(taskChildEnv)
	if spec == "" {
		t.Skip("the child process of TestTaskReplicaKilled")
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
	reg := actions.NewRegistry(&actions.Options{Store: s})
	wrote := make(chan struct{})
	require.NoError(t, reg.Register(actions.Action{Definition: actions.Definition{ID: "shop/report", Parameters: `{"type":"object"}`},
		Run: func(ctx context.Context, _ map[string]any, _ *actions.Trace) (any, error) {
			if _, err := txOf(ctx).ExecContext(ctx, dialect.Rebind("INSERT INTO charges (amount) VALUES (?)"), "8"); err != nil {
				return nil, err
			}
			close(wrote)
			select {} // killed while it runs
		}}))
	task, err := reg.Start(context.Background(), actions.Call{Action: "shop/report", Caller: ann, IdempotencyKey: "report-1"}, actions.TaskOptions{})
	require.NoError(t, err)
	<-wrote
	fmt.Printf("task %s\n", task.ID)
	_ = os.Stdout.Sync()
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}
