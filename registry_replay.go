// The registry's replay methods: a recorded call run again and held against its record.

package actions

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/internal/ijson"
	"github.com/actionreg/actions/store"
)

// Replay runs again the call that rec records and compares the new run
// with rec.Entry, step by step, in canonical JSON (RFC 8785): the
// parameters after the check, each command and its result, each nested
// call's entry at any depth, the outcome, the error code and the result.
// Recorded texts are compared in canonical form, so an entry read back
// from a log with other white space or member order still matches.
//
// The call goes through the same path as [Registry.Run], with the
// recorded caller (rec.Audit.Caller) and today's policy and schemas: the
// gate decides who may call (surface, capability, scope) but counts no
// rate and reads no serving switch, those being the state of the moment.
// A call recorded held replays as held (no body runs, but for an action
// with [Definition].Preview, whose preview runs again and is undone;
// nothing is held);
// one recorded confirmed runs as confirmed by the recorded person; a
// rejected one, and a step of a held batch, replay as they were recorded
// when the action exists and the caller may still call it. Each replay
// runs in one unit of the registry's Store (so that a fresh store seeded
// the same way evolves as the recorded one did), kept only when the
// replay matches; no record is written and OnRecord is not called.
//
// Refs: the recorded parameters of a call whose check passed hold refs
// resolved already, and are not resolved again; those of a call refused
// with no steps were recorded as given, and are resolved again.
//
// It returns the replayed entry, and an error: nil when the replay
// matches; a *[Divergence] at the first member that differs; cancelled
// when ctx was done by the end of the replay, since a cancelled run says
// nothing about the entry; internal for a nil ctx.
func (r *Registry) Replay(ctx context.Context, rec store.Record) (_ store.RunEntry, err error) {
	if ctx == nil {
		return store.RunEntry{}, nilContext()
	}
	ctx, ob := r.observe(ctx, Operation{Kind: OpReplay, Call: Call{Action: rec.Entry.Action, Caller: rec.Audit.Caller}, Step: -1})
	defer func() { ob.end(Result{}, err) }()
	var (
		got  store.RunEntry
		rerr error
		d    *Divergence
	)
	fn := func(ctx context.Context) (any, []store.Record, bool, error) {
		got, rerr = r.replayed(ctx, rec)
		if d = r.diverge("", rec.Entry, got, 0); d != nil {
			d.Err, d.Code = rerr, got.Error
			if got.Outcome == store.OutcomeDone {
				d.Code = ""
			}
			if d.Code == "" && rerr != nil {
				d.Code = hostCode(rerr) // why the replay departed without a refusal of its own
			}
		}
		return nil, nil, d == nil && (got.Outcome == store.OutcomeDone || rec.Audit.Stage == store.StageHeld), nil
	}
	if r.opts.Store != nil {
		_, err = r.opts.Store.Atomic(ctx, func(ctx context.Context) store.Unit {
			_, recs, commit, err := fn(ctx)
			return store.Unit{Records: recs, Commit: commit, Err: err}
		})
	} else {
		_, _, _, err = fn(ctx)
	}
	if cerr := ctx.Err(); cerr != nil {
		return got, cancelRefusal(cerr)
	}
	if err != nil {
		return got, cancelRefusal(err)
	}
	if d != nil {
		return got, d
	}
	return got, nil
}

