package actions

import (
	"encoding/json"

	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/store"
)

// Divergence is the first place where a replayed call departs from the
// record it replays. Replay returns it as its error; its code is
// diverged ([CodeOf], [codes.Diverged]), whatever the replayed call gave.
type Divergence struct {
	// Path is the JSON Pointer (RFC 6901), into the entry's JSON form, of
	// the first member that differs, comparing in the order of RunEntry's
	// fields (not the sorted order of its canonical JSON): "/parameters",
	// "/steps/2/command", "/steps/2/result", "/outcome", "/error",
	// "/result"; the same inside a nested call's entry, where the action
	// called may differ too ("/steps/0/call/action",
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
	// Code is the host's code of the replayed call's refusal ("" when it
	// was done): a gate code (forbidden_capability, confirmation_required)
	// says today's policy decides otherwise, invalid_parameters that
	// today's schema refuses the recorded parameters, unknown_action that
	// the action is gone; another code, or none, that the body does
	// otherwise.
	Code codes.Code
	// Err is the error the replayed call returned, if any, for the host.
	Err error
}

// Error names the path and the cause, never a value: values may carry
// personal data.
func (d *Divergence) Error() string {
	return "actions: the replay departs from its entry at " + d.Path + ": " + d.Reason()
}

// Reason says in a few words why the replay departed, from Code.
func (d *Divergence) Reason() string {
	switch {
	case d.Code == "":
		return "the body does otherwise today"
	case d.Code == codes.UnknownAction:
		return "the action is not registered today"
	case d.Code == codes.InvalidParameters:
		return "today's parameters schema refuses the recorded parameters"
	}
	if gateCode(d.Code) {
		return "today's policy decides otherwise (" + string(d.Code) + ")"
	}
	return "the call is refused today (" + string(d.Code) + ")"
}

// Is reports whether target is [codes.Diverged].
func (d *Divergence) Is(target error) bool { return target == codes.Diverged }

type kindOfStep int

const (
	stepNone kindOfStep = iota
	stepCommand
	stepCall
	stepBoth // not a step Run records: never matches
)

func stepKind(s *store.RunStep) kindOfStep {
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

// callsDeeper reports whether the calls under s nest more than n deep.
func callsDeeper(s *store.RunStep, n int) bool {
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

// divergeResult compares the recorded result of want with the replayed
// one of got, as texts when both were kept, as digests when either was
// kept as one (the recorded text in canonical form).
func divergeResult(at string, want, got store.RunEntry) *Divergence {
	if want.ResultSHA256 == "" && got.ResultSHA256 == "" {
		return divergeText(at+"/result", want.Result, got.Result)
	}
	wd, gd := want.ResultSHA256, got.ResultSHA256
	if wd == "" {
		wd = digestOf(canonicalForm(want.Result))
	}
	if gd == "" {
		gd = digestOf(got.Result)
	}
	if wd == gd {
		return nil
	}
	return &Divergence{Path: at + "/resultSHA256", Want: wd, Got: gd}
}
