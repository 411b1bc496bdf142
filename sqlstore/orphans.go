package sqlstore

import (
	"context"
	"database/sql"
	"time"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
)

// Orphans counts what [Store.SettleOrphans] settled.
type Orphans struct {
	// Tasks is the number of tasks it ended.
	Tasks int64
	// Claims is the number of idempotency keys' claims it answered.
	Claims int64
}

// orphanMessage is the message of the refusal an orphan is answered
// with; it names no value of the call.
const orphanMessage = "the process running the call stopped before the call ended: its changes to the database were not kept, and whether it did anything outside the database is unknown"

// SettleOrphans settles what the processes of origin (a store's
// Options.Origin: which replica) left unfinished when they died: the
// tasks still working that a store of origin created, and the
// idempotency keys' claims still unanswered that a store of origin made.
// Both are answered with the same refusal, outcome_unknown
// ([codes.OutcomeUnknown]: a tool result, never retried): the
// call's unit never committed, so its changes to this database are not
// there, but its body may have acted outside it (charged a card, sent a
// mail) before the process died.
//
// Nothing is run again. A retry under a settled claim's key gets that
// refusal (and writes its audit line) until the key's window ends, and
// its body does not run; a settled task is completed with it (an MCP
// tasks/get answers it as a tool result with isError, as MCP tasks
// report tool errors). Before it is settled, a claim answers its retries
// in_progress, and a task stays working.
//
// Call it when a replica starts, before it serves, with its own origin
// (none of its calls can be running then), or for a replica that is gone
// for good. Replicas sharing a database need an origin each: with the
// empty origin shared, one replica's start settles the calls the others
// are running. A call that was still running and then commits replaces
// its claim's answer with its own (one refused before any body started
// frees the key, as it would unsettled), and a task's unit, finding its task
// ended, commits nothing; but on PostgreSQL a running unit that read or
// wrote before the settle conflicts with it when it writes its answer,
// and is run again from the start, its body a second time (on SQLite the
// settle waits for the running unit's write lock instead). Claims made
// before schema version 8 have the empty origin.
//
// Tasks and claims are settled in one transaction, in the writers'
// queue; now stamps the tasks' updated time. The error is the
// database's; it settles nothing then.
func (s *Store) SettleOrphans(ctx context.Context, origin string, now time.Time) (Orphans, error) {
	if err := s.made(); err != nil {
		return Orphans{}, err
	}
	answer, err := actions.CanonicalJSON(map[string]any{"refusal": actions.NewRefusal(codes.OutcomeUnknown, orphanMessage)})
	if err != nil {
		return Orphans{}, err
	}
	if err := s.writers.enter(ctx); err != nil {
		return Orphans{}, err
	}
	defer s.writers.leave()
	var n Orphans
	err = s.retry(ctx, func(int) error {
		n = Orphans{}
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }()
		if n.Tasks, err = changedRows(tx.ExecContext(ctx, "UPDATE actions_tasks SET status = 'completed', message = "+s.param(1)+
			", updated = "+s.param(2)+", answer = "+s.param(3)+" WHERE origin = "+s.param(4)+" AND status NOT IN "+terminalStatuses,
			"the process running the task stopped before it ended", now.UnixMicro(), string(answer), origin)); err != nil {
			return err
		}
		if n.Claims, err = changedRows(tx.ExecContext(ctx, "UPDATE actions_keys SET answer = "+s.param(1)+
			" WHERE origin = "+s.param(2)+" AND answer = ''", string(answer), origin)); err != nil {
			return err
		}
		return tx.Commit()
	})
	if err != nil {
		return Orphans{}, err
	}
	return n, nil
}

// changedRows is how many rows a statement changed.
func changedRows(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
