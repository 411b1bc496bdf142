package actions

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/actionreg/actions/internal/ijson"
)

// Idempotency keys (docs/database.md): a call that carries a key runs at
// most once per (principal, action, key) within a window; a retry gets
// the first call's answer. The IETF Idempotency-Key HTTP header draft
// (draft-ietf-httpapi-idempotency-key-header) gives the semantics.

// IdempotencyKeyMeta is the _meta member of an MCP tools/call request
// that carries the call's idempotency key (a string), and the _meta
// member of a listed tool whose action wants one (the value "required").
// mcpserver also reads the HTTP header Idempotency-Key.
const IdempotencyKeyMeta = "io.actionreg/idempotency-key"

// maxIdempotencyKeyLength is the longest key accepted, in bytes. A key is
// 1 to 255 printable ASCII characters (0x21 to 0x7e): a UUID, a ULID, a
// random token.
const maxIdempotencyKeyLength = 255

// defaultKeyWindow is Options.KeyWindow when left zero: how long a call
// run under a key answers its retries.
const defaultKeyWindow = 24 * time.Hour

// defaultKeyWait is Options.KeyWait when left zero: how long a retry
// waits for a first call still running under its key before it is
// refused in_progress.
const defaultKeyWait = 5 * time.Second

// batchKeyAction is the [UnitKey].Action of a batch: a batch's key is its
// own, whatever actions its steps call. It is no action's id.
const batchKeyAction = "#batch"

// checkKey refuses a key that is empty, longer than
// maxIdempotencyKeyLength or not printable ASCII: invalid_parameters,
// whose issue (keyword idempotencyKey) quotes nothing of the key.
func checkKey(key string) error {
	ok := len(key) > 0 && len(key) <= maxIdempotencyKeyLength
	for i := 0; ok && i < len(key); i++ {
		ok = key[i] >= 0x21 && key[i] <= 0x7e
	}
	if ok {
		return nil
	}
	return refusef(CodeInvalidParameters, "the idempotency key is not valid",
		Issue{Path: "", Keyword: "idempotencyKey", Message: "an idempotency key is 1 to 255 printable ASCII characters"})
}

// answerOf is the answer a keyed unit that committed records: its value
// (a batch's result, or the entry's result), and the refusal a retry
// gets (the held call's, or the rejection of a decided change).
func answerOf(k *UnitKey, v any, recs []Record, err error) Answer {
	var a Answer
	if err != nil {
		// The held call's receipt, the rejection, or the refusal of a
		// unit kept though it did not commit (Unit.Keep); a body's plain
		// error is answered as the refusal its entry records.
		rf := asRefusal(err)
		if rf == nil {
			code := CodeOf(err)
			if n := len(recs); n > 0 && recs[n-1].Entry.Error != "" {
				code = recs[n-1].Entry.Error
			}
			if code == CodeInProgress || code == CodeIdempotencyConflict {
				// A body's own error with a key's code: its retry must not
				// read as a refusal about the key.
				code = CodeInternal
			}
			rf = NewRefusal(code, "the call made with this idempotency key failed")
		}
		cp := *rf
		cp.cause = nil
		a.Refusal = &cp
		return a
	}
	n := len(recs)
	if n > 0 && recs[n-1].Entry.Outcome == OutcomeRefused && recs[n-1].Entry.Error == CodeRejected {
		a.Refusal = NewRefusal(CodeRejected, "the person rejected the change: nothing ran")
		return a
	}
	switch {
	case isAnswered(v):
		// What the caller was given (a bounded result's envelope
		// included): an entry may keep only its result's digest. A
		// batch's step results too, as they were given.
		av := v.(answered)
		a.Value = av.text
		_, a.Bounded = av.value.(*Bounded)
		if av.steps != nil {
			a.Steps = make([]AnswerStep, len(av.steps))
			for i, sv := range av.steps {
				text := "null"
				if sv != nil {
					text, _ = exactText(sv)
				}
				_, b := sv.(*Bounded)
				a.Steps[i] = AnswerStep{Value: json.RawMessage(text), Bounded: b}
			}
		}
	case k.Action == batchKeyAction:
		if v != nil {
			a.Value, _ = exactText(v)
		}
	case n > 0:
		a.Value = recs[n-1].Entry.Result
	}
	return a
}

// isAnswered reports whether v is a unit's value with its text.
func isAnswered(v any) bool {
	_, ok := v.(answered)
	return ok
}

// answeredFrom is the result and error a recorded unit gives a retry: its
// value in JSON's Go types, its records, its refusal (a copy).
func answeredFrom(rec *Recorded) (Result, error) {
	res := Result{Records: rec.Records}
	if rec.Refusal != nil {
		cp := *rec.Refusal
		return res, &cp
	}
	if rec.Value != "" {
		v, err := answerValue(rec.Value, rec.Bounded)
		if err != nil {
			return res, err
		}
		res.Value, res.Text = v, rec.Value
	}
	if rec.Steps != nil {
		res.StepResults = make([]any, len(rec.Steps))
		for i, st := range rec.Steps {
			v, err := answerValue(string(st.Value), st.Bounded)
			if err != nil {
				return Result{Records: rec.Records}, err
			}
			res.StepResults[i] = v
		}
	}
	return res, nil
}

// answerValue reads back a value of a recorded answer: in JSON's Go
// types, or the *Bounded it was when bounded.
func answerValue(text string, bounded bool) (any, error) {
	v, err := ijson.Decode([]byte(text), 0)
	if err != nil {
		return nil, internalRefusal("a recorded result cannot be read back", err)
	}
	if !bounded {
		return v, nil
	}
	m, _ := v.(map[string]any)
	bm := m["bounded"]
	btext, err := exactText(bm)
	if err != nil {
		return nil, internalRefusal("a recorded result cannot be read back", err)
	}
	b := &Bounded{Value: m["value"]}
	d := json.NewDecoder(strings.NewReader(btext))
	d.UseNumber()
	if err := d.Decode(&b.Bound); err != nil {
		return nil, internalRefusal("a recorded result cannot be read back", err)
	}
	return b, nil
}

// keySentence ends the description of a tool whose action needs an
// idempotency key, in every export profile: the model reads it.
const keySentence = "Each call needs an idempotency key (MCP _meta \"" + IdempotencyKeyMeta +
	"\"): a new one for each intended change, the same one only to retry that call, which then runs once."
