package actions

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
)

// GateOptions configures the gate of a registry. The zero value is usable:
// scopes "mcp:read" and "mcp:write", no rate limit, pending changes in
// memory for at most 7 days.
type GateOptions struct {
	// ReadScope and WriteScope are the token scopes a read and a write
	// (or delete) need (defaults "mcp:read" and "mcp:write"). A token
	// holding the write scope may also read.
	ReadScope, WriteScope string
	// ResourceMetadata is the URL of the protected resource metadata
	// (RFC 9728), written into scope challenges when not empty.
	ResourceMetadata string
	// Rate and Burst limit calls per caller principal and action (a token
	// bucket): Burst calls at once, then Rate calls per second (0.5: one
	// every 2 s). Rate 0 means no limit. RateOf, when set, gives the
	// limit of one action instead (rate 0 for none). Calls refused for who makes them
	// (surface, capability, scope) or naming no action count in one more
	// bucket per principal, of Rate and Burst, whatever they name: past
	// it they are refused rate_limited, so a flood of refused calls is
	// limited alike for hidden and missing actions.
	Rate   float64
	Burst  int
	RateOf func(id string) (rate float64, burst int)
	// Pending holds the pending changes (nil: in this process's memory,
	// dropped when a new change is held after they expired).
	Pending PendingStore
	// DecideFrom are the surfaces a pending change may be decided from
	// when its action's [Approval] lists none (nil: ui alone, the host's
	// own screen). Adding mcp lets an MCP client's elicitation decide,
	// which a client may answer without its person: opt in only for
	// clients the host trusts.
	DecideFrom []identity.Surface
	// RuleTimeout bounds how long an approval rule ([Approval].When)
	// may take to answer (0: 1 s); past it the call is held.
	RuleTimeout time.Duration
	// PendingFor is how long a pending change waits (default and at most
	// 7 days).
	PendingFor time.Duration
	// Serving holds what the host switches while it serves (read-only,
	// actions not served); nil: a Serving of the gate's own, always
	// serving everything.
	Serving *Serving
	// MaxPending bounds the pending changes one principal holds at once
	// (0: 16; negative: no bound). A call held past it
	// is refused rate_limited and nothing is held.
	MaxPending int
	// Limiter, when set, keeps the rate limits' buckets in place of the
	// gate's own, which live in this process: replicas sharing one
	// Limiter (sqlstore.RateLimits) share the limits (see [RateLimiter]).
	Limiter RateLimiter
}

// maxPendingFor is the longest a pending change waits.
const maxPendingFor = 7 * 24 * time.Hour

// gate is a registry's gate: its options and the switches and limiters
// that change while it serves. Its zero value is usable.
type gate struct {
	opts     GateOptions
	serve    *Serving
	limiters sync.Map     // principal "\x00" id → *bucket
	made     atomic.Int64 // limiters made, for pruning
	aliases  sync.Map     // alias → *registered
	pendOnce sync.Once
	pending  PendingStore
	now      func() time.Time // the registry's clock, Options.Now
}

func newGate(o GateOptions, now func() time.Time) *gate {
	if o.ReadScope == "" {
		o.ReadScope = "mcp:read"
	}
	if o.WriteScope == "" {
		o.WriteScope = "mcp:write"
	}
	if o.PendingFor <= 0 || o.PendingFor > maxPendingFor {
		o.PendingFor = maxPendingFor
	}
	if now == nil {
		now = time.Now
	}
	g := &gate{opts: o, serve: o.Serving, now: now}
	if g.serve == nil {
		g.serve = &Serving{}
	}
	return g
}

func (g *gate) store() PendingStore {
	g.pendOnce.Do(func() {
		g.pending = g.opts.Pending
		if g.pending == nil {
			g.pending = &memoryPendingStore{}
		}
	})
	return g.pending
}

// admit runs the checks that take nothing, in order.
func (g *gate) admit(d *Definition, c *identity.Caller) error {
	if err := g.who(d, c); err != nil {
		return err
	}
	return g.serving(d)
}

