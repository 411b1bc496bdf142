package sqlstore_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite" // the host picks the driver

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/sqlstore"
	"github.com/actionreg/actions/store"
)

// A batch runs in one transaction with its entries: refused at its
// second step, it leaves no stock and two entries marked rolled back;
// done, its change and its entry are committed together.
func Example() {
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file::memory:")
	if err != nil {
		panic(err)
	}
	db.SetMaxOpenConns(1) // each connection to :memory: is a database of its own
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE stock (item TEXT PRIMARY KEY, n INTEGER NOT NULL)"); err != nil {
		panic(err)
	}
	st, err := sqlstore.New(db, sqlstore.SQLite, nil)
	if err != nil {
		panic(err)
	}
	if err := st.Migrate(ctx); err != nil {
		panic(err)
	}

	// The store runs each unit (a call, a batch, a decision) in one
	// transaction with its records; a body finds it in its ctx.
	reg := actions.NewRegistry(&actions.Options{Store: st, Gate: &actions.GateOptions{Pending: st.Pending()}})
	reg.MustRegister(actions.New(actions.Definition{ID: "stock/add",
		Parameters: `{"type":"object","required":["item","n"],"properties":{"item":{"type":"string","minLength":1},"n":{"type":"integer"}}}`},
		func(ctx context.Context, p map[string]any, _ *actions.Trace) (any, error) {
			tx := txOf(ctx)
			n, _ := p["n"].(json.Number).Int64()
			_, err := tx.ExecContext(ctx, "INSERT INTO stock (item, n) VALUES (?, ?)", p["item"], n)
			return nil, err
		}))

	refused, _ := reg.DecodeBatch([]byte(`{"commands":[
		{"call":"stock/add","with":{"item":"nut","n":3}},
		{"call":"stock/add","with":{"item":"","n":1}}]}`))
	_, err = reg.Run(ctx, actions.Call{Batch: &refused})
	fmt.Println("refused:", actions.CodeOf(err))
	_, err = reg.Run(ctx, actions.Call{Action: "stock/add", Params: `{"item":"bolt","n":2}`})
	fmt.Println("done:", err)

	var items int
	_ = db.QueryRow("SELECT count(*) FROM stock").Scan(&items)
	fmt.Println("items in stock:", items)
	recs, err := st.Read(ctx, sqlstore.Filter{Kept: sqlstore.KeptAndUndone})
	if err != nil {
		panic(err)
	}
	for _, r := range recs {
		fmt.Println(r.Seq, r.Position, r.RolledBack, r.Text)
	}
	// Output:
	// refused: invalid_parameters
	// done: <nil>
	// items in stock: 1
	// 1 0 true {"action":"stock/add","outcome":"done","parameters":"{\"item\":\"nut\",\"n\":3}","steps":[]}
	// 2 1 true {"action":"stock/add","error":"invalid_parameters","outcome":"refused","parameters":"{\"item\":\"\",\"n\":1}","steps":[]}
	// 3 0 false {"action":"stock/add","outcome":"done","parameters":"{\"item\":\"bolt\",\"n\":2}","steps":[]}
}

func ExampleDialect_Rebind() {
	q := "SELECT entry FROM actions_run_log WHERE action = ? AND outcome = ?"
	fmt.Println(sqlstore.SQLite.Rebind(q))
	fmt.Println(sqlstore.PostgreSQL.Rebind(q))
	// Output:
	// SELECT entry FROM actions_run_log WHERE action = ? AND outcome = ?
	// SELECT entry FROM actions_run_log WHERE action = $1 AND outcome = $2
}

// An SQLite file served by one writer, the units queued in order, and a
// pool of readers beside it.
func ExampleOpenSQLite() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	write, read, err := sqlstore.OpenSQLite("sqlite", filepath.Join(dir, "app.db"))
	if err != nil {
		panic(err)
	}
	defer write.Close()
	defer read.Close()
	st, err := sqlstore.New(write, sqlstore.SQLite, &sqlstore.Options{Readers: read})
	if err != nil {
		panic(err)
	}
	if err := st.Migrate(ctx); err != nil {
		panic(err)
	}
	reg := actions.NewRegistry(&actions.Options{Store: st})
	reg.MustRegister(actions.New(actions.Definition{ID: "t/echo", Parameters: `{"type":"object"}`},
		func(ctx context.Context, p map[string]any, _ *actions.Trace) (any, error) { return p, nil }))
	if _, err := reg.Run(ctx, actions.Call{Action: "t/echo", Params: []byte(`{"a":1}`)}); err != nil {
		panic(err)
	}
	recs, err := st.Read(ctx, sqlstore.Filter{}) // from the read pool
	if err != nil {
		panic(err)
	}
	fmt.Println(len(recs), recs[0].Entry.Action, recs[0].Entry.Result)
	// Output:
	// 1 t/echo {"a":1}
}