// replayed runs the call of rec again, as Replay says, and returns its
// entry and error.
func (r *Registry) replayed(ctx context.Context, rec store.Record) (store.RunEntry, error) {
	e := rec.Entry
	inv := invocation{name: e.Action, caller: rec.Audit.Caller, replay: true, step: rec.Audit.Batch}
	if rec.Audit.Alias != "" {
		inv.name = rec.Audit.Alias
	}
	if rec.Audit.Stage == store.StageRejected || (rec.Audit.Stage == store.StageHeld && rec.Audit.Batch) {
		// Nothing ran: the call stands as recorded while its action
		// exists and its caller may call it.
		reg, ok := r.lookup(inv.name)
		if !ok {
			return refusedEntry(store.RunEntry{Action: e.Action, Parameters: e.Parameters, Steps: []store.RunStep{}}, unknownAction(), e.Parameters), unknownAction()
		}
		if err := r.gateOf().who(&reg.action.Definition, inv.caller); err != nil {
			got := refusedEntry(store.RunEntry{Action: reg.action.ID, Steps: []store.RunStep{}}, err, e.Parameters)
			got.Error = hostCode(err)
			return got, err
		}
		got := store.RunEntry{Action: reg.action.ID, Steps: []store.RunStep{}, Parameters: e.Parameters, Outcome: store.OutcomeRefused, Error: e.Error}
		return got, nil
	}
	if rec.Audit.Stage == store.StageHeld && !rec.Audit.Batch {
		if reg, ok := r.lookup(inv.name); ok && !reg.action.NeedsConfirmation && !reg.action.Preview {
			// Today's policy holds nothing: the call would run, and a
			// replay of a held call never runs its body. The divergence
			// names the policy as the cause.
			got := store.RunEntry{Action: reg.action.ID, Steps: []store.RunStep{}, Parameters: e.Parameters, Outcome: store.OutcomeDone}
			return got, NewRefusal(codes.ConfirmationRequired, "today the action needs no confirmation: the held call would run")
		}
	}
	if rec.Audit.Stage == store.StageConfirmed && inv.caller != nil {
		c := cloneCaller(inv.caller)
		c.PendingChange = rec.Audit.PendingChange
		inv.caller, inv.confirming = &c, rec.Audit.PendingChange
	}
	// Only parameters recorded as given are resolved again.
	inv.noResolve = !(e.Outcome == store.OutcomeRefused && len(e.Steps) == 0 && rec.Audit.Stage != store.StageHeld)
	// The recorded text is the parameters' canonical form, not the text a
	// caller sent, so its size is not held to MaxParamBytes: a call made
	// with a Go value is not bounded so either. It replays as the value.
	var params any = json.RawMessage(e.Parameters)
	if v, err := ijson.Decode([]byte(e.Parameters), r.limits.MaxParamDepth); err == nil && v != nil {
		params = v
	} else if e.Parameters == "null" {
		// Recorded for parameters that had no JSON form (Run reads the
		// JSON text null as no parameters): they replay as text that has
		// none either, refused as they were.
		params = json.RawMessage("\x00")
	}
	inv.params = params
	inv.recorded = e.Steps
	if inv.recorded == nil {
		inv.recorded = []store.RunStep{}
	}
	_, got, _, err := r.top(ctx, inv)
	if !inv.step {
		_, got, _, err = r.answer(inv)(nil, got, true, err)
	}
	return got.Entry, err
}

// diverge compares the recorded entry want with the replayed entry got,
// members in the order they are written; at is the pointer of the entry,
// depth its nesting.
func (r *Registry) diverge(at string, want, got store.RunEntry, depth int) *Divergence {
	if want.Action != got.Action {
		return &Divergence{Path: at + "/action", Want: want.Action, Got: got.Action}
	}
	if d := divergeText(at+"/parameters", want.Parameters, got.Parameters); d != nil {
		return d
	}
	for i := 0; i < max(len(want.Steps), len(got.Steps)); i++ {
		if d := r.divergeStep(at+"/steps/"+strconv.Itoa(i), want.Steps, got.Steps, i, depth); d != nil {
			return d
		}
	}
	if want.Outcome != got.Outcome {
		return &Divergence{Path: at + "/outcome", Want: string(want.Outcome), Got: string(got.Outcome)}
	}
	if want.Error != got.Error {
		return &Divergence{Path: at + "/error", Want: string(want.Error), Got: string(got.Error)}
	}
	return divergeResult(at, want, got)
}

// divergeStep compares step i of both sides.
func (r *Registry) divergeStep(at string, want, got []store.RunStep, i, depth int) *Divergence {
	var w, g *store.RunStep
	if i < len(want) {
		w = &want[i]
	}
	if i < len(got) {
		g = &got[i]
	}
	switch wk, gk := stepKind(w), stepKind(g); {
	case wk == stepCall && gk == stepCall:
		return r.diverge(at+"/call", *w.Call, *g.Call, depth+1)
	case wk == stepCommand && gk == stepCommand:
		if d := divergeText(at+"/command", string(w.Command), string(g.Command)); d != nil {
			return d
		}
		return divergeText(at+"/result", w.Result, g.Result)
	}
	// The recorded side may be nested without bound (a Go value the host
	// built); the replayed side stops at the registry's call depth.
	return &Divergence{Path: at, Want: r.stepText(w, depth), Got: r.stepText(g, depth)}
}

// stepText is a step's canonical JSON, or "" for none, for a step with
// no JSON form, and for one whose calls nest deeper than the registry lets
// calls go below depth.
func (r *Registry) stepText(s *store.RunStep, depth int) string {
	if s == nil || callsDeeper(s, r.limits.MaxCallDepth+1-depth) {
		return ""
	}
	text, err := exactText(s)
	if err != nil {
		return ""
	}
	return text
}