// who checks whether c may call the action at all: its surface,
// capability and token scope.
func (g *gate) who(d *Definition, c *identity.Caller) error {
	if c != nil {
		if !d.offers(c.Surface) {
			return concealed(NewRefusal(codes.ForbiddenSurface, "the action is not offered on this surface"))
		}
		if !c.Can(d.Capability) {
			return concealed(NewRefusal(codes.ForbiddenCapability, "the caller lacks the action's capability"))
		}
		if c.Token {
			if need := g.scopeNeeded(d); !slices.Contains(c.Scopes, need) && !(need == g.opts.ReadScope && slices.Contains(c.Scopes, g.opts.WriteScope)) {
				return g.scopeRefusal(c, need)
			}
		}
	}
	return nil
}

// serving checks the host's switches: not serving, read-only.
func (g *gate) serving(d *Definition) error {
	if g.serve.stopAll.Load() {
		return NewRefusal(codes.NotServing, "the host is not serving actions now")
	}
	if _, stopped := g.serve.stopped.Load(d.ID); stopped {
		return NewRefusal(codes.NotServing, "the host is not serving this action now")
	}
	if g.serve.readOnly.Load() && d.EffectOf() != EffectRead {
		return NewRefusal(codes.ReadOnly, "the registry is read-only: only reads are served")
	}
	return nil
}

// check runs every check of the gate before the parameters: admit, then
// the rate limit. Only a call with a caller counts towards a limit.
func (g *gate) check(ctx context.Context, d *Definition, c *identity.Caller) error {
	if err := g.who(d, c); err != nil {
		if c != nil {
			if lerr := g.limitRefused(ctx, c.Principal); lerr != nil {
				return lerr
			}
		}
		return err
	}
	if err := g.serving(d); err != nil {
		return err
	}
	if c == nil {
		return nil
	}
	return g.limit(ctx, d.ID, c.Principal)
}

func (g *gate) scopeNeeded(d *Definition) string {
	if d.EffectOf() == EffectRead {
		return g.opts.ReadScope
	}
	return g.opts.WriteScope
}

// scopeRefusal is insufficient_scope with its RFC 6750 §3 challenge. The
// scope attribute names the scope needed together with the token's own
// (sorted, each once), so that a client asking for exactly those loses
// nothing it held (MCP 2025-11-25 authorization, runtime insufficient
// scope errors).
func (g *gate) scopeRefusal(c *identity.Caller, need string) *Refusal {
	scopes := append(slices.Clone(c.Scopes), need)
	scopes = slices.DeleteFunc(scopes, func(s string) bool { return !scopeToken(s) })
	sort.Strings(scopes)
	scopes = slices.Compact(scopes)
	r := NewRefusal(codes.InsufficientScope, "the token lacks the scope this action needs")
	r.Scopes = []string{need}
	var b strings.Builder
	b.WriteString(`Bearer error="insufficient_scope", scope="`)
	b.WriteString(strings.Join(scopes, " "))
	b.WriteString(`"`)
	if g.opts.ResourceMetadata != "" && quotable(g.opts.ResourceMetadata) {
		b.WriteString(`, resource_metadata="`)
		b.WriteString(g.opts.ResourceMetadata)
		b.WriteString(`"`)
	}
	r.Challenge = b.String()
	return r
}

// scopeToken reports whether s is a scope token RFC 6749 §3.3 allows
// (%x21 / %x23-5B / %x5D-7E), so that it can stand in a quoted challenge.
func scopeToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

func quotable(s string) bool { return scopeToken(s) }

// limit takes one call from the (principal, action) bucket, or refuses
// rate_limited with the moment a call may pass.
func (g *gate) limit(ctx context.Context, id, principal string) error {
	lim, burst := g.opts.Rate, g.opts.Burst
	if g.opts.RateOf != nil {
		lim, burst = g.opts.RateOf(id)
	}
	return g.takeCall(ctx, id, principal, lim, burst, "the caller calls this action too often")
}

// limitRefused takes one call from the principal's bucket of refused
// calls (the id "", which no action has; Rate and Burst): every call
// refused for who makes it (surface, capability, scope) or naming no
// action counts there, whatever it names, so a flood of them is limited
// alike for a hidden action and a missing one, and tells them apart no
// more than the refusal does.
func (g *gate) limitRefused(ctx context.Context, principal string) error {
	return g.takeCall(ctx, "", principal, g.opts.Rate, g.opts.Burst, "the caller's calls are refused too often")
}

