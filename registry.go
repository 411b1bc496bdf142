package actions

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/internal/ijson"
	"github.com/actionreg/actions/internal/portable"
	"github.com/actionreg/actions/store"
)

// Registry holds actions by id and runs them. The zero value is an empty
// registry with the default [Limits], ready to use; [NewRegistry] sets
// other options. Register and Run are safe for concurrent use; Run takes
// no lock, so calls never wait on each other.
//
// The registry opens no transaction itself: each call, batch and
// decision runs in one unit of its [store.Store] (Options.Store), which a SQL
// store makes one database transaction.
type Registry struct {
	mu      sync.Mutex // serialises registrations only
	actions sync.Map   // id → *registered
	limits  Limits     // as given: zero fields mean their default
	// inForce is limits with the defaults filled (see limitsInForce).
	inForce atomic.Pointer[Limits]
	gate    atomic.Pointer[gate]
	opts    Options
	// drawKey draws randomKey, the cursor key when Options.CursorKey is
	// empty.
	drawKey   sync.Once
	randomKey []byte
	tasks     taskRuns // the tasks running in this process
}

type registered struct {
	action Action
	params *ParameterSchema
	output *ParameterSchema // nil: no output contract
	// encode writes a result in JSON's Go types (a typed action's plan),
	// or is nil for resultValue.
	encode  func(result any) (any, error)
	release func(v any) // gives back what encode made; nil with encode
	// cursor: the parameters declare cursorParam, so the action pages
	// its lists with cursors the registry seals (see cursor.go).
	cursor bool
}

// Options configures a registry. The zero value means every default.
type Options struct {
	// Limits bound what one registration or one call may cost; zero
	// fields keep their defaults (see [Limits]).
	Limits Limits
	// Gate configures the gate (scopes, rate limits, the pending store:
	// see [GateOptions]); nil means its defaults.
	Gate *GateOptions
	// Now is the registry's clock (nil: time.Now): it dates records and
	// audits, idempotency keys' windows, pending changes' and tasks'
	// lives, rate limits, timeouts and progress reports.
	Now func() time.Time
	// Resolve resolves ref values (see [RefResolver]). Nil: ref values
	// reach the body as they are.
	Resolve RefResolver
	// Store keeps each unit of work with its records (see [store.Store]): a
	// [RunLog] in memory, or sqlstore.Store in database transactions.
	// Nil: calls run with no unit of work and their records are kept
	// nowhere but in each [Result] and OnRecord.
	Store store.Store
	// OnRecord receives each record once its unit is settled: after the
	// commit, or marked RolledBack once the unit was undone, so it never
	// reports a change that was not kept. It may be called concurrently.
	OnRecord func(store.Record)
	// Observer, when set, sees every call, batch, nested call, decision,
	// replay and unit of work the registry runs (see [Observer];
	// package otelactions traces them with OpenTelemetry).
	Observer Observer
	// Timeout is how long a body may run when its action declares no
	// [Definition].Timeout; zero or negative: no limit. Past it the call
	// is refused with timeout (see [codes.Timeout]).
	Timeout time.Duration
	// ProgressInterval is the least time between two progress reports
	// delivered to one call (see [Trace.Progress]); zero means
	// 100 ms, negative no bound.
	ProgressInterval time.Duration
	// PortableNames makes Register and Bind refuse, with
	// constraint_violation, an id whose tool name is not portable to
	// every export profile of package profiles (at most 64 characters,
	// where MCP allows 128).
	PortableNames bool
	// KeyWindow is how long a call run under an idempotency key answers
	// its retries (0: 24 h). KeyWait bounds how long a
	// retry waits for a first call still running under its key before
	// it is refused in_progress (0: 5 s).
	KeyWindow, KeyWait time.Duration
	// CursorKey is the key, ideally 32 random bytes kept secret, with
	// which the registry signs the cursors of paged results (HMAC-SHA256),
	// so that a cursor is refused when altered, made up, or sent for
	// another action, other parameters or another principal. Registries
	// that serve the same callers (replicas) need the same key. Empty: a
	// key drawn at random when first needed, so that cursors last as long
	// as the registry. See docs/pagination.md.
	CursorKey []byte
}

