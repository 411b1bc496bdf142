package sqlstore_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/internal/dbtest"
	"github.com/actionreg/actions/sqlstore"
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
		{"pending change and stages", sqlstore.Filter{PendingChange: "pc_1", Stages: []actions.Stage{actions.StageConfirmed, actions.StageRejected}}, "actions_run_log_pending"},
		{"held", sqlstore.Filter{Stages: []actions.Stage{actions.StageHeld}}, "actions_run_log_staged"},
		{"refused", sqlstore.Filter{Outcome: actions.OutcomeRefused}, "actions_run_log_refused"},
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
		"actions_run_log_refused", "actions_run_log_staged", "actions_run_log_time"}
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
			{sqlstore.Filter{Stages: []actions.Stage{actions.StageHeld}}, []int64{2, 3}},
			{sqlstore.Filter{PendingChange: confirmed}, []int64{2, 4}},
			{sqlstore.Filter{Outcome: actions.OutcomeRefused, Newest: true}, []int64{5, 3, 2}},
			{sqlstore.Filter{Outcome: actions.OutcomeDone}, []int64{1, 4}},
		} {
			recs, err := s.Read(ctx, c.f)
			require.NoError(t, err)
			assert.Equal(t, c.want, seqs(recs), "%+v", c.f)
		}
	})
}
