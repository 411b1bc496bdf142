package sqlstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
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

// newStore opens a migrated store on db.
func newStore(t testing.TB, db *dbtest.DB, opts *sqlstore.Options) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.New(db.DB, db.Dialect, opts)
	require.NoError(t, err)
	require.NoError(t, s.Migrate(context.Background()))
	return s
}

func TestMigrateIsIdempotent(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		ctx := context.Background()
		s, err := sqlstore.New(db.DB, db.Dialect, nil)
		require.NoError(t, err)
		// Replicas starting together migrate at once.
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Go(func() { errs[i] = s.Migrate(ctx) })
		}
		wg.Wait()
		for i, err := range errs {
			require.NoError(t, err, "migration %d", i)
		}
		require.NoError(t, s.Migrate(ctx), "once more")
		var version, rows int
		require.NoError(t, db.QueryRow("SELECT version FROM actions_schema").Scan(&version))
		require.NoError(t, db.QueryRow("SELECT count(*) FROM actions_schema").Scan(&rows))
		assert.Equal(t, sqlstore.SchemaVersion, version)
		assert.Equal(t, 1, rows)

		// A schema from a later release is left alone.
		_, err = db.Exec("UPDATE actions_schema SET version = 99")
		require.NoError(t, err)
		assert.ErrorContains(t, s.Migrate(ctx), "schema version 99")
	})
}

// runFixtureEntries are the expected entries of every run fixture: texts
// with every kind of content an entry holds (nested steps, commands,
// unicode member names, big numbers, refusals).
func runFixtureEntries(t *testing.T) []store.RunEntry {
	t.Helper()
	files, err := filepath.Glob("../testdata/runs/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var out []store.RunEntry
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		var fx struct {
			Expect struct {
				Entry json.RawMessage `json:"entry"`
			} `json:"expect"`
		}
		require.NoError(t, json.Unmarshal(data, &fx), f)
		if len(fx.Expect.Entry) == 0 {
			continue
		}
		var e store.RunEntry
		require.NoError(t, json.Unmarshal(fx.Expect.Entry, &e), f)
		out = append(out, e)
	}
	return out
}

