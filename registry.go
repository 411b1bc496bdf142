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

	"github.com/actionreg/actions/internal/ijson"
)

// Body is an action's code. It receives the checked parameters (a copy in
// JSON's Go types: map[string]any, []any, string, bool, nil, json.Number)
// and the environment its host builds; see [Action].
type Body[C any] func(ctx context.Context, params map[string]any, env C) (any, error)

// Host is what the caller of a run provides. Every field may be nil.
type Host[C any] struct {
	// Env builds the environment each body receives (its C), on the
	// body's trace: typically the host's services, the caller, a
	// transaction. Without it the body receives the *Trace itself when C
	// is *Trace (or an interface *Trace satisfies). When C is another
	// pointer, interface, map, slice, channel or function type, a run
	// without Env is refused with internal before the body (the body
	// would get a nil it cannot use); any other C gets its zero value.
	Env func(t *Trace) C
	// Resolve resolves ref values (see [RefResolver]). Without it, ref
	// values reach the body as they are.
	Resolve RefResolver
	// OnEntry receives the run entry of each top-level call, done or
	// refused, once, after the body returns. Nested calls are steps of
	// their caller's entry. A batch calls it once per call.
	OnEntry func(RunEntry)
	// Caller is who calls, built by the host from what it authenticated
	// (see [Caller]); nil is the host itself. The gate checks it before
	// the parameters are looked at (docs/gate.md).
	Caller *Caller
	// OnAudit receives, right after OnEntry, who made the call: the
	// audit record that travels beside the entry.
	OnAudit func(RunEntry, Audit)

	hold       func(context.Context) error // holds a call needing confirmation
	confirming *PendingChange              // the change a Confirm runs
}

// Registry holds actions by id and runs them. The zero value is an empty
// registry with the default [Limits], ready to use; [NewRegistry] sets
// other options. Register and Run are safe for concurrent use; Run takes
// no lock, so calls never wait on each other.
//
// The registry opens no transaction: a host that needs one wraps Run (or
// [Registry.RunBatch]) in its own, and rolls it back when an error is
// returned.
type Registry[C any] struct {
	mu      sync.Mutex // serialises registrations only
	actions sync.Map   // id → *registered[C]
	limits  Limits     // as given: zero fields mean their default
	gate    atomic.Pointer[gate]
	// portable refuses ids whose tool name some provider refuses.
	portable bool
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
	// PortableNames makes Register and Bind refuse, with
	// constraint_violation, an id whose tool name is not portable to
	// every export profile (see [CheckPortableName]: at most 64
	// characters, where MCP allows 128).
	PortableNames bool
}

