package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"sync/atomic"
)

// migration is one step of the store's schema, in both dialects. Steps
// are applied in order, each once; the version reached is kept in
// actions_schema.
type migration struct {
	version    int
	sqlite, pg []string
}

// migrations lists the schema's steps. A new table is a new step at the
// end; a step never changes once released.
var migrations = []migration{
	{
		version: 1,
		sqlite: append([]string{
			logTable("actions_run_log", "INTEGER PRIMARY KEY AUTOINCREMENT", "INTEGER", ""),
		}, indexes...),
		pg: append([]string{
			logTable("actions_run_log", "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY", "BIGINT", ""),
		}, indexes...),
	},
	{
		// The gate's pending changes (actions.PendingStore).
		version: 2,
		sqlite:  []string{pendingTable("INTEGER"), pendingIndex},
		pg:      []string{pendingTable("BIGINT"), pendingIndex},
	},
	{
		// A principal's pending changes are listed and counted.
		version: 3,
		sqlite:  []string{pendingPrincipalIndex},
		pg:      []string{pendingPrincipalIndex},
	},
	{
		// Idempotency keys (keys.go) and shared rate limits
		// (ratelimit.go).
		version: 4,
		sqlite:  []string{keysTable("INTEGER"), keysIndex, rateTable("INTEGER")},
		pg:      []string{keysTable("BIGINT"), keysIndex, rateTable("BIGINT")},
	},
	{
		// The log is read by stage (Audit.Stage) and by pending change:
		// the stage gets a column of its own, filled in from the audit
		// of the records written before it.
		version: 5,
		sqlite: []string{
			stageColumn,
			`UPDATE actions_run_log SET stage = COALESCE(json_extract(audit, '$.stage'), '') WHERE audit LIKE '%"stage":%'`,
			stageIndex, pendingChangeIndex,
		},
		pg: []string{
			stageColumn,
			`UPDATE actions_run_log SET stage = COALESCE(audit::jsonb ->> 'stage', '') WHERE audit LIKE '%"stage":%'`,
			stageIndex, pendingChangeIndex,
		},
	},
	{
		// Tasks: calls whose answer is deferred (tasks.go).
		version: 6,
		sqlite:  []string{tasksTable("INTEGER"), tasksKeyIndex},
		pg:      []string{tasksTable("BIGINT"), tasksKeyIndex},
	},
	{
		// Fewer B-trees written per record: the stage, pending change
		// and outcome indexes become partial, holding only the rows
		// their filters look for (most calls touch no pending change
		// and are done), so that an ordinary record skips all three.
		version: 7,
		sqlite:  partialIndexes,
		pg:      partialIndexes,
	},
	{
		// A key's claim names the origin that made it, so that a
		// replica settles the claims its dead process left
		// (SettleOrphans).
		version: 8,
		sqlite:  []string{keysOrigin},
		pg:      []string{keysOrigin},
	},
	{
		// Less written per record. SQLite: seq loses AUTOINCREMENT,
		// which wrote sqlite_sequence at every insert (the table is
		// rebuilt: SQLite cannot alter a column); the store deletes no
		// record, so max(seq)+1, what INTEGER PRIMARY KEY draws, still
		// grows and is never given twice (docs/database.md). Both: the
		// index on recorded_at goes (the time filters scan by seq), and
		// the principal's becomes partial: the host's own calls, which
		// have none, skip it.
		version: 9,
		sqlite:  logRebuild,
		pg:      []string{dropTimeIndex, `DROP INDEX IF EXISTS actions_run_log_principal`, principalIndex},
	},
}

const (
	dropTimeIndex  = `DROP INDEX IF EXISTS actions_run_log_time`
	principalIndex = `CREATE INDEX actions_run_log_principal ON actions_run_log (principal, seq) WHERE principal <> ''`
)

// logColumns are the columns of actions_run_log after seq, in the order
// of the table.
const logColumns = `recorded_at, unit, position, origin, action, outcome, error, rolled_back, principal, surface, pending_change, audit, entry, stage`

// logRebuild rebuilds actions_run_log on SQLite without AUTOINCREMENT,
// its records and their seqs as they were; dropping the old table drops
// its indexes and its row of sqlite_sequence.
var logRebuild = append([]string{
	logTable("actions_run_log_v9", "INTEGER PRIMARY KEY", "INTEGER", "stage TEXT NOT NULL DEFAULT '',"),
	`INSERT INTO actions_run_log_v9 (seq, ` + logColumns + `) SELECT seq, ` + logColumns + ` FROM actions_run_log ORDER BY seq`,
	`DROP TABLE actions_run_log`,
	`ALTER TABLE actions_run_log_v9 RENAME TO actions_run_log`,
	indexes[0], // the action's, as version 1 made it
	principalIndex,
}, partialIndexDefs...)

// partialIndexes replace the stage, pending change and outcome indexes
// with partial ones. A query uses one only when its WHERE clause holds
// the index's own condition (Filter.where writes it).
var partialIndexes = append([]string{
	`DROP INDEX IF EXISTS actions_run_log_stage`,
	`DROP INDEX IF EXISTS actions_run_log_pending_change`,
	`DROP INDEX IF EXISTS actions_run_log_outcome`,
}, partialIndexDefs...)

// partialIndexDefs create the partial indexes of version 7.
var partialIndexDefs = []string{
	`CREATE INDEX IF NOT EXISTS actions_run_log_staged ON actions_run_log (stage, seq) WHERE stage <> ''`,
	`CREATE INDEX IF NOT EXISTS actions_run_log_pending ON actions_run_log (pending_change, seq) WHERE pending_change <> ''`,
	`CREATE INDEX IF NOT EXISTS actions_run_log_refused ON actions_run_log (seq) WHERE outcome = 'refused'`,
}

