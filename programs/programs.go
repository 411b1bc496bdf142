// Package programs runs a short JavaScript program that calls a
// registry's actions, for agents that write code against the TypeScript
// declarations of package declare rather than call tools one by one
// ("code mode").
//
// [Action] is the action that runs programs (the run_program tool once
// a host registers it): its body runs the program in process in a
// pure-Go QuickJS (modernc.org/quickjs), one fresh engine per program,
// with no I/O: no modules, no network, no files, no timers; its only way
// out is a function per action the caller may see, bound as the
// declarations name them (`supply.list_actors`). Each such function is a
// nested call of the run's [actions.Trace] as the caller: the gate, the
// parameters, the records and the bounds of the one call path. The
// whole program is the one unit of that call: recorded as one entry
// whose steps are its calls, kept or undone whole, replayable, held
// whole for a person's confirmation. The program is bounded as a whole
// by [Options]. See docs/programs.md.
package programs

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"modernc.org/quickjs"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/declare"
)

// DefaultID is the id of [Action] when [Options].ID is empty: its tool
// over MCP is programs-run_program.
const DefaultID = "programs/run_program"

// Defaults of [Options]: a zero field means its default.
const (
	DefaultMaxProgramBytes = 64 << 10
	DefaultMaxMemoryBytes  = 32 << 20
	DefaultMaxTime         = 2 * time.Second
	DefaultMaxCalls        = 100
	DefaultMaxOutputBytes  = 64 << 10
)

// minMemoryBytes is the least memory cap honoured: the engine needs some
// of its own before a program runs (its globals, the error of an
// exhausted heap).
const minMemoryBytes = 1 << 20

// Options configure the action of [Action] and bound each program it
// runs. A nil *Options, and a zero field, mean the documented default;
// there is no way to lift a bound altogether.
type Options struct {
	// ID is the action's id (default [DefaultID]).
	ID string
	// MaxProgramBytes bounds the program's source, in bytes (default
	// 64 KiB); a longer one is refused program_too_large before the
	// engine starts.
	MaxProgramBytes int
	// MaxMemoryBytes caps the engine's heap, in bytes (default 32 MiB,
	// at least 1 MiB): the engine's allocator refuses any allocation
	// past it, and the program ends program_memory_limit.
	MaxMemoryBytes int
	// MaxTime bounds the time the engine spends running the program's
	// own code (default 2 s), the time spent inside the actions it
	// calls not counted (each action has its own timeout): past it the
	// engine is interrupted and the program ends program_time_limit.
	// The time is read on the monotonic clock while the engine runs, so
	// on a loaded machine it is an upper bound of the CPU time used.
	MaxTime time.Duration
	// MaxCalls bounds the number of action calls (default 100); the
	// call past it is not made and the program ends program_call_limit.
	MaxCalls int
	// MaxOutputBytes bounds the program's result, as JSON text, in
	// bytes (default 64 KiB); a larger one is refused
	// program_output_too_large.
	MaxOutputBytes int
}

func (o *Options) withDefaults() Options {
	var v Options
	if o != nil {
		v = *o
	}
	if v.ID == "" {
		v.ID = DefaultID
	}
	if v.MaxProgramBytes <= 0 {
		v.MaxProgramBytes = DefaultMaxProgramBytes
	}
	if v.MaxMemoryBytes <= 0 {
		v.MaxMemoryBytes = DefaultMaxMemoryBytes
	}
	v.MaxMemoryBytes = max(v.MaxMemoryBytes, minMemoryBytes)
	if v.MaxTime <= 0 {
		v.MaxTime = DefaultMaxTime
	}
	if v.MaxCalls <= 0 {
		v.MaxCalls = DefaultMaxCalls
	}
	if v.MaxOutputBytes <= 0 {
		v.MaxOutputBytes = DefaultMaxOutputBytes
	}
	return v
}

// description is the action's text for people and models.
const description = `Runs a short JavaScript program that calls the other tools, for work of many steps: one round trip instead of one per call. ` +
	`The program is the body of an async function (strict mode): use await at its top level and return a JSON value, which is the result. ` +
	`Each tool you may call is a function of a global object named for its namespace, taking the tool's arguments as one object and returning a promise of its result: the tool supply-list_actors is supply.list_actors({...}). ` +
	`A refused call rejects with an Error whose name is "RefusalError" and whose code is the refusal's code. ` +
	`The program runs as one unit: if any call is refused, or the program throws, nothing it did is kept. ` +
	`There is no I/O besides these functions (no fetch, timers, console or modules); Date and Math.random work and are recorded. ` +
	`Bounds: source size, time, memory, number of calls and result size; past one the program is stopped and nothing is kept.`

