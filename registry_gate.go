// The registry's gate and pending-change methods: Admit, Decide and the pending list.

package actions

import (
	"context"
	"encoding/json"
	"errors"
)

// Admit runs the checks of the gate that take nothing (unknown_action,
// forbidden_surface, forbidden_capability, insufficient_scope,
// not_serving, read_only) for a call of id (an id or a deprecated alias)
// by caller, without calling anything, counting a rate limit or looking
// at parameters. A connector uses it to answer before the call is
// handled: mcpserver's HTTP middleware turns insufficient_scope into an
// HTTP 403 with its challenge. It returns nil when those checks pass;
// errors are as [Registry.Run]'s for the same checks.
func (r *Registry) Admit(ctx context.Context, id string, caller *Caller) error {
	reg, ok := r.lookup(id)
	if !ok {
		return unknownAction()
	}
	return r.gateOf().admit(&reg.action.Definition, caller)
}

// PendingChange returns the pending change id, for the person who may
// decide it (a screen shows it before the person confirms). Errors:
// unknown_change when the store holds no such change, it expired, or
// caller is not the principal who proposed it; internal when the store
// fails (the cause in [Refusal.Cause]).
func (r *Registry) PendingChange(ctx context.Context, id string, caller *Caller) (PendingChange, error) {
	pc, err := r.gateOf().pendingOf(ctx, id, caller)
	if err != nil {
		return PendingChange{}, err
	}
	return pc.clone(), nil
}

// PendingChanges returns the pending changes caller's principal proposed
// and may still decide, newest first. Errors: internal when the store
// fails.
func (r *Registry) PendingChanges(ctx context.Context, caller *Caller) ([]PendingChange, error) {
	if caller == nil || caller.Principal == "" {
		return nil, nil
	}
	g := r.gateOf()
	all, err := g.store().List(ctx, caller.Principal)
	if err != nil {
		return nil, internalRefusal("the pending changes could not be read", err)
	}
	now := g.opts.Now()
	out := all[:0]
	for _, c := range all {
		if now.Before(c.Expires) {
			out = append(out, c.clone())
		}
	}
	return out, nil
}

// Decide confirms or rejects the pending change d.Change as d.Caller, in
// one unit of the store, and records it.
//
// Confirming runs the held call (or the whole held batch) now, as the
// confirming person: every check of the gate is made again as that
// caller (surface, capability, scope, serving, read-only, rate), the
// parameters are checked again, refs resolved again, and the body runs
// once; the records' audit says confirmed, with the change's id, and the
// bodies see Caller.PendingChange set. The change is taken first, so that
// of two confirmations one runs it and the other gets unknown_change; a
// confirmation that is refused uses nothing up: the change waits, until
// it expires, for another try.
//
// Rejecting drops the change: nothing runs, and one record per call held
// says rejected (code rejected).
//
// Errors: unknown_change when d.Caller is nil or has no principal, the
// change is unknown, expired, decided already, or another principal
// proposed it (no record is made); otherwise those of [Registry.Run] for
// the call confirmed.
func (r *Registry) Decide(ctx context.Context, d Decision) (Result, error) {
	if d.Caller == nil || d.Caller.Principal == "" {
		return Result{}, unknownChange()
	}
	st := &unitState{} // a failed confirmation keeps no key: the change waits for another try
	return r.observeDecide(ctx, d, r.decisionKey(ctx, d), st, func(ctx context.Context) (any, []Record, bool, error) {
		g := r.gateOf()
		pc, err := g.take(ctx, d.Change, d.Caller)
		if err != nil {
			return nil, nil, false, err
		}
		if !d.Confirm {
			return nil, r.changeRecords(pc, d.Caller, StageRejected, NewRefusal(CodeRejected, "")), true, nil
		}
		confirmer := d.Caller.clone()
		confirmer.PendingChange = pc.ID
		inv := invocation{caller: &confirmer, confirming: pc.ID, key: pc.IdempotencyKey, state: st}
		var (
			value  any
			recs   []Record
			commit bool
		)
		if pc.Batch != nil {
			value, recs, commit, err = r.batch(ctx, *pc.Batch, inv)
		} else {
			inv.name, inv.params = pc.Action, json.RawMessage(pc.Parameters)
			if pc.Alias != "" {
				inv.name = pc.Alias
			}
			var rec Record
			value, rec, commit, err = r.answer(inv)(r.top(ctx, inv))
			recs = []Record{rec}
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
func (r *Registry) changeRecords(pc PendingChange, caller *Caller, stage Stage, err error) []Record {
	audit := Audit{At: r.gateOf().opts.Now(), Caller: caller, PendingChange: pc.ID, Stage: stage, Alias: pc.Alias, Code: CodeOf(err)}
	if pc.Batch == nil {
		entry := RunEntry{Action: pc.Action, Steps: []RunStep{}}.refused(err, pc.Parameters)
		return []Record{{Entry: entry, Audit: audit}}
	}
	audit.Alias, audit.Batch = "", true
	recs := make([]Record, len(pc.Batch.Steps))
	for i, st := range pc.Batch.Steps {
		id := st.Call
		if reg, ok := r.lookup(id); ok {
			id = reg.action.ID
		}
		recs[i] = Record{Entry: RunEntry{Action: id, Steps: []RunStep{}}.refused(err, r.givenParameters(st.With)), Audit: audit}
	}
	return recs
}

// decisionKey is the key a decision on the pending change id records
// under: the key the held call came with, or nil.
func (r *Registry) decisionKey(ctx context.Context, d Decision) *UnitKey {
	if r.opts.Store == nil {
		return nil
	}
	pc, err := r.gateOf().store().Get(ctx, d.Change)
	if err != nil || pc.IdempotencyKey == "" || pc.Proposer.Principal != d.Caller.Principal {
		return nil
	}
	k := &UnitKey{Principal: pc.Proposer.Principal, Action: pc.Action, Key: pc.IdempotencyKey, Digest: digestOf(pc.Parameters), Replace: true, Wait: r.opts.KeyWait}
	if pc.Batch != nil {
		k.Action = batchKeyAction
		text, _ := exactText(*pc.Batch)
		k.Digest = digestOf(text)
	}
	r.stampKey(k)
	return k
}

// observeDecide runs fn, the decision d, in one unit, observed as one
// OpDecide.
func (r *Registry) observeDecide(ctx context.Context, d Decision, key *UnitKey, st *unitState, fn unitWork) (Result, error) {
	ctx, ob := r.observe(ctx, Operation{Kind: OpDecide, Decision: d, Step: -1})
	res, err := r.unit(ctx, key, st, fn)
	ob.end(res, err)
	return res, err
}
