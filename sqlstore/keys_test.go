package sqlstore_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
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

// keyClock is a settable clock shared by the replicas of a test.
type keyClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *keyClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *keyClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// keyReplica is one replica: its own pool, store and registry on the
// shared database. runs counts the charge bodies it ran.
type keyReplica struct {
	s    *sqlstore.Store
	reg  *actions.Registry
	runs *atomic.Int64
	// release, when not nil, is waited on by shop/slow's body; started
	// is closed when it starts.
	release, started chan struct{}
}

var ann = &identity.Caller{Principal: "ann", Surface: identity.SurfaceUI}

// newKeyReplica opens a replica on db (a pool of its own when fresh),
// with shop/charge (inserts a charge), shop/refund (needs
// confirmation), shop/mail (needs a key) and shop/slow (waits).
func newKeyReplica(t testing.TB, db *dbtest.DB, fresh bool, clock *keyClock, runs *atomic.Int64, opts *sqlstore.Options) *keyReplica {
	t.Helper()
	sqlDB := db.DB
	if fresh {
		var err error
		sqlDB, err = sql.Open(db.Driver, db.DSN)
		require.NoError(t, err)
		t.Cleanup(func() { _ = sqlDB.Close() })
	}
	s, err := sqlstore.New(sqlDB, db.Dialect, opts)
	require.NoError(t, err)
	require.NoError(t, s.Migrate(context.Background()))
	rp := &keyReplica{s: s, runs: runs}
	rp.reg = actions.NewRegistry(&actions.Options{Store: s, KeyWait: time.Minute, Now: clock.now,
		Gate: &actions.GateOptions{Pending: s.Pending()}})
	charge := func(ctx context.Context, p map[string]any, _ *actions.Trace) (any, error) {
		tx := txOf(ctx)
		runs.Add(1)
		if _, err := tx.ExecContext(ctx, db.Dialect.Rebind("INSERT INTO charges (amount) VALUES (?)"), p["amount"].(interface{ String() string }).String()); err != nil {
			return nil, err
		}
		return map[string]any{"charged": p["amount"]}, nil
	}
	params := `{"type":"object","properties":{"amount":{"type":"integer"}},"required":["amount"]}`
	require.NoError(t, rp.reg.Register(
		actions.Action{Definition: actions.Definition{ID: "shop/charge", Parameters: params}, Run: charge},
		actions.Action{Definition: actions.Definition{ID: "shop/refund", Parameters: params, NeedsConfirmation: true}, Run: charge},
		actions.Action{Definition: actions.Definition{ID: "shop/mail", Parameters: params, NeedsIdempotencyKey: true}, Run: charge},
		actions.Action{Definition: actions.Definition{ID: "shop/slow", Parameters: params},
			Run: func(ctx context.Context, p map[string]any, _ *actions.Trace) (any, error) {
				close(rp.started)
				<-rp.release
				return charge(ctx, p, nil)
			}},
	))
	return rp
}

func createCharges(t testing.TB, db *dbtest.DB) {
	t.Helper()
	_, err := db.Exec("CREATE TABLE charges (amount TEXT NOT NULL)")
	require.NoError(t, err)
}

func chargeCount(t testing.TB, db *dbtest.DB) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM charges").Scan(&n))
	return n
}

func chargeCall(key string, amount int) actions.Call {
	return actions.Call{Action: "shop/charge", Params: map[string]any{"amount": amount}, Caller: ann, IdempotencyKey: key}
}

// auditLines are the audit lines of answered retries in the log.
func auditLines(t testing.TB, s *sqlstore.Store) []sqlstore.Record {
	t.Helper()
	all, err := s.Read(context.Background(), sqlstore.Filter{Kept: sqlstore.UndoneOnly})
	require.NoError(t, err)
	var out []sqlstore.Record
	for _, r := range all {
		if r.Audit.Answered != "" {
			out = append(out, r)
		}
	}
	return out
}

