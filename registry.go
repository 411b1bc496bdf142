package actions

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"sort"
	"sync"

	"github.com/actionreg/actions/internal/ijson"
)

// Body is an action's code. It receives the checked parameters (a copy in
// JSON's Go types: map[string]any, []any, string, bool, nil, json.Number)
// and the context its host builds; see [Action].
type Body[C any] func(ctx context.Context, params map[string]any, c C) (any, error)

// Host is what the caller of a run provides. Every field may be nil.
type Host[C any] struct {
	// Context builds the context each body receives, on the body's trace.
	// Without it the body receives the *Trace itself when C is *Trace (or
	// an interface *Trace satisfies), and C's zero value otherwise.
	Context func(t *Trace) C
	// Resolve resolves ref values (see [RefResolver]). Without it, ref
	// values reach the body as they are.
	Resolve RefResolver
	// OnEntry receives the run entry of each top-level call, done or
	// refused, once, after the body returns. Nested calls are steps of
	// their caller's entry. A batch calls it once per call.
	OnEntry func(RunEntry)
}

// Registry holds actions by id and runs them. The zero value is not ready;
// use [NewRegistry]. Register and Run are safe for concurrent use; Run
// takes no lock, so calls never wait on each other.
//
// The registry opens no transaction: a host that needs one wraps Run (or
// [RunBatch]) in its own, and rolls it back when an error is returned.
type Registry[C any] struct {
	mu      sync.Mutex // serialises registrations only
	actions sync.Map   // id → *registered[C]
	limits  Limits
}

type registered[C any] struct {
	action Action[C]
	params *ParameterSchema
}

// Option configures a registry.
type Option func(*options)

type options struct {
	limits Limits
}

// WithLimits sets the limits of a registry; zero fields keep their
// defaults (see [Limits]).
func WithLimits(l Limits) Option {
	return func(o *options) { o.limits = l }
}

// NewRegistry returns an empty registry whose bodies receive a C.
func NewRegistry[C any](opts ...Option) *Registry[C] {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return &Registry[C]{limits: o.limits.withDefaults()}
}

// Limits returns the limits in force, defaults filled in.
func (r *Registry[C]) Limits() Limits { return r.limits }

// Register adds an action. It compiles the parameters schema once.
//
// Errors (*Refusal): constraint_violation when the id is not
// namespace/name with both parts identifiers or is longer than
// MaxToolNameLength (128) bytes, when the body is nil, or
// when the schema is refused (see [CompileParametersLimits]);
// duplicate_name when the id is already registered.
func (r *Registry[C]) Register(a Action[C]) error {
	reg, err := r.prepare(a)
	if err != nil {
		return err
	}
	// Bind checks then stores under mu; holding it here keeps a Bind
	// from overwriting an id registered between its check and its store.
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, loaded := r.actions.LoadOrStore(a.ID, reg); loaded {
		return duplicateRefusal(a.ID)
	}
	return nil
}

func duplicateRefusal(id string) *Refusal {
	return refusef(CodeDuplicateName, "an action with this id is already registered",
		Issue{Path: "/id", Keyword: "id", Message: "the id " + id + " is taken"})
}

func (r *Registry[C]) prepare(a Action[C]) (*registered[C], error) {
	if err := checkID(a.ID); err != nil {
		return nil, err
	}
	if a.Run == nil {
		return nil, refusef(CodeConstraintViolation, "the action has no body",
			Issue{Path: "/run", Keyword: "run", Message: "the body is nil"})
	}
	ps, err := CompileParametersLimits(a.Parameters, r.limits)
	if err != nil {
		return nil, err
	}
	a.Writes = append([]string(nil), a.Writes...)
	return &registered[C]{action: a, params: ps}, nil
}

