// The canonical writer's own form of a run entry and an audit record: their members in
// RFC 8785 order, written straight from the struct, with no reflection.

package actions

import (
	"github.com/actionreg/actions/store"
	"strconv"
	"unsafe"
)

// entry writes e as encoding/json would marshal it and the writer then
// canonicalise the text, byte for byte, without the round trip: every
// record's entry is written this way (a store's row, a JSON Lines log).
// The member names are ASCII, so their RFC 8785 order (§3.2.3, UTF-16
// code units) is their byte order, fixed here.
func (w *canonicalWriter) entry(e *store.RunEntry, depth int) error {
	if depth >= canonicalMaxDepth {
		return &CanonicalError{Reason: reasonTooDeep}
	}
	// A nested call that holds itself has no JSON form; encoding/json
	// refuses such a pointer cycle as an unsupported value.
	self := container{unsafe.Pointer(e), -2}
	for _, q := range w.open {
		if q == self {
			return &CanonicalError{Reason: reasonUnsupported}
		}
	}
	w.open = append(w.open, self)
	defer func() { w.open = w.open[:len(w.open)-1] }()

	w.buf = append(w.buf, `{"action":`...)
	if err := w.string(e.Action); err != nil {
		return err
	}
	if e.AsHost {
		w.buf = append(w.buf, `,"asHost":true`...)
	}
	if e.Error != "" {
		w.buf = append(w.buf, `,"error":`...)
		if err := w.string(string(e.Error)); err != nil {
			return err
		}
	}
	w.buf = append(w.buf, `,"outcome":`...)
	if err := w.string(string(e.Outcome)); err != nil {
		return err
	}
	w.buf = append(w.buf, `,"parameters":`...)
	if err := w.string(e.Parameters); err != nil {
		return err
	}
	if e.ParametersBytes != 0 {
		w.buf = append(w.buf, `,"parametersBytes":`...)
		w.buf = strconv.AppendInt(w.buf, int64(e.ParametersBytes), 10)
	}
	if e.ParametersSHA256 != "" {
		w.buf = append(w.buf, `,"parametersSHA256":`...)
		if err := w.string(e.ParametersSHA256); err != nil {
			return err
		}
	}
	if e.Result != "" {
		w.buf = append(w.buf, `,"result":`...)
		if err := w.string(e.Result); err != nil {
			return err
		}
	}
	if e.ResultBytes != 0 {
		w.buf = append(w.buf, `,"resultBytes":`...)
		w.buf = strconv.AppendInt(w.buf, int64(e.ResultBytes), 10)
	}
	if e.ResultSHA256 != "" {
		w.buf = append(w.buf, `,"resultSHA256":`...)
		if err := w.string(e.ResultSHA256); err != nil {
			return err
		}
	}
	w.buf = append(w.buf, `,"steps":`...)
	if err := w.steps(e.Steps, depth+1); err != nil {
		return within(err, "steps")
	}
	w.buf = append(w.buf, '}')
	return nil
}

// steps writes an entry's steps (null for nil, as encoding/json does).
func (w *canonicalWriter) steps(steps []store.RunStep, depth int) error {
	if steps == nil {
		w.buf = append(w.buf, "null"...)
		return nil
	}
	if depth >= canonicalMaxDepth {
		return &CanonicalError{Reason: reasonTooDeep}
	}
	w.buf = append(w.buf, '[')
	for i := range steps {
		if i > 0 {
			w.buf = append(w.buf, ',')
		}
		if err := w.step(&steps[i], depth+1); err != nil {
			return within(err, strconv.Itoa(i))
		}
	}
	w.buf = append(w.buf, ']')
	return nil
}