func TestKeyRetryInSequence(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		createCharges(t, db)
		var runs atomic.Int64
		rp := newKeyReplica(t, db, false, &keyClock{t: time.Unix(1e9, 0)}, &runs, nil)
		ctx := context.Background()
		first, err := rp.reg.Run(ctx, chargeCall("k-1", 5))
		require.NoError(t, err)
		again, err := rp.reg.Run(ctx, chargeCall("k-1", 5))
		require.NoError(t, err)
		assert.Equal(t, map[string]any{"charged": jsonNumber("5")}, again.Value)
		assert.Equal(t, first.Entry(), again.Entry(), "the recorded entry")
		require.Len(t, again.Records, 1)
		assert.Equal(t, "k-1", again.Records[0].Audit.IdempotencyKey)
		assert.Equal(t, int64(1), runs.Load())
		assert.Equal(t, 1, chargeCount(t, db))
		kept, err := rp.s.Read(ctx, sqlstore.Filter{})
		require.NoError(t, err)
		require.Len(t, kept, 1, "the retry wrote no kept record")
		lines := auditLines(t, rp.s)
		require.Len(t, lines, 1, "one audit line")
		assert.Equal(t, kept[0].Unit, lines[0].Audit.Answered)
		assert.Equal(t, kept[0].Entry, lines[0].Entry)

		// Another key, and no key, run again.
		_, err = rp.reg.Run(ctx, chargeCall("k-2", 5))
		require.NoError(t, err)
		_, err = rp.reg.Run(ctx, chargeCall("", 5))
		require.NoError(t, err)
		assert.Equal(t, 3, chargeCount(t, db))
		// Another principal's same key is its own.
		bob := chargeCall("k-1", 5)
		bob.Caller = &identity.Caller{Principal: "bob", Surface: identity.SurfaceUI}
		_, err = rp.reg.Run(ctx, bob)
		require.NoError(t, err)
		assert.Equal(t, 4, chargeCount(t, db))
	})
}

func TestKeyConflictAndWindow(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		createCharges(t, db)
		var runs atomic.Int64
		clock := &keyClock{t: time.Unix(1e9, 0)}
		rp := newKeyReplica(t, db, false, clock, &runs, nil)
		ctx := context.Background()
		_, err := rp.reg.Run(ctx, chargeCall("secret-key-77", 5))
		require.NoError(t, err)

		_, err = rp.reg.Run(ctx, chargeCall("secret-key-77", 6))
		require.ErrorIs(t, err, codes.IdempotencyConflict)
		assert.Equal(t, codes.IdempotencyConflict, actions.CodeOf(err))
		assert.NotContains(t, err.Error(), "secret-key-77")
		assert.NotContains(t, err.Error(), "6")
		assert.Equal(t, 1, chargeCount(t, db), "nothing ran")

		clock.add(24*time.Hour - time.Microsecond)
		_, err = rp.reg.Run(ctx, chargeCall("secret-key-77", 5))
		require.NoError(t, err)
		assert.Equal(t, 1, chargeCount(t, db), "still within the window")

		clock.add(time.Microsecond)
		_, err = rp.reg.Run(ctx, chargeCall("secret-key-77", 6))
		require.NoError(t, err, "after the window the key is new")
		assert.Equal(t, 2, chargeCount(t, db))
		_, err = rp.reg.Run(ctx, chargeCall("secret-key-77", 6))
		require.NoError(t, err)
		assert.Equal(t, 2, chargeCount(t, db))

		n, err := rp.s.PurgeExpired(ctx, clock.now().Add(25*time.Hour))
		require.NoError(t, err)
		assert.Equal(t, int64(1), n)
	})
}

// TestKeyConcurrentReplicas: 16 clients on two replicas (two pools, two
// stores, two registries) send one call with one key at once: the body
// runs once, and every client gets its answer.
func TestKeyConcurrentReplicas(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		createCharges(t, db)
		var runs atomic.Int64
		clock := &keyClock{t: time.Unix(1e9, 0)}
		rps := []*keyReplica{newKeyReplica(t, db, true, clock, &runs, nil), newKeyReplica(t, db, true, clock, &runs, nil)}
		var wg sync.WaitGroup
		errs := make([]error, 16)
		vals := make([]any, 16)
		start := make(chan struct{})
		for i := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				res, err := rps[i%2].reg.Run(context.Background(), chargeCall("one-key", 9))
				errs[i], vals[i] = err, res.Value
			}()
		}
		close(start)
		wg.Wait()
		for i := range 16 {
			require.NoError(t, errs[i], "client %d", i)
			assert.Equal(t, map[string]any{"charged": jsonNumber("9")}, normalise(vals[i]), "client %d", i)
		}
		assert.Equal(t, int64(1), runs.Load(), "the body ran once")
		assert.Equal(t, 1, chargeCount(t, db))
		assert.Len(t, auditLines(t, rps[0].s), 15)
	})
}

