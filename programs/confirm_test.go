package programs_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/internal/dbtest"
	"github.com/actionreg/actions/programs"
	"github.com/actionreg/actions/sqlstore"
	"github.com/actionreg/actions/store"
)

// shopOn is a registry on a store in db, with a stock table its actions
// write in the unit's transaction: add (no confirmation), remove (needs
// a person's confirmation), count, and the program action. rows reads
// the table's items, in order, outside any unit.
func shopOn(t *testing.T, db *dbtest.DB) (*actions.Registry, func() []string) {
	t.Helper()
	ctx := context.Background()
	store, err := sqlstore.New(db.DB, db.Dialect, nil)
	require.NoError(t, err)
	require.NoError(t, store.Migrate(ctx))
	_, err = db.ExecContext(ctx, `CREATE TABLE stock (item TEXT NOT NULL)`)
	require.NoError(t, err)
	q := func(sql string) string {
		if db.Dialect == sqlstore.PostgreSQL {
			return sqlstoreDollar(sql)
		}
		return sql
	}
	exec := func(ctx context.Context, sql string, args ...any) error {
		tx, ok := sqlstore.Tx(ctx)
		if !ok {
			return errors.New("no transaction")
		}
		_, err := tx.ExecContext(ctx, q(sql), args...)
		return err
	}
	item := `{"type":"object","properties":{"item":{"type":"string","maxLength":20}},"required":["item"],"additionalProperties":false}`
	reg := actions.NewRegistry(&actions.Options{Store: store, Gate: &actions.GateOptions{Pending: store.Pending()}})
	reg.MustRegister(
		actions.New(actions.Definition{ID: "stock/add", Effect: actions.EffectWrite, Additive: true, Parameters: item},
			func(ctx context.Context, p map[string]any, _ *actions.Trace) (any, error) {
				return "added", exec(ctx, `INSERT INTO stock (item) VALUES (?)`, p["item"])
			}),
		actions.New(actions.Definition{ID: "stock/remove", Effect: actions.EffectDelete, NeedsConfirmation: true, Parameters: item},
			func(ctx context.Context, p map[string]any, _ *actions.Trace) (any, error) {
				return "removed", exec(ctx, `DELETE FROM stock WHERE item = ?`, p["item"])
			}),
		actions.New(actions.Definition{ID: "stock/count", Effect: actions.EffectRead},
			func(ctx context.Context, _ map[string]any, _ *actions.Trace) (any, error) {
				tx, _ := sqlstore.Tx(ctx)
				var n int
				err := tx.QueryRowContext(ctx, `SELECT count(*) FROM stock`).Scan(&n)
				return n, err
			}),
		programs.Action(reg, nil),
	)
	rows := func() []string {
		r, err := db.QueryContext(ctx, `SELECT item FROM stock ORDER BY item`)
		require.NoError(t, err)
		defer r.Close()
		out := []string{}
		for r.Next() {
			var s string
			require.NoError(t, r.Scan(&s))
			out = append(out, s)
		}
		require.NoError(t, r.Err())
		return out
	}
	_, err = db.ExecContext(ctx, `INSERT INTO stock (item) VALUES ('pear'), ('plum')`)
	require.NoError(t, err)
	return reg, rows
}

// sqlstoreDollar numbers a statement's ? placeholders for PostgreSQL.
func sqlstoreDollar(sql string) string {
	out, n := []byte{}, 0
	for i := 0; i < len(sql); i++ {
		if sql[i] == '?' {
			n++
			out = append(out, '$', byte('0'+n))
			continue
		}
		out = append(out, sql[i])
	}
	return string(out)
}

var (
	// agent is a model acting for sam; sam confirms on the host's screen.
	agent = &identity.Caller{Principal: "sam", Surface: identity.SurfaceAI}
	sam   = &identity.Caller{Principal: "sam", Surface: identity.SurfaceUI}
)