// step writes one step: call, command and result, each left out when
// empty.
func (w *canonicalWriter) step(s *store.RunStep, depth int) error {
	if depth >= canonicalMaxDepth {
		return &CanonicalError{Reason: reasonTooDeep}
	}
	w.buf = append(w.buf, '{')
	sep := false
	if s.Call != nil {
		w.buf = append(w.buf, `"call":`...)
		if err := w.entry(s.Call, depth+1); err != nil {
			return within(err, "call")
		}
		sep = true
	}
	if len(s.Command) > 0 {
		if sep {
			w.buf = append(w.buf, ',')
		}
		w.buf = append(w.buf, `"command":`...)
		if err := w.command(s.Command, depth+1); err != nil {
			return within(err, "command")
		}
		sep = true
	}
	if s.Result != "" {
		if sep {
			w.buf = append(w.buf, ',')
		}
		w.buf = append(w.buf, `"result":`...)
		if err := w.string(s.Result); err != nil {
			return err
		}
	}
	w.buf = append(w.buf, '}')
	return nil
}

// command writes a step's command, JSON text, canonicalised; text that
// is not one JSON value is what encoding/json refuses to marshal.
func (w *canonicalWriter) command(text []byte, depth int) error {
	err := w.raw(text, depth)
	if ce, ok := err.(*CanonicalError); ok && ce.Reason == reasonSyntax {
		return &CanonicalError{Reason: reasonUnsupported, Err: ce.Err}
	}
	return err
}

// record writes r as encoding/json would marshal it and the writer then
// canonicalise the text (see entry): its members are "audit", "entry"
// and, when set, "rolledBack", in that order. A JSON Lines log
// (EntryWriter) writes every record this way.
func (w *canonicalWriter) record(r *store.Record, depth int) error {
	if depth >= canonicalMaxDepth {
		return &CanonicalError{Reason: reasonTooDeep}
	}
	w.buf = append(w.buf, `{"audit":`...)
	if err := w.audit(&r.Audit, depth+1); err != nil {
		return err
	}
	w.buf = append(w.buf, `,"entry":`...)
	if err := w.exactly(func() error { return w.entry(&r.Entry, depth+1) }); err != nil {
		return err
	}
	if r.RolledBack {
		w.buf = append(w.buf, `,"rolledBack":true`...)
	}
	w.buf = append(w.buf, '}')
	return nil
}

// audit writes a as encoding/json would marshal it and the writer then
// canonicalise the text (see entry); its caller, when set, takes the
// general route.
func (w *canonicalWriter) audit(a *store.Audit, depth int) error {
	if depth >= canonicalMaxDepth {
		return &CanonicalError{Reason: reasonTooDeep}
	}
	w.buf = append(w.buf, '{')
	sep := false
	member := func(name string) {
		if sep {
			w.buf = append(w.buf, ',')
		}
		sep = true
		w.buf = append(w.buf, '"')
		w.buf = append(w.buf, name...)
		w.buf = append(w.buf, '"', ':')
	}
	text := func(name, v string) error {
		if v == "" {
			return nil
		}
		member(name)
		return w.string(v)
	}
	if err := text("alias", a.Alias); err != nil {
		return err
	}
	if err := text("answered", a.Answered); err != nil {
		return err
	}
	member("at")
	w.buf = append(w.buf, '"')
	var err error
	if w.buf, err = a.At.AppendText(w.buf); err != nil {
		return &CanonicalError{Reason: reasonUnsupported, Err: err}
	}
	w.buf = append(w.buf, '"')
	if a.Batch {
		member("batch")
		w.buf = append(w.buf, "true"...)
	}
	if a.Caller != nil {
		member("caller")
		if err := w.marshal(a.Caller, depth+1); err != nil {
			return within(err, "caller")
		}
	}
	for _, m := range [...]struct{ name, v string }{
		{"code", string(a.Code)},
		{"idempotencyKey", a.IdempotencyKey},
		{"original", a.Original},
		{"pendingChange", a.PendingChange},
		{"reason", a.Reason},
		{"replaces", a.Replaces},
		{"spanId", a.SpanID},
		{"stage", string(a.Stage)},
		{"toolCallId", a.ToolCallID},
		{"traceId", a.TraceID},
	} {
		if err := text(m.name, m.v); err != nil {
			return err
		}
	}
	w.buf = append(w.buf, '}')
	return nil
}