// TestKeyInProgress: a retry while the first call still runs waits at
// most KeyWait, then is refused in_progress; the first call then
// answers the next retry. On SQLite, transactions that begin immediate
// wait for each other at BEGIN: a retry never sees a first call in
// flight.
func TestKeyInProgress(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		if db.Dialect == sqlstore.SQLite {
			t.Skip("SQLite: a second writer waits at BEGIN (busy_timeout), no call is seen in flight")
		}
		createCharges(t, db)
		var runs atomic.Int64
		clock := &keyClock{t: time.Unix(1e9, 0)}
		a := newKeyReplica(t, db, true, clock, &runs, nil)
		a.started, a.release = make(chan struct{}), make(chan struct{})
		b := newKeyReplica(t, db, true, clock, &runs, nil)
		b.reg = actions.NewRegistry(&actions.Options{Now: clock.now, Store: b.s, KeyWait: 20 * time.Millisecond})
		require.NoError(t, b.reg.Register(actions.Action{Definition: actions.Definition{ID: "shop/slow",
			Parameters: `{"type":"object"}`}, Run: func(context.Context, map[string]any, *actions.Trace) (any, error) {
			runs.Add(1)
			return nil, nil
		}}))
		call := actions.Call{Action: "shop/slow", Params: map[string]any{"amount": 3}, Caller: ann, IdempotencyKey: "slow"}
		done := make(chan error, 1)
		go func() { _, err := a.reg.Run(context.Background(), call); done <- err }()
		<-a.started
		_, err := b.reg.Run(context.Background(), call)
		require.ErrorIs(t, err, codes.InProgress)
		assert.Equal(t, codes.InProgress, actions.CodeOf(err))
		var rf *actions.Refusal
		require.ErrorAs(t, err, &rf)
		assert.Equal(t, codes.RetryAfterBackoff, rf.Retry)
		assert.False(t, rf.RetryAt.IsZero())
		close(a.release)
		require.NoError(t, <-done)
		res, err := b.reg.Run(context.Background(), call)
		require.NoError(t, err)
		assert.Equal(t, map[string]any{"charged": jsonNumber("3")}, res.Value)
		assert.Equal(t, int64(1), runs.Load())
	})
}

func TestKeyAcrossConfirmation(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		createCharges(t, db)
		var runs atomic.Int64
		clock := &keyClock{t: time.Unix(1e9, 0)}
		rp := newKeyReplica(t, db, false, clock, &runs, nil)
		other := newKeyReplica(t, db, true, clock, &runs, nil)
		ctx := context.Background()
		call := actions.Call{Action: "shop/refund", Params: map[string]any{"amount": 4}, Caller: ann, IdempotencyKey: "refund-1"}
		_, err := rp.reg.Run(ctx, call)
		var held *actions.Refusal
		require.ErrorAs(t, err, &held)
		require.NotNil(t, held.Pending)
		_, err = other.reg.Run(ctx, call)
		var again *actions.Refusal
		require.ErrorAs(t, err, &again)
		require.NotNil(t, again.Pending)
		assert.Equal(t, held.Pending.ID, again.Pending.ID, "the same receipt")
		pcs, err := rp.reg.PendingChanges(ctx, ann)
		require.NoError(t, err)
		assert.Len(t, pcs, 1, "no second pending change")

		res, err := rp.reg.Decide(ctx, actions.Decision{Change: held.Pending.ID, Confirm: true, Caller: ann})
		require.NoError(t, err)
		assert.Equal(t, "refund-1", res.Records[0].Audit.IdempotencyKey)
		after, err := other.reg.Run(ctx, call)
		require.NoError(t, err, "the retry gets the confirmed answer")
		assert.Equal(t, res.Entry(), after.Entry())
		assert.Equal(t, int64(1), runs.Load())
		assert.Equal(t, 1, chargeCount(t, db))

		// A rejected change answers its retries with the rejection.
		call.IdempotencyKey = "refund-2"
		_, err = rp.reg.Run(ctx, call)
		require.ErrorAs(t, err, &held)
		_, err = rp.reg.Decide(ctx, actions.Decision{Change: held.Pending.ID, Confirm: false, Caller: ann})
		require.NoError(t, err)
		_, err = other.reg.Run(ctx, call)
		require.ErrorIs(t, err, codes.Rejected)
		assert.Equal(t, 1, chargeCount(t, db))
	})
}

