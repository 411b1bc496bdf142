// The registry's unit method: calls decided one after the other by the
// host's code (a program), kept or undone together.

package actions

import "context"

// UnitCall makes one call inside a unit of [Registry.RunUnit]: the
// action's id (or alias) and its parameters, as [Call].Action and
// [Call].Params take them. It returns the call's result, with the
// call's one record (not yet settled: the unit decides RolledBack), or
// its refusal, as [Registry.Run] would.
type UnitCall func(action string, params any) (Result, error)

// RunUnit runs fn in one unit of the registry's store (one database
// transaction with sqlstore.Store): each call fn makes through call is a
// top-level call of the action as caller, through the one call path
// (the gate, the parameters, the bounds, a record each), and what the
// calls changed is kept together or not at all:
//   - the unit commits when fn returns a nil error and no call was
//     refused; the result's Value is fn's value, Text its canonical JSON
//     (RFC 8785) and Records every call's record, in order;
//   - otherwise nothing the calls changed is kept, their records are
//     kept as rolled back, and RunUnit returns the first refused call's
//     error (a *[Refusal], as [Registry.Run] gives it, even when fn went
//     on after it), else fn's error.
//
// A call of an action that needs confirmation is refused
// confirmation_required and no pending change is stored: the calls of a
// unit cannot be confirmed one by one. A value fn returns that has no
// canonical JSON form refuses the unit internal.
//
// fn must make its calls one at a time, on the goroutine that runs it,
// and not after it returned. A store may run fn again, from the start,
// when the unit met a conflict another attempt may clear (see
// [Store].Atomic): fn must not rely on having run once. The unit holds
// the store's transaction while fn runs, so fn should be brief (a SQLite
// store admits one writing unit at a time).
//
// Errors: those of the calls and of fn, as above; cancelled when ctx
// ends; internal for the store's own failure.
func (r *Registry) RunUnit(ctx context.Context, caller *Caller, fn func(ctx context.Context, call UnitCall) (any, error)) (Result, error) {
	st := &unitState{}
	return r.unit(ctx, nil, st, func(ctx context.Context) (any, []Record, bool, error) {
		var (
			recs    []Record
			refused error
			open    = true
		)
		call := func(action string, params any) (Result, error) {
			if !open {
				return Result{}, NewRefusal(CodeInternal, "a unit's call was made after its function returned")
			}
			if err := ctx.Err(); err != nil {
				return Result{}, cancelRefusal(err)
			}
			inv := invocation{name: action, params: params, caller: caller, state: st, noHold: true}
			v, rec, _, err := r.answer(inv)(r.top(ctx, inv))
			recs = append(recs, rec)
			if err != nil {
				if refused == nil {
					refused = err
				}
				return Result{Records: []Record{rec}}, err
			}
			res := Result{Value: v, Records: []Record{rec}}
			if a, ok := v.(answered); ok {
				res.Value, res.Text = a.value, a.text
			}
			return res, nil
		}
		v, err := safeUnit(ctx, fn, call)
		open = false
		switch {
		case refused != nil:
			return nil, recs, false, refused
		case err != nil:
			return nil, recs, false, err
		}
		if v == nil {
			return nil, recs, true, nil
		}
		text, err := canonicalString(v)
		if err != nil {
			return nil, recs, false, err
		}
		return answered{value: v, text: text}, recs, true, nil
	})
}

// safeUnit runs fn, a panic in it an internal refusal.
func safeUnit(ctx context.Context, fn func(context.Context, UnitCall) (any, error), call UnitCall) (v any, err error) {
	if perr := safeCall("unit's function", func() { v, err = fn(ctx, call) }); perr != nil {
		return nil, perr
	}
	if err == nil && ctx.Err() != nil {
		return nil, cancelRefusal(ctx.Err())
	}
	return v, err
}
