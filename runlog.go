package actions

import (
	"encoding/json"
	"io"
	"sync"
)

// Outcome is how a call ended.
type Outcome string

// The outcomes of a call.
const (
	OutcomeDone    Outcome = "done"
	OutcomeRefused Outcome = "refused"
)

// RunEntry records one call: the reference's run_entry, field for field.
// Replaying a body against its entry compares these texts.
type RunEntry struct {
	// Action is the id called.
	Action string `json:"action"`
	// Parameters is the canonical JSON (RFC 8785) of the checked
	// parameters, defaults filled and refs resolved; for a call refused
	// before its check passed, of the parameters as given ("null" when
	// they were not JSON text, or larger than Limits.MaxParamBytes).
	Parameters string `json:"parameters"`
	// Steps are what the body did, in order: commands it emitted and
	// actions it called. Never nil.
	Steps []RunStep `json:"steps"`
	// Outcome is done or refused.
	Outcome Outcome `json:"outcome"`
	// Error is the code of a refused call ([CodeOf] its error: a
	// refusal's code, the code of an error with a Code() string method,
	// or internal); empty when done.
	Error Code `json:"error,omitempty"`
	// Result is the canonical JSON of the body's result; empty when the
	// body returned nil or the call was refused.
	Result string `json:"result,omitempty"`
}

// RunStep is one step of a body: a command with its result, or a nested
// call. Exactly one of Command and Call is set.
type RunStep struct {
	// Command is the command as the body emitted it, in canonical JSON:
	// placeholders such as ${now()} stay as they are.
	Command json.RawMessage `json:"command,omitempty"`
	// Result is the canonical JSON of the command's result; empty for
	// none.
	Result string `json:"result,omitempty"`
	// Call is the entry of a nested call, done or refused.
	Call *RunEntry `json:"call,omitempty"`
}

// refused marks e as refused by err, with the parameters text params.
func (e RunEntry) refused(err error, params string) RunEntry {
	e.Parameters = params
	e.Outcome = OutcomeRefused
	e.Error = CodeOf(err)
	e.Result = ""
	return e
}

// RunLog keeps run entries in memory, in the order they were recorded. It
// is safe for concurrent use. Pass its Record method as [Host].OnEntry.
type RunLog struct {
	mu      sync.Mutex
	entries []RunEntry
}

// NewRunLog returns an empty log.
func NewRunLog() *RunLog { return &RunLog{} }

// Record appends a deep copy of an entry: the caller's entry, steps
// included, stays its own.
func (l *RunLog) Record(e RunEntry) {
	e = e.clone()
	l.mu.Lock()
	l.entries = append(l.entries, e)
	l.mu.Unlock()
}

// Entries returns a deep copy of the entries recorded so far: changing
// it, steps included, leaves the log as it was.
func (l *RunLog) Entries() []RunEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]RunEntry, len(l.entries))
	for i, e := range l.entries {
		out[i] = e.clone()
	}
	return out
}

// clone copies e with its steps, commands and nested entries.
func (e RunEntry) clone() RunEntry {
	if e.Steps == nil {
		return e
	}
	steps := make([]RunStep, len(e.Steps))
	for i, s := range e.Steps {
		if s.Command != nil {
			s.Command = append(json.RawMessage(nil), s.Command...)
		}
		if s.Call != nil {
			c := s.Call.clone()
			s.Call = &c
		}
		steps[i] = s
	}
	e.Steps = steps
	return e
}

// EntryWriter writes each entry it records as one line of canonical JSON
// (JSON Lines), so that a host can persist its run log. It is safe for
// concurrent use; lines are never interleaved.
type EntryWriter struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

// NewEntryWriter returns a writer of entries to w.
func NewEntryWriter(w io.Writer) *EntryWriter { return &EntryWriter{w: w} }

// Record writes one entry and a newline. After a write error it writes
// nothing more; Err returns that error.
func (w *EntryWriter) Record(e RunEntry) {
	line, err := CanonicalJSON(e)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return
	}
	if err != nil {
		w.err = err
		return
	}
	_, w.err = w.w.Write(append(line, '\n'))
}

// Err returns the first error met while writing, if any.
func (w *EntryWriter) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}