// propose runs src as the agent and returns the pending change it was
// held as.
func propose(t *testing.T, reg *actions.Registry, src string) actions.PendingChange {
	t.Helper()
	res, err := run(t, reg, agent, src, nil)
	require.ErrorIs(t, err, codes.ConfirmationRequired)
	var rf *actions.Refusal
	require.ErrorAs(t, err, &rf)
	require.NotNil(t, rf.Pending)
	require.Len(t, res.Records, 1)
	assert.False(t, res.Records[0].RolledBack, "the held change is kept")
	pc, err := reg.PendingChange(context.Background(), rf.Pending.ID, sam)
	require.NoError(t, err)
	// Its record replays as held: the preview runs again, undone, and
	// makes the same calls.
	_, err = reg.Replay(context.Background(), res.Records[0])
	require.NoError(t, err)
	return pc
}

// shown is what the person is shown of a previewed change: each call
// the program makes, with its parameters as they will run.
func shown(pc actions.PendingChange) [][2]string {
	var out [][2]string
	if pc.Preview == nil {
		return nil
	}
	for _, s := range pc.Preview.Steps {
		if s.Call != nil {
			out = append(out, [2]string{s.Call.Action, s.Call.Parameters})
		}
	}
	return out
}

func TestProgramConfirmedWhole(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		reg, rows := shopOn(t, db)
		ctx := context.Background()

		// A program that calls an action needing confirmation runs first
		// as a preview, undone: nothing is kept, the person is shown
		// every call. Math.random is recorded, so the confirmed run draws
		// the same name.
		pc := propose(t, reg, `
			await stock.add({item: "fig" + Math.floor(Math.random() * 1000)});
			await stock.remove({item: "pear"});
			return await stock.count();
		`)
		assert.Equal(t, []string{"pear", "plum"}, rows(), "the preview is undone")
		calls := shown(pc)
		require.Len(t, calls, 3)
		assert.Equal(t, "stock/add", calls[0][0])
		assert.Regexp(t, `^\{"item":"fig\d+"\}$`, calls[0][1])
		assert.Equal(t, [2]string{"stock/remove", `{"item":"pear"}`}, calls[1])
		assert.Equal(t, [2]string{"stock/count", `{}`}, calls[2])
		assert.Equal(t, `2`, pc.Preview.Result, "the preview's own result")
		assert.NotEmpty(t, pc.Reason)

		// Confirmed, it runs exactly the calls shown, and commits.
		res, err := reg.Decide(ctx, actions.Decision{Change: pc.ID, Confirm: true, Caller: sam})
		require.NoError(t, err)
		assert.Equal(t, "2", res.Text)
		got := res.Entry()
		var made [][2]string
		for _, s := range got.Steps {
			if s.Call != nil {
				made = append(made, [2]string{s.Call.Action, s.Call.Parameters})
			}
		}
		assert.Equal(t, calls, made)
		fig := calls[0][1][len(`{"item":"`) : len(calls[0][1])-2]
		assert.Equal(t, []string{fig, "plum"}, rows())
		assert.False(t, res.Records[0].RolledBack)
		assert.Equal(t, store.StageConfirmed, res.Records[0].Audit.Stage)
	})
}

