// The call path: Run, the unit of work, the top call and each frame's run.

package actions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/actionreg/actions/bound"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/internal/ijson"
	"github.com/actionreg/actions/store"
)

// Run runs c, an action's call or a batch, in one unit of the registry's
// [store.Store], and returns its result and records (which Options.OnRecord
// also receives, once the unit is settled). For one action, in order: the
// gate checks c.Caller (docs/gate.md), then the parameters are checked
// (see [ParameterSchema.Check]), refs resolved, the body run with the
// call's context and [Trace], and the result checked against
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
//     The unit commits: the change is kept. From a caller without a
//     principal nothing is held (nobody could confirm it): Pending is
//     nil and the retry never;
//   - invalid_parameters: see [ParameterSchema.Check]; the body does not
//     run, and the entry records the parameters as given;
//   - the body's own error, as it is (a *Refusal the body raised keeps
//     its code; a plain error is recorded with code internal);
//   - internal, the action's fault rather than the caller's, the cause
//     in [Refusal.Cause] (never in the message): the body returned a
//     refusal a nested call gave it; the body, the resolver or
//     OnRecord panicked; the result has no canonical JSON form; the
//     store failed;
//   - output_invalid: the result breaks the output schema; the body ran,
//     the result is withheld, and the refusal's issues point into it;
//   - cancelled: ctx was done before the call ended (errors.Is also
//     finds context.Canceled or context.DeadlineExceeded);
//   - invalid_parameters, too, for a call that sets both Action and
//     Batch, before anything else (nothing recorded);
//   - a batch's own refusals (invalid_script_step, unknown_reference)
//     and a *[StepError] wrapping a step's error: see [Batch].
//
// A body sees ctx and must honour its cancellation itself. A nil ctx is
// refused internal, retry never, nothing run or recorded.
func (r *Registry) Run(ctx context.Context, c Call) (Result, error) {
	if ctx == nil {
		return Result{}, nilContext()
	}
	return r.run(ctx, c, nil)
}

// run is Run with the gate's decision on c already made when pre is not
// nil (a task's call, decided when it was started): the decision is
// then used as it is, never made twice.
func (r *Registry) run(ctx context.Context, c Call, pre *gateDecision) (Result, error) {
	if c.Batch != nil && c.Action != "" {
		return Result{}, NewRefusal(codes.InvalidParameters, "a call names an action or a batch, not both")
	}
	var (
		key   *unitKey
		gated = pre
	)
	if c.IdempotencyKey != "" {
		var err error
		if key, gated, err = r.keyOf(ctx, c, pre); err != nil {
			return Result{}, err
		}
	}
	p := r.newProgress(c.Progress)
	defer p.close()
	st := &unitState{keepStarted: true}
	if c.Batch != nil {
		return r.observeBatch(ctx, c, key, p, st)
	}
	return r.unit(ctx, key, st, func(ctx context.Context) (v any, recs []store.Record, commit bool, err error) {
		inv := invocation{name: c.Action, params: c.Params, caller: c.Caller, toolCallID: c.ToolCallID, key: c.IdempotencyKey, progress: p, state: st, gated: gated}
		defer func() {
			if p := recover(); p != nil {
				// The call ran (or may have): it is recorded, refused.
				err = panicRefusal("registry", p)
				v, recs, commit = nil, []store.Record{r.refusedRecord(c.Action, c.Params, r.audit(inv), err)}, false
			}
		}()
		v, rec, commit, err := r.answer(inv)(r.top(ctx, inv))
		return v, []store.Record{rec}, commit, err
	})
}

// unitWork is one unit's work: its value, records, whether to keep it, and
// its error.
type unitWork func(ctx context.Context) (value any, recs []store.Record, commit bool, err error)

// guarded runs fn. A panic in it (a host hook the call path does not
// guard, such as an Observer's, or a fault of the registry's own) ends
// the attempt refused internal, not kept, instead of unwinding through
// the store: the store then rolls the unit back and writes its records,
// and the caller is answered. The work of a call and of a batch recover
// their own panics first, so that the call at fault is recorded too.
func (fn unitWork) guarded(ctx context.Context) (v any, recs []store.Record, commit bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			v, commit, err = nil, false, panicRefusal("registry", p)
		}
	}()
	return fn(ctx)
}

// unitState is what the calls of one unit tell it, whichever goroutine
// they run on.
type unitState struct {
	// keepStarted: a keyed unit whose body started keeps its key whatever
	// its outcome (settleKey); false for a decision, whose change waits
	// for another try.
	keepStarted bool
	// started is set when a body of the unit starts (the call's own, a
	// step's, a nested call's).
	started atomic.Bool
	// overran is set when the unit stopped waiting for a body at its
	// deadline: the body runs on, and may still write, so the unit must
	// not commit.
	overran atomic.Bool
	// unsound is set when a refused nested call's writes could not be
	// undone apart (no savepoint could be made, or undoing it may have
	// undone a sibling's): the unit must not commit.
	unsound atomic.Bool
}