// takeCall takes one call from the (principal, id) bucket of rate lim
// and burst, or refuses rate_limited with message and the moment a call
// may pass; lim <= 0 is no limit.
func (g *gate) takeCall(ctx context.Context, id, principal string, lim float64, burst int, message string) error {
	if lim <= 0 {
		return nil
	}
	if burst < 1 {
		burst = 1
	}
	if g.opts.Limiter != nil {
		return g.shared(ctx, id, principal, lim, burst, message)
	}
	key := principal + "\x00" + id
	for {
		v, ok := g.limiters.Load(key)
		if !ok {
			var loaded bool
			if v, loaded = g.limiters.LoadOrStore(key, &bucket{l: rate.NewLimiter(rate.Limit(lim), burst)}); !loaded {
				g.grew()
			}
		}
		at, ok, gone := v.(*bucket).take(g.now)
		if gone {
			continue // pruned meanwhile: a fresh bucket is the same
		}
		if !ok {
			r := NewRefusal(codes.RateLimited, message)
			r.RetryAt = at
			return r
		}
		return nil
	}
}

// pruneEvery is how many new limiters the gate makes between two sweeps
// of the ones left full.
const pruneEvery = 1024

// grew counts a new limiter, and every pruneEvery of them drops the
// limiters whose bucket is full again: a full bucket is what a fresh one
// would be, so dropping it changes no decision, and the gate holds
// limiters for the principals active within about Burst/Rate, not for
// every principal ever seen.
func (g *gate) grew() {
	if g.made.Add(1)%pruneEvery != 0 {
		return
	}
	now := g.now()
	g.limiters.Range(func(k, v any) bool {
		if v.(*bucket).retire(now) {
			g.limiters.Delete(k)
		}
		return true
	})
}

// bucket is one (principal, action) limiter. x/time/rate trusts the time
// it is given: two calls reading the clock in one order and reserving in
// the other move its last update back, and the interval between is
// counted twice. Reading the clock under the bucket's own lock keeps the
// times in order, so the limiter's bound (Burst + Rate·t calls over t
// seconds) holds; only calls of one principal to one action wait on it.
type bucket struct {
	mu   sync.Mutex
	l    *rate.Limiter
	gone bool // pruned: the gate holds it no more
}

// take reserves one call now, or returns when one may pass (the zero
// time when none ever may). gone is true for a bucket pruned since it was
// looked up: the caller looks again.
func (b *bucket) take(now func() time.Time) (at time.Time, ok, gone bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.gone {
		return time.Time{}, false, true
	}
	t := now()
	res := b.l.ReserveN(t, 1)
	if !res.OK() {
		return time.Time{}, false, false
	}
	if d := res.DelayFrom(t); d > 0 {
		res.CancelAt(t)
		return t.Add(d), false, false
	}
	return t, true, false
}

// retire marks the bucket gone when it is full at now, and reports
// whether it did.
func (b *bucket) retire(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.l.TokensAt(now) < float64(b.l.Burst()) {
		return false
	}
	b.gone = true
	return true
}

// concealed answers a forbidden call as an unknown action: a caller who
// may not see an action learns nothing of it, not even that it exists.
// The forbidden refusal is the cause, for the host ([Refusal.Cause], the
// run entry's code and the audit record).
func concealed(forbidden *Refusal) *Refusal {
	r := unknownAction()
	r.cause = forbidden
	return r
}

// hostCode is the code the host records for err: a concealed refusal's
// real code, otherwise the error's.
func hostCode(err error) codes.Code {
	if r := asRefusal(err); r != nil && r.Code == codes.UnknownAction {
		if f, ok := r.cause.(*Refusal); ok && f != nil {
			return f.Code
		}
	}
	return CodeOf(err)
}

// decide runs the gate's checks before the parameters of a top-level
// call by c. A replay checks who may call (surface, capability, scope)
// against today's policy, but counts no rate and reads no serving
// switch: those were the state of the moment.
func (g *gate) decide(ctx context.Context, d *Definition, c *identity.Caller, replay bool) error {
	if replay {
		return g.who(d, c)
	}
	return g.check(ctx, d, c)
}

// admitNested runs the checks of a call a body makes: who may call, and
// the serving switches; a nested call counts no rate of its own (its
// top-level call did).
func (g *gate) admitNested(d *Definition, c *identity.Caller) error { return g.admit(d, c) }

