package actions

import (
	"context"
	"encoding/json"
	"errors"
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
	// ResultSHA256 and ResultBytes stand for a result longer than
	// Limits.MaxEntryResultBytes, which the entry does not keep (Result
	// is then empty): the hex SHA-256 of its canonical JSON and that
	// text's size in bytes. Replay compares the digest. Left out
	// otherwise, so that an entry of a small result keeps the
	// reference's shape.
	ResultSHA256 string `json:"resultSHA256,omitempty"`
	ResultBytes  int    `json:"resultBytes,omitempty"`
	// AsHost is true for a nested call its body made as the host
	// ([Trace.CallAsHost]) rather than as its caller; left out otherwise.
	AsHost bool `json:"asHost,omitempty"`
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
	e.ResultSHA256, e.ResultBytes = "", 0
	return e
}

// RunLog keeps records in memory, in the order their units were settled:
// a [Store] with no unit of work of its own (what a body changes is not
// undone with it). It is safe for concurrent use. The zero value is an
// empty log, ready to use.
type RunLog struct {
	mu      sync.Mutex
	records []Record
	keys    runLogKeys // the units run under idempotency keys
}

// NewRunLog returns an empty log.
func NewRunLog() *RunLog { return &RunLog{} }

// Atomic runs fn once and appends a deep copy of its records, marked
// rolled back unless the unit commits.
func (l *RunLog) Atomic(ctx context.Context, fn func(ctx context.Context) Unit) ([]Record, error) {
	u := fn(ctx)
	for i := range u.Records {
		u.Records[i].RolledBack = !u.Commit
	}
	l.Append(u.Records...)
	return u.Records, u.Err
}

// Append appends deep copies of records: the caller's stay its own.
func (l *RunLog) Append(records ...Record) {
	cp := make([]Record, len(records))
	for i, r := range records {
		cp[i] = r.clone()
	}
	l.mu.Lock()
	l.records = append(l.records, cp...)
	l.mu.Unlock()
}

// Records returns a deep copy of the records kept so far.
func (l *RunLog) Records() []Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Record, len(l.records))
	for i, r := range l.records {
		out[i] = r.clone()
	}
	return out
}

// Entries returns a deep copy of the entries of the records kept so far:
// changing it, steps included, leaves the log as it was.
func (l *RunLog) Entries() []RunEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]RunEntry, len(l.records))
	for i, r := range l.records {
		out[i] = r.Entry.clone()
	}
	return out
}

// clone copies r deeply.
func (r Record) clone() Record {
	r.Entry = r.Entry.clone()
	if r.Audit.Caller != nil {
		c := r.Audit.Caller.clone()
		r.Audit.Caller = &c
	}
	return r
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

// EntryWriter writes each record it is given as one line of canonical
// JSON (JSON Lines), so that a host can persist its run log: pass its
// Write method as Options.OnRecord. It is safe for concurrent use; lines
// are never interleaved. A zero EntryWriter writes nothing and reports
// so in Err.
type EntryWriter struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

// NewEntryWriter returns a writer of records to w.
func NewEntryWriter(w io.Writer) *EntryWriter { return &EntryWriter{w: w} }

// errNoWriter is the error of an EntryWriter made without NewEntryWriter.
var errNoWriter = errors.New("actions: the EntryWriter has no io.Writer: make it with NewEntryWriter")

// Write writes one record and a newline. After a write error it writes
// nothing more; Err returns that error.
func (w *EntryWriter) Write(rec Record) {
	line, err := CanonicalJSON(rec)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return
	}
	switch {
	case w.w == nil:
		w.err = errNoWriter
	case err != nil:
		w.err = err
	default:
		_, w.err = w.w.Write(append(line, '\n'))
	}
}

// Err returns the first error met while writing, if any.
func (w *EntryWriter) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}
