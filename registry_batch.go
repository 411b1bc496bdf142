// The registry's batch methods: a decoded batch run or held as one unit.

package actions

import (
	"context"
	"errors"
	"math"
	"strconv"

	"github.com/actionreg/actions/bound"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/internal/ijson"
	"github.com/actionreg/actions/internal/placeholder"
	"github.com/actionreg/actions/store"
)

// batch checks b whole, with r.Limits(), then runs its calls in order as
// inv's caller, each as a top-level call of [Registry.Run]; see [Batch]
// for the rules. A caller's batch holding a step that needs confirmation
// is held whole as one pending change, before any step runs.
func (r *Registry) batch(ctx context.Context, b Batch, inv invocation) (_ any, recs []store.Record, _ bool, err error) {
	limits := r.Limits()
	plan, err := checkBatch(b, limits, nil)
	if err != nil {
		return nil, nil, false, err
	}
	if inv.caller != nil && inv.confirming == "" {
		if held, recs, err := r.holdBatch(ctx, b, plan, inv); held || err != nil {
			return nil, recs, held && CodeOf(err) == codes.ConfirmationRequired, err
		}
	}
	pl := placeholderLimits(limits)
	// results[j] is step j's result as JSON values, kept from its call to
	// the last step that reads it. The check guarantees that a placeholder
	// names only a step before the current one.
	results := make([]any, len(plan.steps))
	current := 0
	lookup := func(name string) (any, bool) {
		if current < len(plan.steps) {
			for _, rd := range plan.steps[current].reads {
				if rd.name == name {
					return results[rd.step], true
				}
			}
		}
		j, ok := plan.names[name]
		if !ok || j >= current {
			return nil, false
		}
		return results[j], true
	}
	recs = make([]store.Record, 0, len(plan.steps))
	// running is the step whose call runs, -1 between calls: a panic
	// there (a host's Observer, a fault of the registry's own) stops the
	// batch refused internal, with that step recorded and the records of
	// the steps before it kept, so that the store writes them all.
	running, step := -1, inv
	defer func() {
		if p := recover(); p != nil {
			err = panicRefusal("registry", p)
			if running < 0 {
				return
			}
			if len(recs) == running {
				recs = append(recs, r.refusedRecord(step.name, step.params, r.audit(step), err))
			}
			err = &StepError{Index: running, Action: step.name, Err: err}
		}
	}()
	bound := newBatchBound(limits, len(plan.steps))
	cur := &runningStep{r: r}
	boundStep, againStep := cur.bound, cur.again
	size := batchSize{limit: limits.MaxBatchBytes}
	var result any
	for i, st := range plan.steps {
		if err := ctx.Err(); err != nil {
			return nil, recs, false, cancelRefusal(err)
		}
		current = i
		var params any = st.with
		if st.refs {
			spl, byBatch := pl, false
			if left := size.left(); left < spl.MaxBytes {
				spl.MaxBytes, byBatch = max(left, 1), true
			}
			with, _, err := placeholder.Substitute(st.with, lookup, canonicalText, spl)
			if err != nil {
				if pe := (*placeholder.Error)(nil); byBatch && errors.As(err, &pe) && pe.Kind == placeholder.TooLarge {
					return nil, recs, false, &StepError{Index: i, Action: st.call, Err: batchTooLarge(limits.MaxBatchBytes)}
				}
				return nil, recs, false, substituteRefusal(stepPointer(i)+"/with", "with", err)
			}
			params = with
		}
		if err := size.admit(params); err != nil {
			return nil, recs, false, &StepError{Index: i, Action: st.call, Err: err}
		}
		for _, j := range st.drop {
			results[j] = nil
		}
		step = inv
		step.name, step.params, step.step = st.call, params, true
		step.stepIndex, step.progress = i, nil
		running = i
		_, rec, _, err := r.top(ctx, step)
		cur.inv = step
		recs = append(recs, bound.step(r.limitOf(step.name), boundStep, againStep, rec))
		running = -1
		size.spend(recs[len(recs)-1].Entry)
		if err != nil {
			return nil, recs, false, &StepError{Index: i, Action: st.call, Err: err}
		}
		if inv.progress != nil {
			inv.progress.report(stepProgress(i, len(plan.steps)))
		}
		if st.keep || i == len(plan.steps)-1 {
			v, err := scopeValue(rec.Entry)
			if err != nil {
				return nil, recs, false, err
			}
			results[i] = v
			result = v
		}
	}
	current = len(plan.steps)
	if plan.result != "" {
		if result, err = batchResult(plan.result, lookup, pl); err != nil {
			return nil, recs, false, err
		}
	}
	a, err := bound.result(r.bounder(invocation{}), result, plan.result == "")
	if err != nil {
		return nil, recs, false, err
	}
	return a, recs, true, nil
}