// Action returns the action that runs programs against reg, the
// registry the host registers it in: its parameters are
// {"program": string}, the program's source; its result is what the
// program returns (JSON values; none for undefined).
//
// The program is the body of an async function, in strict mode: it may
// use await at its top level and return a value, which is its result;
// `import` and `export` are not available. Each action the caller may
// see ([actions.Registry.Tools] with the call's Caller), but the
// action itself, is a function of the global object [declare.Global]
// names for its namespace, taking the call's parameters (an object,
// omitted for {}) and returning a promise of the action's result:
//
//	const r = await supply.list_actors({});
//	for (const a of r.items) { ... }
//	return r.items.length;
//
// Each call is a nested call of the run ([actions.Trace.Call]), made as
// the caller: the gate (surface, capability, scope, serving) decides it
// as it would the caller's own call, its parameters are checked, and
// its entry is a step of the program's. A refused call rejects its
// promise with an Error whose name is "RefusalError", whose code is the
// refusal's code (the one the caller would get: unknown_action for a
// hidden action) and whose message is the refusal's; the program may
// catch it, but the program is then refused all the same. Date and
// Math.random are the engine's own, drawn through [actions.Trace.Value]
// (the time once per program, a random seed): they are recorded, and a
// replay or a confirmation gives them back.
//
// The action has [actions.Definition].Preview: with a store that has
// savepoints (sqlstore), a program that calls an action needing
// confirmation runs first as a preview that is undone, and is held whole
// for the person, who sees every call; confirming runs it again, kept
// only if it makes the same calls (see docs/programs.md).
//
// The action's body refuses with a *[Error] (which errors.As also gives
// as an *actions.Refusal, with retry after-edit, for transports):
//   - program_too_large: the source is over MaxProgramBytes, or is
//     not a program (a syntax error); nothing ran;
//   - program_time_limit, program_memory_limit, program_call_limit:
//     the program reached a bound and was stopped;
//   - program_output_too_large: the result's JSON is over
//     MaxOutputBytes, or the result has no JSON form;
//   - program_failed: the program threw and did not catch it, or a call
//     was refused (caught or not); [Error.Unwrap] then gives that call's
//     error (errors.Is(err, codes.ForbiddenCapability) and the like
//     hold) and [Error].Call its number;
//   - cancelled: ctx ended; [Error.Unwrap] gives ctx's cause.
//
// The engine's own failure (it could not be made) is a plain error. The
// body is safe for concurrent use: each program has its own engine.
func Action(reg *actions.Registry, opts *Options) actions.Action {
	o := opts.withDefaults()
	refusals := make([]actions.DeclaredRefusal, 0, 6)
	for _, c := range []codes.Code{CodeTooLarge, CodeTimeLimit, CodeMemoryLimit, CodeCallLimit, CodeOutputLimit, CodeFailed} {
		refusals = append(refusals, actions.DeclaredRefusal{Code: c, Retry: codes.RetryAfterEdit})
	}
	def := actions.Definition{
		ID:          o.ID,
		Title:       "Run a program",
		Description: description,
		Effect:      actions.EffectWrite,
		Preview:     true,
		Refusals:    refusals,
		Parameters: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"program": map[string]any{"type": "string", "minLength": 1,
					"description": "the program: the body of an async JavaScript function"},
			},
			"required":             []any{"program"},
			"additionalProperties": false,
		},
	}
	return actions.New(def, func(ctx context.Context, p map[string]any, t *actions.Trace) (any, error) {
		source, _ := p["program"].(string)
		return runProgram(ctx, reg, t, source, o)
	})
}