// NewRegistry returns an empty registry configured by opts; nil means
// every default, as does the zero Registry. A body reaches the host's
// transaction through its ctx (sqlstore.Tx) and the host's services
// through its closure.
func NewRegistry(opts *Options) *Registry {
	r := &Registry{}
	if opts != nil {
		r.opts = *opts
		r.limits = opts.Limits
		if opts.Gate != nil {
			r.gate.Store(newGate(*opts.Gate, opts.Now))
		}
	}
	return r
}

// Limits returns the limits in force: zero fields filled with their
// defaults. A field given negative (no limit) reads as math.MaxInt32,
// except MaxResultBytes, MaxBatchResultBytes, MaxEntryResultBytes,
// MaxBatchBytes and MaxRefusedParamBytes, which stay negative.
func (r *Registry) Limits() Limits { return *r.limitsInForce() }

// limitsInForce is what Limits returns, filled once (the registry's
// limits never change), shared: read only.
func (r *Registry) limitsInForce() *Limits {
	if l := r.inForce.Load(); l != nil {
		return l
	}
	l := r.limits.withDefaults()
	r.inForce.CompareAndSwap(nil, &l)
	return r.inForce.Load()
}

// Register adds actions, all or none, each with its parameters schema
// compiled once. Build an action with [New] (or [Typed]) or as a literal.
//
// Errors (*Refusal), and nothing is registered: constraint_violation when an id
// is not namespace/name with both parts identifiers or is longer than 128 bytes
// (the longest MCP tool name), when a body is nil, when the action needs
// idempotency keys (NeedsIdempotencyKey) and Options.Store is no
// [store.KeyStore] (no caller could ever call it), when a schema is refused
// (see [CompileParameters]; an output schema under the same rules, any root
// allowed), or when a typed action's Go types cannot be described or disagree
// with its given schema (see [Typed]); duplicate_name when an id is already
// registered or given twice. Every fault is listed, each issue at its RFC 6901
// pointer into the action: "/id", "/run", "/parameters/..." or
// "/outputSchema/..." into a schema. With several actions, the pointers start
// with the action's index: "/2/parameters/properties/name".
func (r *Registry) Register(as ...Action) error {
	prefix := func(i int) string { return fmt.Sprintf("/%d", i) }
	if len(as) == 1 {
		prefix = func(int) string { return "" }
	}
	return r.registerAll(as, prefix, nil, "the actions are not registered")
}

// MustRegister is [Registry.Register] for declarations made at start-up,
// as regexp.MustCompile is for patterns: it panics with the refusal when
// Register refuses.
func (r *Registry) MustRegister(as ...Action) {
	if err := r.Register(as...); err != nil {
		panic(err)
	}
}

