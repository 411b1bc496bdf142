package actions

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"runtime/debug"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/actionreg/actions/internal/ijson"
)

// Body is an action's code. It receives the checked parameters (a copy in
// JSON's Go types: map[string]any, []any, string, bool, nil, json.Number)
// and the environment the registry builds for it; see [Action].
type Body[C any] func(ctx context.Context, params map[string]any, env C) (any, error)

// Env builds the environment each body receives (its C), from the call's
// context (which carries a store's transaction: sqlstore.Tx) and its
// trace. It runs once per call, nested calls included, and may be called
// concurrently.
type Env[C any] func(ctx context.Context, t *Trace) C

// Registry holds actions by id and runs them. The zero value is an empty
// registry with the default [Limits], ready to use; [NewRegistry] sets
// other options. Register and Run are safe for concurrent use; Run takes
// no lock, so calls never wait on each other.
//
// The registry opens no transaction itself: each call, batch and
// decision runs in one unit of its [Store] (Options.Store), which a SQL
// store makes one database transaction.
type Registry[C any] struct {
	mu      sync.Mutex // serialises registrations only
	actions sync.Map   // id → *registered[C]
	limits  Limits     // as given: zero fields mean their default
	gate    atomic.Pointer[gate]
	env     Env[C]
	opts    Options
	// strictBack caches, per *registered[C], the OpenAI strict export
	// RunToolCall maps nulls back with (see profile_call.go).
	strictBack sync.Map
}

type registered[C any] struct {
	action Action[C]
	params *ParameterSchema
	output *ParameterSchema // nil: no output contract
	// encode writes a result in JSON's Go types (a typed action's plan),
	// or is nil for resultValue.
	encode  func(result any) (any, error)
	release func(v any) // gives back what encode made; nil with encode
}

// Options configures a registry. The zero value means every default.
type Options struct {
	// Limits bound what one registration or one call may cost; zero
	// fields keep their defaults (see [Limits]).
	Limits Limits
	// Gate configures the gate (scopes, rate limits, the pending store,
	// the clock: see [GateOptions]); nil means its defaults.
	Gate *GateOptions
	// Resolve resolves ref values (see [RefResolver]). Nil: ref values
	// reach the body as they are.
	Resolve RefResolver
	// Store keeps each unit of work with its records (see [Store]): a
	// [RunLog] in memory, or sqlstore.Store in database transactions.
	// Nil: calls run with no unit of work and their records are kept
	// nowhere but in each [Result] and OnRecord.
	Store Store
	// OnRecord receives each record once its unit is settled: after the
	// commit, or marked RolledBack once the unit was undone, so it never
	// reports a change that was not kept. It may be called concurrently.
	OnRecord func(Record)
	// Observer, when set, sees every call, batch, nested call, decision,
	// replay and unit of work the registry runs (see [Observer];
	// package otelactions traces them with OpenTelemetry).
	Observer Observer
	// Timeout is how long a body may run when its action declares no
	// [Definition].Timeout; zero or negative: no limit. Past it the call
	// is refused with timeout (see [CodeTimeout]).
	Timeout time.Duration
	// ProgressInterval is the least time between two progress reports
	// delivered to one call (see [Trace.Progress]); zero means
	// DefaultProgressInterval (100 ms), negative no bound.
	ProgressInterval time.Duration
	// PortableNames makes Register and Bind refuse, with
	// constraint_violation, an id whose tool name is not portable to
	// every export profile (see [CheckPortableName]: at most 64
	// characters, where MCP allows 128).
	PortableNames bool
	// KeyWindow is how long a call run under an idempotency key answers
	// its retries (0: DefaultKeyWindow, 24 h). KeyWait bounds how long a
	// retry waits for a first call still running under its key before
	// it is refused in_progress (0: DefaultKeyWait, 5 s).
	KeyWindow, KeyWait time.Duration
}

// NewRegistry returns an empty registry whose bodies receive the
// environment env builds. env may be nil when C is *Trace (the body then
// receives its trace) or a type whose zero value a body can use; for a
// pointer, interface, map, slice, channel or function C, Register refuses
// an action without it. opts may be nil for the defaults.
func NewRegistry[C any](env Env[C], opts *Options) *Registry[C] {
	r := &Registry[C]{env: env}
	if opts != nil {
		r.opts = *opts
		r.limits = opts.Limits
		if opts.Gate != nil {
			r.gate.Store(newGate(*opts.Gate))
		}
	}
	return r
}