func TestAppendAndReadBackByteForByte(t *testing.T) {
	entries := runFixtureEntries(t)
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		ctx := context.Background()
		clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		s := newStore(t, db, &sqlstore.Options{Origin: "tester", Now: func() time.Time { clock = clock.Add(time.Second); return clock }})
		units := make([]string, len(entries))
		for i, e := range entries {
			units[i] = sqlstore.NewUnit()
			rec := store.Record{Entry: e, RolledBack: i%5 == 4,
				Audit: store.Audit{At: clock, Caller: &identity.Caller{Principal: "p" + itoa(i%3), Surface: identity.SurfaceMCP}, PendingChange: "c" + itoa(i),
					Stage: store.StageConfirmed, Batch: i%2 == 1, ToolCallID: "call_" + itoa(i)}}
			require.NoError(t, s.Write(ctx, units[i], rec))
		}
		all, err := s.Read(ctx, sqlstore.Filter{Kept: sqlstore.KeptAndUndone})
		require.NoError(t, err)
		require.Len(t, all, len(entries))
		for i, r := range all {
			want, err := actions.CanonicalJSON(entries[i])
			require.NoError(t, err)
			assert.Equal(t, string(want), r.Text, "entry %d is stored byte for byte", i)
			again, err := actions.CanonicalJSON(r.Entry)
			require.NoError(t, err)
			assert.Equal(t, r.Text, string(again), "entry %d decodes to the same entry", i)
			assert.Equal(t, units[i], r.Unit)
			assert.Equal(t, 0, r.Position)
			assert.Equal(t, i%5 == 4, r.RolledBack)
			require.NotNil(t, r.Audit.Caller)
			assert.Equal(t, "p"+itoa(i%3), r.Audit.Caller.Principal)
			assert.Equal(t, "c"+itoa(i), r.Audit.PendingChange)
			assert.Equal(t, store.StageConfirmed, r.Audit.Stage)
			assert.Equal(t, i%2 == 1, r.Audit.Batch)
			assert.Equal(t, "call_"+itoa(i), r.Audit.ToolCallID)
			assert.Equal(t, "tester", r.Origin)
			assert.Equal(t, time.Date(2026, 1, 1, 0, 0, i+1, 0, time.UTC), r.RecordedAt)
			if i > 0 {
				assert.Greater(t, r.Seq, all[i-1].Seq, "in order")
			}
		}

		// Filters: each keeps exactly the records that match, in order.
		check := func(name string, f sqlstore.Filter, keep func(i int, r sqlstore.Record) bool) {
			t.Helper()
			got, err := s.Read(ctx, f)
			require.NoError(t, err, name)
			var want []int64
			for i, r := range all {
				if keep(i, r) {
					want = append(want, r.Seq)
				}
			}
			var seqs []int64
			for _, r := range got {
				seqs = append(seqs, r.Seq)
			}
			assert.Equal(t, want, seqs, name)
		}
		committed := func(r sqlstore.Record) bool { return !r.RolledBack }
		action := entries[0].Action
		check("committed by default", sqlstore.Filter{}, func(_ int, r sqlstore.Record) bool { return committed(r) })
		check("rolled back", sqlstore.Filter{Kept: sqlstore.UndoneOnly}, func(_ int, r sqlstore.Record) bool { return r.RolledBack })
		check("action", sqlstore.Filter{Action: action, Kept: sqlstore.KeptAndUndone}, func(_ int, r sqlstore.Record) bool { return r.Entry.Action == action })
		check("refused", sqlstore.Filter{Outcome: store.OutcomeRefused}, func(_ int, r sqlstore.Record) bool {
			return committed(r) && r.Entry.Outcome == store.OutcomeRefused
		})
		since, until := all[3].RecordedAt, all[7].RecordedAt
		check("time", sqlstore.Filter{Since: since, Until: until, Kept: sqlstore.KeptAndUndone}, func(i int, _ sqlstore.Record) bool { return i >= 3 && i < 7 })
		check("after and limit", sqlstore.Filter{After: all[2].Seq, Limit: 3, Kept: sqlstore.KeptAndUndone}, func(i int, _ sqlstore.Record) bool { return i >= 3 && i < 6 })
		check("unit", sqlstore.Filter{Unit: units[4], Kept: sqlstore.KeptAndUndone}, func(i int, _ sqlstore.Record) bool { return i == 4 })
		check("no such unit", sqlstore.Filter{Unit: "other", Kept: sqlstore.KeptAndUndone}, func(int, sqlstore.Record) bool { return false })
		check("origin", sqlstore.Filter{Origin: "tester", Kept: sqlstore.KeptAndUndone}, func(int, sqlstore.Record) bool { return true })
		check("principal", sqlstore.Filter{Principal: "p1", Kept: sqlstore.KeptAndUndone}, func(i int, _ sqlstore.Record) bool { return i%3 == 1 })

		// The records of one write are one unit, at positions 0, 1, 2.
		batch := sqlstore.NewUnit()
		require.NoError(t, s.Write(ctx, batch, store.Record{Entry: entries[0]}, store.Record{Entry: entries[1]}, store.Record{Entry: entries[2]}))
		three, err := s.Read(ctx, sqlstore.Filter{Unit: batch})
		require.NoError(t, err)
		require.Len(t, three, 3)
		for i, r := range three {
			assert.Equal(t, i, r.Position)
			assert.Equal(t, entries[i].Action, r.Entry.Action)
		}

		// A unit's position is written once.
		err = s.Write(ctx, units[0], store.Record{Entry: entries[0]})
		assert.Error(t, err, "the unique key refuses a second record at the same position")
	})
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// TestEntryTextIsExact stores an entry whose texts hold what a lossy
// column would change: non-ASCII text, escapes, a NUL escape, big and
// small numbers.
func TestEntryTextIsExact(t *testing.T) {
	e := store.RunEntry{
		Action:     "t/exact",
		Parameters: `{"a\u0000":"é😀ﬁ","big":1e+300,"n":-0,"s":"tab\there \"q\" \\"}`,
		Steps:      []store.RunStep{{Command: json.RawMessage(`{"at":"${now()}","v":[1,2.5,"x"]}`), Result: `"ok"`}},
		Outcome:    store.OutcomeDone,
		Result:     `{"k":"Entrepôt Nord"}`,
	}
	want, err := actions.CanonicalJSON(e)
	require.NoError(t, err)
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		ctx := context.Background()
		s := newStore(t, db, nil)
		require.NoError(t, s.Write(ctx, "u", store.Record{Entry: e}))
		got, err := s.Read(ctx, sqlstore.Filter{})
		require.NoError(t, err)
		require.Len(t, got, 1)
		assert.True(t, bytes.Equal(want, []byte(got[0].Text)), "stored %q, read %q", want, got[0].Text)
		var raw string
		require.NoError(t, db.QueryRow("SELECT entry FROM actions_run_log").Scan(&raw))
		assert.Equal(t, string(want), raw, "the column holds the canonical text itself")
	})
}

// A Filter whose Kept is none of the three choices is refused: read as
// every record, a typo would show rolled-back records as if they were
// kept. A negative Limit is refused too (0 is the only "no bound").
func TestReadRefusesUnknownFilter(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		s := newStore(t, db, nil)
		ctx := context.Background()
		_, err := s.Read(ctx, sqlstore.Filter{Kept: sqlstore.KeptAndUndone + 1})
		assert.ErrorContains(t, err, "sqlstore: unknown Filter.Kept 3")
		_, err = s.Read(ctx, sqlstore.Filter{Kept: -1})
		assert.ErrorContains(t, err, "sqlstore: unknown Filter.Kept -1")
		_, err = s.Read(ctx, sqlstore.Filter{Limit: -1})
		assert.ErrorContains(t, err, "sqlstore: negative Filter.Limit")
		_, err = s.Read(ctx, sqlstore.Filter{Kept: sqlstore.KeptAndUndone})
		assert.NoError(t, err)
	})
}