// runProgram runs source as the body of the action o.ID, its calls made
// through t.
func runProgram(ctx context.Context, reg *actions.Registry, t *actions.Trace, source string, o Options) (any, error) {
	if len(source) > o.MaxProgramBytes {
		return nil, &Error{Code: CodeTooLarge, Message: fmt.Sprintf("the program is over %d bytes", o.MaxProgramBytes)}
	}
	tools, err := reg.Tools(&actions.ToolOptions{Caller: t.Caller()})
	if err != nil {
		return nil, fmt.Errorf("programs: the caller's actions: %w", err)
	}
	vm, err := quickjs.NewVM()
	if err != nil {
		return nil, fmt.Errorf("programs: the engine: %w", err)
	}
	defer vm.Close()
	vm.SetMemoryLimit(uintptr(o.MaxMemoryBytes))
	r := &run{ctx: ctx, trace: t, opts: o, vm: vm, source: source}
	v, err := r.run(tools)
	if err != nil {
		return nil, err
	}
	if r.firstRefused >= 0 {
		// The program went on after a refused call: it is refused all
		// the same, and nothing it did is kept.
		i := r.firstRefused
		return nil, &Error{Code: CodeFailed, Call: i + 1, cause: r.refused[i],
			Message: fmt.Sprintf("call %d of the program was refused %s, so nothing the program did is kept", i+1, actions.CodeOf(r.refused[i]))}
	}
	return v, nil
}

// run is one program's state, used on the engine's goroutine only
// (except stopped and vm.Interrupt, which the clock and ctx use).
type run struct {
	ctx    context.Context
	trace  *actions.Trace
	opts   Options
	vm     *quickjs.VM
	source string

	calls        int
	refused      []error // the error of each call, by its index (nil: done)
	firstRefused int     // the index of the first refused call, -1 for none

	mu      sync.Mutex
	stopped codes.Code // the bound that stopped the engine, "" while none
	clock   *time.Timer
	left    time.Duration
	since   time.Time
}

// stop interrupts the engine for the reason code, the first reason kept.
func (r *run) stop(code codes.Code) {
	r.mu.Lock()
	if r.stopped == "" {
		r.stopped = code
	}
	r.mu.Unlock()
	r.vm.Interrupt()
}

func (r *run) stoppedBy() codes.Code {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopped
}

// resume starts the engine's clock with the time left.
func (r *run) resume() {
	r.since = time.Now()
	r.clock = time.AfterFunc(r.left, func() { r.stop(CodeTimeLimit) })
}

// pause stops the engine's clock (the program called out).
func (r *run) pause() {
	r.clock.Stop()
	r.left -= time.Since(r.since)
	if r.left <= 0 {
		r.stop(CodeTimeLimit)
	}
}

// harness is the code run before the program: the namespaces, the call
// wrapper, and the program as an async function whose outcome lands in
// globalThis.__outcome.
const harness = `"use strict";
(() => {
  const call = __call, source = __source, __seed = globalThis.__seed, __now = globalThis.__now;
  const invoke = async (id, params) => {
    const r = JSON.parse(call(id, params === undefined ? "{}" : JSON.stringify(params)));
    if (r.refused) {
      const e = new Error(r.refused.message);
      e.name = "RefusalError"; e.code = r.refused.code; e.call = r.refused.call;
      throw e;
    }
    return r.value;
  };
  for (const [global, fns] of Object.entries(JSON.parse(__namespaces()))) {
    const ns = {};
    for (const [name, id] of Object.entries(fns)) ns[name] = (params) => invoke(id, params);
    Object.defineProperty(globalThis, global, {value: Object.freeze(ns), enumerable: true});
  }
  let seed, now;
  Object.defineProperty(Math, "random", {value: () => {
    if (!seed) seed = JSON.parse(__seed());
    let t = seed[3]; const s = seed[0];
    seed[3] = seed[2]; seed[2] = seed[1]; seed[1] = s;
    t ^= t << 11; t ^= t >>> 8;
    seed[0] = (t ^ s ^ (s >>> 19)) >>> 0;
    return seed[0] / 4294967296;
  }, writable: true, configurable: true});
  const clock = () => { if (now === undefined) now = Number(__now()); return now; };
  const RealDate = Date;
  class ProgramDate extends RealDate {
    constructor(...a) { if (a.length === 0) super(clock()); else super(...a); }
    static now() { return clock(); }
  }
  globalThis.Date = ProgramDate;
  const AsyncFunction = (async () => {}).constructor;
  let program;
  try { program = new AsyncFunction('"use strict";\n' + source()); }
  catch (e) { globalThis.__outcome = JSON.stringify({syntax: String(e && e.message)}); return; }
  program().then(
    (v) => { globalThis.__outcome = v === undefined ? "{}" : '{"value":' + JSON.stringify(v) + '}'; },
    (e) => { globalThis.__outcome = JSON.stringify({thrown: {name: String(e && e.name), message: String(e && e.message), call: e && typeof e.call === "number" ? e.call : -1}}); });
})();
`