func TestKeyBatch(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		createCharges(t, db)
		var runs atomic.Int64
		rp := newKeyReplica(t, db, false, &keyClock{t: time.Unix(1e9, 0)}, &runs, nil)
		ctx := context.Background()
		b := actions.Batch{Steps: []actions.Step{
			{Call: "shop/charge", With: map[string]any{"amount": 1}, As: "a"},
			{Call: "shop/charge", With: map[string]any{"amount": 2}},
		}, Result: "${a}"}
		first, err := rp.reg.Run(ctx, actions.Call{Batch: &b, Caller: ann, IdempotencyKey: "batch-1"})
		require.NoError(t, err)
		again, err := rp.reg.Run(ctx, actions.Call{Batch: &b, Caller: ann, IdempotencyKey: "batch-1"})
		require.NoError(t, err)
		assert.Equal(t, normalise(first.Value), again.Value)
		assert.Len(t, again.Records, 2)
		assert.Equal(t, 2, chargeCount(t, db))

		other := b
		other.Steps = b.Steps[:1]
		_, err = rp.reg.Run(ctx, actions.Call{Batch: &other, Caller: ann, IdempotencyKey: "batch-1"})
		require.ErrorIs(t, err, codes.IdempotencyConflict)
		// The batch's key is its own: a single call may use it too.
		_, err = rp.reg.Run(ctx, chargeCall("batch-1", 1))
		require.NoError(t, err)
		assert.Equal(t, 3, chargeCount(t, db))
	})
}

func TestKeyRequired(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		createCharges(t, db)
		var runs atomic.Int64
		rp := newKeyReplica(t, db, false, &keyClock{t: time.Unix(1e9, 0)}, &runs, nil)
		ctx := context.Background()
		call := actions.Call{Action: "shop/mail", Params: map[string]any{"amount": 1}, Caller: ann}
		res, err := rp.reg.Run(ctx, call)
		require.ErrorIs(t, err, codes.IdempotencyKeyRequired)
		assert.Equal(t, codes.IdempotencyKeyRequired, actions.CodeOf(err))
		require.Len(t, res.Records, 1)
		assert.Equal(t, codes.IdempotencyKeyRequired, res.Records[0].Entry.Error)
		b := actions.Batch{Steps: []actions.Step{{Call: "shop/mail", With: map[string]any{"amount": 1}}}}
		_, err = rp.reg.Run(ctx, actions.Call{Batch: &b, Caller: ann})
		require.ErrorIs(t, err, codes.IdempotencyKeyRequired)
		assert.Equal(t, 0, chargeCount(t, db))

		call.IdempotencyKey = "m-1"
		_, err = rp.reg.Run(ctx, call)
		require.NoError(t, err)
		_, err = rp.reg.Run(ctx, actions.Call{Action: "shop/mail", Params: map[string]any{"amount": 1}})
		require.NoError(t, err, "the host's own call needs no key")
		assert.Equal(t, 2, chargeCount(t, db))

		call.IdempotencyKey = "bad key"
		_, err = rp.reg.Run(ctx, call)
		require.ErrorIs(t, err, codes.InvalidParameters)
		assert.NotContains(t, err.Error(), "bad key")
	})
}

// keyChildEnv makes TestKeyChild the child of TestKeyKilledAfterCommit:
// driver, dialect and DSN, tab-separated.
const keyChildEnv = "SQLSTORE_KEY_CHILD"

// TestKeyKilledAfterCommit: a child process (this test binary) runs a
// call with a key and is killed with SIGKILL once the unit committed,
// before it answers; the retry on another replica gets the recorded
// result, and the body ran once.
func TestKeyKilledAfterCommit(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		createCharges(t, db)
		cmd := exec.Command(os.Args[0], "-test.run=^TestKeyChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), keyChildEnv+"="+db.Driver+"\t"+db.Dialect.String()+"\t"+db.DSN)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "%s", out)
		ws, ok := exit.Sys().(syscall.WaitStatus)
		require.True(t, ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL, "the child was killed: %v\n%s", err, out)
		assert.Equal(t, 1, chargeCount(t, db), "the child committed")

		var runs atomic.Int64
		rp := newKeyReplica(t, db, true, &keyClock{t: time.Unix(1e9, 0)}, &runs, nil)
		res, err := rp.reg.Run(context.Background(), chargeCall("killed", 8))
		require.NoError(t, err)
		assert.Equal(t, map[string]any{"charged": jsonNumber("8")}, res.Value)
		assert.Equal(t, int64(0), runs.Load(), "nothing ran again")
		assert.Equal(t, 1, chargeCount(t, db))
	})
}