// Limits returns the limits in force, defaults filled in.
func (r *Registry[C]) Limits() Limits { return r.limits.withDefaults() }

// Register adds actions, all or none, each with its parameters schema
// compiled once. Build an action with [New] (or [Typed]) or as a literal.
//
// Errors (*Refusal), and nothing is registered: constraint_violation when
// an id is not namespace/name with both parts identifiers or is longer
// than MaxToolNameLength (128) bytes, when a body is nil, when a schema
// is refused (see [CompileParameters]; an output schema under the same
// rules, any root allowed), or when a typed action's Go types cannot be
// described or disagree with its given schema (see [Typed]);
// duplicate_name when an id is already registered or given twice. Every
// fault is listed, each issue at its RFC 6901 pointer into the action:
// "/id", "/run", "/parameters/..." or "/outputSchema/..." into a schema. With several actions, the pointers start with the
// action's index: "/2/parameters/properties/name".
func (r *Registry[C]) Register(as ...Action[C]) error {
	prefix := func(i int) string { return fmt.Sprintf("/%d", i) }
	if len(as) == 1 {
		prefix = func(int) string { return "" }
	}
	return r.registerAll(as, prefix, nil, "the actions are not registered")
}

// MustRegister is [Registry.Register] for declarations made at start-up,
// as regexp.MustCompile is for patterns: it panics with the refusal when
// Register refuses.
func (r *Registry[C]) MustRegister(as ...Action[C]) {
	if err := r.Register(as...); err != nil {
		panic(err)
	}
}

