package sqlstore_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions/internal/dbtest"
	"github.com/actionreg/actions/sqlstore"
	"github.com/actionreg/actions/store"
)

// TestFiltersUseTheirIndexes: each filter the pages and the keys read
// the log by reaches its rows through its index, the partial ones
// included (their condition is not implied by a bound value, so the
// query must state it), on both engines. PostgreSQL is asked with
// sequential scans off, as its planner would choose on a large log.
func TestFiltersUseTheirIndexes(t *testing.T) {
	cases := []struct {
		name  string
		f     sqlstore.Filter
		index string
	}{
		{"pending change", sqlstore.Filter{PendingChange: "pc_1"}, "actions_run_log_pending"},
		{"pending change and stages", sqlstore.Filter{PendingChange: "pc_1", Stages: []store.Stage{store.StageConfirmed, store.StageRejected}}, "actions_run_log_pending"},
		{"held", sqlstore.Filter{Stages: []store.Stage{store.StageHeld}}, "actions_run_log_staged"},
		{"refused", sqlstore.Filter{Outcome: store.OutcomeRefused}, "actions_run_log_refused"},
		{"action", sqlstore.Filter{Action: "t/set"}, "actions_run_log_action"},
		{"principal", sqlstore.Filter{Principal: "ann"}, "actions_run_log_principal"},
	}
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		newStore(t, db, nil)
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				where, args := sqlstore.WhereOf(c.f, db.Dialect)
				q := "SELECT seq FROM actions_run_log" + where + " ORDER BY seq DESC LIMIT 50"
				plan := explain(t, db, q, args)
				assert.Contains(t, plan, c.index, "%s\n%s", q, plan)
			})
		}
		// The time filters have no index: the log is read in seq
		// order, newest first, with no sort, and the read stops at the
		// limit.
		t.Run("time", func(t *testing.T) {
			where, args := sqlstore.WhereOf(sqlstore.Filter{Since: time.Unix(1e9, 0), Until: time.Unix(2e9, 0)}, db.Dialect)
			q := "SELECT seq FROM actions_run_log" + where + " ORDER BY seq DESC LIMIT 50"
			plan := explain(t, db, q, args)
			assert.NotContains(t, plan, "actions_run_log_time", "%s\n%s", q, plan)
			assert.NotContains(t, plan, "TEMP B-TREE", "%s\n%s", q, plan)
			assert.NotContains(t, plan, "Sort", "%s\n%s", q, plan)
		})
	})
}

// explain returns the query plan of q as text.
func explain(t *testing.T, db *dbtest.DB, q string, args []any) string {
	t.Helper()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	var rows *sql.Rows
	if db.Dialect == sqlstore.PostgreSQL {
		_, err = tx.ExecContext(ctx, "SET LOCAL enable_seqscan = off")
		require.NoError(t, err)
		rows, err = tx.QueryContext(ctx, "EXPLAIN "+q, args...)
	} else {
		rows, err = tx.QueryContext(ctx, "EXPLAIN QUERY PLAN "+q, args...)
	}
	require.NoError(t, err)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	var plan []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		require.NoError(t, rows.Scan(ptrs...))
		for _, v := range vals {
			if s, ok := v.(string); ok {
				plan = append(plan, s)
			} else if b, ok := v.([]byte); ok {
				plan = append(plan, string(b))
			}
		}
	}
	require.NoError(t, rows.Err())
	return strings.Join(plan, "\n")
}

// logIndexes lists the indexes of actions_run_log by name, sorted.
func logIndexes(t *testing.T, db *dbtest.DB) []string {
	t.Helper()
	q := "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'actions_run_log' AND name NOT LIKE 'sqlite_autoindex%' ORDER BY name"
	if db.Dialect == sqlstore.PostgreSQL {
		q = "SELECT indexname FROM pg_indexes WHERE tablename = 'actions_run_log' AND indexname NOT LIKE '%_pkey' AND indexname NOT LIKE '%_key' ORDER BY indexname"
	}
	rows, err := db.Query(q)
	require.NoError(t, err)
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		require.NoError(t, rows.Scan(&n))
		names = append(names, n)
	}
	require.NoError(t, rows.Err())
	return names
}

// TestMigrateToPartialIndexes: a log at schema version 6 (full stage,
// pending change and outcome indexes) is brought to the partial ones,
// and reads by stage, pending change and outcome select what they did.
func TestMigrateToPartialIndexes(t *testing.T) {
	want := []string{"actions_run_log_action", "actions_run_log_pending", "actions_run_log_principal",
		"actions_run_log_refused", "actions_run_log_staged"}
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		ctx := context.Background()
		s := newStore(t, db, nil)
		confirmed, _ := stageLog(t, s)
		assert.Equal(t, want, logIndexes(t, db), "a new database")
		for _, q := range []string{
			"DROP INDEX actions_run_log_staged",
			"DROP INDEX actions_run_log_pending",
			"DROP INDEX actions_run_log_refused",
			"CREATE INDEX actions_run_log_stage ON actions_run_log (stage, seq)",
			"CREATE INDEX actions_run_log_pending_change ON actions_run_log (pending_change, seq)",
			"CREATE INDEX actions_run_log_outcome ON actions_run_log (outcome, seq)",
			"ALTER TABLE actions_keys DROP COLUMN origin",
			"UPDATE actions_schema SET version = 6",
		} {
			_, err := db.Exec(q)
			require.NoError(t, err, q)
		}
		require.NoError(t, s.Migrate(ctx))
		assert.Equal(t, want, logIndexes(t, db), "migrated from version 6")
		var version int
		require.NoError(t, db.QueryRow("SELECT version FROM actions_schema").Scan(&version))
		assert.Equal(t, sqlstore.SchemaVersion, version)
		for _, c := range []struct {
			f    sqlstore.Filter
			want []int64
		}{
			{sqlstore.Filter{Stages: []store.Stage{store.StageHeld}}, []int64{2, 3}},
			{sqlstore.Filter{PendingChange: confirmed}, []int64{2, 4}},
			{sqlstore.Filter{Outcome: store.OutcomeRefused, Newest: true}, []int64{5, 3, 2}},
			{sqlstore.Filter{Outcome: store.OutcomeDone}, []int64{1, 4}},
		} {
			recs, err := s.Read(ctx, c.f)
			require.NoError(t, err)
			assert.Equal(t, c.want, seqs(recs), "%+v", c.f)
		}
	})
}