// TestKeyChild is the child of TestKeyKilledAfterCommit; it does nothing
// in a normal run.
func TestKeyChild(t *testing.T) {
	spec := os.Getenv(keyChildEnv)
	if spec == "" {
		t.Skip("the child process of TestKeyKilledAfterCommit")
	}
	parts := strings.SplitN(spec, "\t", 3)
	dialect := sqlstore.SQLite
	if parts[1] == sqlstore.PostgreSQL.String() {
		dialect = sqlstore.PostgreSQL
	}
	db := &dbtest.DB{Dialect: dialect, DSN: parts[2], Driver: parts[0]}
	var runs atomic.Int64
	rp := newKeyReplica(t, db, true, &keyClock{t: time.Unix(1e9, 0)}, &runs, nil)
	// OnRecord runs once the unit committed, before Run answers.
	reg := actions.NewRegistry(&actions.Options{Store: rp.s, OnRecord: func(store.Record) {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal ends the process
	}})
	require.NoError(t, reg.Register(actions.Action{Definition: actions.Definition{ID: "shop/charge",
		Parameters: `{"type":"object"}`}, Run: func(ctx context.Context, p map[string]any, _ *actions.Trace) (any, error) {
		tx := txOf(ctx)
		if _, err := tx.ExecContext(ctx, db.Dialect.Rebind("INSERT INTO charges (amount) VALUES (?)"), "8"); err != nil {
			return nil, err
		}
		return map[string]any{"charged": p["amount"]}, nil
	}}))
	_, err := reg.Run(context.Background(), chargeCall("killed", 8))
	t.Fatalf("the child lived on: %v", err)
}

func jsonNumber(s string) json.Number { return json.Number(s) }

// normalise is v in JSON's Go types, numbers as json.Number.
func normalise(v any) any {
	text, err := actions.CanonicalJSON(v)
	if err != nil {
		return err
	}
	d := json.NewDecoder(strings.NewReader(string(text)))
	d.UseNumber()
	var out any
	if err := d.Decode(&out); err != nil {
		return err
	}
	return out
}

// TestKeyKeptWhateverTheOutcome: a keyed call whose body ran (charging a
// card: an effect no rollback undoes) and whose call was then refused
// (timeout, output_invalid, result_too_large, the body's own error) keeps
// its key and outcome: three retries get that outcome, the body ran once,
// and the unit's writes were undone.
func TestKeyKeptWhateverTheOutcome(t *testing.T) {
	cases := []struct {
		name string
		def  actions.Definition
		// body's result after the charge; wait: the body waits for its
		// context to end.
		result any
		err    error
		wait   bool
		code   codes.Code
	}{
		// A second: the body surely starts before the deadline, even on
		// a loaded machine.
		{name: "timeout", def: actions.Definition{Timeout: time.Second}, wait: true, code: codes.Timeout},
		{name: "output_invalid", def: actions.Definition{OutputSchema: `{"type":"object","required":["receipt"]}`}, result: map[string]any{"charged": 1}, code: codes.OutputInvalid},
		{name: "result_too_large", def: actions.Definition{MaxResultBytes: 20}, result: map[string]any{"charged": strings.Repeat("x", 100)}, code: codes.ResultTooLarge},
		{name: "body_error", err: errors.New("the bank hung up"), code: codes.Internal},
		{name: "body_refusal", err: actions.NewRefusal("card_declined", "the card was declined"), code: "card_declined"},
	}
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		createCharges(t, db)
		s, err := sqlstore.New(db.DB, db.Dialect, nil)
		require.NoError(t, err)
		require.NoError(t, s.Migrate(context.Background()))
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				var card atomic.Int64 // charges outside the database
				reg := actions.NewRegistry(&actions.Options{Store: s})
				def := c.def
				def.ID, def.Parameters, def.NeedsIdempotencyKey = "shop/pay", `{"type":"object"}`, true
				reg.MustRegister(actions.Action{Definition: def, Run: func(ctx context.Context, _ map[string]any, _ *actions.Trace) (any, error) {
					card.Add(1)
					if _, err := txOf(ctx).ExecContext(ctx, "INSERT INTO charges (amount) VALUES ('7')"); err != nil {
						return nil, err
					}
					if c.wait {
						<-ctx.Done()
						return nil, ctx.Err()
					}
					return c.result, c.err
				}})
				before := chargeCount(t, db)
				call := actions.Call{Action: "shop/pay", Caller: ann, IdempotencyKey: "pay-" + c.name}
				for i := range 4 {
					_, err := reg.Run(context.Background(), call)
					require.Error(t, err, "call %d", i)
					assert.Equal(t, c.code, actions.CodeOf(err), "call %d", i)
				}
				assert.Equal(t, int64(1), card.Load(), "the body ran once")
				assert.Equal(t, before, chargeCount(t, db), "the unit's writes were undone")
				undone, err := s.Read(context.Background(), sqlstore.Filter{Kept: sqlstore.UndoneOnly, Action: "shop/pay"})
				require.NoError(t, err)
				var lines int
				for _, r := range undone {
					if r.Audit.IdempotencyKey == call.IdempotencyKey && r.Audit.Answered != "" {
						lines++
					}
				}
				assert.Equal(t, 3, lines, "one audit line per retry")
			})
		}
	})
}

