package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/actionreg/actions/store"
)

// tasksTable holds the registry's tasks ([store.TaskStore]): one row per task,
// its answer (store.Task.Answer, canonical JSON) written when it ends. Times
// are Unix microseconds, ttl is in milliseconds (0: kept until deleted). The
// unique index maps a retry under an idempotency key to its task.
func tasksTable(integer string) string {
	return `CREATE TABLE IF NOT EXISTS actions_tasks (
		id TEXT PRIMARY KEY,
		principal TEXT NOT NULL,
		action TEXT NOT NULL,
		idem_key TEXT NOT NULL,
		digest TEXT NOT NULL,
		status TEXT NOT NULL,
		message TEXT NOT NULL,
		created ` + integer + ` NOT NULL,
		updated ` + integer + ` NOT NULL,
		ttl ` + integer + ` NOT NULL,
		answer TEXT NOT NULL,
		origin TEXT NOT NULL)`
}

const tasksKeyIndex = `CREATE UNIQUE INDEX IF NOT EXISTS actions_tasks_key ON actions_tasks (principal, action, idem_key) WHERE idem_key <> ''`

const taskColumns = "id, principal, action, idem_key, digest, status, message, created, updated, ttl, answer"

// terminalStatuses is the SQL list of the statuses never overwritten.
const terminalStatuses = "('completed', 'cancelled', 'failed')"

// CreateTask keeps t in actions_tasks and commits before it returns, so
// that any replica's TaskByID finds it; see [store.TaskStore]. A task
// under the same principal, action and key that expired is deleted
// first; one that did not is returned with created false.
func (s *Store) CreateTask(ctx context.Context, t store.Task) (store.Task, bool, error) {
	if err := s.made(); err != nil {
		return store.Task{}, false, err
	}
	if t.Key != "" {
		// A retry finds its task without the write lock, which the
		// task's own unit may hold (SQLite) while it runs.
		old, err := s.taskByKey(ctx, s.readers, t)
		if err == nil && !old.Expired(t.Created) {
			return old, false, nil
		}
	}
	if err := s.writers.enter(ctx); err != nil {
		return store.Task{}, false, err
	}
	defer s.writers.leave()
	var (
		kept    store.Task
		created bool
	)
	err := s.retry(ctx, func(int) error {
		tx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: s.opts.Isolation})
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }()
		if t.Key != "" {
			old, err := s.taskByKey(ctx, tx, t)
			switch {
			case err == nil && !old.Expired(t.Created):
				kept, created = old, false
				return tx.Commit()
			case err == nil:
				if _, err := tx.ExecContext(ctx, "DELETE FROM actions_tasks WHERE id = "+s.param(1), old.ID); err != nil {
					return err
				}
			case !errors.Is(err, store.ErrTaskNotFound):
				return err
			}
		}
		res, err := tx.ExecContext(ctx, "INSERT INTO actions_tasks ("+taskColumns+", origin) VALUES ("+s.params(12)+") ON CONFLICT DO NOTHING",
			t.ID, t.Principal, t.Action, t.Key, t.Digest, string(t.Status), t.Message,
			t.Created.UnixMicro(), t.Updated.UnixMicro(), t.TTL.Milliseconds(), "", s.opts.Origin)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return errKeyTaken // a task under the key was created meanwhile: read it
		}
		kept, created = t, true
		return tx.Commit()
	})
	return kept, created, err
}

// params is n bind parameters, comma separated.
func (s *Store) params(n int) string {
	out := ""
	for i := 1; i <= n; i++ {
		if i > 1 {
			out += ", "
		}
		out += s.param(i)
	}
	return out
}

// taskByKey reads the task of t's principal, action and key.
func (s *Store) taskByKey(ctx context.Context, q queryer, t store.Task) (store.Task, error) {
	return scanTask(q.QueryRowContext(ctx, "SELECT "+taskColumns+" FROM actions_tasks WHERE principal = "+s.param(1)+
		" AND action = "+s.param(2)+" AND idem_key = "+s.param(3), t.Principal, t.Action, t.Key))
}

