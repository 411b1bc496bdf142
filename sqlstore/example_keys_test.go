package sqlstore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/sqlstore"
)

// Two replicas (two pools, two stores, two registries) on one SQLite
// file: a keyed call made on the first and retried on the second runs
// once. *Store is a store.KeyStore (ClaimKey, SettleKey): the
// registry claims the key in actions_keys before the unit runs, and the
// retry reads the answer the unit left there.
func ExampleStore_ClaimKey() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	charges := 0
	var closers []func() error
	defer func() {
		for _, c := range closers {
			_ = c()
		}
	}()
	replica := func() *actions.Registry {
		write, read, err := sqlstore.OpenSQLite("sqlite", filepath.Join(dir, "app.db"))
		if err != nil {
			panic(err)
		}
		closers = append(closers, write.Close, read.Close)
		store, err := sqlstore.New(write, sqlstore.SQLite, &sqlstore.Options{Readers: read})
		if err != nil {
			panic(err)
		}
		if err := store.Migrate(ctx); err != nil {
			panic(err)
		}
		reg := actions.NewRegistry(&actions.Options{Store: store})
		reg.MustRegister(actions.New(actions.Definition{ID: "shop/charge", Parameters: `{"type":"object"}`},
			func(context.Context, map[string]any, *actions.Trace) (any, error) {
				charges++
				return map[string]any{"charge": charges}, nil
			}))
		return reg
	}
	a, b := replica(), replica()
	call := actions.Call{Action: "shop/charge", IdempotencyKey: "order-17"}
	first, err := a.Run(ctx, call)
	fmt.Println(first.Text, err)
	retry, err := b.Run(ctx, call)
	fmt.Println(retry.Text, err, "charges:", charges)
	// Output:
	// {"charge":1} <nil>
	// {"charge":1} <nil> charges: 1
}
