package programs_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/internal/dbtest"
	"github.com/actionreg/actions/programs"
	"github.com/actionreg/actions/sqlstore"
)

// stockOn is a registry on a store in db with an action that adds a
// row to a table of the same database, in the unit's transaction.
func stockOn(t *testing.T, db *dbtest.DB) (*actions.Registry, func() int) {
	t.Helper()
	ctx := context.Background()
	store, err := sqlstore.New(db.DB, db.Dialect, nil)
	require.NoError(t, err)
	require.NoError(t, store.Migrate(ctx))
	_, err = db.ExecContext(ctx, `CREATE TABLE stock (item TEXT NOT NULL)`)
	require.NoError(t, err)
	insert := `INSERT INTO stock (item) VALUES (?)`
	if db.Dialect == sqlstore.PostgreSQL {
		insert = `INSERT INTO stock (item) VALUES ($1)`
	}
	reg := actions.NewRegistry(&actions.Options{Store: store})
	reg.MustRegister(
		actions.New(actions.Definition{ID: "stock/add", Effect: actions.EffectWrite, Additive: true, Capability: "stock.write",
			Parameters: `{"type":"object","properties":{"item":{"type":"string","maxLength":20}},"required":["item"]}`},
			func(ctx context.Context, p map[string]any, _ *actions.Trace) (any, error) {
				tx, ok := sqlstore.Tx(ctx)
				if !ok {
					return nil, actions.NewRefusal(codes.Internal, "no transaction")
				}
				_, err := tx.ExecContext(ctx, insert, p["item"])
				return "added", err
			}),
		actions.New(actions.Definition{ID: "stock/count", Effect: actions.EffectRead, Capability: "stock.read"},
			func(ctx context.Context, _ map[string]any, _ *actions.Trace) (any, error) {
				tx, _ := sqlstore.Tx(ctx)
				var n int
				err := tx.QueryRowContext(ctx, `SELECT count(*) FROM stock`).Scan(&n)
				return n, err
			}),
	)
	count := func() int {
		var n int
		require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FROM stock`).Scan(&n))
		return n
	}
	return reg, count
}

func TestProgramIsOneUnit(t *testing.T) {
	dbtest.Each(t, testProgramIsOneUnit)
}

func testProgramIsOneUnit(t *testing.T, db *dbtest.DB) {
	reg, count := stockOn(t, db)
	stocker := &identity.Caller{Principal: "sam", Capabilities: []string{"stock.read", "stock.write"}, Surface: identity.SurfaceAI}

	// Done whole: both rows kept, and the program saw its own writes.
	res, err := run(t, reg, stocker, `
		for (const item of ["pear", "plum"]) await stock.add({item});
		return await stock.count();
	`, nil)
	require.NoError(t, err)
	assert.Equal(t, "2", res.Text)
	assert.Equal(t, 2, count())
	for _, rec := range res.Records {
		assert.False(t, rec.RolledBack)
	}

	// A refused call (a name too long) undoes the writes before it.
	res, err = run(t, reg, stocker, `
		await stock.add({item: "fig"});
		await stock.add({item: "a name far too long for the schema"});
	`, nil)
	assert.ErrorIs(t, err, codes.InvalidParameters)
	assert.Equal(t, 2, count(), "nothing of the refused program is kept")
	require.Len(t, calls(res), 2)
	require.Len(t, res.Records, 1)
	assert.True(t, res.Records[0].RolledBack)

	// A program stopped at a bound undoes its writes too.
	_, err = run(t, reg, stocker, `await stock.add({item: "kiwi"}); while (true) {}`, &programs.Options{MaxTime: 50_000_000})
	assert.ErrorIs(t, err, programs.CodeTimeLimit)
	_, err = run(t, reg, stocker, `await stock.add({item: "lime"}); throw new Error("changed my mind")`, nil)
	assert.ErrorIs(t, err, programs.CodeFailed)
	assert.Equal(t, 2, count())

	// A caller who may only read is refused the write, whole.
	viewer := &identity.Caller{Principal: "vic", Capabilities: []string{"stock.read"}, Surface: identity.SurfaceAI}
	res, err = run(t, reg, viewer, `return [typeof stock.add, await stock.count()];`, nil)
	require.NoError(t, err)
	assert.Equal(t, `["undefined",2]`, res.Text)
}