// A record without a unit, or whose entry has no outcome, is refused
// before anything of its write is written: the log would otherwise hold
// records no replay or audit can place. (Positions are the records'
// indexes in the write since Row went: no negative position to refuse.)
func TestAppendRefusesRecordsWithoutPlace(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		s := newStore(t, db, nil)
		ctx := context.Background()
		good := store.Record{Entry: store.RunEntry{Action: "a/b", Parameters: "{}", Steps: []store.RunStep{}, Outcome: store.OutcomeDone}}
		for name, c := range map[string]struct {
			unit string
			rec  store.Record
		}{
			"zero":        {"", store.Record{}},
			"no unit":     {"", good},
			"no outcome":  {"u", store.Record{Entry: store.RunEntry{Action: "a/b"}}},
			"bad outcome": {"u", store.Record{Entry: store.RunEntry{Action: "a/b", Outcome: "maybe"}}},
		} {
			assert.Error(t, s.Write(ctx, c.unit, good, c.rec), name)
		}
		recs, err := s.Read(ctx, sqlstore.Filter{Kept: sqlstore.KeptAndUndone})
		require.NoError(t, err)
		assert.Empty(t, recs, "nothing of a refused write is kept")
		require.NoError(t, s.Write(ctx, "u", good))
	})
}

// A call through the store of an id that names nothing (the empty id
// included) is refused and its record kept, rolled back, as any refused
// call's.
func TestStoreKeepsRecordOfEmptyID(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		s := newStore(t, db, nil)
		reg := actions.NewRegistry(&actions.Options{Store: s})
		res, err := reg.Run(context.Background(), actions.Call{})
		require.ErrorIs(t, err, codes.UnknownAction)
		require.Len(t, res.Records, 1)
		assert.True(t, res.Records[0].RolledBack)
		recs, err := s.Read(context.Background(), sqlstore.Filter{Kept: sqlstore.UndoneOnly})
		require.NoError(t, err)
		require.Len(t, recs, 1)
		assert.Equal(t, "", recs[0].Entry.Action)
	})
}

// TestRecordColumns: each column of the log holds what the record says,
// whichever insert wrote it: the plain one (a done call with no caller,
// pending change or stage, written with fewer bound values), the full
// one, and the text sent from a host's own transaction (Append).
func TestRecordColumns(t *testing.T) {
	type row struct {
		Outcome, Error, Principal, Surface, PendingChange, Stage, Origin, Audit string
		RolledBack                                                              bool
	}
	refused := benchEntry
	refused.Outcome, refused.Error, refused.Result = store.OutcomeRefused, "not_found", ""
	cases := []struct {
		name string
		rec  store.Record
		want row
	}{
		{"plain", store.Record{Entry: benchEntry}, row{Outcome: "done", Origin: "o'1"}},
		{"plain, rolled back", store.Record{Entry: benchEntry, RolledBack: true, Audit: store.Audit{ToolCallID: "c1"}},
			row{Outcome: "done", Origin: "o'1", RolledBack: true}},
		{"refused", store.Record{Entry: refused}, row{Outcome: "refused", Error: "not_found", Origin: "o'1"}},
		{"caller", store.Record{Entry: benchEntry, Audit: store.Audit{Caller: &identity.Caller{Principal: "ann", Surface: identity.SurfaceMCP}}},
			row{Outcome: "done", Principal: "ann", Surface: "mcp", Origin: "o'1"}},
		{"stage", store.Record{Entry: benchEntry, Audit: store.Audit{PendingChange: "pc_1", Stage: store.StageConfirmed}},
			row{Outcome: "done", PendingChange: "pc_1", Stage: "confirmed", Origin: "o'1"}},
	}
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		ctx := context.Background()
		s := newStore(t, db, &sqlstore.Options{Origin: "o'1"})
		for _, c := range cases {
			for _, how := range []string{"Write", "Append"} {
				t.Run(c.name+", "+how, func(t *testing.T) {
					unit := sqlstore.NewUnit()
					if how == "Write" {
						require.NoError(t, s.Write(ctx, unit, c.rec))
					} else {
						tx, err := db.BeginTx(ctx, nil)
						require.NoError(t, err)
						require.NoError(t, s.Append(ctx, tx, unit, c.rec))
						require.NoError(t, tx.Commit())
					}
					audit, err := actions.CanonicalJSON(c.rec.Audit)
					require.NoError(t, err)
					want := c.want
					want.Audit = string(audit)
					var got row
					require.NoError(t, db.QueryRow(db.Q("SELECT outcome, error, principal, surface, pending_change, stage, origin, audit, rolled_back FROM actions_run_log WHERE unit = ?"), unit).
						Scan(&got.Outcome, &got.Error, &got.Principal, &got.Surface, &got.PendingChange, &got.Stage, &got.Origin, &got.Audit, &got.RolledBack))
					assert.Equal(t, want, got)
				})
			}
		}
	})
}
