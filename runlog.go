package actions

import (
	"context"
	"errors"
	"github.com/actionreg/actions/store"
	"io"
	"sync"
)

// RunLog keeps records in memory, in the order their units were settled:
// a [store.Store] with no unit of work of its own (what a body changes is not
// undone with it). It is safe for concurrent use. The zero value is an
// empty log, ready to use.
type RunLog struct {
	mu      sync.Mutex
	records []store.Record
	keys    runLogKeys // the units run under idempotency keys
	tasks   map[string]store.Task
	swept   int // how many tasks the last sweep of expired ones left
}

// NewRunLog returns an empty log.
func NewRunLog() *RunLog { return &RunLog{} }

// Atomic runs fn once and appends a deep copy of its records, marked
// rolled back unless the unit commits, with what fn settled under a key
// ([RunLog.SettleKey]).
func (l *RunLog) Atomic(ctx context.Context, fn func(ctx context.Context) store.Unit) ([]store.Record, error) {
	lu := &runLogUnit{log: l}
	u := fn(context.WithValue(ctx, runLogUnitKey{}, lu))
	for i := range u.Records {
		u.Records[i].RolledBack = !u.Commit
	}
	cp := cloneRecords(u.Records)
	l.mu.Lock()
	l.records = append(l.records, cp...)
	l.settle(lu, u.Commit, u.Records)
	l.mu.Unlock()
	return u.Records, u.Err
}

// add appends deep copies of records: the caller's stay its own.
func (l *RunLog) add(records ...store.Record) {
	cp := make([]store.Record, len(records))
	for i, r := range records {
		cp[i] = cloneRecord(r)
	}
	l.mu.Lock()
	l.records = append(l.records, cp...)
	l.mu.Unlock()
}

// Records returns a deep copy of the records kept so far, in order,
// rolled-back ones included (Record.RolledBack set: refused calls,
// undone units, audit lines), which a replay of the log skips.
func (l *RunLog) Records() []store.Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]store.Record, len(l.records))
	for i, r := range l.records {
		out[i] = cloneRecord(r)
	}
	return out
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
func (w *EntryWriter) Write(rec store.Record) {
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
