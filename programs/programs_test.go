package programs_test

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/programs"
	"github.com/actionreg/actions/store"
)

// supply is a registry with a read that lists actors, a read of one
// actor, and a write gated by its own capability.
func supply(t testing.TB) *actions.Registry {
	t.Helper()
	reg := actions.NewRegistry(nil)
	reg.MustRegister(
		actions.New(actions.Definition{ID: "supply/list_actors", Effect: actions.EffectRead, Capability: "supply.read"},
			func(context.Context, map[string]any, *actions.Trace) (any, error) {
				return map[string]any{"items": []any{
					map[string]any{"id": "a1", "name": "Ann"},
					map[string]any{"id": "a2", "name": "Bo"},
					map[string]any{"id": "a3", "name": "Cy"},
				}}, nil
			}),
		actions.New(actions.Definition{ID: "supply/get_actor", Effect: actions.EffectRead, Capability: "supply.read",
			Parameters: `{"type":"object","properties":{"id":{"type":"string"}},"required":["id"],"additionalProperties":false}`},
			func(_ context.Context, p map[string]any, _ *actions.Trace) (any, error) {
				return map[string]any{"id": p["id"], "orders": len(p["id"].(string))}, nil
			}),
		actions.New(actions.Definition{ID: "supply/rename", Effect: actions.EffectWrite, Additive: true, Capability: "supply.write",
			Parameters: `{"type":"object","properties":{"id":{"type":"string"},"name":{"type":"string"}},"required":["id","name"]}`},
			func(context.Context, map[string]any, *actions.Trace) (any, error) { return "renamed", nil }),
	)
	return reg
}

var (
	reader = &identity.Caller{Principal: "rita", Capabilities: []string{"supply.read"}, Surface: identity.SurfaceAI}
	writer = &identity.Caller{Principal: "wes", Capabilities: []string{"supply.read", "supply.write"}, Surface: identity.SurfaceAI}
)

func TestProgramListsAndLoops(t *testing.T) {
	reg := supply(t)
	res, err := run(t, reg, reader, `
		const r = await supply.list_actors({});
		let total = 0;
		const names = [];
		for (const a of r.items) {
			const one = await supply.get_actor({id: a.id});
			total += one.orders;
			names.push(a.name);
		}
		return {names, total};
	`, nil)
	require.NoError(t, err)
	assert.Equal(t, `{"names":["Ann","Bo","Cy"],"total":6}`, res.Text)
	made := calls(res)
	require.Len(t, made, 4)
	for i, want := range []string{"supply/list_actors", "supply/get_actor", "supply/get_actor", "supply/get_actor"} {
		assert.Equal(t, want, made[i].Action)
		assert.Equal(t, store.OutcomeDone, made[i].Outcome)
	}
	// The program is one call: one record, the caller's, its calls the
	// entry's steps.
	require.Len(t, res.Records, 1)
	assert.Equal(t, programs.DefaultID, res.Records[0].Entry.Action)
	assert.Equal(t, "rita", res.Records[0].Audit.Caller.Principal)
	assert.Equal(t, `{"id":"a2"}`, made[2].Parameters)
}