// Bind registers the definitions of a manifest with the bodies of the same
// ids, all or none. When a definition has no body, a body has no
// definition, or a definition is refused, nothing is registered and the
// error is a *Refusal (constraint_violation, or duplicate_name when an id
// is taken or repeated) with one issue per fault, at the pointer of the
// definition ("/3") or of the body ("/bodies/garden~1plant": the id as
// one RFC 6901 token, its slash escaped).
func (r *Registry[C]) Bind(defs []Definition, bodies map[string]Body[C]) error {
	var issues []Issue
	code := CodeConstraintViolation
	regs := make([]*registered[C], 0, len(defs))
	ptrs := make([]string, 0, len(defs)) // the pointer of each reg's definition
	seen := map[string]bool{}
	for i, d := range defs {
		at := fmt.Sprintf("/%d", i)
		body, ok := bodies[d.ID]
		if !ok {
			issues = append(issues, Issue{Path: at, Keyword: "body", Message: "the definition " + d.ID + " has no body"})
			continue
		}
		if seen[d.ID] {
			code = CodeDuplicateName
			issues = append(issues, Issue{Path: at, Keyword: "id", Message: "the id " + d.ID + " is listed twice"})
			continue
		}
		seen[d.ID] = true
		reg, err := r.prepare(Action[C]{Definition: d, Run: body})
		if err != nil {
			issues = append(issues, Issue{Path: at, Keyword: "definition", Message: err.Error()})
			continue
		}
		regs = append(regs, reg)
		ptrs = append(ptrs, at)
	}
	for id := range bodies {
		if !seen[id] && !hasDefinition(defs, id) {
			issues = append(issues, Issue{Path: ijson.AppendToken("/bodies", id), Keyword: "definition", Message: "the body " + id + " has no definition"})
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, reg := range regs {
		if _, taken := r.actions.Load(reg.action.ID); taken {
			code = CodeDuplicateName
			issues = append(issues, Issue{Path: ptrs[i], Keyword: "id", Message: "the id " + reg.action.ID + " is taken"})
		}
	}
	if len(issues) > 0 {
		return refusef(code, "the manifest does not bind", sortIssues(issues)...)
	}
	for _, reg := range regs {
		r.actions.Store(reg.action.ID, reg)
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

// Get returns the action registered under id.
func (r *Registry[C]) Get(id string) (Action[C], bool) {
	reg, ok := r.lookup(id)
	if !ok {
		return Action[C]{}, false
	}
	return reg.action, true
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
		return nil, false
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

// Run runs the action id: it checks params (see [ParameterSchema.Check]),
// runs the body with the context host builds, and records the call as a
// run entry, which host.OnEntry also receives. host may be nil.
//
// It returns the body's result (nil whenever the error is not nil), the
// entry, and an error:
//   - *Refusal unknown_action: no action has this id;
//   - *Refusal invalid_parameters: see [ParameterSchema.Check]; the body
//     does not run, and the entry records the parameters as given;
//   - the body's own error, as it is (a *Refusal the body raised keeps
//     its code; a plain error is recorded with code internal);
//   - *Refusal internal: the body, the resolver, host.Context or
//     host.OnEntry panicked (OnEntry's panic is reported only when the
//     call had no error already; the panic value and stack are in
//     errors.Unwrap, never in the message), or the result has no
//     canonical JSON form; the registry keeps serving;
//   - ctx.Err() when ctx is done before the body starts;
//   - a resolver's error, wrapped.
//
// A body sees ctx and must honour its cancellation itself.
func (r *Registry[C]) Run(ctx context.Context, id string, params any, host *Host[C]) (any, RunEntry, error) {
	if host == nil {
		host = &Host[C]{}
	}
	result, entry, err := r.run(ctx, id, params, host, host.Resolve, 0)
	if host.OnEntry != nil {
		if perr := safeCall("host's OnEntry", func() { host.OnEntry(entry) }); perr != nil && err == nil {
			result, err = nil, perr
		}
	}
	return result, entry, err
}

// run runs one call at nesting depth depth (0 for a top-level call),
// resolving its refs with resolve, and never calls OnEntry. Its nested
// calls resolve with host.Resolve.
func (r *Registry[C]) run(ctx context.Context, id string, params any, host *Host[C], resolve RefResolver, depth int) (result any, entry RunEntry, err error) {
	entry = RunEntry{Action: id, Steps: []RunStep{}}
	reg, ok := r.lookup(id)
	if !ok {
		err = refusef(CodeUnknownAction, "no action is registered under this id",
			Issue{Path: "", Keyword: "action", Message: "no action is registered under the id given"})
		return nil, entry.refused(err, r.givenParameters(params)), err
	}
	if depth > r.limits.MaxCallDepth {
		err = refusef(CodeConstraintViolation, "nested calls are too deep",
			Issue{Path: "", Keyword: "call", Message: fmt.Sprintf("more than %d nested calls", r.limits.MaxCallDepth)})
		return nil, entry.refused(err, r.givenParameters(params)), err
	}
	checked, err := reg.params.Check(ctx, params, resolve)
	if err != nil {
		return nil, entry.refused(err, r.givenParameters(params)), err
	}
	if entry.Parameters, err = canonicalString(checked); err != nil {
		return nil, entry.refused(err, "null"), err
	}
	if err := ctx.Err(); err != nil {
		return nil, entry.refused(err, entry.Parameters), err
	}
	// One allocation holds the trace, the entry it builds and what nested
	// calls need.
	f := &frame[C]{r: r, host: host, depth: depth}
	t := &f.Trace
	t.action, t.entry, t.runner = id, entry, f
	var c C
	if host.Context != nil {
		if perr := safeCall("host's Context", func() { c = host.Context(t) }); perr != nil {
			return nil, entry.refused(perr, entry.Parameters), perr
		}
	} else if tc, ok := any(t).(C); ok {
		c = tc
	}
	if perr := safeCall("body", func() { result, err = reg.action.Run(ctx, checked, c) }); perr != nil {
		err = perr
	}
	t.close()
	entry = t.entry
	if err != nil {
		return nil, entry.refused(err, entry.Parameters), err
	}
	if result != nil {
		if entry.Result, err = canonicalString(result); err != nil {
			return nil, entry.refused(err, entry.Parameters), err
		}
	}
	entry.Outcome = OutcomeDone
	return result, entry, nil
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
func (r *Registry[C]) givenParameters(params any) string {
	if m, isMap := params.(map[string]any); params == nil || (isMap && m == nil) || nullText(params) {
		return "{}"
	}
	if text, ok := textOf(params); ok {
		if len(text) > r.limits.MaxParamBytes {
			return "null"
		}
		params = json.RawMessage(text)
	}
	text, err := canonicalText(params)
	if err != nil || len(text) > r.limits.MaxParamBytes {
		return "null"
	}
	return text
}

// canonicalString writes a value for an entry; a value without canonical
// form gives an internal refusal carrying the cause.
func canonicalString(v any) (string, error) {
	text, err := canonicalText(v)
	if err != nil {
		r := refusef(CodeInternal, "a value has no canonical JSON form")
		r.cause = err
		return "", r
	}
	return text, nil
}

// safeCall runs fn and turns a panic into an internal refusal.
func safeCall(where string, fn func()) (err error) {
	defer func() {
		if p := recover(); p != nil {
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
