package actions

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/actionreg/actions/internal/ijson"
)

// Divergence is the first place where a replayed call departs from the
// entry it replays. Replay returns it as its error.
type Divergence struct {
	// Path is the JSON Pointer (RFC 6901), into the entry's JSON form, of
	// the first member that differs, comparing in the order of RunEntry's
	// fields (not the sorted order of its canonical JSON): "/parameters", "/steps/2/command", "/steps/2/result", "/outcome",
	// "/error", "/result"; the same inside a nested call's entry, where
	// the action called may differ too ("/steps/0/call/action",
	// "/steps/0/call/outcome"); or "/steps/3" for a step that one side
	// lacks or that is a command on one side and a call on the other.
	Path string
	// Want is what the recorded entry holds at Path, as it holds it (a
	// text read from a log may not be canonical); Got is what the replay
	// gave, canonical: JSON text for parameters, results and commands,
	// plain text for action, outcome and error, and the whole step's
	// canonical JSON at a step's path (the recorded step's too). Empty
	// when that side has nothing there, or holds a step with no JSON form
	// or with calls nested deeper than Limits.MaxCallDepth. These are the
	// host's own values; the error message never includes them.
	Want, Got string
	// err is the error the replayed call returned, if any.
	err error
}

// Error names the path only: the values may carry personal data.
func (d *Divergence) Error() string {
	return "actions: the replay departs from its entry at " + d.Path
}

// Unwrap returns the error the replayed call returned (nil when it was
// done), so that, for instance, errors.Is(err, ErrUnknownAction) tells
// that the entry's action is no longer registered.
func (d *Divergence) Unwrap() error { return d.err }

// Replay runs again the call that entry records, on the same action and
// the entry's parameters, and compares the new run with entry step by step
// in canonical JSON (RFC 8785): the parameters after the check, each
// command and its result, each nested call's entry at any depth, the
// outcome, the error code and the result. Recorded texts are compared in
// canonical form, so an entry read back from a log with other white space
// or member order still matches.
//
// The call goes through the registry as [Registry.Run] makes it: the
// parameters are checked against the schema registered now, and the body
// runs for real with the environment host.Env builds, so a host replays
// against a store it can roll back, or one that serves the recorded
// results. host.OnEntry is not called: a replay is not a new call of the
// log. host may be nil.
//
// Refs: the recorded parameters of a call whose body ran hold refs already
// resolved to keys, and are not resolved again. Those of a call refused
// before its body ran were recorded as given, and go through host.Resolve
// again, as do the parameters of every nested call the body makes. An
// entry does not say which of the two a refused entry without steps is, so
// every such entry is taken as refused before its body: its body never
// runs on values that were not resolved. When a body refused before its
// first step, its keys are resolved again; a resolver that gives a key
// back for a key (RefMatches.ID) makes such replays exact, and is what a
// body that passes keys to nested calls needs anyway.
//
// It returns the replayed entry, and an error:
//   - nil when the replay matches entry, whether the call was done or
//     refused the same way both times;
//   - *Divergence at the first member that differs; its Unwrap gives the
//     replayed call's own error, if any;
//   - ctx.Err() when ctx was done by the end of the replay, since a
//     cancelled run says nothing about the entry.
func (r *Registry[C]) Replay(ctx context.Context, entry RunEntry, host *Host[C]) (RunEntry, error) {
	h := Host[C]{}
	if host != nil {
		h = *host
	}
	h.OnEntry = nil
	// Only parameters recorded as given are resolved (see Refs above).
	var resolve RefResolver
	if entry.Outcome == OutcomeRefused && len(entry.Steps) == 0 {
		resolve = h.Resolve
	}
	// The recorded text is the parameters' canonical form, not the text a
	// caller sent, so its size is not held to MaxParamBytes: a call made
	// with a Go value is not bounded so either. It replays as the value.
	var params any = json.RawMessage(entry.Parameters)
	if v, err := ijson.Decode([]byte(entry.Parameters), r.limits.MaxParamDepth); err == nil && v != nil {
		params = v
	} else if entry.Parameters == "null" {
		// Recorded for parameters that had no JSON form (Run reads the
		// JSON text null as no parameters): they replay as text that has
		// none either, refused as they were.
		params = json.RawMessage("\x00")
	}
	_, got, err := r.run(ctx, entry.Action, params, &h, resolve, 0)
	if cerr := ctx.Err(); cerr != nil {
		return got, cerr
	}
	if d := r.diverge("", entry, got, 0); d != nil {
		d.err = err
		return got, d
	}
	return got, nil
}

// diverge compares the recorded entry want with the replayed entry got,
// members in the order they are written; at is the pointer of the entry,
// depth its nesting.
func (r *Registry[C]) diverge(at string, want, got RunEntry, depth int) *Divergence {
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
	return divergeText(at+"/result", want.Result, got.Result)
}

// divergeStep compares step i of both sides.
func (r *Registry[C]) divergeStep(at string, want, got []RunStep, i, depth int) *Divergence {
	var w, g *RunStep
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

type kindOfStep int

const (
	stepNone kindOfStep = iota
	stepCommand
	stepCall
	stepBoth // not a step Run records: never matches
)

func stepKind(s *RunStep) kindOfStep {
	switch {
	case s == nil:
		return stepNone
	case s.Call != nil && s.Command != nil:
		return stepBoth
	case s.Call != nil:
		return stepCall
	}
	return stepCommand
}

// divergeText compares two JSON texts in canonical form; the replayed one
// is canonical already.
func divergeText(at, want, got string) *Divergence {
	if want == got || canonicalForm(want) == got {
		return nil
	}
	return &Divergence{Path: at, Want: want, Got: got}
}

// canonicalForm is the canonical JSON of text, or text itself when it is
// not JSON (it then differs from any replayed text).
func canonicalForm(text string) string {
	if text == "" {
		return ""
	}
	c, err := exactText(json.RawMessage(text))
	if err != nil {
		return text
	}
	return c
}

// stepText is a step's canonical JSON, or "" for none, for a step with
// no JSON form, and for one whose calls nest deeper than the registry lets
// calls go below depth.
func (r *Registry[C]) stepText(s *RunStep, depth int) string {
	if s == nil || callsDeeper(s, r.limits.MaxCallDepth+1-depth) {
		return ""
	}
	text, err := exactText(s)
	if err != nil {
		return ""
	}
	return text
}

// callsDeeper reports whether the calls under s nest more than n deep.
func callsDeeper(s *RunStep, n int) bool {
	if s.Call == nil {
		return false
	}
	if n <= 0 {
		return true
	}
	for i := range s.Call.Steps {
		if callsDeeper(&s.Call.Steps[i], n-1) {
			return true
		}
	}
	return false
}
