package sqlstore_test

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/sqlstore"
)

// A nested call is a savepoint of its unit: the refused call's write is
// undone, while the outer body carries on and commits its own.
func ExampleStore_Savepoint() {
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file::memory:")
	if err != nil {
		panic(err)
	}
	db.SetMaxOpenConns(1)
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE notes (text TEXT NOT NULL)"); err != nil {
		panic(err)
	}
	store, err := sqlstore.New(db, sqlstore.SQLite, nil)
	if err != nil {
		panic(err)
	}
	if err := store.Migrate(ctx); err != nil {
		panic(err)
	}
	write := func(ctx context.Context, text string) error {
		_, err := txOf(ctx).ExecContext(ctx, "INSERT INTO notes (text) VALUES (?)", text)
		return err
	}
	reg := actions.NewRegistry(&actions.Options{Store: store})
	reg.MustRegister(
		actions.New(actions.Definition{ID: "notes/risky"}, func(ctx context.Context, _ map[string]any, _ *actions.Trace) (any, error) {
			if err := write(ctx, "risky"); err != nil {
				return nil, err
			}
			return nil, actions.NewRefusal("out_of_ink", "no ink left")
		}),
		actions.New(actions.Definition{ID: "notes/outer"}, func(ctx context.Context, _ map[string]any, tr *actions.Trace) (any, error) {
			if _, err := tr.Call(ctx, "notes/risky", nil); err != nil {
				fmt.Println("nested:", actions.CodeOf(err))
			}
			return "ok", write(ctx, "outer")
		}),
	)
	if _, err := reg.Run(ctx, actions.Call{Action: "notes/outer"}); err != nil {
		panic(err)
	}
	var text string
	var n int
	if err := db.QueryRow("SELECT COUNT(*), MIN(text) FROM notes").Scan(&n, &text); err != nil {
		panic(err)
	}
	fmt.Println(n, text)
	// Output:
	// nested: out_of_ink
	// 1 outer
}