func TestEveryCallIsGated(t *testing.T) {
	reg := supply(t)

	// The reader is given no function for what it may not call.
	res, err := run(t, reg, reader, `return [typeof supply.list_actors, typeof supply.rename];`, nil)
	require.NoError(t, err)
	assert.Equal(t, `["function","undefined"]`, res.Text)

	// Reaching the host function by hand is refused by the gate, call by
	// call, as a call from any other entry point is; the program is then
	// refused whole, though it went on.
	res, err = run(t, reg, reader, `
		await supply.list_actors({});
		const r = JSON.parse(__call("supply/rename", '{"id":"a1","name":"Zed"}'));
		return r.refused.code;
	`, nil)
	require.Error(t, err)
	assert.ErrorIs(t, err, programs.CodeFailed)
	assert.ErrorIs(t, err, codes.UnknownAction)
	assert.Nil(t, res.Value)
	made := calls(res)
	require.Len(t, made, 2)
	assert.Equal(t, codes.ForbiddenCapability, made[1].Error, "the entry tells the host why")
	require.Len(t, res.Records, 1)
	assert.True(t, res.Records[0].RolledBack)

	// The writer may rename; its parameters are checked as any call's.
	_, err = run(t, reg, writer, `await supply.rename({id: "a1"});`, nil)
	require.Error(t, err)
	assert.ErrorIs(t, err, programs.CodeFailed)
	assert.ErrorIs(t, err, codes.InvalidParameters, "the refused call's error is unwrapped")
	var pe *programs.Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 1, pe.Call)
	assert.NotContains(t, err.Error(), "a1")

	res, err = run(t, reg, writer, `return await supply.rename({id: "a1", name: "Zed"});`, nil)
	require.NoError(t, err)
	assert.Equal(t, `"renamed"`, res.Text)
}

func TestRefusalIsCatchableButRefusesTheUnit(t *testing.T) {
	res, err := run(t, supply(t), writer, `
		try { await supply.get_actor({nope: 1}); return "went through"; }
		catch (e) { if (e.name !== "RefusalError" || e.code !== "invalid_parameters") throw e; }
		return (await supply.list_actors()).items.length;
	`, nil)
	require.Error(t, err)
	assert.ErrorIs(t, err, programs.CodeFailed)
	assert.ErrorIs(t, err, codes.InvalidParameters)
	assert.Equal(t, 2, len(calls(res)), "the program went on after catching")
	var pe *programs.Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, 1, pe.Call)
}

func TestProgramThatLoopsForeverIsStopped(t *testing.T) {
	reg := supply(t)
	for _, src := range []string{
		`while (true) {}`,
		`await supply.list_actors({}); for (;;) {}`,
		`try { while (true) {} } catch (e) { return "caught"; }`,
	} {
		_, err := run(t, reg, reader, src, &programs.Options{MaxTime: 50_000_000})
		require.Error(t, err, src)
		assert.ErrorIs(t, err, programs.CodeTimeLimit, src)
	}
	assertHostWorks(t, reg)
}

func TestProgramThatAllocatesWithoutEndIsStopped(t *testing.T) {
	reg := supply(t)
	const limit = 8 << 20
	runOnce := func() {
		_, err := run(t, reg, reader, `
			const a = [];
			for (let i = 0; ; i++) a.push("x".repeat(1000) + i);
		`, &programs.Options{MaxMemoryBytes: limit, MaxTime: 60_000_000_000})
		require.Error(t, err)
		assert.ErrorIs(t, err, programs.CodeMemoryLimit)
	}
	runOnce() // the engine's code and first arenas
	before := footprint(t)
	const runs = 8
	for range runs {
		runOnce()
	}
	after := footprint(t)
	grew := after - before
	t.Logf("footprint after %d runs capped at %d bytes: %d bytes more (%d before)", runs, limit, grew, before)
	// Each run's heap is given back: eight runs of 8 MiB do not leave
	// the process 64 MiB larger.
	assert.Less(t, grew, int64(runs*limit/2))
	assertHostWorks(t, reg)
}

func TestProgramThatMakes10000CallsIsStopped(t *testing.T) {
	reg := supply(t)
	res, err := run(t, reg, reader, `
		let n = 0;
		for (let i = 0; i < 10000; i++) { try { await supply.list_actors({}); n++; } catch (e) {} }
		return n;
	`, nil)
	require.Error(t, err)
	assert.ErrorIs(t, err, programs.CodeCallLimit)
	assert.Equal(t, programs.DefaultMaxCalls, len(calls(res)))
	assertHostWorks(t, reg)
}

