// The registry's gate and pending-change methods: Admit, Decide and the pending list.

package actions

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/store"
)

// Admit runs the checks of the gate that take nothing (unknown_action,
// forbidden_surface, forbidden_capability, insufficient_scope,
// not_serving, read_only) for a call of id (an id or a deprecated alias)
// by caller, without calling anything, counting a rate limit or looking
// at parameters. A connector uses it to answer before the call is
// handled: mcpserver's HTTP middleware turns insufficient_scope into an
// HTTP 403 with its challenge. It returns nil when those checks pass;
// errors are as [Registry.Run]'s for the same checks.
func (r *Registry) Admit(ctx context.Context, id string, caller *identity.Caller) error {
	reg, ok := r.lookup(id)
	if !ok {
		return unknownAction()
	}
	return r.gateOf().admit(&reg.action.Definition, caller)
}

// PendingChange returns the pending change id, for a person who may see
// it (a screen shows it before the person decides): its proposer, or a
// person its action's [Approval] lets decide it. Errors: unknown_change
// when the store holds no such change, it expired, or caller is none of
// those; internal when the store fails (the cause in [Refusal.Cause]).
func (r *Registry) PendingChange(ctx context.Context, id string, caller *identity.Caller) (PendingChange, error) {
	pc, err := r.gateOf().pendingOf(ctx, id, caller, r.definitionOf)
	if err != nil {
		return PendingChange{}, err
	}
	return pc.clone(), nil
}

// PendingChanges returns the pending changes caller's principal proposed
// and that have not expired, newest first, whoever may decide them.
// Errors: internal when the store fails.
func (r *Registry) PendingChanges(ctx context.Context, caller *identity.Caller) ([]PendingChange, error) {
	if caller == nil || caller.Principal == "" {
		return nil, nil
	}
	g := r.gateOf()
	all, err := g.store().List(ctx, caller.Principal)
	if err != nil {
		return nil, internalRefusal("the pending changes could not be read", err)
	}
	now := g.now()
	out := all[:0]
	for _, c := range all {
		if now.Before(c.Expires) {
			out = append(out, c.clone())
		}
	}
	return out, nil
}

// ChangesToDecide returns the pending changes caller may decide now,
// whoever proposed them, newest first: an approver's list. A change is
// in it when [Registry.MayDecide] would pass (its approval names the
// caller, on the caller's surface, and it has not expired). It reads
// every change the gate's [PendingStore] holds (ListAll). Errors:
// internal when the store fails.
func (r *Registry) ChangesToDecide(ctx context.Context, caller *identity.Caller) ([]PendingChange, error) {
	return r.gateOf().decidable(ctx, caller, r.definitionOf)
}

// MayDecide reports whether caller may decide the pending change id,
// without deciding it: nil when [Registry.Decide] would take it (the
// gate's checks of the call itself are made when the decision runs).
// A connector asks before it offers a person the decision (mcpserver
// asks an MCP client only then). Errors: those of Decide before it
// takes the change: unknown_change, forbidden_proposer,
// forbidden_capability, forbidden_surface, internal.
func (r *Registry) MayDecide(ctx context.Context, id string, caller *identity.Caller) error {
	g := r.gateOf()
	pc, err := g.pendingOf(ctx, id, caller, r.definitionOf)
	if err != nil {
		return err
	}
	return g.mayDecide(pc, caller, r.definitionOf)
}

