package sqlstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/internal/dbtest"
	"github.com/actionreg/actions/sqlstore"
)

// ticketDB makes db a ticket database whose ids come from a sequence that
// starts at start: a real sequence on PostgreSQL, a counter row on SQLite.
func ticketDB(t *testing.T, db *dbtest.DB, start int) (next string) {
	t.Helper()
	stmts := []string{"CREATE TABLE tickets (id BIGINT PRIMARY KEY, title TEXT NOT NULL)"}
	if db.Dialect == sqlstore.PostgreSQL {
		stmts = append(stmts, "CREATE SEQUENCE ticket_seq START "+itoa(start))
		next = "SELECT nextval('ticket_seq')"
	} else {
		stmts = append(stmts, "CREATE TABLE ticket_seq (n BIGINT NOT NULL)", "INSERT INTO ticket_seq VALUES ("+itoa(start-1)+")")
		next = "UPDATE ticket_seq SET n = n + 1 RETURNING n"
	}
	for _, q := range stmts {
		_, err := db.Exec(q)
		require.NoError(t, err)
	}
	return next
}

// ticketRegistry opens tickets on db: the id is drawn from the database's
// sequence through Trace.Value, in the unit's transaction.
func ticketRegistry(t *testing.T, db *dbtest.DB, start int) (*actions.Registry, *sqlstore.Store) {
	next := ticketDB(t, db, start)
	s := newStore(t, db, nil)
	reg := actions.NewRegistry(&actions.Options{Store: s})
	reg.MustRegister(actions.New(actions.Definition{ID: "desk/open",
		Parameters: `{"type":"object","required":["title"],"properties":{"title":{"type":"string"}}}`},
		func(ctx context.Context, p map[string]any, tr *actions.Trace) (any, error) {
			tx := txOf(ctx)
			id, err := tr.Value("ticket_id", func() (any, error) {
				var n int64
				err := tx.QueryRowContext(ctx, next).Scan(&n)
				return n, err
			})
			if err != nil {
				return nil, err
			}
			if _, err := tx.ExecContext(ctx, db.Q("INSERT INTO tickets (id, title) VALUES (?, ?)"), id.(interface{ String() string }).String(), p["title"]); err != nil {
				return nil, err
			}
			return map[string]any{"id": id}, tr.Command(map[string]any{"op": "insert", "id": id}, 1)
		}))
	return reg, s
}

// A log whose ids came from a database sequence replays exactly on a
// replica whose sequence stands elsewhere: the ids are recorded values.
func TestReplayDatabaseSequence(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		ctx := context.Background()
		reg, s := ticketRegistry(t, db, 1)
		for _, title := range []string{"printer", "coffee", "door"} {
			_, err := reg.Run(ctx, actions.Call{Action: "desk/open", Params: map[string]any{"title": title}})
			require.NoError(t, err)
		}
		recs, err := s.Read(ctx, sqlstore.Filter{})
		require.NoError(t, err)
		require.Len(t, recs, 3)

		other := dbtest.SQLite(t)
		if db.Dialect == sqlstore.PostgreSQL {
			other = dbtest.Postgres(t)
		}
		replica, _ := ticketRegistry(t, other, 500)
		for _, rec := range recs {
			_, err := replica.Replay(ctx, rec.Record)
			require.NoError(t, err, "the recorded id is given back")
		}
		rows := func(db *dbtest.DB) []string {
			r, err := db.Query("SELECT id || ':' || title FROM tickets ORDER BY id")
			require.NoError(t, err)
			defer r.Close()
			var out []string
			for r.Next() {
				var s string
				require.NoError(t, r.Scan(&s))
				out = append(out, s)
			}
			return out
		}
		assert.Equal(t, []string{"1:printer", "2:coffee", "3:door"}, rows(db))
		assert.Equal(t, rows(db), rows(other), "the replica holds the same rows")
	})
}