// outcome is what the harness leaves in globalThis.__outcome.
type outcome struct {
	Value  json.RawMessage `json:"value"`
	Syntax *string         `json:"syntax"`
	Thrown *struct {
		Name    string `json:"name"`
		Message string `json:"message"`
		Call    int    `json:"call"`
	} `json:"thrown"`
}

// run runs the program in r.vm: its value, in JSON's Go types, or its
// refusal (*Error).
func (r *run) run(tools []actions.Tool) (any, error) {
	r.firstRefused = -1
	namespaces := map[string]map[string]string{}
	for _, t := range tools {
		id, err := actions.ActionID(t.Name)
		if err != nil {
			continue // not an action's tool
		}
		if id == r.opts.ID {
			continue // a program does not run programs
		}
		ns, name, _ := strings.Cut(id, "/")
		g := declare.Global(ns)
		if namespaces[g] == nil {
			namespaces[g] = map[string]string{}
		}
		namespaces[g][name] = id
	}
	nsJSON, err := json.Marshal(namespaces)
	if err != nil {
		return nil, fmt.Errorf("programs: %w", err)
	}
	for name, fn := range map[string]quickjs.HostFunc{
		"__call":       r.hostCall,
		"__source":     func([]any) (any, error) { return r.source, nil },
		"__namespaces": func([]any) (any, error) { return string(nsJSON), nil },
		"__seed":       r.hostSeed,
		"__now":        r.hostNow,
	} {
		if err := r.vm.RegisterHostFunc(name, fn); err != nil {
			return nil, fmt.Errorf("programs: the engine: %w", err)
		}
	}

	r.left = r.opts.MaxTime
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-r.ctx.Done():
			r.stop(CodeCancelled)
		case <-done:
		}
	}()
	r.resume()
	_, evalErr := r.vm.Eval(harness, quickjs.EvalGlobal)
	for evalErr == nil && r.stoppedBy() == "" {
		n, jerr := r.vm.ExecutePendingJobs()
		if jerr != nil {
			evalErr = jerr
		}
		if n == 0 {
			break
		}
	}
	r.pause()
	if code := r.stoppedBy(); code != "" {
		return nil, r.bound(code)
	}
	if evalErr != nil {
		if strings.Contains(evalErr.Error(), "out of memory") {
			return nil, r.bound(CodeMemoryLimit)
		}
		return nil, &Error{Code: CodeFailed, Message: "the program's engine stopped it", Thrown: evalErr.Error()}
	}
	text, err := r.vm.Eval(`globalThis.__outcome`, quickjs.EvalGlobal)
	s, ok := text.(string)
	if err != nil || !ok {
		if err != nil && strings.Contains(err.Error(), "out of memory") {
			return nil, r.bound(CodeMemoryLimit)
		}
		// The program's promise never settled: it awaited something
		// that no call will resolve.
		return nil, &Error{Code: CodeFailed, Message: "the program ended without returning (a promise it awaited never settled)"}
	}
	if len(s) > r.opts.MaxOutputBytes+len(`{"value":}`) {
		return nil, &Error{Code: CodeOutputLimit, Message: fmt.Sprintf("the program's result is over %d bytes", r.opts.MaxOutputBytes)}
	}
	var out outcome
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, &Error{Code: CodeOutputLimit, Message: "the program's result has no JSON form"}
	}
	switch {
	case out.Syntax != nil:
		return nil, &Error{Code: CodeTooLarge, Message: "the program is not a valid program body", Thrown: *out.Syntax}
	case out.Thrown != nil && out.Thrown.Name == "InternalError" && out.Thrown.Message == "out of memory":
		return nil, r.bound(CodeMemoryLimit)
	case out.Thrown != nil:
		e := &Error{Code: CodeFailed, Message: "the program threw " + safeName(out.Thrown.Name) + " and did not catch it", Thrown: out.Thrown.Message}
		if c := out.Thrown.Call; out.Thrown.Name == "RefusalError" && c >= 0 && c < len(r.refused) && r.refused[c] != nil {
			e.Message = fmt.Sprintf("call %d of the program was refused %s, and the program did not catch it", c+1, actions.CodeOf(r.refused[c]))
			e.Call, e.cause = c+1, r.refused[c]
		}
		return nil, e
	}
	if out.Value == nil {
		return nil, nil
	}
	var value any
	if len(out.Value) > r.opts.MaxOutputBytes {
		return nil, &Error{Code: CodeOutputLimit, Message: fmt.Sprintf("the program's result is over %d bytes", r.opts.MaxOutputBytes)}
	}
	if err := json.Unmarshal(out.Value, &value); err != nil {
		return nil, &Error{Code: CodeOutputLimit, Message: "the program's result has no JSON form"}
	}
	if _, err := actions.CanonicalJSON(value); err != nil {
		return nil, &Error{Code: CodeOutputLimit, Message: "the program's result has no canonical JSON form"}
	}
	return value, nil
}