// Decide confirms, rejects or edits the pending change d.Change as
// d.Caller, in one unit of the store, and records it.
//
// Who may decide is the approval policy of the change's action (for a
// batch, of every step held; see [Approval]): by default its proposer
// alone, from the surfaces of [GateOptions].DecideFrom (ui alone unless
// the host opts in), so that a decision sent from an MCP client or a
// model the host drives (surface mcp or ai) is refused, a confirmation
// and a rejection alike.
//
// Confirming runs the held call (or the whole held batch) now, as the
// deciding person: every check of the gate is made again as that
// caller (surface, capability, scope, serving, read-only, rate), the
// parameters are checked again, refs resolved again, and the body runs
// once; the records' audit says confirmed, with the change's id, and the
// bodies see Caller.PendingChange set. The change is taken first, so that
// of two confirmations one runs it and the other gets unknown_change; a
// confirmation that is refused uses nothing up: the change waits, until
// it expires, for another try.
//
// Editing (d.Params set) takes the change and runs, in its place, a new
// call of the same action with the person's arguments, checked as the
// person from the start (gate, defaults, schema, refs, approval rule);
// it runs under the decision when the approval lets the person decide a
// change of their own, and is held as their new change otherwise. Its
// record says stage edited (or held) with the replaced parameters in
// [store.Audit].Original.
//
// Rejecting drops the change: nothing runs, and one record per call held
// says rejected (code rejected). The gate's checks of who may call each
// held action (surface, capability, scope) are made as the person first.
//
// Errors: internal for a nil ctx (nothing decided); unknown_change when
// d.Caller is nil or has no principal, the change is unknown, expired,
// decided already, or d.Caller is neither its proposer nor a person its
// approval names (no record is made);
// forbidden_proposer (four eyes: the proposer decides its own change),
// forbidden_capability (a proposer without the capability
// [ProposerNeedsCapability] asks) and forbidden_surface (a surface the
// approval does not list), with no record either; constraint_violation
// for an edit of a held batch (the change waits); otherwise those of
// [Registry.Run] for the call confirmed or edited (invalid_parameters
// for edited arguments the schema refuses, confirmation_required with
// the new receipt for an edit held again).
func (r *Registry) Decide(ctx context.Context, d Decision) (Result, error) {
	if ctx == nil {
		return Result{}, nilContext()
	}
	if d.Caller == nil || d.Caller.Principal == "" {
		return Result{}, unknownChange()
	}
	st := &unitState{} // a failed confirmation keeps no key: the change waits for another try
	return r.observeDecide(ctx, d, r.decisionKey(ctx, d), st, func(ctx context.Context) (any, []store.Record, bool, error) {
		g := r.gateOf()
		pc, err := g.take(ctx, d.Change, d.Caller, r.definitionOf)
		if err != nil {
			return nil, nil, false, err
		}
		if !d.Confirm && d.Params == nil {
			// A rejection runs nothing, yet it is a write by the person:
			// the gate's checks of who may call each held action
			// (surface, capability, scope) are made as that person.
			for _, id := range pc.heldActions() {
				if def := r.definitionOf(id); def != nil {
					if err := g.who(def, d.Caller); err != nil {
						if herr := g.store().Hold(ctx, pc); herr != nil {
							err = errors.Join(err, herr)
						}
						return nil, nil, false, err
					}
				}
			}
			recs := r.changeRecords(pc, d.Caller, store.StageRejected, NewRefusal(codes.Rejected, ""))
			for i := range recs {
				recs[i].Audit.Reason = cut(d.Reason)
			}
			return nil, recs, true, nil
		}
		confirmer := cloneCaller(d.Caller)
		confirmer.PendingChange = pc.ID
		inv := invocation{caller: &confirmer, confirming: pc.ID, key: pc.IdempotencyKey, state: st}
		var (
			value  any
			recs   []store.Record
			commit bool
		)
		if d.Params != nil {
			if pc.Batch != nil || pc.Preview != nil {
				var err error = refusef(codes.ConstraintViolation, "a held batch or previewed call is confirmed or rejected whole; it cannot be edited",
					Issue{Path: "", Keyword: "edit", Message: "a batch is not edited"})
				if herr := g.store().Hold(ctx, pc); herr != nil {
					err = errors.Join(err, herr)
				}
				return nil, nil, false, err
			}
			// An edit is a new proposal of the change's action (its id,
			// never the alias, never a name from the decision) by the
			// deciding person.
			edited := pc
			inv.name, inv.params, inv.edit = pc.Action, d.Params, &edited
			var rec store.Record
			value, rec, commit, err = r.answer(inv)(r.top(ctx, inv))
			recs = []store.Record{rec}
		} else if pc.Batch != nil {
			value, recs, commit, err = r.batch(ctx, *pc.Batch, inv)
		} else {
			inv.name, inv.params, inv.expect = pc.Action, json.RawMessage(pc.givenText()), pc.Parameters
			if pc.Preview != nil {
				// Run again with the values the preview drew, and kept
				// only as shown.
				inv.shown, inv.recorded = pc.Preview, pc.Preview.Steps
			}
			if pc.Alias != "" {
				inv.name = pc.Alias
			}
			var rec store.Record
			value, rec, commit, err = r.answer(inv)(r.top(ctx, inv))
			recs = []store.Record{rec}
		}
		if !commit {
			// Nothing ran for good: the change waits for another try.
			// Inside a store's transaction the rollback puts it back
			// anyway; a pending store outside it needs it held again.
			if herr := g.store().Hold(ctx, pc); herr != nil {
				err = errors.Join(err, herr)
			}
		}
		return value, recs, commit, err
	})
}

// changeRecords are the records of the calls a pending change holds, each
// refused with err's code at stage by caller: one for a call, one per
// step for a batch (its parameters as the batch wrote them).
func (r *Registry) changeRecords(pc PendingChange, caller *identity.Caller, stage store.Stage, err error) []store.Record {
	audit := store.Audit{At: r.gateOf().now(), Caller: caller, PendingChange: pc.ID, Stage: stage, Alias: pc.Alias, Code: CodeOf(err)}
	if pc.Batch == nil {
		entry := refusedEntry(store.RunEntry{Action: pc.Action, Steps: []store.RunStep{}}, err, pc.givenText())
		return []store.Record{{Entry: entry, Audit: audit}}
	}
	audit.Alias, audit.Batch = "", true
	recs := make([]store.Record, len(pc.Batch.Steps))
	for i, st := range pc.Batch.Steps {
		id := st.Call
		if reg, ok := r.lookup(id); ok {
			id = reg.action.ID
		}
		recs[i] = store.Record{Entry: refusedEntry(store.RunEntry{Action: id, Steps: []store.RunStep{}}, err, r.givenParameters(st.With)), Audit: audit}
	}
	return recs
}

// decisionKey is the key a decision on the pending change id records
// under: the key the held call came with, or nil.
func (r *Registry) decisionKey(ctx context.Context, d Decision) *unitKey {
	if _, ok := r.opts.Store.(store.KeyStore); !ok {
		return nil
	}
	g := r.gateOf()
	pc, err := g.store().Get(ctx, d.Change)
	if err != nil || pc.IdempotencyKey == "" || g.mayDecide(pc, d.Caller, r.definitionOf) != nil {
		return nil
	}
	k := &unitKey{principal: pc.Proposer.Principal, action: pc.Action, key: pc.IdempotencyKey, digest: digestOf(pc.givenText()), replace: true, wait: r.opts.KeyWait}
	if pc.Batch != nil {
		k.action = batchKeyAction
		text, _ := exactText(*pc.Batch)
		k.digest = digestOf(text)
	}
	r.stampKey(k)
	return k
}

// observeDecide runs fn, the decision d, in one unit, observed as one
// OpDecide.
func (r *Registry) observeDecide(ctx context.Context, d Decision, key *unitKey, st *unitState, fn unitWork) (Result, error) {
	ctx, ob := r.observe(ctx, Operation{Kind: OpDecide, Decision: d, Step: -1})
	res, err := r.unit(ctx, key, st, fn)
	ob.end(res, err)
	return res, err
}