// NewRegistry returns an empty registry whose bodies receive a C. opts may
// be nil for the defaults.
func NewRegistry[C any](opts *Options) *Registry[C] {
	r := &Registry[C]{}
	if opts != nil {
		r.limits = opts.Limits
		if opts.Gate != nil {
			r.gate.Store(newGate(*opts.Gate))
		}
		r.portable = opts.PortableNames
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
	if r.portable {
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

// List returns every registered action, sorted by id.
func (r *Registry[C]) List() []Action[C] {
	var out []Action[C]
	r.actions.Range(func(_, v any) bool {
		out = append(out, v.(*registered[C]).action)
		return true
	})
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Run runs the action id (or a deprecated alias of it, recorded under the
// id): the gate checks host.Caller first (docs/gate.md), then it checks
// params (see [ParameterSchema.Check]), runs the body with the
// environment host builds, and records the call as a run entry, which
// host.OnEntry also receives, and host.OnAudit with who called. host may
// be nil.
//
// It returns the body's result (nil whenever the error is not nil), the
// entry, and an error:
//   - *Refusal unknown_action: no action has this id, or host.Caller may
//     not see it (its surface is not offered, or it lacks the
//     capability: errors.Is finds ErrForbiddenSurface or
//     ErrForbiddenCapability, and the entry records that code);
//   - *Refusal insufficient_scope, not_serving, read_only, rate_limited:
//     the gate's other checks, in that order, before the parameters are
//     looked at;
//   - *Refusal confirmation_required: the action needs confirmation and
//     the call, checked in full, is held as a pending change (the
//     refusal's Pending); see [Registry.Confirm];
//   - *Refusal invalid_parameters: see [ParameterSchema.Check]; the body
//     does not run, and the entry records the parameters as given;
//   - the body's own error, as it is (a *Refusal the body raised keeps
//     its code; a plain error is recorded with code internal);
//   - *Refusal internal, the action's fault rather than the caller's
//     (the registry keeps serving; the cause is in errors.Unwrap, never
//     in the message), in four cases: (1) the body returned a refusal
//     that a nested call ([Trace.Call]) gave it, and the cause is that
//     nested refusal, whole; (2) the body, the resolver, host.Env or
//     host.OnEntry panicked (OnEntry's panic is reported only when the
//     call had no error already), and the cause holds the panic value
//     and stack; (3) C needs an environment and host.Env is nil (see
//     [Host]), and the body does not run; (4) the result has no
//     canonical JSON form;
//   - *Refusal invalid_parameters from a typed action ([Typed]) whose
//     checked parameters do not fit its Go type: the body does not run;
//   - *Refusal output_invalid: the action has an output schema
//     ([Definition].OutputSchema) and the result breaks it; the body ran,
//     the result is withheld, the issues point into the result, and
//     errors.Unwrap gives an *[OutputError];
//   - ctx.Err() when ctx is done before the body starts;
//   - a resolver's error, wrapped.
//
// A body sees ctx and must honour its cancellation itself.
func (r *Registry[C]) Run(ctx context.Context, id string, params any, host *Host[C]) (any, RunEntry, error) {
	if host == nil {
		host = &Host[C]{}
	}
	result, entry, audit, err := r.gated(ctx, id, params, host)
	if host.OnEntry != nil {
		if perr := safeCall("host's OnEntry", func() { host.OnEntry(entry) }); perr != nil && err == nil {
			result, err = nil, perr
		}
	}
	if host.OnAudit != nil {
		if perr := safeCall("host's OnAudit", func() { host.OnAudit(entry, audit) }); perr != nil && err == nil {
			result, err = nil, perr
		}
	}
	return result, entry, err
}

// unknownAction is the refusal of a call to an id no action has. It names
// nothing: an id is submitted text.
func unknownAction() *Refusal {
	return NewRefusal(CodeUnknownAction, "no action is registered under this id")
}

// run runs one call at nesting depth depth (0 for a top-level call),
// resolving its refs with resolve, and never calls OnEntry. Its nested
// calls resolve with host.Resolve.
func (r *Registry[C]) run(ctx context.Context, id string, params any, host *Host[C], resolve RefResolver, depth int) (result any, entry RunEntry, err error) {
	entry = RunEntry{Action: id, Steps: []RunStep{}}
	limits := r.Limits()
	reg, ok := r.lookup(id)
	if !ok {
		err = unknownAction()
		return nil, entry.refused(err, r.givenParameters(params, limits.MaxParamBytes)), err
	}
	entry.Action = reg.action.ID // an alias is recorded under the id
	if depth > limits.MaxCallDepth {
		err = refusef(CodeConstraintViolation, "nested calls are too deep",
			Issue{Path: "", Keyword: "call", Message: fmt.Sprintf("more than %d nested calls", limits.MaxCallDepth)})
		return nil, entry.refused(err, r.givenParameters(params, limits.MaxParamBytes)), err
	}
	checked, err := reg.params.Check(ctx, params, resolve)
	if err != nil {
		return nil, entry.refused(err, r.givenParameters(params, limits.MaxParamBytes)), err
	}
	if entry.Parameters, err = canonicalString(checked); err != nil {
		return nil, entry.refused(err, "null"), err
	}
	if host.hold != nil && depth == 0 {
		err = host.hold(ctx)
		return nil, entry.refused(err, entry.Parameters), err
	}
	if err := ctx.Err(); err != nil {
		return nil, entry.refused(err, entry.Parameters), err
	}
	// One allocation holds the trace, the entry it builds and what nested
	// calls need.
	f := &frame[C]{r: r, host: host, depth: depth}
	t := &f.Trace
	t.action, t.entry, t.runner, t.caller = id, entry, f, host.Caller
	var env C
	switch {
	case host.Env != nil:
		if perr := safeCallOf("host's Env of", id, func() { env = host.Env(t) }); perr != nil {
			return nil, entry.refused(perr, entry.Parameters), perr
		}
	default:
		if tc, ok := any(t).(C); ok {
			env = tc
		} else if envRequired[C]() {
			err = NewRefusal(CodeInternal, "the action cannot run: the host builds no environment for it")
			err.(*Refusal).cause = fmt.Errorf("actions: %s: Host.Env is nil and the body's environment %s would be nil", id, reflect.TypeFor[C]())
			return nil, entry.refused(err, entry.Parameters), err
		}
	}
	if perr := safeCallOf("body of", id, func() { result, err = reg.action.Run(ctx, checked, env) }); perr != nil {
		err = perr
	}
	t.close()
	entry = t.entry
	if err != nil {
		if nr := asRefusal(err); nr != nil && t.fromNestedCall(nr) {
			// Not the caller's fault: a call the body made was refused.
			ir := NewRefusal(CodeInternal, "the action failed: a call it made was refused")
			ir.cause = err
			err = ir
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

// envRequired reports whether a C left at its zero value would be a nil
// the body cannot use: a pointer, interface, map, slice, channel or
// function type.
func envRequired[C any]() bool {
	switch reflect.TypeFor[C]().Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice, reflect.Chan, reflect.Func:
		return true
	}
	return false
}

// frame is the state of one running call: its trace, and the registry,
// host and depth its nested calls use.
type frame[C any] struct {
	Trace
	r     *Registry[C]
	host  *Host[C]
	depth int
}

func (f *frame[C]) nested(ctx context.Context, id string, params any) (any, RunEntry, error) {
	return f.r.run(ctx, id, params, f.host, f.host.Resolve, f.depth+1)
}

// givenParameters is the canonical JSON of the parameters as given, for
// the entry of a call refused before its check passed: "null" when they
// are not JSON at all, or larger than MaxParamBytes (an entry holds no
// more than a call may bring).
func (r *Registry[C]) givenParameters(params any, limit int) string {
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
// value and stack stay in the refusal's cause (errors.Unwrap), never in its
// message.
func panicRefusal(where string, p any) *Refusal {
	r := NewRefusal(CodeInternal, "the "+where+" failed")
	r.cause = &panicError{where: where, value: p, stack: debug.Stack()}
	return r
}