// registerAll prepares every action, then stores them all under mu, or
// none: issues of action i are located under prefix(i). pre holds issues
// found before (Bind's unbound bodies).
func (r *Registry[C]) registerAll(as []Action[C], prefix func(int) string, pre []Issue, message string) error {
	issues := pre
	code := CodeConstraintViolation
	var prepErr error // the refusal of the one action given, as it is
	regs := make([]*registered[C], 0, len(as))
	at := make([]int, 0, len(as))
	seen := make(map[string]bool, len(as))
	for i, a := range as {
		if seen[a.ID] && a.ID != "" {
			code = CodeDuplicateName
			issues = append(issues, Issue{Path: prefix(i) + "/id", Keyword: "id", Message: "the id " + a.ID + " is given twice"})
			continue
		}
		seen[a.ID] = true
		reg, err := r.prepare(a)
		if err != nil {
			prepErr = err
			for _, is := range asRefusal(err).Issues {
				is.Path = prefix(i) + is.Path
				issues = append(issues, is)
			}
			continue
		}
		regs = append(regs, reg)
		at = append(at, i)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if clash := r.clashesLocked(regs, func(k int) string { return prefix(at[k]) }); len(clash) > 0 {
		code = CodeDuplicateName
		issues = append(issues, clash...)
	}
	if len(issues) > 0 {
		if len(as) == 1 && len(pre) == 0 && prepErr != nil {
			return prepErr // one action: its own refusal, message included
		}
		if code == CodeDuplicateName && len(as) == 1 {
			message = "an action with this id is already registered"
		}
		return refusef(code, message, sortIssues(issues)...)
	}
	for _, reg := range regs {
		r.storeLocked(reg)
	}
	return nil
}

// prepare checks and compiles one action. Its refusal's issues are
// located in the action: "/id", "/run", "/parameters/...".
func (r *Registry[C]) prepare(a Action[C]) (*registered[C], error) {
	if err := checkID(a.ID); err != nil {
		return nil, err
	}
	if r.opts.PortableNames {
		if err := CheckPortableName(a.ID); err != nil {
			return nil, err
		}
	}
	if a.err != nil {
		return nil, a.err
	}
	if a.Run == nil {
		return nil, refusef(CodeConstraintViolation, "the action has no body",
			Issue{Path: "/run", Keyword: "run", Message: "the body is nil"})
	}
	if r.env == nil && envRequired[C]() {
		return nil, refusef(CodeConstraintViolation, "the registry builds no environment for the body",
			Issue{Path: "/run", Keyword: "run", Message: "the body's environment would be nil: give NewRegistry an Env"})
	}
	ps, err := CompileParameters(a.Parameters, r.limits)
	if err != nil {
		rf := asRefusal(err)
		if rf == nil {
			return nil, err
		}
		c := *rf
		c.Issues = make([]Issue, len(rf.Issues))
		for i, is := range rf.Issues {
			is.Path = "/parameters" + is.Path
			c.Issues[i] = is
		}
		return nil, &c
	}
	// The registry keeps its own copies: a caller that changes its map or
	// slice afterwards changes nothing here.
	a.Writes = append([]string(nil), a.Writes...)
	switch p := a.Parameters.(type) {
	case map[string]any:
		a.Parameters = ps.Schema()
	case json.RawMessage:
		a.Parameters = append(json.RawMessage(nil), p...)
	case []byte:
		a.Parameters = append([]byte(nil), p...)
	}
	if err := a.Definition.own(); err != nil {
		return nil, err
	}
	if a.agree != nil {
		if err := a.agree(ps.doc); err != nil {
			return nil, err
		}
	}
	out, err := compileOutput(a.OutputSchema, r.limits)
	if err != nil {
		return nil, err
	}
	if out != nil {
		a.OutputSchema = out.Schema()
	}
	return &registered[C]{action: a, params: ps, output: out, encode: a.encode, release: a.release}, nil
}

// Bind registers the definitions of a manifest with the bodies of the same
// ids, all or none. When a definition has no body, a body has no
// definition, or a definition is refused, nothing is registered and the
// error is a *Refusal (constraint_violation, or duplicate_name when an id
// is taken or repeated) with one issue per fault, at the pointer into the
// manifest: of the definition ("/3/id", "/3/parameters/properties/name")
// or of the body ("/bodies/garden~1plant": the id as one RFC 6901 token,
// its slash escaped).
func (r *Registry[C]) Bind(defs []Definition, bodies map[string]Body[C]) error {
	var pre []Issue
	as := make([]Action[C], 0, len(defs))
	index := make([]int, 0, len(defs)) // manifest index of as[k]
	for i, d := range defs {
		body, ok := bodies[d.ID]
		if !ok {
			pre = append(pre, Issue{Path: fmt.Sprintf("/%d", i), Keyword: "body", Message: "the definition " + d.ID + " has no body"})
			continue
		}
		as = append(as, Action[C]{Definition: d, Run: body})
		index = append(index, i)
	}
	for id := range bodies {
		if !hasDefinition(defs, id) {
			pre = append(pre, Issue{Path: ijson.AppendToken("/bodies", id), Keyword: "definition", Message: "the body " + id + " has no definition"})
		}
	}
	prefix := func(k int) string { return fmt.Sprintf("/%d", index[k]) }
	if err := r.registerAll(as, prefix, pre, "the manifest does not bind"); err != nil {
		return err
	}
	return nil
}

func hasDefinition(defs []Definition, id string) bool {
	for _, d := range defs {
		if d.ID == id {
			return true
		}
	}
	return false
}

// Get returns the action registered under id, or under the deprecated
// alias id (its ID is then the action's own). Its policy slices are the
// caller's own copies.
func (r *Registry[C]) Get(id string) (Action[C], bool) {
	reg, ok := r.lookup(id)
	if !ok {
		return Action[C]{}, false
	}
	a := reg.action
	a.Definition.clonePolicy()
	return a, true
}

// Parameters returns the compiled parameters schema of the action id.
func (r *Registry[C]) Parameters(id string) (*ParameterSchema, bool) {
	reg, ok := r.lookup(id)
	if !ok {
		return nil, false
	}
	return reg.params, true
}

func (r *Registry[C]) lookup(id string) (*registered[C], bool) {
	v, ok := r.actions.Load(id)
	if !ok {
		if v, ok = r.gateOf().aliases.Load(id); !ok {
			return nil, false
		}
	}
	return v.(*registered[C]), true
}

// List returns every registered action, sorted by id; their policy
// slices are the caller's own copies.
func (r *Registry[C]) List() []Action[C] {
	var out []Action[C]
	r.actions.Range(func(_, v any) bool {
		a := v.(*registered[C]).action
		a.Definition.clonePolicy()
		out = append(out, a)
		return true
	})
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Run runs c, an action's call or a batch, in one unit of the registry's
// [Store], and returns its result and records (which Options.OnRecord
// also receives, once the unit is settled). For one action, in order: the
// gate checks c.Caller (docs/gate.md), then the parameters are checked
// (see [ParameterSchema.Check]), refs resolved, the body run with the
// environment the registry's Env builds, and the result checked against
// the output schema. A batch runs as [Batch] says, every step as such a
// call.
//
// Errors (every one a *Refusal, or wrapping one, except a body's own
// error; [CodeOf] gives its code and errors.Is matches exactly that
// code's sentinel; docs/refusals.md has the table):
//   - unknown_action: no action has this id, or c.Caller may not see it
//     (its surface is not offered, or it lacks the capability). The
//     caller learns no more; the record's entry and audit carry the
//     host's code (forbidden_surface, forbidden_capability);
//   - insufficient_scope, not_serving, read_only, rate_limited: the
//     gate's other checks, in that order, before the parameters are
//     looked at;
//   - confirmation_required: the action (or a step of the batch) needs
//     confirmation; the call, checked in full, is held as one pending
//     change, the refusal's Pending its receipt (see [Registry.Decide]).
//     The unit commits: the change is kept;
//   - invalid_parameters: see [ParameterSchema.Check]; the body does not
//     run, and the entry records the parameters as given;
//   - the body's own error, as it is (a *Refusal the body raised keeps
//     its code; a plain error is recorded with code internal);
//   - internal, the action's fault rather than the caller's, the cause
//     in [Refusal.Cause] (never in the message): the body returned a
//     refusal a nested call gave it; the body, the resolver, Env or
//     OnRecord panicked; the result has no canonical JSON form; the
//     store failed;
//   - output_invalid: the result breaks the output schema; the body ran,
//     the result is withheld, and errors.As finds an *[OutputError];
//   - cancelled: ctx was done before the call ended (errors.Is also
//     finds context.Canceled or context.DeadlineExceeded);
//   - a batch's own refusals (invalid_script_step, unknown_reference)
//     and a *[StepError] wrapping a step's error: see [Batch].
//
// A body sees ctx and must honour its cancellation itself.
func (r *Registry[C]) Run(ctx context.Context, c Call) (Result, error) {
	var key *UnitKey
	if c.IdempotencyKey != "" {
		var err error
		if key, err = r.keyOf(c); err != nil {
			return Result{}, err
		}
	}
	p := r.newProgress(c.Progress)
	defer p.close()
	if c.Batch != nil {
		return r.observeBatch(ctx, c, key, p)
	}
	return r.unit(ctx, key, func(ctx context.Context) (any, []Record, bool, error) {
		inv := invocation{name: c.Action, params: c.Params, caller: c.Caller, toolCallID: c.ToolCallID, key: c.IdempotencyKey, progress: p}
		v, rec, commit, err := r.answer(inv)(r.top(ctx, inv))
		return v, []Record{rec}, commit, err
	})
}

// work is one unit's work: its value, records, whether to keep it, and
// its error.
type work func(ctx context.Context) (value any, recs []Record, commit bool, err error)

// unit runs fn in one unit of the store, at most once under k when k is
// not nil, and delivers its records.
func (r *Registry[C]) unit(ctx context.Context, k *UnitKey, fn work) (Result, error) {
	var value any
	attempt := func(ctx context.Context) Unit {
		v, recs, commit, err := fn(ctx)
		value = v
		stamp(ctx, observed{}, recs)
		u := Unit{Records: recs, Commit: commit, Err: err}
		if k != nil && commit {
			u.Answer = answerOf(k, v, recs, err)
		}
		return u
	}
	var (
		recs []Record
		err  error
		rec  *Recorded // the recorded unit that answered a retry
	)
	if r.opts.Store != nil {
		uctx, ob := r.observe(ctx, Operation{Kind: OpUnit, Step: -1})
		if k != nil {
			recs, rec, err = r.opts.Store.AtomicOnce(uctx, *k, attempt)
		} else {
			recs, err = r.opts.Store.Atomic(uctx, attempt)
		}
		ob.end(Done{Records: recs, Err: err, Commit: committed(recs, err)})
		if err != nil && asRefusal(err) == nil && !isCancel(err) && CodeOf(err) == CodeInternal {
			// The store's own failure (a commit, a lost connection):
			// an internal refusal for the caller, the cause for the host.
			err = storeFailure(err)
		}
	} else {
		u := attempt(ctx)
		recs, err = u.Records, u.Err
		for i := range recs {
			recs[i].RolledBack = !u.Commit
		}
	}
	err = cancelRefusal(err)
	if r.opts.OnRecord != nil {
		for _, rec := range recs {
			if perr := safeCall("registry's OnRecord", func() { r.opts.OnRecord(rec) }); perr != nil && err == nil {
				err = perr
			}
		}
	}
	if rec != nil && err == nil {
		return answeredFrom(rec)
	}
	res := Result{Value: value, Records: recs}
	if a, ok := value.(answered); ok {
		res.Value, res.Text, res.StepResults = a.value, a.text, a.steps
	}
	if err != nil {
		res.Value, res.Text, res.StepResults = nil, "", nil
	}
	return res, err
}

// invocation is one call as the call path carries it.
type invocation struct {
	name       string // the id or alias called
	params     any
	caller     *Caller
	toolCallID string
	key        string // the call's idempotency key
	// confirming is the pending change a confirmation runs.
	confirming string
	// replay: the gate decides who may call (surface, capability,
	// scope, confirmation) but counts no rate and reads no serving
	// switch, and a held call stores no change.
	replay bool
	// noResolve: the parameters were recorded resolved (replay).
	noResolve bool
	// step: the call is a step of a batch.
	step bool
	// asHost: a nested call the body made as the host (Trace.CallAsHost).
	asHost bool
	// stepIndex is the index of the step, when step.
	stepIndex int
	// progress delivers the body's progress reports (nil: dropped).
	progress *progress
}

// audit starts the audit record of inv.
func (r *Registry[C]) audit(inv invocation) Audit {
	a := Audit{At: r.gateOf().opts.Now(), Caller: inv.caller, PendingChange: inv.confirming, Batch: inv.step, ToolCallID: inv.toolCallID, IdempotencyKey: inv.key}
	if inv.confirming != "" {
		a.Stage = StageConfirmed
	}
	return a
}

// top runs one top-level call through the gate and records it.
func (r *Registry[C]) top(ctx context.Context, inv invocation) (value any, rec Record, commit bool, err error) {
	ctx, ob := r.observe(ctx, callOp(inv))
	defer func() { rec = ob.endCall(rec, value, commit, err) }()
	audit := r.audit(inv)
	g := r.gateOf()
	reg, ok := r.lookup(inv.name)
	if ok {
		if reg.action.ID != inv.name {
			audit.Alias = inv.name
		}
		err := g.decide(ctx, &reg.action.Definition, inv.caller, inv.replay)
		if err == nil {
			err = needsKey(&reg.action.Definition, inv)
		}
		if err != nil {
			return nil, r.refusedRecord(reg.action.ID, inv.params, audit, err), false, err
		}
	}
	holds := ok && reg.action.NeedsConfirmation && inv.caller != nil && inv.confirming == ""
	if holds && inv.caller.Principal == "" {
		err := anonymousHold()
		return nil, r.refusedRecord(reg.action.ID, inv.params, audit, err), false, err
	}
	resolve := r.opts.Resolve
	if inv.noResolve {
		resolve = nil // replayed parameters that were resolved already
	}
	f := r.frame(inv, 0)
	if holds {
		f.hold = func(ctx context.Context, checked string) error {
			if inv.replay {
				return Receipt{Action: reg.action.ID}.refusal()
			}
			rec, err := g.hold(ctx, PendingChange{Action: reg.action.ID, Alias: audit.Alias, Parameters: r.givenParameters(inv.params), IdempotencyKey: inv.key}, inv.caller)
			if err != nil {
				return err
			}
			audit.PendingChange = rec.ID
			return rec.refusal()
		}
	}
	result, entry, err := f.run(ctx, inv.name, inv.params, resolve)
	if err != nil {
		audit.Code = hostCode(err)
		entry.Error = audit.Code
		if holds && CodeOf(err) == CodeConfirmationRequired {
			audit.Stage = StageHeld
			return nil, Record{Entry: entry, Audit: audit}, true, err
		}
		return nil, Record{Entry: entry, Audit: audit}, false, err
	}
	return result, Record{Entry: entry, Audit: audit}, true, nil
}

// refusedRecord is the record of a call the gate refused before its
// parameters were looked at.
func (r *Registry[C]) refusedRecord(id string, params any, audit Audit, err error) Record {
	entry := RunEntry{Action: id, Steps: []RunStep{}}.refused(err, r.givenParameters(params))
	entry.Error = hostCode(err)
	audit.Code = entry.Error
	return Record{Entry: entry, Audit: audit}
}

// frame returns the frame of a call of inv at depth.
func (r *Registry[C]) frame(inv invocation, depth int) *frame[C] {
	return &frame[C]{r: r, inv: inv, depth: depth}
}

// frame is the state of one running call: its trace, and what its nested
// calls need.
type frame[C any] struct {
	Trace
	r     *Registry[C]
	inv   invocation
	depth int
	// hold, set for a top-level call that needs confirmation, holds the
	// checked call as a pending change and returns its refusal.
	hold func(ctx context.Context, checked string) error
}

// run runs one call at the frame's depth, resolving its refs with
// resolve; it records nothing.
func (f *frame[C]) run(ctx context.Context, id string, params any, resolve RefResolver) (result any, entry RunEntry, err error) {
	r := f.r
	entry = RunEntry{Action: id, Steps: []RunStep{}, AsHost: f.inv.asHost}
	limits := r.Limits()
	reg, ok := r.lookup(id)
	if !ok {
		err = unknownAction()
		return nil, entry.refused(err, r.givenParameters(params)), err
	}
	entry.Action = reg.action.ID // an alias is recorded under the id
	if f.depth > limits.MaxCallDepth {
		err = refusef(CodeConstraintViolation, "nested calls are too deep",
			Issue{Path: "", Keyword: "call", Message: fmt.Sprintf("more than %d nested calls", limits.MaxCallDepth)})
		return nil, entry.refused(err, r.givenParameters(params)), err
	}
	checked, err := reg.params.Check(ctx, params, resolve)
	if err != nil {
		return nil, entry.refused(err, r.givenParameters(params)), err
	}
	if entry.Parameters, err = canonicalString(checked); err != nil {
		return nil, entry.refused(err, "null"), err
	}
	if f.hold != nil {
		err = f.hold(ctx, entry.Parameters)
		return nil, entry.refused(err, entry.Parameters), err
	}
	ctx, stop := r.limitTime(ctx, &reg.action)
	defer stop()
	if err := ctx.Err(); err != nil {
		err = endedRefusal(ctx, err)
		return nil, entry.refused(err, entry.Parameters), err
	}
	t := &f.Trace
	t.action, t.entry, t.runner, t.caller = id, entry, f, f.inv.caller
	t.progress = f.inv.progress
	var env C
	switch {
	case r.env != nil:
		if perr := safeCallOf("registry's Env of", id, func() { env = r.env(ctx, t) }); perr != nil {
			return nil, entry.refused(perr, entry.Parameters), perr
		}
	default:
		if tc, ok := any(t).(C); ok {
			env = tc
		}
	}
	if perr := safeCallOf("body of", id, func() { result, err = reg.action.Run(ctx, checked, env) }); perr != nil {
		err = perr
	}
	t.close()
	entry = t.entry
	if terr := timedOut(ctx, err); terr != nil {
		return nil, entry.refused(terr, entry.Parameters), terr
	}
	if err != nil {
		if nr := asRefusal(err); nr != nil && nr.Code != CodeCancelled && t.fromNestedCall(nr) {
			// Not the caller's fault: a call the body made was refused
			// (a cancellation stays one: it ends the whole call).
			ir := NewRefusal(CodeInternal, "the action failed: a call it made was refused")
			ir.cause = err
			err = ir
		} else if isCancel(err) && asRefusal(err) == nil {
			err = cancelRefusal(err)
		}
		err = reg.action.declared(err)
		return nil, entry.refused(err, entry.Parameters), err
	}
	written := result
	if reg.output != nil {
		if written, err = reg.output.checkOutput(id, result, reg.encode); err != nil {
			return nil, entry.refused(err, entry.Parameters), err
		}
	}
	if result != nil {
		entry.Result, err = canonicalString(written)
		if reg.output != nil && reg.release != nil {
			reg.release(written) // the encoded value is written: its maps are free
		}
		if err != nil {
			return nil, entry.refused(err, entry.Parameters), err
		}
	}
	entry.Outcome = OutcomeDone
	return result, entry, nil
}

// nested runs a call a body made: through the gate with its caller's
// identity (or as the host when asHost), one level deeper, never held.
func (f *frame[C]) nested(ctx context.Context, id string, params any, asHost bool) (any, RunEntry, error) {
	inv := f.inv
	inv.asHost, inv.progress = asHost, nil
	if asHost {
		inv.caller = nil
	}
	ctx, ob := f.r.observe(ctx, Operation{Kind: OpNested, Action: id, Caller: inv.caller, Params: params, Step: -1, AsHost: asHost})
	res, entry, err := f.nestedRun(ctx, inv, id, params)
	ob.end(Done{Records: []Record{{Entry: entry}}, Value: res, Err: err, Commit: err == nil})
	return res, entry, err
}

// nestedRun is nested's call, once observed.
func (f *frame[C]) nestedRun(ctx context.Context, inv invocation, id string, params any) (any, RunEntry, error) {
	asHost := inv.asHost
	child := f.r.frame(inv, f.depth+1)
	if reg, ok := f.r.lookup(id); ok {
		d := &reg.action.Definition
		err := f.r.gateOf().admitNested(d, inv.caller)
		if err == nil && d.NeedsConfirmation && inv.caller != nil && inv.confirming == "" {
			err = NewRefusal(CodeConfirmationRequired, "a nested call of an action that needs confirmation is not held: the caller must call it")
		}
		if err != nil {
			entry := RunEntry{Action: reg.action.ID, Steps: []RunStep{}, AsHost: asHost}.refused(err, f.r.givenParameters(params))
			entry.Error = hostCode(err)
			return nil, entry, err
		}
	}
	res, entry, err := child.run(ctx, id, params, f.r.opts.Resolve)
	return res, entry, err
}

// envRequired reports whether a C left at its zero value would be a nil
// the body cannot use (a pointer, interface, map, slice, channel or
// function type) and is not the *Trace the registry gives without Env.
func envRequired[C any]() bool {
	if _, ok := any(&Trace{}).(C); ok {
		return false
	}
	switch reflect.TypeFor[C]().Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice, reflect.Chan, reflect.Func:
		return true
	}
	return false
}

// givenParameters is the canonical JSON of the parameters as given, for
// the entry of a call refused before its check passed: "null" when they
// are not JSON at all, or larger than MaxParamBytes (an entry holds no
// more than a call may bring).
func (r *Registry[C]) givenParameters(params any) string {
	limit := r.Limits().MaxParamBytes
	if m, isMap := params.(map[string]any); params == nil || (isMap && m == nil) || nullText(params) {
		return "{}"
	}
	if text, ok := textOf(params); ok {
		if len(text) > limit {
			return "null"
		}
		params = json.RawMessage(text)
	}
	text, err := exactText(params)
	if err != nil || len(text) > limit {
		return "null"
	}
	return text
}

// canonicalString writes a value for an entry; a value without canonical
// form gives an internal refusal carrying the cause.
func canonicalString(v any) (string, error) {
	text, err := exactText(v)
	if err != nil {
		r := refusef(CodeInternal, "a value has no canonical JSON form")
		r.cause = err
		return "", r
	}
	return text, nil
}

// safeCall runs fn and turns a panic into an internal refusal.
func safeCall(where string, fn func()) error {
	return safeCallOf(where, "", fn)
}

// safeCallOf is safeCall for the part where of the action id: the name
// "where id" is written only when fn panics, not on every call.
func safeCallOf(where, id string, fn func()) (err error) {
	defer func() {
		if p := recover(); p != nil {
			if id != "" {
				where += " " + id
			}
			err = panicRefusal(where, p)
		}
	}()
	fn()
	return nil
}

// panicError carries a recovered panic's value and stack for the host.
type panicError struct {
	where string
	value any
	stack []byte
}

func (e *panicError) Error() string {
	return fmt.Sprintf("actions: panic in %s: %v\n%s", e.where, e.value, e.stack)
}

// panicRefusal turns a recovered panic into an internal refusal. The panic
// value and stack stay in the refusal's cause ([Refusal.Cause]), never in
// its message.
func panicRefusal(where string, p any) *Refusal {
	r := NewRefusal(CodeInternal, "the "+where+" failed")
	r.cause = &panicError{where: where, value: p, stack: debug.Stack()}
	return r
}

// unknownAction is the refusal of a call to an id no action has. It names
// nothing: an id is submitted text.
func unknownAction() *Refusal {
	return NewRefusal(CodeUnknownAction, "no action is registered under this id")
}