// TestKeyRetryPassesTheGate: a retry the store answers from the record
// passes the gate first, as any call: 40 keyed retries against Rate 1/s,
// Burst 2 (a clock that does not move) are limited, and so is a fresh
// call after them; a caller who lost the capability is refused; the
// body ran once.
func TestKeyRetryPassesTheGate(t *testing.T) {
	for _, shared := range []bool{false, true} {
		name := "in-process buckets"
		if shared {
			name = "shared buckets"
		}
		t.Run(name, func(t *testing.T) {
			dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
				s, err := sqlstore.New(db.DB, db.Dialect, nil)
				require.NoError(t, err)
				require.NoError(t, s.Migrate(context.Background()))
				clock := &keyClock{t: time.Unix(1e9, 0)}
				gate := &actions.GateOptions{Rate: 1, Burst: 2}
				if shared {
					gate.Limiter = s.RateLimits()
				}
				reg := actions.NewRegistry(&actions.Options{Store: s, Now: clock.now, Gate: gate})
				var runs atomic.Int64
				reg.MustRegister(actions.Action{Definition: actions.Definition{ID: "shop/pay", Parameters: `{"type":"object"}`, Capability: "pay"},
					Run: func(context.Context, map[string]any, *actions.Trace) (any, error) { return runs.Add(1), nil }})
				payer := &identity.Caller{Principal: "ann", Surface: identity.SurfaceUI, Capabilities: []string{"pay"}}
				call := actions.Call{Action: "shop/pay", Caller: payer, IdempotencyKey: "pay-1"}
				_, err = reg.Run(context.Background(), call)
				require.NoError(t, err)
				answered, limited := retryLimited(t, reg, call, 40)
				assert.Equal(t, 1, answered, "the burst's second call")
				assert.Equal(t, 39, limited)
				_, err = reg.Run(context.Background(), actions.Call{Action: "shop/pay", Caller: payer, IdempotencyKey: "pay-2"})
				require.ErrorIs(t, err, codes.RateLimited, "the retries counted")

				clock.add(time.Hour)
				lost := *payer
				lost.Capabilities = nil
				call.Caller = &lost
				_, err = reg.Run(context.Background(), call)
				require.ErrorIs(t, err, codes.UnknownAction, "the caller may no longer call")
				assert.Equal(t, int64(1), runs.Load())
			})
		})
	}
}

// retryLimited sends call n times and counts the answers and the
// rate_limited refusals; any other outcome fails the test.
func retryLimited(t *testing.T, reg *actions.Registry, call actions.Call, n int) (answered, limited int) {
	t.Helper()
	for range n {
		_, err := reg.Run(context.Background(), call)
		switch actions.CodeOf(err) {
		case "":
			answered++
		case codes.RateLimited:
			limited++
		default:
			t.Fatalf("unexpected %v", err)
		}
	}
	return answered, limited
}