// TaskByID reads the task id from the readers' pool (the transaction ctx
// carries, inside a unit), or returns [store.ErrTaskNotFound].
func (s *Store) TaskByID(ctx context.Context, id string) (store.Task, error) {
	if err := s.made(); err != nil {
		return store.Task{}, err
	}
	var q queryer = s.readers
	if tx, ok := Tx(ctx); ok {
		q = tx
	}
	return scanTask(q.QueryRowContext(ctx, "SELECT "+taskColumns+" FROM actions_tasks WHERE id = "+s.param(1), id))
}

// scanTask reads one task row.
func scanTask(row *sql.Row) (store.Task, error) {
	var (
		t                     store.Task
		status, answer        string
		created, updated, ttl int64
	)
	err := row.Scan(&t.ID, &t.Principal, &t.Action, &t.Key, &t.Digest, &status, &t.Message, &created, &updated, &ttl, &answer)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Task{}, store.ErrTaskNotFound
	}
	if err != nil {
		return store.Task{}, err
	}
	t.Status = store.TaskStatus(status)
	t.Created, t.Updated = time.UnixMicro(created).UTC(), time.UnixMicro(updated).UTC()
	t.TTL = time.Duration(ttl) * time.Millisecond
	if answer != "" {
		t.Answer = json.RawMessage(answer)
	}
	return t, nil
}

// EndTask sets the terminal status of end on the task id with one
// conditional update (only a task not yet terminal changes), and reports
// whether it did; see [store.TaskStore]. Inside a unit it runs in the
// unit's transaction: the status commits with the unit's changes and
// records, or not at all. Outside, in a transaction of its own, in the
// writers' queue.
func (s *Store) EndTask(ctx context.Context, id string, end store.Task) (bool, error) {
	if err := s.made(); err != nil {
		return false, err
	}
	answer := ""
	if end.Answer != nil {
		answer = string(end.Answer)
	}
	q := "UPDATE actions_tasks SET status = " + s.param(1) + ", message = " + s.param(2) + ", updated = " + s.param(3) +
		", answer = " + s.param(4) + " WHERE id = " + s.param(5) + " AND status NOT IN " + terminalStatuses
	args := []any{string(end.Status), end.Message, end.Updated.UnixMicro(), answer, id}
	if tx, ok := Tx(ctx); ok {
		return changed(tx.ExecContext(ctx, q, args...))
	}
	if err := s.writers.enter(ctx); err != nil {
		return false, err
	}
	defer s.writers.leave()
	var done bool
	err := s.retry(ctx, func(int) error {
		tx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: s.opts.Isolation})
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }()
		if done, err = changed(tx.ExecContext(ctx, q, args...)); err != nil {
			return err
		}
		return tx.Commit()
	})
	return done, err
}

// changed reports whether an update changed a row.
func changed(res sql.Result, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// DeleteTask deletes the task id; see [store.TaskStore].
func (s *Store) DeleteTask(ctx context.Context, id string) error {
	if err := s.made(); err != nil {
		return err
	}
	if err := s.writers.enter(ctx); err != nil {
		return err
	}
	defer s.writers.leave()
	return s.retry(ctx, func(int) error {
		_, err := s.db.ExecContext(ctx, "DELETE FROM actions_tasks WHERE id = "+s.param(1), id)
		return err
	})
}

// PurgeTasks deletes the tasks that ended and whose TTL passed at now,
// and returns how many. Tasks still running are kept whatever their
// TTL. A host calls it from time to time, as [Store.PurgeExpired].
func (s *Store) PurgeTasks(ctx context.Context, now time.Time) (int64, error) {
	if err := s.made(); err != nil {
		return 0, err
	}
	var n int64
	err := s.retry(ctx, func(int) error {
		res, err := s.db.ExecContext(ctx, "DELETE FROM actions_tasks WHERE status IN "+terminalStatuses+
			" AND ttl > 0 AND created + ttl * 1000 <= "+s.param(1), now.UnixMicro())
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}
