// Recorded values: what a body draws from outside its parameters (the
// time, a new id, the next value of a database sequence), recorded in the
// entry and given back on replay.

package actions

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/actionreg/actions/internal/ijson"
	"github.com/actionreg/actions/store"
)

// Value returns a value the body draws from outside its parameters, and
// records it in the entry, so that [Registry.Replay] gives the body the
// same value back rather than a new one: the time, a new id or key, a
// random number, the next value of a database sequence the host already
// uses (fn runs the sequence's query in the unit's transaction). Durable
// execution engines record side effects the same way.
//
// On a live run Value calls fn and records a step whose command is
// {"value": name} and whose result is the value's canonical JSON
// (RFC 8785); on a replay, when the recorded step at the same position is
// that command, fn is not called and the recorded value is returned. The
// value returned is always the recorded JSON decoded into JSON's Go types
// (map[string]any, []any, string, bool, nil, json.Number), so that a live
// run and its replay see the same thing: fn's int64 comes back as a
// json.Number.
//
// Values drawn one after another replay in order; values drawn from
// several goroutines at once replay only when they were recorded in the
// order they are drawn again. Errors: fn's error as it is (nothing is
// recorded); a *CanonicalError for a value with no canonical JSON; and,
// after the body has returned, an error (nothing is drawn).
func (t *Trace) Value(name string, fn func() (any, error)) (any, error) {
	cmd, err := exactText(map[string]any{"value": name})
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	if t.closing {
		t.mu.Unlock()
		return nil, errTraceClosed
	}
	text, replayed := "", false
	if i := len(t.entry.Steps); i < len(t.recorded) {
		if s := &t.recorded[i]; stepKind(s) == stepCommand && canonicalForm(string(s.Command)) == cmd {
			text, replayed = s.Result, true
		}
	}
	t.mu.Unlock()
	if !replayed {
		v, err := fn()
		if err != nil {
			return nil, err
		}
		if text, err = exactText(v); err != nil {
			return nil, err
		}
	}
	v, err := ijson.Decode([]byte(text), maxValueDepth)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closing {
		return nil, errTraceClosed
	}
	t.entry.Steps = append(t.entry.Steps, store.RunStep{Command: json.RawMessage(cmd), Result: text})
	return v, nil
}

// maxValueDepth bounds the nesting of a recorded value read back.
const maxValueDepth = 64

// Now returns the time, recorded as a [Trace.Value] named "now" (RFC 3339
// with nanoseconds, UTC) and given back on replay. It reads the
// registry's clock (Options.Now), time.Now for a [NewTrace].
func (t *Trace) Now() time.Time {
	now := t.now
	if now == nil {
		now = time.Now
	}
	v, err := t.Value("now", func() (any, error) { return now().UTC().Format(time.RFC3339Nano), nil })
	if s, ok := v.(string); ok && err == nil {
		if at, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return at
		}
	}
	return now() // after the body returned: not recorded, as Command is not
}

// NewID returns 128 random bits as 32 lower-case hex digits (crypto/rand),
// recorded as a [Trace.Value] named "id" and given back on replay: an id
// for a new row, a key, a token the body hands out.
func (t *Trace) NewID() string {
	v, err := t.Value("id", func() (any, error) { return newHex(), nil })
	if s, ok := v.(string); ok && err == nil {
		return s
	}
	return newHex()
}

// newHex is 16 random bytes in hex.
func newHex() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand, Go 1.24)
	return hex.EncodeToString(b[:])
}