const (
	stageColumn        = `ALTER TABLE actions_run_log ADD COLUMN stage TEXT NOT NULL DEFAULT ''`
	stageIndex         = `CREATE INDEX IF NOT EXISTS actions_run_log_stage ON actions_run_log (stage, seq)`
	pendingChangeIndex = `CREATE INDEX IF NOT EXISTS actions_run_log_pending_change ON actions_run_log (pending_change, seq)`
)

const pendingPrincipalIndex = `CREATE INDEX IF NOT EXISTS actions_pending_principal ON actions_pending (principal)`

// logTable creates the run log's table name, its seq column seq, its
// time column of type integer, and the columns extra adds (each with its
// comma) before the unique key: the table of version 1, and as version
// 9 rebuilds it on SQLite.
func logTable(name, seq, integer, extra string) string {
	return `CREATE TABLE IF NOT EXISTS ` + name + ` (
		seq ` + seq + `,
		recorded_at ` + integer + ` NOT NULL,
		unit TEXT NOT NULL,
		position INTEGER NOT NULL,
		origin TEXT NOT NULL,
		action TEXT NOT NULL,
		outcome TEXT NOT NULL,
		error TEXT NOT NULL,
		rolled_back BOOLEAN NOT NULL,
		principal TEXT NOT NULL,
		surface TEXT NOT NULL,
		pending_change TEXT NOT NULL,
		audit TEXT NOT NULL,
		entry TEXT NOT NULL,
		` + extra + `
		UNIQUE (unit, position))`
}

func pendingTable(integer string) string {
	return `CREATE TABLE IF NOT EXISTS actions_pending (
		id TEXT PRIMARY KEY,
		principal TEXT NOT NULL,
		expires ` + integer + ` NOT NULL,
		change TEXT NOT NULL)`
}

const pendingIndex = `CREATE INDEX IF NOT EXISTS actions_pending_expires ON actions_pending (expires)`

// indexes belong to the first step; they are the same in both dialects.
var indexes = []string{
	`CREATE INDEX IF NOT EXISTS actions_run_log_action ON actions_run_log (action, seq)`,
	`CREATE INDEX IF NOT EXISTS actions_run_log_outcome ON actions_run_log (outcome, seq)`,
	`CREATE INDEX IF NOT EXISTS actions_run_log_time ON actions_run_log (recorded_at)`,
	`CREATE INDEX IF NOT EXISTS actions_run_log_principal ON actions_run_log (principal, seq)`,
}

// SchemaVersion is the version of the store's tables that this package
// writes and reads: the last step of migrations (a new step raises it
// too, or the next Migrate refuses the schema the previous one wrote).
const SchemaVersion = 9

// Migrate creates the store's tables and indexes, or brings them to
// [SchemaVersion], in one transaction. It is idempotent: run it at every
// start, from every replica at once if need be (on PostgreSQL an
// advisory lock makes concurrent runs wait for each other; on SQLite the
// write lock does, and SQLITE_BUSY is retried).
//
// It also prepares the insert each unit's append runs (a failure there
// is not an error: the append then sends the insert's text).
//
// Errors: the database's; or a schema newer than this package knows
// (written by a later release), which it leaves alone.
func (s *Store) Migrate(ctx context.Context) error {
	return s.migrateTo(ctx, SchemaVersion)
}

// migrateTo is Migrate, stopping at version target (a test builds an
// older schema with it).
func (s *Store) migrateTo(ctx context.Context, target int) error {
	if err := s.made(); err != nil {
		return err
	}
	err := s.retry(ctx, func(int) error {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }()
		if s.dialect == PostgreSQL {
			if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", migrateLockKey); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS actions_schema (version INTEGER NOT NULL)`); err != nil {
			return err
		}
		var version int
		err = tx.QueryRowContext(ctx, `SELECT version FROM actions_schema`).Scan(&version)
		switch {
		case err == sql.ErrNoRows:
			if _, err := tx.ExecContext(ctx, `INSERT INTO actions_schema (version) VALUES (0)`); err != nil {
				return err
			}
		case err != nil:
			return err
		}
		if version > SchemaVersion {
			return fmt.Errorf("sqlstore: the database holds schema version %d; this package knows %d", version, SchemaVersion)
		}
		for _, m := range migrations {
			if m.version <= version || m.version > target {
				continue
			}
			stmts := m.sqlite
			if s.dialect == PostgreSQL {
				stmts = m.pg
			}
			for _, q := range stmts {
				if _, err := tx.ExecContext(ctx, q); err != nil {
					return fmt.Errorf("sqlstore: migration %d: %w", m.version, err)
				}
			}
			version = m.version
		}
		if _, err := tx.ExecContext(ctx, "UPDATE actions_schema SET version = "+s.param(1), version); err != nil {
			return err
		}
		return tx.Commit()
	})
	if err == nil {
		// The inserts of one record, prepared once for every unit's
		// append; without them, Append sends the text.
		s.prepare(ctx, &s.insert, s.insert1)
		s.prepare(ctx, &s.insertPlain, s.insertPlainQuery())
	}
	return err
}

// prepare prepares q into p unless p holds a statement already; a
// failure leaves p nil.
func (s *Store) prepare(ctx context.Context, p *atomic.Pointer[sql.Stmt], q string) {
	if p.Load() != nil {
		return
	}
	if stmt, err := s.db.PrepareContext(ctx, q); err == nil && !p.CompareAndSwap(nil, stmt) {
		_ = stmt.Close()
	}
}