// unit runs fn in one unit of the store, at most once under k when k is
// not nil, and delivers its records; st is told what the unit's calls
// did.
func (r *Registry) unit(ctx context.Context, k *unitKey, st *unitState, fn unitWork) (Result, error) {
	var (
		value   any // the last attempt's
		recs    []store.Record
		err     error
		retried *Result // a recorded unit's answer to a retry
	)
	if r.opts.Store != nil {
		at := &unitAttempt{r: r, k: k, st: st, fn: fn} // the store keeps its attempt
		attempt := at.run
		uctx, ob := r.observe(ctx, Operation{Kind: OpUnit, Step: -1})
		switch {
		case k == nil:
			recs, err = r.opts.Store.Atomic(uctx, attempt)
		default:
			at.ks = r.opts.Store.(store.KeyStore) // keyOf made sure
			if !k.replace {
				var found *store.KeyRecord
				if at.token, found, err = claimKey(uctx, at.ks, k); found != nil {
					var res Result
					if recs, res, err = answerRetry(uctx, at.ks, k, found); err == nil {
						retried = &res
					}
				}
			}
			if err == nil && retried == nil {
				recs, err = r.atomicClaimed(uctx, at.ks, k, at.token, st, attempt, &at.unitErr)
			}
		}
		ob.end(Result{Records: recs}, err)
		if err != nil && err != at.unitErr && asRefusal(err) == nil && !isCancel(err) && CodeOf(err) == codes.Internal {
			// The store's own failure (a commit, a lost connection):
			// an internal refusal for the caller, the cause for the host.
			// The unit's own error (a body's plain error) is not one: it
			// comes back as it is, as without a store.
			err = storeFailure(err)
		}
		value = at.value
	} else {
		at := unitAttempt{r: r, k: k, st: st, fn: fn} // run here: it stays on the stack
		u := at.run(ctx)
		value, recs, err = at.value, u.Records, u.Err
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
	if retried != nil && err == nil {
		return *retried, nil
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

// unitAttempt runs the attempts of one unit (a store may run it more
// than once) and keeps what the last one told: its value and its own
// error, with the store's keys and the key's claim for a keyed unit.
type unitAttempt struct {
	r  *Registry
	k  *unitKey
	st *unitState
	fn unitWork

	value   any
	unitErr error          // the last attempt's own error, as the calls gave it
	ks      store.KeyStore // the store's keys, for a keyed unit
	token   string         // the key's claim, when k claimed one
}

// run is one attempt of the unit, in ctx (the store's unit, when there
// is a store).
func (at *unitAttempt) run(ctx context.Context) store.Unit {
	st := at.st
	st.started.Store(false) // a store may run the unit again
	st.overran.Store(false)
	st.unsound.Store(false)
	v, recs, commit, err := at.fn.guarded(ctx)
	switch {
	case commit && st.overran.Load():
		// A body left running at its deadline may write yet: the
		// unit is undone rather than kept half done.
		commit, err = false, overranRefusal(err)
	case commit && st.unsound.Load():
		commit, err = false, unsoundRefusal(err)
	}
	at.value, at.unitErr = v, err
	stamp(ctx, observed{}, recs)
	u := store.Unit{Records: recs, Commit: commit, Err: err}
	endInUnit(ctx, at.r.gateOf().now, v, &u)
	if at.ks != nil {
		settleKey(ctx, at.ks, at.k, at.token, st.keepStarted && st.started.Load(), v, &u)
	}
	return u
}

// atomicClaimed runs attempt in one unit of ks, under the claim token
// (none for a decision, which claims nothing). When the store failed
// and no body started, the claim may be left unsettled: it is given up,
// so that a retry runs. Once a body started, the claim stays whatever
// becomes of the unit: a retry is answered from the row, or waits, and
// never runs the body again (at most once, even if the store failed).
func (r *Registry) atomicClaimed(ctx context.Context, ks store.KeyStore, k *unitKey, token string, st *unitState, attempt func(ctx context.Context) store.Unit, unitErr *error) (recs []store.Record, err error) {
	ok := false
	defer func() {
		if token != "" && (!ok || err != *unitErr) && !st.started.Load() {
			giveUpClaim(ctx, ks, k, token)
		}
	}()
	recs, err = ks.Atomic(ctx, attempt)
	ok = true
	return recs, err
}

// invocation is one call as the call path carries it.
type invocation struct {
	name       string // the id or alias called
	params     any
	caller     *identity.Caller
	toolCallID string
	key        string // the call's idempotency key
	// confirming is the pending change a confirmation runs; expect is
	// its checked parameters, as the person was shown them.
	confirming string
	expect     string
	// edit, when confirming, is the change the person edits: the call
	// is their new proposal of its action (see Decision.Params).
	edit *PendingChange
	// replay: the gate decides who may call (surface, capability,
	// scope, confirmation) but counts no rate and reads no serving
	// switch, and a held call stores no change.
	replay bool
	// noResolve: the parameters were recorded resolved (replay).
	noResolve bool
	// preview is set while the top-level call of an action with
	// Definition.Preview runs before it may be held; its nested calls
	// share it and mark it when one needs confirmation.
	preview *preview
	// shown, when confirming a change held after a preview, is the
	// entry the person was shown: the run must give it again.
	shown *store.RunEntry
	// callerCalls: the top-level action has Definition.Preview, so the
	// calls its body makes are the caller's own (a program's): each
	// counts the caller's rate as a call of its own does.
	callerCalls bool
	// step: the call is a step of a batch.
	step bool
	// asHost: a nested call the body made as the host (Trace.CallAsHost).
	asHost bool
	// stepIndex is the index of the step, when step.
	stepIndex int
	// progress delivers the body's progress reports (nil: dropped).
	progress *progress
	// recorded are the recorded steps of the call a replay runs again,
	// whose values the body's trace gives back (Trace.Value).
	recorded []store.RunStep
	// state is the unit's (nil outside one: a replay).
	state *unitState
	// gated, when not nil, is the gate's decision on the top-level call,
	// made before its unit (a keyed call: the gate passes before the
	// store may answer from the record); top does not decide again.
	gated *gateDecision
}

// gateDecision is what the gate decided for a call: nil err to pass.
type gateDecision struct{ err error }

// audit starts the audit record of inv.
func (r *Registry) audit(inv invocation) store.Audit {
	a := store.Audit{At: r.gateOf().now(), Caller: inv.caller, PendingChange: inv.confirming, Batch: inv.step, ToolCallID: inv.toolCallID, IdempotencyKey: inv.key}
	if inv.confirming != "" {
		a.Stage = store.StageConfirmed
	}
	if inv.edit != nil {
		a.Stage, a.Original = store.StageEdited, inv.edit.Parameters
	}
	return a
}

// top runs one top-level call through the gate and records it.
func (r *Registry) top(ctx context.Context, inv invocation) (value any, rec store.Record, commit bool, err error) {
	if r.opts.Observer != nil { // else no operation is made for nobody
		var ob observed
		ctx, ob = r.observe(ctx, callOp(inv))
		defer func() { rec = ob.endCall(rec, value, err) }()
	}
	audit := r.audit(inv)
	g := r.gateOf()
	reg, ok := r.lookup(inv.name)
	if ok {
		if reg.action.ID != inv.name {
			audit.Alias = inv.name
		}
		var err error
		if inv.gated != nil {
			err = inv.gated.err
		} else {
			err = g.decide(ctx, &reg.action.Definition, inv.caller, inv.replay)
		}
		if err == nil {
			err = needsKey(&reg.action.Definition, inv)
		}
		if err == nil && !inv.noResolve && (inv.confirming == "" || inv.edit != nil) {
			// The body sees the position the caller's cursor stands for.
			inv.params, err = r.openParams(reg, inv.caller, inv.params)
		}
		if err != nil {
			return nil, r.refusedRecord(reg.action.ID, inv.params, audit, err), false, err
		}
	}
	if !ok && inv.caller != nil && !inv.replay {
		// A call naming no action counts as a refused one (see
		// gate.limitRefused), as a call of a hidden action does.
		if err := g.limitRefused(ctx, inv.caller.Principal); err != nil {
			return nil, r.refusedRecord(inv.name, inv.params, audit, err), false, err
		}
	}
	holds := ok && reg.action.NeedsConfirmation && inv.caller != nil && (inv.confirming == "" || inv.edit != nil)
	if holds && inv.caller.Principal == "" && !hasRule(reg.action.Approval) {
		err := anonymousHold()
		return nil, r.refusedRecord(reg.action.ID, inv.params, audit, err), false, err
	}
	resolve := r.opts.Resolve
	if inv.noResolve {
		resolve = nil // replayed parameters that were resolved already
	}
	f := r.frame(inv, 0)
	var pv *preview
	if ok && reg.action.Preview {
		pv, err = r.startPreview(ctx, inv)
	}
	if err != nil {
		return nil, r.refusedRecord(reg.action.ID, inv.params, audit, err), false, err
	}
	runCtx := ctx
	f.inv.callerCalls = ok && reg.action.Preview
	if pv != nil {
		runCtx, f.inv.preview = pv.ctx, pv
	}
	var h *topHold // only a call that may be held makes one
	if holds || pv != nil {
		h = &topHold{r: r, g: g, reg: reg, inv: inv, alias: audit.Alias, holds: holds, pv: pv}
		f.hold = h.hold
	}
	result, entry, err := f.run(runCtx, reg, inv.name, inv.params, resolve)
	if pv != nil {
		result, entry, err = pv.settle(ctx, result, entry, err, h.store)
	}
	held := h != nil && h.held
	if h != nil && h.stored {
		audit.PendingChange, audit.Replaces = h.pending, h.replaces
	}
	if err == nil && inv.shown != nil {
		if d := r.diverge("", *inv.shown, entry, 0); d != nil {
			err = previewStale(d)
			entry = refusedEntry(entry, err, entry.Parameters)
			result = nil
		}
	}
	if err != nil {
		audit.Code = hostCode(err)
		entry.Error = audit.Code
		if held {
			audit.Stage = store.StageHeld
			return nil, store.Record{Entry: entry, Audit: audit}, true, err
		}
		return nil, store.Record{Entry: entry, Audit: audit}, false, err
	}
	return result, store.Record{Entry: entry, Audit: audit}, true, nil
}

// refusedRecord is the record of a call the gate refused before its
// parameters were looked at.
func (r *Registry) refusedRecord(id string, params any, audit store.Audit, err error) store.Record {
	entry := r.refusedGiven(store.RunEntry{Action: id, Steps: []store.RunStep{}}, err, params)
	entry.Error = hostCode(err)
	audit.Code = entry.Error
	return store.Record{Entry: entry, Audit: audit}
}

// topHold holds a top-level call of an action that needs confirmation,
// or runs in a preview, as a pending change: the call's frame asks it
// through hold, and a preview through store. What store kept is read
// back into the call's audit once the call has run.
type topHold struct {
	r     *Registry
	g     *gate
	reg   *registered
	inv   invocation
	alias string // the alias the call named, if any
	holds bool   // the call needs confirmation (not only a preview)
	pv    *preview
	// held: the call was held (as a pending change, or refused so in a
	// replay); stored: a pending change was kept, its id pending,
	// replacing the change replaces (an edit's).
	held, stored      bool
	pending, replaces string
}

// hold decides whether the checked call (text: its canonical JSON) is
// held, holds it when so and returns its refusal; nil when the call
// runs now (or, in a preview, is decided once its body has run).
func (h *topHold) hold(ctx context.Context, checked map[string]any, text string) error {
	reg, inv, g := h.reg, h.inv, h.g
	call := CheckedCall{Action: reg.action.ID, Params: checked, Caller: inv.caller}
	hold, reason := false, ""
	if h.holds {
		hold, reason = g.shouldHold(ctx, reg.action.Approval, call)
	}
	switch {
	case h.pv != nil:
		// Decided now, held (or not) once the body has run.
		h.pv.call, h.pv.text, h.pv.hold, h.pv.reason = call, text, hold, reason
		return nil
	case !hold:
		return nil
	case inv.edit != nil && g.mayDecideOne(&reg.action.Definition, inv.caller.Principal, inv.caller) == nil:
		// The editor may decide a change of their own: the
		// decision confirms the edited call.
		return nil
	}
	return h.store(ctx, call, text, reason, nil)
}

// store holds the checked call (text: its canonical JSON) as a pending
// change, shown the preview's entry when there was one, and returns its
// refusal.
func (h *topHold) store(ctx context.Context, call CheckedCall, text, reason string, shown *store.RunEntry) error {
	reg, inv := h.reg, h.inv
	switch {
	case inv.caller.Principal == "":
		return anonymousHold()
	case inv.replay:
		h.held = true
		return Receipt{Action: reg.action.ID}.confirmationRequired()
	}
	a := reg.action.Approval
	pc := PendingChange{Action: reg.action.ID, Alias: h.alias, Parameters: text, Given: h.r.givenParameters(inv.params),
		Reason: reason, Description: describeHeld(ctx, a, call), IdempotencyKey: inv.key, Preview: shown}
	rec, err := h.g.hold(ctx, pc, inv.caller)
	if err != nil {
		return err
	}
	h.held, h.stored, h.pending = true, true, rec.ID
	if inv.edit != nil {
		h.replaces = inv.edit.ID
	}
	return rec.confirmationRequired()
}

// frame returns the frame of a call of inv at depth.
func (r *Registry) frame(inv invocation, depth int) *frame {
	return &frame{r: r, inv: inv, depth: depth}
}

// frame is the state of one running call: its trace, and what its nested
// calls need.
type frame struct {
	Trace
	r     *Registry
	inv   invocation
	depth int
	// hold, set for a top-level call that needs confirmation, holds the
	// checked call (text: its canonical JSON) as a pending change and
	// returns its refusal, or nil when the approval rule lets it run.
	hold func(ctx context.Context, checked map[string]any, text string) error
}

// run runs one call at the frame's depth of reg, the action id names
// (nil when it names none), resolving its refs with resolve; it records
// nothing.
func (f *frame) run(ctx context.Context, reg *registered, id string, params any, resolve RefResolver) (result any, entry store.RunEntry, err error) {
	r := f.r
	entry = store.RunEntry{Action: id, Steps: []store.RunStep{}, AsHost: f.inv.asHost}
	if reg == nil {
		err = unknownAction()
		return nil, r.refusedGiven(entry, err, params), err
	}
	entry.Action = reg.action.ID // an alias is recorded under the id
	if maxDepth := r.limitsInForce().MaxCallDepth; f.depth > maxDepth {
		err = refusef(codes.ConstraintViolation, "nested calls are too deep",
			Issue{Path: "", Keyword: "call", Message: fmt.Sprintf("more than %d nested calls", maxDepth)})
		return nil, r.refusedGiven(entry, err, params), err
	}
	checked, err := reg.params.Check(ctx, params, resolve)
	if err != nil {
		return nil, r.refusedGiven(entry, err, params), err
	}
	if entry.Parameters, err = canonicalString(checked); err != nil {
		return nil, refusedEntry(entry, err, "null"), err
	}
	if f.depth == 0 && f.inv.expect != "" && entry.Parameters != f.inv.expect {
		err = staleChange()
		return nil, refusedEntry(entry, err, entry.Parameters), err
	}
	if f.hold != nil {
		if err = f.hold(ctx, checked, entry.Parameters); err != nil {
			return nil, refusedEntry(entry, err, entry.Parameters), err
		}
	}
	ctx, lim := r.limitTime(ctx, &reg.action)
	defer lim.stop()
	if err := ctx.Err(); err != nil {
		err = endedRefusal(ctx, err)
		return nil, refusedEntry(entry, err, entry.Parameters), err
	}
	if f.inv.state != nil {
		f.inv.state.started.Store(true)
	}
	t := &f.Trace
	t.action, t.entry, t.runner, t.caller = id, entry, f, f.inv.caller
	t.progress, t.recorded, t.now = f.inv.progress, f.inv.recorded, r.gateOf().now
	overran := false
	if lim.deadline.IsZero() {
		// No limit: the body runs here, and no closure is made for it.
		result, err = runBody(ctx, reg, id, checked, t)
	} else {
		result, err, overran = lim.run(ctx, func() (any, error) { return runBody(ctx, reg, id, checked, t) })
	}
	if overran {
		// The body runs on past its deadline: the call is answered now,
		// with the steps recorded so far, and the unit may not commit.
		if f.inv.state != nil {
			f.inv.state.overran.Store(true)
		}
		entry = t.abandon()
		terr := timeoutRefusal(ctx.Err())
		return nil, refusedEntry(entry, terr, entry.Parameters), terr
	}
	t.close()
	entry = t.entry
	if terr := timedOut(ctx, err); terr != nil {
		return nil, refusedEntry(entry, terr, entry.Parameters), terr
	}
	if lim.passed() {
		// Done, but after the deadline by the clock, before the
		// context's timer said so: not accepted as done.
		terr := timeoutRefusal(errors.Join(context.DeadlineExceeded, err))
		return nil, refusedEntry(entry, terr, entry.Parameters), terr
	}
	if err != nil {
		err = bodyRefusal(reg, t, err)
		return nil, refusedEntry(entry, err, entry.Parameters), err
	}
	written := result
	if reg.output != nil {
		if written, err = reg.output.checkOutput(result, reg.encode); err != nil {
			return nil, refusedEntry(entry, err, entry.Parameters), err
		}
	}
	if result != nil {
		entry.Result, err = canonicalString(written)
		if reg.output != nil && reg.release != nil {
			reg.release(written) // the encoded value is written: its maps are free
		}
		if err != nil {
			return nil, refusedEntry(entry, err, entry.Parameters), err
		}
	}
	entry.Outcome = store.OutcomeDone
	return result, entry, nil
}

// runBody runs the body of reg, called as id, on the checked parameters
// with its trace t; a panic in it is an internal refusal.
func runBody(ctx context.Context, reg *registered, id string, checked map[string]any, t *Trace) (result any, err error) {
	if perr := safeCallOf("body of", id, func() { result, err = reg.action.Run(ctx, checked, t) }); perr != nil {
		err = perr
	}
	return result, err
}

// bodyRefusal is the refusal a body's error becomes: an internal one
// when a call the body made was refused (not the caller's fault; a
// cancellation stays one, as it ends the whole call), a cancellation,
// or the body's own error as the action declares it.
func bodyRefusal(reg *registered, t *Trace, err error) error {
	if nr := asRefusal(err); nr != nil && nr.Code != codes.Cancelled && t.fromNestedCall(nr) {
		ir := NewRefusal(codes.Internal, "the action failed: a call it made was refused")
		ir.cause = err
		err = ir
	} else if isCancel(err) && asRefusal(err) == nil {
		err = cancelRefusal(err)
	}
	return reg.action.declared(err)
}

// nested runs a call a body made: through the gate with its caller's
// identity (or as the host when asHost), one level deeper, never held.
func (f *frame) nested(ctx context.Context, id string, params any, asHost bool, recorded []store.RunStep) (any, store.RunEntry, error) {
	inv := f.inv
	inv.asHost, inv.progress, inv.recorded = asHost, nil, recorded
	if asHost {
		inv.caller = nil
	}
	ctx, ob := f.r.observe(ctx, Operation{Kind: OpNested, Call: Call{Action: id, Params: params, Caller: inv.caller}, Step: -1, AsHost: asHost})
	sctx, end, serr := f.r.savepoint(ctx)
	res, entry, err := f.nestedRun(sctx, inv, id, params)
	if end != nil {
		serr = end(err != nil)
	}
	if serr != nil && err != nil && inv.state != nil {
		// The refused call's writes could not be undone apart from its
		// caller's: the unit may not keep them.
		inv.state.unsound.Store(true)
	}
	ob.end(Result{Value: res, Records: []store.Record{{Entry: entry}}}, err)
	return res, entry, err
}

// savepoint marks the unit ctx belongs to before a nested call, when the
// registry's Store can undo part of a unit ([store.Savepointer]): it returns
// the nested call's context and the function that ends the mark (undoing
// the call's writes, or keeping them). end is nil when there is nothing
// to mark (no such store, or ctx in no unit); err is not nil when a mark
// was wanted and could not be made.
func (r *Registry) savepoint(ctx context.Context) (context.Context, func(undo bool) error, error) {
	sp, ok := r.opts.Store.(store.Savepointer)
	if !ok {
		return ctx, nil, nil
	}
	return sp.Savepoint(ctx)
}

// nestedRun is nested's call, once observed.
func (f *frame) nestedRun(ctx context.Context, inv invocation, id string, params any) (any, store.RunEntry, error) {
	asHost := inv.asHost
	child := f.r.frame(inv, f.depth+1)
	child.inv.callerCalls = false // the calls its body makes are the host's
	reg, ok := f.r.lookup(id)
	if ok {
		d := &reg.action.Definition
		g := f.r.gateOf()
		err := g.admitNested(d, inv.caller)
		if inv.callerCalls {
			err = g.decide(ctx, d, inv.caller, inv.replay)
		}
		if err == nil && d.NeedsConfirmation && inv.caller != nil && inv.confirming == "" {
			if inv.preview != nil {
				// Run in the preview, which is undone and held whole.
				inv.preview.wanted.Store(true)
			} else {
				err = NewRefusal(codes.ConfirmationRequired, "a nested call of an action that needs confirmation is not held: the caller must call it")
			}
		}
		if err != nil {
			entry := f.r.refusedGiven(store.RunEntry{Action: reg.action.ID, Steps: []store.RunStep{}, AsHost: asHost}, err, params)
			entry.Error = hostCode(err)
			return nil, entry, err
		}
	}
	res, entry, err := child.run(ctx, reg, id, params, f.r.opts.Resolve)
	return res, entry, err
}

// refusedGiven marks e refused by err, before the parameters' check
// passed, with the parameters as given (givenParameters): their text when
// it is at most Limits.MaxRefusedParamBytes, otherwise "null" with the
// text's SHA-256 and size, so that a flood of refused calls with large
// parameters adds little to the log.
func (r *Registry) refusedGiven(e store.RunEntry, err error, params any) store.RunEntry {
	text := r.givenParameters(params)
	e = refusedEntry(e, err, text)
	if limit := r.limitsInForce().MaxRefusedParamBytes; limit >= 0 && len(text) > limit {
		e.Parameters = "null"
		e.ParametersSHA256, e.ParametersBytes = digestOf(text), len(text)
	}
	return e
}

// givenParameters is the canonical JSON of the parameters as given, for
// the entry of a call refused before its check passed: "null" when they
// are not JSON at all, or larger than MaxParamBytes (an entry holds no
// more than a call may bring).
func (r *Registry) givenParameters(params any) string {
	limit := r.limitsInForce().MaxParamBytes
	if m, isMap := params.(map[string]any); params == nil || (isMap && m == nil) || nullText(params) {
		return "{}"
	}
	if text, ok := ijson.Text(params); ok {
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

// answer returns what bounds the result of one top-level call of inv
// (rec's entry holds its canonical JSON, whole) and keeps the record
// small; it takes what [Registry.top] returns. A result over its bound
// that cannot be cut refuses the call: the record is refused with
// result_too_large and the unit not kept.
func (r *Registry) answer(inv invocation) func(v any, rec store.Record, commit bool, err error) (any, store.Record, bool, error) {
	return func(v any, rec store.Record, commit bool, err error) (any, store.Record, bool, error) {
		return r.answered(inv, v, rec, commit, err)
	}
}

func (r *Registry) answered(inv invocation, v any, rec store.Record, commit bool, err error) (any, store.Record, bool, error) {
	limits := r.limitsInForce()
	if err != nil {
		return v, keepSmall(rec, limits.MaxEntryResultBytes), commit, err
	}
	reg, _ := r.lookup(inv.name)
	limit := resultLimitOf(reg, limits)
	form, text, berr := r.boundOf(reg, inv, rec.Entry.Result, limit)
	if berr != nil {
		berr = tooLarge(limit)
		rec.Entry = refusedEntry(rec.Entry, berr, rec.Entry.Parameters)
		rec.Audit.Code = codes.ResultTooLarge
		return nil, keepSmall(rec, limits.MaxEntryResultBytes), false, berr
	}
	rec = keepSmall(rec, limits.MaxEntryResultBytes)
	if form != nil {
		t, _ := exactText(form)
		return answered{value: form, text: t}, rec, commit, nil
	}
	if text != rec.Entry.Result { // its next sealed
		v = withText(v, text)
	}
	return answered{value: v, text: text}, rec, commit, nil
}

// withText returns v, a result whose text changed to text when its next
// was sealed, as its caller gets it: a [Page] with its Next replaced, or
// text decoded into JSON's Go types.
func withText(v any, text string) any {
	d, err := ijson.Decode([]byte(text), canonicalMaxDepth)
	if err != nil {
		return v
	}
	if p, ok := v.(interface{ withNext(string) any }); ok {
		next, _ := d.(map[string]any)["next"].(string)
		return p.withNext(next)
	}
	return d
}

// resultLimitOf is the result bound of reg's calls (nil: a call naming
// no action).
func resultLimitOf(reg *registered, l *Limits) int {
	if reg == nil {
		return l.MaxResultBytes
	}
	return resultLimit(&reg.action.Definition, *l)
}

// boundFor bounds text, a result of a call of inv, to limit, and seals
// the cursors it gives: form is nil when the result fits (or limit is
// negative), and sealed is the result's text as its caller gets it, its
// "next" sealed (see [CursorSchema]); err is errCannotCut when the
// result is over limit and cannot be cut.
func (r *Registry) boundFor(inv invocation, text string, limit int) (form *bound.Bounded, sealed string, err error) {
	reg, _ := r.lookup(inv.name)
	return r.boundOf(reg, inv, text, limit)
}

// boundOf is boundFor with reg, the action inv names (nil for none).
func (r *Registry) boundOf(reg *registered, inv invocation, text string, limit int) (form *bound.Bounded, sealed string, err error) {
	var next *pager
	if reg != nil && reg.cursor {
		if params := paramsObject(inv.params); params != nil {
			next = r.pagerOf(reg, inv.caller, params)
			if b, ok := bindingOf(reg.action.ID, inv.caller, params); ok {
				text, _ = r.sealNext(b, text)
			}
		}
	}
	if limit < 0 || len(text) <= limit {
		return nil, text, nil
	}
	form, err = boundText(text, limit, next)
	return form, text, err
}

// paramsObject returns params, a call's parameters as given, as a JSON
// object in JSON's Go types; nil when they are not one. A map is used
// as it is (read only).
func paramsObject(params any) map[string]any {
	if m, ok := params.(map[string]any); ok {
		return m
	}
	text, ok := ijson.Text(params)
	if !ok {
		raw, err := json.Marshal(params)
		if err != nil {
			return nil
		}
		text = raw
	}
	v, err := ijson.Decode(text, canonicalMaxDepth)
	m, _ := v.(map[string]any)
	if err != nil {
		return nil
	}
	return m
}

// bounder bounds a result as inv's (see boundFor).
func (r *Registry) bounder(inv invocation) boundFunc {
	return func(text string, limit int) (*bound.Bounded, string, error) { return r.boundFor(inv, text, limit) }
}

// limitOf is the result bound of the action called as name.
func (r *Registry) limitOf(name string) int {
	reg, _ := r.lookup(name)
	return resultLimitOf(reg, r.limitsInForce())
}

// limitTime returns the context a body of the action a runs in, and its
// time limit: the context ends after the action's timeout (or the
// registry's default) with the cause errTimedOut; a deadline ctx already
// has that comes sooner stays. The limit's stop releases the timer.
func (r *Registry) limitTime(ctx context.Context, a *Action) (context.Context, timeLimit) {
	d := timeoutOf(a.Timeout, r.opts.Timeout)
	now := r.gateOf().now
	outer, _ := ctx.Value(deadlineKey{}).(time.Time) // a caller's limit, if any
	if d <= 0 {
		// No limit of its own: a nested call still runs within its
		// caller's, on its own goroutine, so that the caller's answer
		// at the deadline waits for no body.
		return ctx, timeLimit{now: now, deadline: outer, stop: func() {}}
	}
	lim := timeLimit{now: now, deadline: now().Add(d)}
	if !outer.IsZero() && outer.Before(lim.deadline) {
		lim.deadline = outer
	}
	ctx, lim.stop = context.WithTimeoutCause(ctx, d, errTimedOut)
	return context.WithValue(ctx, deadlineKey{}, lim.deadline), lim
}

// deadlineKey is the context key of the deadline, by the registry's
// clock, of the time limit a call runs within.
type deadlineKey struct{}

// needsKey refuses, as idempotency_key_required, a caller's call of an
// action that wants a key and has none. The host's own calls (no
// caller), confirmations, replays and nested calls are not refused: the
// gate lets the host through, and the others run under their first
// call's key.
func needsKey(d *Definition, inv invocation) error {
	if !d.NeedsIdempotencyKey || inv.caller == nil || inv.key != "" || inv.confirming != "" || inv.replay {
		return nil
	}
	if d.NeedsConfirmation && inv.caller.Principal == "" && !hasRule(d.Approval) {
		return nil // refused as a hold nobody could confirm: a key would not help
	}
	return NewRefusal(codes.IdempotencyKeyRequired, "the action needs an idempotency key and the call has none")
}

// keyOf returns the unit key of c, or nil when c runs as if it had no
// key: an unknown action, or one the gate refuses (their refusal is then
// the same with or without a key). The gate decides a keyed call here,
// before its unit, so that a retry answered from the record passes it
// as any call does: its rate counted, refused when the caller may no
// longer call; the decision is returned for the call's unit to use,
// never made twice. For a batch, each step's action is admitted
// (surface, capability, scope, serving) here; the steps' rates are
// counted when they run, or, for a retry answered from the record, when
// it is answered. pre, when not nil, is the decision made already (a
// task's call). Errors: invalid_parameters for a malformed key; internal
// when the registry's Store keeps no keys (no [store.KeyStore]).
func (r *Registry) keyOf(ctx context.Context, c Call, pre *gateDecision) (*unitKey, *gateDecision, error) {
	if err := checkKey(c.IdempotencyKey); err != nil {
		return nil, nil, err
	}
	if _, ok := r.opts.Store.(store.KeyStore); !ok {
		cause := errNoKeyStore
		if r.opts.Store == nil {
			cause = errNoStore
		}
		rf := internalRefusal("the host keeps no idempotency keys: a call with a key cannot be honoured", cause)
		rf.Retry = codes.RetryNever
		return nil, nil, rf
	}
	g := r.gateOf()
	var gated *gateDecision
	k := &unitKey{key: c.IdempotencyKey, wait: r.opts.KeyWait}
	if c.Caller != nil {
		k.principal = c.Caller.Principal
	}
	if c.Batch != nil {
		k.action = batchKeyAction
		text, err := exactText(*c.Batch)
		if err != nil {
			return nil, nil, nil // refused by the batch's check, as without a key
		}
		ids := make([]string, len(c.Batch.Steps))
		for i, st := range c.Batch.Steps {
			reg, ok := r.lookup(st.Call)
			if !ok {
				continue
			}
			if g.admit(&reg.action.Definition, c.Caller) != nil {
				return nil, nil, nil // the batch's own check refuses it
			}
			ids[i] = reg.action.ID
		}
		k.digest = digestOf(text)
		k.admit = r.batchRetryRate(c, ids)
	} else {
		reg, ok := r.lookup(c.Action)
		if !ok {
			return nil, nil, nil
		}
		gated = pre
		if gated == nil {
			gated = &gateDecision{err: g.check(ctx, &reg.action.Definition, c.Caller)}
		}
		if gated.err != nil {
			return nil, gated, nil
		}
		k.action, k.digest = reg.action.ID, digestOf(r.givenParameters(c.Params))
	}
	r.stampKey(k)
	k.audit = r.audit(invocation{caller: c.Caller, toolCallID: c.ToolCallID, key: c.IdempotencyKey, step: c.Batch != nil})
	return k, gated, nil
}

// batchRetryRate counts, for the retry of the keyed batch c that the
// record answers, the rate of each step's action (ids, by step; "" for
// an unknown action) as the steps would when run. The first refusal
// stops it; its record is the step's, refused, rolled back.
func (r *Registry) batchRetryRate(c Call, ids []string) func(ctx context.Context) (store.Record, error) {
	if c.Caller == nil {
		return nil // the host's calls count no rate
	}
	return func(ctx context.Context) (store.Record, error) {
		g := r.gateOf()
		for i, id := range ids {
			if id == "" {
				continue
			}
			if err := g.limit(ctx, id, c.Caller.Principal); err != nil {
				a := r.audit(invocation{caller: c.Caller, toolCallID: c.ToolCallID, key: c.IdempotencyKey, step: true})
				a.Code = CodeOf(err)
				entry := refusedEntry(store.RunEntry{Action: id, Steps: []store.RunStep{}}, err, r.givenParameters(c.Batch.Steps[i].With))
				return store.Record{Entry: entry, Audit: a, RolledBack: true}, err
			}
		}
		return store.Record{}, nil
	}
}

// stampKey sets the clock readings and the wait of k.
func (r *Registry) stampKey(k *unitKey) {
	window := r.opts.KeyWindow
	if window <= 0 {
		window = defaultKeyWindow
	}
	if k.wait <= 0 {
		k.wait = defaultKeyWait
	}
	k.now = r.gateOf().now()
	k.expires = k.now.Add(window)
}

// observe starts op with the registry's observer, if any. The returned
// context carries the observation when op's records take its ids.
func (r *Registry) observe(ctx context.Context, op Operation) (context.Context, observed) {
	o := r.opts.Observer
	if o == nil {
		return ctx, observed{}
	}
	octx, ob := o.Start(ctx, op)
	if octx != nil { // nil: the context Start was given
		ctx = octx
	}
	if ob.TraceID != "" && (op.Kind == OpCall || op.Kind == OpBatch || op.Kind == OpDecide) {
		ctx = context.WithValue(ctx, obsKey{}, ob)
	}
	return ctx, observed{ob}
}

// callOp is the operation of inv's top-level call.
func callOp(inv invocation) Operation {
	op := Operation{Kind: OpCall, Call: Call{Action: inv.name, Params: inv.params, Caller: inv.caller, ToolCallID: inv.toolCallID}, Step: -1}
	if inv.confirming != "" {
		op.Decision = Decision{Change: inv.confirming, Confirm: true, Caller: inv.caller}
	}
	if inv.step {
		op.Step = inv.stepIndex
	}
	return op
}

// observeBatch runs the batch of c in one unit, observed as one OpBatch.
func (r *Registry) observeBatch(ctx context.Context, c Call, key *unitKey, p *progress, st *unitState) (Result, error) {
	ctx, ob := r.observe(ctx, Operation{Kind: OpBatch, Call: Call{Batch: c.Batch, Caller: c.Caller, ToolCallID: c.ToolCallID}, Step: -1})
	res, err := r.unit(ctx, key, st, func(ctx context.Context) (any, []store.Record, bool, error) {
		return r.batch(ctx, *c.Batch, invocation{caller: c.Caller, toolCallID: c.ToolCallID, key: c.IdempotencyKey, progress: p, state: st})
	})
	ob.end(res, err)
	return res, err
}

// newProgress returns the reporter of a call whose caller gave fn, or nil
// for none.
func (r *Registry) newProgress(fn func(Progress)) *progress {
	if fn == nil {
		return nil
	}
	every := r.opts.ProgressInterval
	if every == 0 {
		every = defaultProgressInterval
	}
	return &progress{fn: fn, every: every, now: r.gateOf().now}
}

var (
	errNoStore    = errors.New("actions: Options.Store is nil: an idempotency key cannot be honoured (give the registry a KeyStore, such as NewRunLog())")
	errNoKeyStore = errors.New("actions: Options.Store is no KeyStore: an idempotency key cannot be honoured")
)