// TestKeyHeldCallExpired: a keyed held call's retry gets the same receipt
// while its pending change lives; once the change expired, the retry is
// not answered with the dead receipt: it is held anew, with a receipt a
// person can decide.
func TestKeyHeldCallExpired(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		createCharges(t, db)
		var runs atomic.Int64
		clock := &keyClock{t: time.Unix(1e9, 0)}
		rp := newKeyReplica(t, db, false, clock, &runs, nil)
		// A change that waits an hour: it dies well within the key's window.
		rp.reg = actions.NewRegistry(&actions.Options{Store: rp.s, Now: clock.now,
			Gate: &actions.GateOptions{Pending: rp.s.Pending(), PendingFor: time.Hour}})
		rp.reg.MustRegister(actions.Action{Definition: actions.Definition{ID: "shop/refund", Parameters: `{"type":"object"}`, NeedsConfirmation: true},
			Run: func(ctx context.Context, p map[string]any, _ *actions.Trace) (any, error) {
				_, err := txOf(ctx).ExecContext(ctx, "INSERT INTO charges (amount) VALUES ('4')")
				return "refunded", err
			}})
		ctx := context.Background()
		call := actions.Call{Action: "shop/refund", Params: map[string]any{"amount": 4}, Caller: ann, IdempotencyKey: "refund-late"}
		_, err := rp.reg.Run(ctx, call)
		var held *actions.Refusal
		require.ErrorAs(t, err, &held)
		require.NotNil(t, held.Pending)
		require.True(t, held.Pending.Expires.Before(clock.now().Add(24*time.Hour)), "the change expires within the key's window")

		clock.add(held.Pending.Expires.Sub(clock.now()) - time.Microsecond)
		_, err = rp.reg.Run(ctx, call)
		var again *actions.Refusal
		require.ErrorAs(t, err, &again)
		require.NotNil(t, again.Pending)
		assert.Equal(t, held.Pending.ID, again.Pending.ID, "the same receipt while the change lives")

		clock.add(time.Microsecond)
		_, err = rp.reg.PendingChange(ctx, held.Pending.ID, ann)
		require.ErrorIs(t, err, codes.UnknownChange, "the change expired")
		_, err = rp.reg.Run(ctx, call)
		var fresh *actions.Refusal
		require.ErrorAs(t, err, &fresh)
		require.NotNil(t, fresh.Pending)
		assert.NotEqual(t, held.Pending.ID, fresh.Pending.ID, "not the dead receipt")
		_, err = rp.reg.Decide(ctx, actions.Decision{Change: fresh.Pending.ID, Confirm: true, Caller: ann})
		require.NoError(t, err, "the new receipt can be decided")
		assert.Equal(t, 1, chargeCount(t, db))
		_, err = rp.reg.Run(ctx, call)
		require.NoError(t, err, "the retry gets the confirmed answer")
		assert.Equal(t, 1, chargeCount(t, db))
	})
}

// TestKeyKeptFailureClaimDurable: a keyed call whose body ran and then
// failed keeps its key from the moment its body started, on every
// replica: while replica A settles the failed unit (its rollback, then
// the write of its rolled-back records, held back here by a client
// that takes A's one connection the moment the rollback frees it), a
// retry on replica B finds the key claimed, waits, and gets A's outcome;
// the body (a card charged, outside the database) ran once.
func TestKeyKeptFailureClaimDurable(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		var card atomic.Int64
		started, proceed := make(chan struct{}), make(chan struct{})
		replica := func() (*actions.Registry, *sql.DB) {
			sqlDB, err := sql.Open(db.Driver, db.DSN)
			require.NoError(t, err)
			t.Cleanup(func() { _ = sqlDB.Close() })
			sqlDB.SetMaxOpenConns(1)
			s, err := sqlstore.New(sqlDB, db.Dialect, nil)
			require.NoError(t, err)
			require.NoError(t, s.Migrate(context.Background()))
			reg := actions.NewRegistry(&actions.Options{Store: s, KeyWait: time.Minute})
			reg.MustRegister(actions.Action{Definition: actions.Definition{ID: "shop/pay", Parameters: `{"type":"object"}`, NeedsIdempotencyKey: true},
				Run: func(context.Context, map[string]any, *actions.Trace) (any, error) {
					if card.Add(1) == 1 {
						close(started)
						<-proceed
					}
					return nil, actions.NewRefusal("card_declined", "the card was declined")
				}})
			return reg, sqlDB
		}
		a, aPool := replica()
		b, _ := replica()
		call := actions.Call{Action: "shop/pay", Caller: ann, IdempotencyKey: "pay-1"}

		aDone := make(chan error, 1)
		go func() { _, err := a.Run(context.Background(), call); aDone <- err }()
		<-started
		// A client of A's pool waits for its one connection, which A's
		// unit holds: it gets it when the unit rolls back, and keeps it
		// until B's retry is answered (or a second passed), so that A
		// cannot yet write what its failed unit leaves.
		bDone := make(chan error, 1)
		held := make(chan struct{})
		go func() {
			conn, err := aPool.Conn(context.Background())
			if err == nil {
				close(held)
				select {
				case err := <-bDone:
					bDone <- err
				case <-time.After(time.Second):
				}
				_ = conn.Close()
			}
		}()
		require.Eventually(t, func() bool { return aPool.Stats().WaitCount > 0 }, time.Minute, time.Millisecond, "the client waits for A's connection")
		go func() { _, err := b.Run(context.Background(), call); bDone <- err }()
		close(proceed)
		<-held
		for i, err := range []error{<-aDone, <-bDone} {
			assert.Equal(t, codes.Code("card_declined"), actions.CodeOf(err), "call %d: %v", i, err)
		}
		_, err := b.Run(context.Background(), call)
		assert.Equal(t, codes.Code("card_declined"), actions.CodeOf(err), "a later retry")
		assert.Equal(t, int64(1), card.Load(), "the card was charged once")
	})
}