// registerAll prepares every action, then stores them all under mu, or
// none: issues of action i are located under prefix(i). pre holds issues
// found before (Bind's unbound bodies).
func (r *Registry) registerAll(as []Action, prefix func(int) string, pre []Issue, message string) error {
	issues := pre
	code := codes.ConstraintViolation
	var prepErr error // the refusal of the one action given, as it is
	regs := make([]*registered, 0, len(as))
	at := make([]int, 0, len(as))
	seen := make(map[string]bool, len(as))
	for i, a := range as {
		if seen[a.ID] && a.ID != "" {
			code = codes.DuplicateName
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
		code = codes.DuplicateName
		issues = append(issues, clash...)
	}
	if len(issues) > 0 {
		if len(as) == 1 && len(pre) == 0 && prepErr != nil {
			return prepErr // one action: its own refusal, message included
		}
		if code == codes.DuplicateName && len(as) == 1 {
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
func (r *Registry) prepare(a Action) (*registered, error) {
	if err := checkID(a.ID); err != nil {
		return nil, err
	}
	if r.opts.PortableNames {
		if why := portable.Fault(ToolName(a.ID)); why != "" {
			return nil, idRefusal(why)
		}
	}
	if a.err != nil {
		return nil, a.err
	}
	if a.Run == nil {
		return nil, refusef(codes.ConstraintViolation, "the action has no body",
			Issue{Path: "/run", Keyword: "run", Message: "the body is nil"})
	}
	if _, ok := r.opts.Store.(store.KeyStore); a.NeedsIdempotencyKey && !ok {
		// A caller could never call it: without a key it is refused,
		// and a key cannot be honoured.
		return nil, refusef(codes.ConstraintViolation, "the action needs idempotency keys and the registry's store keeps none",
			Issue{Path: "/needsIdempotencyKey", Keyword: "needsIdempotencyKey", Message: "Options.Store is no KeyStore (give the registry one, such as NewRunLog())"})
	}
	ps, doc, err := compileParameters(a.Parameters, r.limits.withDefaults(), true)
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
		a.Parameters = ps.schema()
	case json.RawMessage:
		a.Parameters = append(json.RawMessage(nil), p...)
	case []byte:
		a.Parameters = append([]byte(nil), p...)
	}
	if err := a.Definition.own(); err != nil {
		return nil, err
	}
	if a.agree != nil {
		if err := a.agree(doc); err != nil {
			return nil, err
		}
	}
	out, err := compileOutput(a.OutputSchema, r.limits)
	if err != nil {
		return nil, err
	}
	if out != nil {
		a.OutputSchema = out.schema()
	}
	props, _ := doc["properties"].(map[string]any)
	_, cursor := props[cursorParam]
	return &registered{action: a, params: ps, output: out, encode: a.encode, release: a.release, cursor: cursor}, nil
}

// Bind registers the definitions of a manifest with the bodies of the same
// ids, all or none. When a definition has no body, a body has no
// definition, or a definition is refused, nothing is registered and the
// error is a *Refusal (constraint_violation, or duplicate_name when an id
// is taken or repeated) with one issue per fault, at the pointer into the
// manifest: of the definition ("/3/id", "/3/parameters/properties/name")
// or of the body ("/bodies/garden~1plant": the id as one RFC 6901 token,
// its slash escaped).
func (r *Registry) Bind(defs []Definition, bodies map[string]Body) error {
	var pre []Issue
	as := make([]Action, 0, len(defs))
	index := make([]int, 0, len(defs)) // manifest index of as[k]
	for i, d := range defs {
		body, ok := bodies[d.ID]
		if !ok {
			pre = append(pre, Issue{Path: fmt.Sprintf("/%d", i), Keyword: "body", Message: "the definition " + d.ID + " has no body"})
			continue
		}
		as = append(as, Action{Definition: d, Run: body})
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

// lookup finds the action registered under id, or under the deprecated
// alias id.
func (r *Registry) lookup(id string) (*registered, bool) {
	v, ok := r.actions.Load(id)
	if !ok {
		if v, ok = r.gateOf().aliases.Load(id); !ok {
			return nil, false
		}
	}
	return v.(*registered), true
}

// Tools returns the registered actions offered on mcp (or, with
// opts.Caller, those the caller may see) as MCP tools, sorted by
// name, from the schemas checked at Register: nothing is compiled again
// (each schema's text, kept at Register, is decoded into the tool's own
// maps). opts may be nil. Each Tool is the caller's own copy;
// changing it changes nothing in the registry. It returns an empty,
// non-nil slice when no action is visible. See docs/tools.md for the
// mapping:
//   - Name: [ToolName] of the id; Title and Description as they are;
//   - InputSchema: the parameters schema (ref and every nested keyword
//     kept) without anyOf, oneOf and allOf at its root, or
//     {"type":"object","properties":{},"additionalProperties":false} for
//     an action without parameters;
//   - a root anyOf whose branches each hold only a required of one
//     property becomes a sentence at the end of Description ("Give at
//     least one of: a, b."); any other root combinator is dropped. AI
//     providers refuse these keywords at the root of a tool's schema;
//     the action still checks its full schema when it runs, so a call
//     the exported schema lets through may still be refused with
//     invalid_parameters;
//   - a boolean schema directly under the root properties is written as
//     the object schema of the same meaning (true as {}, false as
//     {"not": {}}), which MCP 2025-11-25 requires;
//   - the declared refusals, if any, become one more sentence ("It may
//     refuse with: out_of_stock (retry later).");
//   - Annotations: ReadOnlyHint for effect read, DestructiveHint for a
//     delete or a write that is not additive, IdempotentHint and
//     OpenWorldHint as declared; all four always written.
//
// Deprecated aliases are never exported. With opts.Caller, only what that
// caller may see (docs/gate.md).
//
// Errors: none today, since Register bounds ids to tool names MCP
// accepts; the error is there for exports that can fail.
func (r *Registry) Tools(opts *ToolOptions) ([]Tool, error) {
	o := toolOptionsOf(opts)
	var regs []*registered
	r.actions.Range(func(_, v any) bool {
		if reg := v.(*registered); o.sees(&reg.action.Definition) {
			regs = append(regs, reg)
		}
		return true
	})
	sort.Slice(regs, func(i, j int) bool { return regs[i].action.ID < regs[j].action.ID })
	tools := make([]Tool, 0, len(regs))
	for _, reg := range regs {
		def := reg.action.Definition
		if err := checkToolName(def.ID, ToolName(def.ID)); err != nil {
			return nil, fmt.Errorf("actions: exporting %s: %w", def.ID, err)
		}
		tools = append(tools, toolOf(&def, reg.params.schema(), reg.output, o))
	}
	sortTools(tools)
	return tools, nil
}

// Definitions returns the definition of every registered action, hidden
// ones included, sorted by id. Each Parameters holds a fresh copy of the
// compiled schema document (map[string]any in JSON's Go types), or nil for
// an action registered without parameters; Writes is a fresh slice.
func (r *Registry) Definitions() []Definition {
	var out []Definition
	r.actions.Range(func(_, v any) bool {
		reg := v.(*registered)
		d := reg.action.Definition
		if d.Parameters != nil {
			d.Parameters = reg.params.schema()
		}
		if reg.output != nil {
			d.OutputSchema = reg.output.schema()
		}
		if d.Writes != nil {
			d.Writes = append([]string{}, d.Writes...)
		}
		d.clonePolicy()
		out = append(out, d)
		return true
	})
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// gateOf returns the registry's gate, making a default one for a registry
// built without gate options.
func (r *Registry) gateOf() *gate {
	if g := r.gate.Load(); g != nil {
		return g
	}
	r.gate.CompareAndSwap(nil, newGate(GateOptions{}, r.opts.Now))
	return r.gate.Load()
}

// clashesLocked lists the names (id and aliases) of each prepared action
// that a registered action or alias holds, or an earlier action of regs;
// at(k) is the pointer of regs[k]. Called with r.mu held.
func (r *Registry) clashesLocked(regs []*registered, at func(k int) string) []Issue {
	var issues []Issue
	g := r.gateOf()
	taken := map[string]bool{}
	used := func(name string) bool {
		_, isID := r.actions.Load(name)
		_, isAlias := g.aliases.Load(name)
		return isID || isAlias || taken[name]
	}
	for k, reg := range regs {
		d := &reg.action.Definition
		if used(d.ID) {
			issues = append(issues, Issue{Path: at(k) + "/id", Keyword: "id", Message: "the id " + d.ID + " is taken"})
		}
		for i, a := range d.DeprecatedAliases {
			if used(a) {
				issues = append(issues, Issue{Path: at(k) + "/deprecatedAliases/" + strconv.Itoa(i), Keyword: "deprecatedAliases",
					Message: "the alias " + a + " is taken by an id or another alias"})
			}
		}
		taken[d.ID] = true
		for _, a := range d.DeprecatedAliases {
			taken[a] = true
		}
	}
	return issues
}

// storeLocked stores a prepared action under its id and aliases. Called
// with r.mu held, after clashes found none.
func (r *Registry) storeLocked(reg *registered) {
	r.actions.Store(reg.action.ID, reg)
	for _, a := range reg.action.DeprecatedAliases {
		r.gateOf().aliases.Store(a, reg)
	}
}