func TestProgramThatChangesBeforeConfirmationIsRefused(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		reg, rows := shopOn(t, db)
		ctx := context.Background()
		// What the program does depends on what it reads: it removes
		// pear only while the stock holds two items.
		pc := propose(t, reg, `
			const n = await stock.count();
			await stock.add({item: "n" + n});
			if (n === 2) await stock.remove({item: "pear"});
		`)
		assert.Equal(t, [][2]string{{"stock/count", "{}"}, {"stock/add", `{"item":"n2"}`}, {"stock/remove", `{"item":"pear"}`}}, shown(pc))

		// Meanwhile the stock changes: run again, the program would make
		// other calls than those shown.
		_, err := reg.Run(ctx, actions.Call{Action: "stock/add", Params: map[string]any{"item": "kiwi"}})
		require.NoError(t, err)
		before := rows()

		res, err := reg.Decide(ctx, actions.Decision{Change: pc.ID, Confirm: true, Caller: sam})
		require.Error(t, err)
		assert.ErrorIs(t, err, codes.StaleChange)
		var d *actions.Divergence
		require.ErrorAs(t, err, &d, "the cause says where the run departed")
		assert.Equal(t, "/steps/0/call/result", d.Path)
		assert.NotContains(t, err.Error(), "kiwi")
		assert.Equal(t, before, rows(), "nothing of the confirmed run is kept")
		require.Len(t, res.Records, 1)
		assert.True(t, res.Records[0].RolledBack)
	})
}

func TestProgramRejectedRunsNothing(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		reg, rows := shopOn(t, db)
		ctx := context.Background()
		pc := propose(t, reg, `await stock.add({item: "fig"}); await stock.remove({item: "plum"});`)
		_, err := reg.Decide(ctx, actions.Decision{Change: pc.ID, Confirm: false, Caller: sam, Reason: "keep the plums"})
		require.NoError(t, err)
		assert.Equal(t, []string{"pear", "plum"}, rows())
		_, err = reg.Decide(ctx, actions.Decision{Change: pc.ID, Confirm: true, Caller: sam})
		assert.ErrorIs(t, err, codes.UnknownChange, "a rejected change is gone")
		assert.Equal(t, []string{"pear", "plum"}, rows())

		// An edit would run a program the preview never showed: refused.
		pc = propose(t, reg, `await stock.remove({item: "plum"});`)
		_, err = reg.Decide(ctx, actions.Decision{Change: pc.ID, Caller: sam, Params: map[string]any{"program": `await stock.remove({item: "pear"});`}})
		assert.ErrorIs(t, err, codes.ConstraintViolation)
		assert.Equal(t, []string{"pear", "plum"}, rows())
	})
}

func TestProgramNeedingNoConfirmationIsKeptAsItRan(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		reg, rows := shopOn(t, db)
		// No call needs confirmation: the preview is the run, kept once.
		res, err := run(t, reg, agent, `await stock.add({item: "fig"}); return await stock.count();`, nil)
		require.NoError(t, err)
		assert.Equal(t, "3", res.Text)
		assert.Equal(t, []string{"fig", "pear", "plum"}, rows())
		pending, err := reg.PendingChanges(context.Background(), sam)
		require.NoError(t, err)
		assert.Empty(t, pending)
	})
}

func TestProgramActionNeedingConfirmationIsPreviewed(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		reg, rows := shopOn(t, db)
		ctx := context.Background()
		// A host may make every program wait for a person: the program
		// is previewed all the same, so the person sees its calls.
		guarded := programs.Action(reg, &programs.Options{ID: "programs/guarded"})
		guarded.NeedsConfirmation = true
		require.NoError(t, reg.Register(guarded))
		_, err := reg.Run(ctx, actions.Call{Action: "programs/guarded", Caller: agent,
			Params: map[string]any{"program": `await stock.add({item: "fig"}); return 1;`}})
		var rf *actions.Refusal
		require.ErrorAs(t, err, &rf)
		require.Equal(t, codes.ConfirmationRequired, rf.Code)
		assert.Equal(t, []string{"pear", "plum"}, rows())
		pc, err := reg.PendingChange(ctx, rf.Pending.ID, sam)
		require.NoError(t, err)
		assert.Equal(t, [][2]string{{"stock/add", `{"item":"fig"}`}}, shown(pc))

		res, err := reg.Decide(ctx, actions.Decision{Change: pc.ID, Confirm: true, Caller: sam})
		require.NoError(t, err)
		assert.Equal(t, "1", res.Text)
		assert.Equal(t, []string{"fig", "pear", "plum"}, rows())
	})
}