// TestKeyBatchRetryPassesTheRate: a keyed batch's retry answered from
// the record counts its steps' rates as the batch did when it ran: with
// Burst 4 (a clock that does not move) and two steps, the first batch
// and one retry pass, the other 39 retries are limited, and so is a
// fresh call after them; the steps ran once.
func TestKeyBatchRetryPassesTheRate(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		s, err := sqlstore.New(db.DB, db.Dialect, nil)
		require.NoError(t, err)
		require.NoError(t, s.Migrate(context.Background()))
		clock := &keyClock{t: time.Unix(1e9, 0)}
		var recs []store.Record
		var mu sync.Mutex
		reg := actions.NewRegistry(&actions.Options{Store: s, Now: clock.now, Gate: &actions.GateOptions{Rate: 1, Burst: 4},
			OnRecord: func(r store.Record) { mu.Lock(); recs = append(recs, r); mu.Unlock() }})
		var runs atomic.Int64
		reg.MustRegister(actions.Action{Definition: actions.Definition{ID: "shop/pay", Parameters: `{"type":"object"}`},
			Run: func(context.Context, map[string]any, *actions.Trace) (any, error) { return runs.Add(1), nil }})
		b := actions.Batch{Steps: []actions.Step{{Call: "shop/pay"}, {Call: "shop/pay"}}}
		call := actions.Call{Batch: &b, Caller: ann, IdempotencyKey: "batch-1"}
		_, err = reg.Run(context.Background(), call)
		require.NoError(t, err)
		answered, limited := retryLimited(t, reg, call, 40)
		assert.Equal(t, 1, answered, "the burst's last two tokens")
		assert.Equal(t, 39, limited)
		_, err = reg.Run(context.Background(), actions.Call{Action: "shop/pay", Caller: ann, IdempotencyKey: "pay-2"})
		require.ErrorIs(t, err, codes.RateLimited, "the retries counted")
		assert.Equal(t, int64(2), runs.Load())
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, recs, 2+1+39+1, "each call leaves its records")
		for _, r := range recs[3 : 3+39] {
			assert.True(t, r.RolledBack)
			assert.Equal(t, codes.RateLimited, r.Audit.Code)
		}
	})
}

// TestKeyCommitFailureKeepsKey: a keyed call whose body ran and whose
// unit then failed to commit (here Options.BeforeCommit fails) keeps its
// key: the retry is answered internal, the unit's writes were undone,
// and the body ran once.
func TestKeyCommitFailureKeepsKey(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, db *dbtest.DB) {
		createCharges(t, db)
		var fail atomic.Bool
		fail.Store(true)
		s, err := sqlstore.New(db.DB, db.Dialect, &sqlstore.Options{BeforeCommit: func(context.Context, *sql.Tx) error {
			if fail.Load() {
				return errors.New("the disk is full")
			}
			return nil
		}})
		require.NoError(t, err)
		require.NoError(t, s.Migrate(context.Background()))
		var card atomic.Int64
		reg := actions.NewRegistry(&actions.Options{Store: s})
		reg.MustRegister(actions.Action{Definition: actions.Definition{ID: "shop/pay", Parameters: `{"type":"object"}`},
			Run: func(ctx context.Context, _ map[string]any, _ *actions.Trace) (any, error) {
				card.Add(1)
				_, err := txOf(ctx).ExecContext(ctx, "INSERT INTO charges (amount) VALUES ('7')")
				return "paid", err
			}})
		call := actions.Call{Action: "shop/pay", Caller: ann, IdempotencyKey: "pay-1"}
		_, err = reg.Run(context.Background(), call)
		require.ErrorIs(t, err, codes.Internal)
		fail.Store(false)
		_, err = reg.Run(context.Background(), call)
		require.ErrorIs(t, err, codes.Internal, "the retry gets the kept outcome")
		assert.Equal(t, int64(1), card.Load(), "the body ran once")
		assert.Zero(t, chargeCount(t, db), "its writes were undone")
	})
}