// hostCall is the host function behind every action function: it makes one
// Registry.Run and answers JSON text, {"value": ...}, {} or
// {"refused": {"code", "message", "call"}}.
func (r *run) hostCall(args []any) (any, error) {
	r.pause()
	defer r.resume()
	if r.calls >= r.opts.MaxCalls {
		r.stop(CodeCallLimit)
		return nil, errors.New("the program made too many calls")
	}
	if r.stoppedBy() != "" {
		return nil, errors.New("the program was stopped")
	}
	id, _ := args[0].(string)
	params, _ := args[1].(string)
	idx := r.calls
	r.calls++
	v, err := r.trace.Call(r.ctx, id, json.RawMessage(params))
	r.refused = append(r.refused, err)
	if err != nil {
		if r.firstRefused < 0 {
			r.firstRefused = idx
		}
		msg := err.Error()
		var ref *actions.Refusal
		if errors.As(err, &ref) {
			msg = ref.Message
		}
		b, _ := json.Marshal(map[string]any{"refused": map[string]any{"code": string(actions.CodeOf(err)), "message": msg, "call": idx}})
		return string(b), nil
	}
	if v == nil {
		return "{}", nil
	}
	text, err := actions.CanonicalJSON(v)
	if err != nil {
		return "{}", nil // recorded: the call's entry says what it gave
	}
	return `{"value":` + string(text) + `}`, nil
}

// hostSeed is the seed of the program's Math.random: four random 32-bit
// words, drawn once per program through the trace, so that a replay and
// a confirmation draw the same numbers.
func (r *run) hostSeed([]any) (any, error) {
	r.pause()
	defer r.resume()
	v, err := r.trace.Value("seed", func() (any, error) {
		var b [16]byte
		_, _ = rand.Read(b[:])
		seed := make([]any, 4)
		for i := range seed {
			seed[i] = binary.LittleEndian.Uint32(b[4*i:]) | 1
		}
		return seed, nil
	})
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(v)
	return string(b), err
}

// hostNow is the program's clock, in milliseconds since 1970: the
// trace's time ([actions.Trace.Now]), read once per program.
func (r *run) hostNow([]any) (any, error) {
	r.pause()
	defer r.resume()
	return fmt.Sprint(r.trace.Now().UnixMilli()), nil
}

// bound is the refusal of a program stopped at a bound.
func (r *run) bound(code codes.Code) *Error {
	switch code {
	case CodeTimeLimit:
		return &Error{Code: code, Message: fmt.Sprintf("the program ran past its time limit of %s", r.opts.MaxTime)}
	case CodeMemoryLimit:
		return &Error{Code: code, Message: fmt.Sprintf("the program used more than its memory limit of %d bytes", r.opts.MaxMemoryBytes)}
	case CodeCallLimit:
		return &Error{Code: code, Message: fmt.Sprintf("the program made more than its limit of %d calls", r.opts.MaxCalls)}
	case CodeCancelled:
		return &Error{Code: code, Message: "the program was cancelled", cause: context.Cause(r.ctx)}
	}
	return &Error{Code: code, Message: "the program was stopped"}
}

// safeName is an exception's name as the message may carry it: an
// identifier of at most 40 bytes, else "an exception".
func safeName(s string) string {
	if s == "" || len(s) > 40 {
		return "an exception"
	}
	for i, c := range s {
		if !(c == '_' || c == '$' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 0 && c >= '0' && c <= '9')) {
			return "an exception"
		}
	}
	return s
}