// TestMigrateRebuildsTheLog: a log at schema version 8 (seq drawn with
// AUTOINCREMENT on SQLite, an index on recorded_at) is brought to
// version 9: every record reads back as it was, seq included, the time
// index is gone, SQLite's seq is a plain INTEGER PRIMARY KEY with no row
// in sqlite_sequence, the principal's index holds only the calls that
// have one, and the next record is numbered after the last one; the time
// and principal filters still select what they did.
func TestMigrateRebuildsTheLog(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		ctx := context.Background()
		at := time.Unix(1_700_000_000, 0).UTC()
		s, err := sqlstore.New(db.DB, db.Dialect, &sqlstore.Options{Origin: "replica-a", Now: func() time.Time { return at }})
		require.NoError(t, err)
		require.NoError(t, s.MigrateTo(ctx, 8))
		confirmed, _ := stageLog(t, s)
		at = at.Add(time.Hour)
		require.NoError(t, s.Write(ctx, sqlstore.NewUnit(), store.Record{Entry: benchEntry}, store.Record{Entry: benchEntry, RolledBack: true}))
		before, err := s.Read(ctx, sqlstore.Filter{Kept: sqlstore.KeptAndUndone})
		require.NoError(t, err)
		require.Len(t, before, 7)
		evesBefore := []int64{}
		for _, r := range before {
			if r.Audit.Caller != nil && r.Audit.Caller.Principal == "eve" {
				evesBefore = append(evesBefore, r.Seq)
			}
		}
		require.NotEmpty(t, evesBefore)
		if db.Dialect == sqlstore.SQLite {
			assert.Contains(t, tableSQL(t, db), "AUTOINCREMENT", "version 8")
		}
		assert.Contains(t, logIndexes(t, db), "actions_run_log_time", "version 8")

		require.NoError(t, s.Migrate(ctx))
		var version int
		require.NoError(t, db.QueryRow("SELECT version FROM actions_schema").Scan(&version))
		assert.Equal(t, sqlstore.SchemaVersion, version)
		assert.Equal(t, []string{"actions_run_log_action", "actions_run_log_pending", "actions_run_log_principal",
			"actions_run_log_refused", "actions_run_log_staged"}, logIndexes(t, db))
		if db.Dialect == sqlstore.SQLite {
			assert.NotContains(t, tableSQL(t, db), "AUTOINCREMENT")
			var n int
			require.NoError(t, db.QueryRow("SELECT count(*) FROM sqlite_sequence WHERE name = 'actions_run_log'").Scan(&n))
			assert.Zero(t, n, "no row in sqlite_sequence")
		}
		after, err := s.Read(ctx, sqlstore.Filter{Kept: sqlstore.KeptAndUndone})
		require.NoError(t, err)
		assert.Equal(t, before, after)

		require.NoError(t, s.Write(ctx, sqlstore.NewUnit(), store.Record{Entry: benchEntry}))
		last, err := s.Read(ctx, sqlstore.Filter{Newest: true, Limit: 1})
		require.NoError(t, err)
		require.Len(t, last, 1)
		assert.Greater(t, last[0].Seq, before[len(before)-1].Seq)
		if db.Dialect == sqlstore.SQLite {
			assert.Equal(t, before[len(before)-1].Seq+1, last[0].Seq)
		}

		for _, c := range []struct {
			f    sqlstore.Filter
			want []int64
		}{
			{sqlstore.Filter{Until: at}, []int64{1, 2, 3, 4, 5}},
			{sqlstore.Filter{Since: at, Kept: sqlstore.KeptAndUndone}, []int64{6, 7, last[0].Seq}},
			{sqlstore.Filter{Since: at, Until: at.Add(time.Second), Newest: true, Limit: 1}, []int64{last[0].Seq}},
			{sqlstore.Filter{PendingChange: confirmed}, []int64{2, 4}},
			{sqlstore.Filter{Principal: "eve", Kept: sqlstore.KeptAndUndone}, evesBefore},
		} {
			recs, err := s.Read(ctx, c.f)
			require.NoError(t, err)
			assert.Equal(t, c.want, seqs(recs), "%+v", c.f)
		}
	})
}

// tableSQL is the statement that created actions_run_log on SQLite.
func tableSQL(t *testing.T, db *dbtest.DB) string {
	t.Helper()
	var q string
	require.NoError(t, db.QueryRow("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'actions_run_log'").Scan(&q))
	return q
}