// anonymousHold refuses a call that needs confirmation from a caller
// with no principal: nobody could confirm it, so nothing is held.
func anonymousHold() *Refusal {
	r := NewRefusal(codes.ConfirmationRequired, "the call needs a person's confirmation, and a caller without identity cannot give it: nothing is held")
	r.NextAction = "Tell the user to sign in; an anonymous call of this action cannot be confirmed."
	return r
}

// declared gives a body's refusal the retry its action declared for its
// code, or never for a code not declared, when the action declares its
// refusals at all (one declaring none keeps the body's own verdict, as
// before declarations existed). Registry codes keep their own. The body's
// *Refusal is copied, never changed; a wrapped one is left as it is.
func (d *Definition) declared(err error) error {
	r, ok := err.(*Refusal)
	if !ok || r == nil || len(d.Refusals) == 0 || registryCode(r.Code) {
		return err
	}
	retry, ok := d.declaredRetry(r.Code)
	if !ok {
		retry = codes.RetryNever
	}
	if r.Retry == retry {
		return err
	}
	cp := *r
	cp.Retry = retry
	return &cp
}

// hold stores a checked call (or a batch) as a pending change proposed by
// c, and returns its receipt. A principal holding MaxPending changes
// already is refused rate_limited: nothing is held.
func (g *gate) hold(ctx context.Context, pc PendingChange, c *identity.Caller) (Receipt, error) {
	if max := g.opts.MaxPending; max >= 0 {
		if max == 0 {
			max = defaultMaxPending
		}
		held, err := g.store().List(ctx, c.Principal)
		if err != nil {
			return Receipt{}, internalRefusal("the pending changes could not be read", err)
		}
		now := g.now()
		n := 0
		for _, h := range held {
			if now.Before(h.Expires) {
				n++
			}
		}
		if n >= max {
			r := NewRefusal(codes.RateLimited, "the caller holds as many pending changes as it may: confirm or reject one first")
			r.NextAction = "Ask the user to confirm or reject the changes waiting, then call again."
			return Receipt{}, r
		}
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return Receipt{}, internalRefusal("no random id for the pending change", err)
	}
	now := g.now()
	pc.ID = hex.EncodeToString(b[:])
	pc.Proposer = cloneCaller(c)
	pc.Proposer.PendingChange = ""
	pc.Created, pc.Expires = now, now.Add(g.opts.PendingFor)
	if err := g.store().Hold(ctx, pc); err != nil {
		return Receipt{}, internalRefusal("the pending change could not be stored", err)
	}
	return pc.receipt(), nil
}

// pendingOf returns the change id for c to see: its proposer, or a
// person its approval lets decide it. Errors: unknown_change for anyone
// else, and when the change is unknown or expired; internal when the
// store fails.
func (g *gate) pendingOf(ctx context.Context, id string, c *identity.Caller, def func(string) *Definition) (PendingChange, error) {
	pc, err := g.store().Get(ctx, id)
	switch {
	case errors.Is(err, ErrNoPendingChange):
		return PendingChange{}, unknownChange()
	case err != nil:
		return PendingChange{}, internalRefusal("the pending change could not be read", err)
	}
	if err := g.mayDecide(pc, c, def); errors.Is(err, codes.UnknownChange) {
		return PendingChange{}, err
	}
	return pc, nil
}

// take claims the change for a decision by c: once, and only when c may
// decide it (see mayDecide).
func (g *gate) take(ctx context.Context, id string, c *identity.Caller, def func(string) *Definition) (PendingChange, error) {
	pc, err := g.pendingOf(ctx, id, c, def)
	if err != nil {
		return PendingChange{}, err
	}
	if err := g.mayDecide(pc, c, def); err != nil {
		return PendingChange{}, err
	}
	pc, err = g.store().Take(ctx, id)
	switch {
	case errors.Is(err, ErrNoPendingChange):
		return PendingChange{}, unknownChange()
	case err != nil:
		return PendingChange{}, internalRefusal("the pending change could not be taken", err)
	}
	return pc, nil
}

// shared takes one call of id by principal from the gate's Limiter.
func (g *gate) shared(ctx context.Context, id, principal string, lim float64, burst int, message string) error {
	at, ok, err := g.opts.Limiter.Take(ctx, principal, id, lim, burst, g.now())
	switch {
	case err != nil:
		return internalRefusal("the rate limit could not be read", err)
	case !ok:
		r := NewRefusal(codes.RateLimited, message)
		r.RetryAt = at
		return r
	}
	return nil
}