func TestProgramBounds(t *testing.T) {
	reg := supply(t)
	_, err := run(t, reg, reader, strings.Repeat(" ", 101), &programs.Options{MaxProgramBytes: 100})
	assert.ErrorIs(t, err, programs.CodeTooLarge)

	_, err = run(t, reg, reader, `return (;`, nil)
	assert.ErrorIs(t, err, programs.CodeTooLarge)

	_, err = run(t, reg, reader, `return "y".repeat(200);`, &programs.Options{MaxOutputBytes: 100})
	assert.ErrorIs(t, err, programs.CodeOutputLimit)

	_, err = run(t, reg, reader, `throw new Error("secret 42");`, nil)
	assert.ErrorIs(t, err, programs.CodeFailed)
	assert.NotContains(t, err.Error(), "secret")
	var pe *programs.Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "secret 42", pe.Thrown)

	// No I/O: no modules, no fetch, no timers.
	res, err := run(t, reg, reader, `return [typeof fetch, typeof setTimeout, typeof require, typeof std, typeof os];`, nil)
	require.NoError(t, err)
	assert.Equal(t, `["undefined","undefined","undefined","undefined","undefined"]`, res.Text)
	_, err = run(t, reg, reader, `const m = await import("os"); return 1;`, nil)
	assert.ErrorIs(t, err, programs.CodeFailed)

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = runCtx(cancelled, t, reg, reader, `while (true) {}`, nil)
	assert.ErrorIs(t, err, programs.CodeCancelled)
	assert.ErrorIs(t, err, context.Canceled)
}

// assertHostWorks checks that the registry and a new program still work
// after a program was stopped.
func assertHostWorks(t *testing.T, reg *actions.Registry) {
	t.Helper()
	res, err := run(t, reg, reader, `return (await supply.list_actors()).items.length;`, nil)
	require.NoError(t, err)
	assert.Equal(t, "3", res.Text)
}

// footprint is the process's resident memory in bytes (Linux), or the
// Go runtime's memory elsewhere.
func footprint(t *testing.T) int64 {
	runtime.GC()
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		f := strings.Fields(string(b))
		if len(f) > 1 {
			pages, err := strconv.ParseInt(f[1], 10, 64)
			if err == nil {
				return pages * int64(os.Getpagesize())
			}
		}
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.Sys)
}

func TestDeepRecursionIsCaught(t *testing.T) {
	reg := supply(t)
	// The stack bound, not the time bound, ends these (the race
	// detector makes the engine much slower).
	slow := &programs.Options{MaxTime: time.Minute}
	res, err := run(t, reg, reader, `
		function f(n) { return f(n + 1) + 1; }
		try { f(0); } catch (e) { return e.name; }
	`, slow)
	require.NoError(t, err)
	assert.Equal(t, `"InternalError"`, res.Text)
	_, err = run(t, reg, reader, `function f() { return f(); } f();`, slow)
	assert.ErrorIs(t, err, programs.CodeFailed)
	assertHostWorks(t, reg)
}

// TestProgramCallsCountTheCallersRate: a program's calls are the
// caller's own, so each counts the caller's rate limit: a program
// cannot call an action more often than its caller could.
func TestProgramCallsCountTheCallersRate(t *testing.T) {
	reg := actions.NewRegistry(&actions.Options{Gate: &actions.GateOptions{Rate: 0.001, Burst: 3}})
	reg.MustRegister(actions.New(actions.Definition{ID: "mail/send", Effect: actions.EffectWrite, Additive: true},
		func(context.Context, map[string]any, *actions.Trace) (any, error) { return "sent", nil }))
	res, err := run(t, reg, reader, `let n = 0; for (let i = 0; i < 5; i++) { await mail.send(); n++; } return n;`, nil)
	require.Error(t, err)
	assert.ErrorIs(t, err, codes.RateLimited)
	made := calls(res)
	require.Len(t, made, 4, "a burst of three per caller and action: the fourth call is refused")
	assert.Equal(t, store.OutcomeDone, made[2].Outcome)
	assert.Equal(t, codes.RateLimited, made[3].Error)
}