// runningStep is the step of a batch whose result is bounded, as
// [batchBound] sees it: one per batch, set to each step in turn, so that
// a step costs no closures of its own. Once the steps ran it is the last
// one, as which the batch's result pages.
type runningStep struct {
	r   *Registry
	inv invocation
}

// bound bounds a result as the step's (see [Registry.boundFor]).
func (s *runningStep) bound(text string, limit int) (*bound.Bounded, string, error) {
	return s.r.boundFor(s.inv, text, limit)
}

// again is the call that gets the step's result on its own (see
// [Registry.again]).
func (s *runningStep) again() *bound.NextCall { return s.r.again(s.inv) }

// batchSize counts what a batch's steps copy in and record against
// Limits.MaxBatchBytes (negative: no bound).
type batchSize struct {
	limit int
	spent int
}

// left is what the steps may still spend: MaxInt when there is no bound.
func (s *batchSize) left() int {
	if s.limit < 0 {
		return math.MaxInt
	}
	return s.limit - s.spent
}

// admit refuses a step whose parameters (their canonical JSON) would pass
// what is left.
func (s *batchSize) admit(params any) error {
	if s.limit < 0 {
		return nil
	}
	text, err := canonicalString(params)
	if err != nil {
		return nil // the call refuses it, with the reason
	}
	if len(text) > s.left() {
		return batchTooLarge(s.limit)
	}
	return nil
}

// spend counts a step's run entry as kept.
func (s *batchSize) spend(e store.RunEntry) {
	s.spent += entryBytes(e)
}

// entryBytes is the size of the texts of e: its parameters, result,
// commands and nested calls.
func entryBytes(e store.RunEntry) int {
	n := len(e.Action) + len(e.Parameters) + len(e.Result) + len(e.ResultSHA256)
	for _, st := range e.Steps {
		n += len(st.Command) + len(st.Result)
		if st.Call != nil {
			n += entryBytes(*st.Call)
		}
	}
	return n
}

// batchTooLarge is the refusal of a step that would pass
// Limits.MaxBatchBytes. It names the bound, never the values.
func batchTooLarge(limit int) *Refusal {
	r := refusef(codes.InvalidScriptStep, "the batch would pass its bound of "+strconv.Itoa(limit)+" bytes copied in and recorded",
		Issue{Path: "", Keyword: "maxBatchBytes", Message: "the bound is " + strconv.Itoa(limit) + " bytes for all steps' parameters and run entries"})
	r.NextAction = "Split the batch, or copy less into its steps through placeholders."
	return r
}

// batchResult is the batch's own result: its result placeholder filled
// from the steps' results. It is no call's parameters: only the limits of
// canonical JSON bound how deep it may nest. And it is one placeholder,
// so it copies a result the batch holds once at most: no byte bound.
func batchResult(result string, lookup func(string) (any, bool), pl placeholder.Limits) (any, error) {
	rl := pl
	rl.MaxDepth = canonicalMaxDepth
	rl.MaxBytes = math.MaxInt
	v, ok, err := placeholder.Substitute(result, lookup, canonicalText, rl)
	if err != nil {
		return nil, substituteRefusal("/result", "result", err)
	}
	if !ok {
		v = nil
	}
	return v, nil
}

// holdBatch holds b whole when a step needs confirmation: every step is
// first admitted by the gate as inv's caller (a step the caller may not
// call refuses the batch as it would when run), then the batch is stored
// as one pending change. held is false when no step needs confirmation.
func (r *Registry) holdBatch(ctx context.Context, b Batch, plan *batchPlan, inv invocation) (held bool, recs []store.Record, err error) {
	var steps []HeldStep
	g := r.gateOf()
	for i, st := range plan.steps {
		// A step the caller may not see holds nothing: the batch runs
		// as it would with a missing action there, its earlier steps
		// included, so that neither what ran nor the answer tells the
		// two apart.
		if reg, ok := r.lookup(st.call); ok && reg.action.NeedsConfirmation &&
			CodeOf(g.who(&reg.action.Definition, inv.caller)) != codes.UnknownAction {
			steps = append(steps, HeldStep{Index: i, Action: reg.action.ID})
		}
	}
	if len(steps) == 0 {
		return false, nil, nil
	}
	for i, st := range plan.steps {
		reg, ok := r.lookup(st.call)
		var err error
		if !ok {
			err = unknownAction()
		} else if inv.replay {
			err = g.who(&reg.action.Definition, inv.caller)
		} else if err = g.admit(&reg.action.Definition, inv.caller); err == nil {
			err = needsKey(&reg.action.Definition, inv)
		}
		if err != nil {
			step := inv
			step.name, step.params, step.step = st.call, st.with, true
			id := st.call
			if ok {
				id = reg.action.ID
			}
			rec := r.refusedRecord(id, st.with, r.audit(step), err)
			return true, []store.Record{rec}, &StepError{Index: i, Action: st.call, Err: err}
		}
	}
	if inv.caller.Principal == "" {
		return true, nil, &StepError{Index: steps[0].Index, Action: plan.steps[steps[0].Index].call, Err: anonymousHold()}
	}
	pc := PendingChange{Action: steps[0].Action, Batch: &b, Held: steps, IdempotencyKey: inv.key}
	var rc Receipt
	if inv.replay {
		rc = pc.receipt()
	} else {
		c := b.clone()
		pc.Batch = &c
		if rc, err = g.hold(ctx, pc, inv.caller); err != nil {
			return true, nil, err
		}
		pc.ID = rc.ID
	}
	refusal := rc.confirmationRequired()
	recs = r.changeRecords(pc, inv.caller, store.StageHeld, refusal)
	return true, recs, refusal
}