// The records of one pending change (held, then confirmed), and the
// calls that touched no change at all.
func ExampleFilter_stages() {
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file::memory:")
	if err != nil {
		panic(err)
	}
	db.SetMaxOpenConns(1) // each connection to :memory: is a database of its own
	defer db.Close()
	st, err := sqlstore.New(db, sqlstore.SQLite, nil)
	if err != nil {
		panic(err)
	}
	if err := st.Migrate(ctx); err != nil {
		panic(err)
	}
	reg := actions.NewRegistry(&actions.Options{Store: st, Gate: &actions.GateOptions{Pending: st.Pending()}})
	body := func(context.Context, map[string]any, *actions.Trace) (any, error) { return "ok", nil }
	reg.MustRegister(
		actions.New(actions.Definition{ID: "stock/count", Effect: actions.EffectRead, Parameters: `{"type":"object"}`}, body),
		actions.New(actions.Definition{ID: "stock/purge", Effect: actions.EffectDelete, NeedsConfirmation: true, Parameters: `{"type":"object"}`}, body),
	)
	ana := &identity.Caller{Principal: "ana", Surface: identity.SurfaceUI}
	_, _ = reg.Run(ctx, actions.Call{Action: "stock/count", Caller: ana})
	_, err = reg.Run(ctx, actions.Call{Action: "stock/purge", Caller: ana})
	var held *actions.Refusal
	if !errors.As(err, &held) || held.Pending == nil {
		panic(err)
	}
	id := held.Pending.ID
	if _, err := reg.Decide(ctx, actions.Decision{Change: id, Confirm: true, Caller: ana}); err != nil {
		panic(err)
	}

	recs, err := st.Read(ctx, sqlstore.Filter{PendingChange: id, Newest: true})
	if err != nil {
		panic(err)
	}
	for _, r := range recs {
		fmt.Println(r.Seq, r.Entry.Action, r.Audit.Stage, r.Entry.Outcome)
	}
	recs, err = st.Read(ctx, sqlstore.Filter{Stages: []store.Stage{""}})
	if err != nil {
		panic(err)
	}
	for _, r := range recs {
		fmt.Println(r.Seq, r.Entry.Action, "no stage")
	}
	// Output:
	// 3 stock/purge confirmed done
	// 2 stock/purge held refused
	// 1 stock/count no stage
}

// A replica that starts again settles what it was running when it
// stopped: a task still working and a keyed call's claim still
// unanswered are answered outcome_unknown, and nothing runs again.
func ExampleStore_SettleOrphans() {
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file::memory:")
	if err != nil {
		panic(err)
	}
	db.SetMaxOpenConns(1)
	defer db.Close()
	st, err := sqlstore.New(db, sqlstore.SQLite, &sqlstore.Options{Origin: "replica-a"})
	if err != nil {
		panic(err)
	}
	if err := st.Migrate(ctx); err != nil {
		panic(err)
	}
	// What the replica kept before it was killed: a task still working,
	// and the claim of a keyed call whose body was running.
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	_, _, err = st.CreateTask(ctx, store.Task{ID: "t1", Principal: "ann", Action: "reports/build", Status: store.TaskWorking, Created: now, Updated: now, TTL: time.Hour})
	if err != nil {
		panic(err)
	}
	params := map[string]any{"amount": 8}
	text, _ := actions.CanonicalJSON(params)
	digest := sha256.Sum256(text)
	_, err = st.ClaimKey(ctx, store.KeyRecord{Principal: "ann", Action: "shop/charge", Key: "order-17",
		Digest: hex.EncodeToString(digest[:]), Expires: now.Add(24 * time.Hour), Unit: "claim:1"}, now)
	if err != nil {
		panic(err)
	}

	// At its next start, before it serves:
	n, err := st.SettleOrphans(ctx, "replica-a", now.Add(time.Minute))
	fmt.Println(n.Tasks, n.Claims, err)
	t, _ := st.TaskByID(ctx, "t1")
	_, why := actions.TaskResult(t)
	fmt.Println(t.Status, actions.CodeOf(why))

	// The client retries the keyed call: the body does not run again.
	reg := actions.NewRegistry(&actions.Options{Store: st, Now: func() time.Time { return now.Add(time.Hour) }})
	reg.MustRegister(actions.New(actions.Definition{ID: "shop/charge"},
		func(context.Context, map[string]any, *actions.Trace) (any, error) {
			fmt.Println("charged again")
			return nil, nil
		}))
	_, err = reg.Run(ctx, actions.Call{Action: "shop/charge", Params: params, IdempotencyKey: "order-17",
		Caller: &identity.Caller{Principal: "ann", Surface: identity.SurfaceUI}})
	fmt.Println(actions.CodeOf(err), codes.PolicyOf(actions.CodeOf(err)).Retry)
	// Output:
	// 1 1 <nil>
	// completed outcome_unknown
	// outcome_unknown never
}

// The clauses a body under OrderLocks ends its reads with: a row it reads
// and keeps (FOR SHARE), a row it reads and then writes (FOR UPDATE). They
// are empty outside a unit of a PostgreSQL store, as here: SQLite, one
// writer at a time, needs neither, and a View is read only.
func ExampleForShare() {
	ctx := context.Background()
	fmt.Printf("%q\n", "SELECT n FROM stock WHERE item = ?"+sqlstore.ForShare(ctx))
	fmt.Printf("%q\n", "SELECT n FROM stock WHERE item = ?"+sqlstore.ForUpdate(ctx))
	// Output:
	// "SELECT n FROM stock WHERE item = ?"
	// "SELECT n FROM stock WHERE item = ?"
}

// A report reads a range shared (readers side by side), and each insert
// into that range takes the same key exclusively: under OrderLocks the
// log then orders every report against every insert it could have seen.
// Outside a unit there is no transaction to hold the lock.
func ExampleLockShared() {
	ctx := context.Background()
	fmt.Println(sqlstore.LockShared(ctx, "stock of period 2025"))
	fmt.Println(sqlstore.Lock(ctx, "stock of period 2025"))
	// Output:
	// sqlstore: LockShared outside a unit
	// sqlstore: Lock outside a unit
}