// DecodeBatch decodes a batch's JSON text strictly (I-JSON, RFC 7493:
// duplicate member names, invalid UTF-8 and lone surrogates are refused)
// and checks the whole batch as [Registry.Run] does, with the
// registry's limits, before anything runs.
// Numbers in "with" are kept exact, as json.Number.
//
// Errors, all *Refusal, each issue at the RFC 6901 pointer into the batch
// of the value at fault, with the key at fault as its Keyword:
//   - invalid_script_step: text that is not I-JSON (a duplicate key is
//     reported at the duplicated member, e.g. /commands/0/call); a batch
//     that is not an object, has no "commands" array, or holds a key other
//     than "commands" and "result" ("parameters" included: a script with
//     parameters is the engine's); a step that is not an object, or holds
//     a key other than "call", "with" and "as" (a command, "when", "each",
//     "fail"...: /commands/2/when); a "call" that is missing or not a
//     non-empty string; a "with" that is not an object, or nests deeper
//     than Limits.MaxParamDepth; an "as" that is not an identifier, or
//     repeats an earlier step's; more steps than Limits.MaxBatchCalls; a
//     placeholder longer than Limits.MaxPlaceholderLength, or more than
//     Limits.MaxPlaceholders in one step; a "result" that is not one
//     placeholder path;
//   - unknown_reference: a path placeholder whose name is not the "as" of
//     an earlier step (in "result": of any step), at the pointer of the
//     string holding it.
//
// Each refusal lists every fault of its kind, in the order of the batch
// (top-level keys, then steps, then "result"), at most 100. A step whose
// shape is wrong (a foreign key, a call or as that is not a string, a with
// that is not an object) reports that only. unknown_reference is checked
// once no invalid_script_step fault remains.
//
// DecodeBatch does not check that the actions exist or that the
// parameters fit their schemas: those are refusals of the calls, met when
// the batch runs.
func (r *Registry) DecodeBatch(data []byte) (Batch, error) {
	return decodeBatch(data, r.Limits())
}

// scopeValue is the value a named result stands for in later placeholders:
// the JSON the entry recorded, read back, so that it holds JSON's Go types
// only and agrees with the run log.
func scopeValue(e store.RunEntry) (any, error) {
	if e.Result == "" {
		return nil, nil
	}
	v, err := ijson.Decode([]byte(e.Result), 0)
	if err != nil {
		r := refusef(codes.Internal, "a recorded result cannot be read back")
		r.cause = err
		return nil, r
	}
	return v, nil
}

// substituteRefusal reports a fault met while substituting, which the
// check leaves to run time: a copied value nesting too deep. The other
// kinds cannot happen after the check; they are mapped for safety.
func substituteRefusal(at, keyword string, err error) error {
	var pe *placeholder.Error
	if !errors.As(err, &pe) {
		return err
	}
	is := Issue{Path: at + pe.Pointer, Keyword: keyword}
	switch pe.Kind {
	case placeholder.UnknownReference:
		is.Message = "no earlier step is named " + pe.Name
		return refusef(codes.UnknownReference, "a placeholder names a result that no earlier step sets", is)
	case placeholder.Text:
		r := refusef(codes.Internal, "a placeholder's value has no text")
		r.cause = err
		return r
	}
	is.Message = placeholderMessage(pe)
	return refusef(codes.InvalidScriptStep, "a step cannot be prepared", is)
}

// again is the call that gets the result of a step of inv on its own,
// should the batch's bound leave it out: the step's call as it was made,
// when its action only reads or is idempotent (making it again changes
// nothing); nil otherwise.
func (r *Registry) again(inv invocation) *bound.NextCall {
	reg, ok := r.lookup(inv.name)
	if !ok || (reg.action.EffectOf() != EffectRead && !reg.action.Idempotent) {
		return nil
	}
	params := paramsObject(inv.params)
	if params == nil {
		return nil
	}
	return &bound.NextCall{Action: reg.action.ID, Params: params}
}
