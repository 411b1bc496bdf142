package actions

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/actionreg/actions/bound"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/internal/ijson"
	"github.com/actionreg/actions/store"
)

// Idempotency keys (docs/database.md): a call that carries a key runs at
// most once per (principal, action, key) within a window; a retry gets
// the first call's answer. The IETF Idempotency-Key HTTP header draft
// (draft-ietf-httpapi-idempotency-key-header) gives the semantics.

// idempotencyKeyMeta is the _meta member of a listed tool whose action
// wants an idempotency key (the value "required"), and of an MCP
// tools/call request that carries one (mcpserver.IdempotencyKeyMeta).
const idempotencyKeyMeta = "io.actionreg/idempotency-key"

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

// batchKeyAction is the [store.KeyRecord].Action of a batch: a batch's key is
// its own, whatever actions its steps call. It is no action's id.
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
	return refusef(codes.InvalidParameters, "the idempotency key is not valid",
		Issue{Path: "", Keyword: "idempotencyKey", Message: "an idempotency key is 1 to 255 printable ASCII characters"})
}

// unitKey is what the registry runs a unit under when its call carries
// an idempotency key.
type unitKey struct {
	principal, action, key string
	// digest is the hex SHA-256 of the canonical JSON of the parameters
	// as given (of the batch): a retry whose digest differs is refused
	// idempotency_conflict.
	digest string
	// now is the registry's clock at the call; expires is now plus the
	// window.
	now, expires time.Time
	// wait bounds how long a retry waits for a first call still running.
	wait time.Duration
	// replace: a decision on a change held under the key; it claims
	// nothing and, when it commits, its answer replaces the held call's.
	replace bool
	// audit is the retry's audit record, for the audit line of a retry
	// a recorded unit answers.
	audit store.Audit
	// admit, when not nil, is run before a recorded unit answers a
	// retry: its error refuses the retry instead (a batch's steps'
	// rates, counted as for any call).
	admit func(ctx context.Context) (store.Record, error)
}

// record is k's row with answer a (canonical JSON) for the unit named
// unit, answering until k.until(a).
func (k *unitKey) record(unit string, a *answer) (store.KeyRecord, error) {
	row := store.KeyRecord{Principal: k.principal, Action: k.action, Key: k.key, Digest: k.digest, Expires: k.expires, Unit: unit}
	if a == nil {
		return row, nil
	}
	text, err := CanonicalJSON(a)
	if err != nil {
		return store.KeyRecord{}, internalRefusal("the answer of an idempotency key has no canonical JSON", err)
	}
	row.Answer, row.Expires = text, k.until(*a)
	return row, nil
}

// until is when the unit recorded under k with answer a stops answering
// retries: k.expires, or sooner the expiry of the pending change a held
// call's receipt names, so that no retry is answered with a receipt
// nobody can decide any more (a retry after it runs as a first call and
// holds a new change).
func (k *unitKey) until(a answer) time.Time {
	if rf := a.Refusal; rf != nil && rf.Pending != nil && !rf.Pending.Expires.IsZero() && rf.Pending.Expires.Before(k.expires) {
		return rf.Pending.Expires
	}
	return k.expires
}

// keyConflict is the refusal of a call whose key recorded a call with
// other parameters.
func keyConflict() *Refusal {
	return NewRefusal(codes.IdempotencyConflict, "this idempotency key was used for a call with other parameters")
}

// Polling a claim that still runs: the first pause, and the longest.
const (
	keyPollFirst = time.Millisecond
	keyPollMax   = 50 * time.Millisecond
)

// claimKey claims k in ks for a unit about to run and returns the
// claim's token, or the recorded row that answers the call (found). A
// claim still running is polled until it is settled, at most k.wait
// (then in_progress) or until ctx ends (its error, as it is); a recorded
// row with another digest is idempotency_conflict.
func claimKey(ctx context.Context, ks store.KeyStore, k *unitKey) (token string, found *store.KeyRecord, err error) {
	token, err = newClaimToken()
	if err != nil {
		return "", nil, err
	}
	claim, _ := k.record(token, nil)
	var (
		deadline <-chan time.Time
		pause    = keyPollFirst
	)
	for {
		found, err := ks.ClaimKey(ctx, claim, k.now)
		switch {
		case err != nil:
			return "", nil, err
		case found == nil:
			return token, nil, nil
		case found.Answer != nil && found.Digest != k.digest:
			return "", nil, keyConflict()
		case found.Answer != nil:
			return "", found, nil
		}
		if deadline == nil {
			t := time.NewTimer(k.wait)
			defer t.Stop()
			deadline = t.C
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-deadline:
			t.Stop()
			return "", nil, inProgress(k.now.Add(k.wait))
		case <-ctx.Done():
			t.Stop()
			return "", nil, ctx.Err()
		}
		pause = min(2*pause, keyPollMax)
	}
}

// newClaimToken draws the token of a claim: 128 random bits.
func newClaimToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", internalRefusal("no random token for an idempotency key's claim", err)
	}
	return "claim:" + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// settleKey tells ks, inside the attempt whose unit is u (its value v),
// what the unit leaves under k: its answer when it commits; when it does
// not, the answer of its refusal if a body of it started (keep), else the
// claim token's row deleted. A failure to say so undoes the unit.
func settleKey(ctx context.Context, ks store.KeyStore, k *unitKey, token string, keep bool, v any, u *store.Unit) {
	var (
		done, undone store.KeyRecord
		err          error
	)
	if u.Commit {
		a := answerOf(k, v, u.Records, u.Err)
		done, err = k.record(token, &a)
	}
	if err == nil {
		undone, err = k.record(token, nil)
		if k.replace {
			undone = store.KeyRecord{} // the held call's row stays as it is
		}
	}
	if err == nil && keep {
		uerr := u.Err
		if u.Commit || uerr == nil {
			// Kept only if the commit fails: the body ran, its changes
			// could not be kept.
			uerr = NewRefusal(codes.Internal, "the call ran but its changes could not be kept")
		}
		a := answerOf(k, nil, u.Records, uerr)
		undone, err = k.record(token, &a)
	}
	if err == nil {
		err = ks.SettleKey(ctx, done, undone)
	}
	if err != nil {
		u.Commit, u.Err = false, errors.Join(u.Err, err)
	}
}

// answerRetry answers a retry from the recorded row found: it runs
// k.admit, then writes the retry's audit line in a unit of s that
// commits nothing, and returns the records written and the recorded
// answer.
func answerRetry(ctx context.Context, s store.Store, k *unitKey, found *store.KeyRecord) ([]store.Record, Result, error) {
	res, answerErr := answeredFrom(found.Answer, found.Records)
	line := auditLine(found, k, answerErr)
	if k.admit != nil {
		rec, err := k.admit(ctx)
		if err != nil {
			line = rec
			recs, serr := s.Atomic(ctx, func(context.Context) store.Unit { return store.Unit{Records: []store.Record{line}, Err: err} })
			return recs, Result{}, joinStore(err, serr)
		}
	}
	recs, err := s.Atomic(ctx, func(context.Context) store.Unit { return store.Unit{Records: []store.Record{line}} })
	if err != nil {
		return recs, Result{}, err
	}
	return recs, res, answerErr
}

// joinStore is err, with the store's failure to record it joined.
func joinStore(err, serr error) error {
	if serr == nil || serr == err {
		return err
	}
	return errors.Join(err, serr)
}

// auditLine is the one record written for a retry that the recorded row
// answered: the recorded unit's last entry, as it is, with the retry's
// audit (k.audit), whose Answered names the recorded unit; rolled back,
// since the retry changed nothing (a replay skips it, and reads of kept
// records leave it out). A unit that left no record (a claim settled
// after its process died) gives an entry of k's action refused with the
// code of answerErr, the error the row answers.
func auditLine(found *store.KeyRecord, k *unitKey, answerErr error) store.Record {
	rec := store.Record{Entry: store.RunEntry{Steps: []store.RunStep{}, Outcome: store.OutcomeRefused, Error: CodeOf(answerErr)}}
	if k.action != batchKeyAction {
		rec.Entry.Action = k.action
	}
	if n := len(found.Records); n > 0 {
		rec = cloneRecord(found.Records[n-1])
	}
	a := k.audit
	a.Answered = found.Unit
	rec.Audit, rec.RolledBack = a, true
	return rec
}

// inProgress is the refusal of a retry whose first call still runs.
func inProgress(retryAt time.Time) *Refusal {
	r := NewRefusal(codes.InProgress, "a call with this idempotency key is still running")
	r.RetryAt = retryAt
	return r
}

// answer is what a unit run under a key answers its retries with, and
// what an ended task answers: kept as canonical JSON (KeyRecord.Answer,
// Task.Answer).
type answer struct {
	// Value is the canonical JSON of the unit's value ("" for none).
	Value string `json:"value,omitempty"`
	// Refusal is the refusal a retry gets, or nil: the receipt of a held
	// call (confirmation_required), or the rejection of its change.
	Refusal *Refusal `json:"refusal,omitempty"`
	// Bounded is true when Value is a [bound.Bounded] envelope.
	Bounded bool `json:"bounded,omitempty"`
	// Steps are a batch's step results as its caller was given them
	// ([Result].StepResults): each step's canonical JSON ("null" for
	// none) and whether it is a [bound.Bounded] envelope.
	Steps []answerStep `json:"steps,omitempty"`
}

// answerStep is one step's result in a recorded answer.
type answerStep struct {
	Value   json.RawMessage `json:"value"`
	Bounded bool            `json:"bounded,omitempty"`
}

// answered carries what a unit gives its caller beside the value: the
// canonical JSON of the value as given, and a batch's step results.
type answered struct {
	value any
	text  string
	steps []any
}

// answerOf is the answer a keyed unit records: its value (a batch's
// result, or the entry's result), or the refusal a retry gets (the held
// call's, the rejection of a decided change, the refusal of a unit kept
// though it did not commit).
func answerOf(k *unitKey, v any, recs []store.Record, err error) answer {
	var a answer
	if err != nil {
		// A body's plain error is answered as the refusal its entry
		// records.
		rf := asRefusal(err)
		if rf == nil {
			code := CodeOf(err)
			if n := len(recs); n > 0 && recs[n-1].Entry.Error != "" {
				code = recs[n-1].Entry.Error
			}
			if code == codes.InProgress || code == codes.IdempotencyConflict || code == codes.OutcomeUnknown {
				// A body's own error with a key's code: its retry must not
				// read as a refusal about the key.
				code = codes.Internal
			}
			rf = NewRefusal(code, "the call made with this idempotency key failed")
		}
		cp := *rf
		cp.cause = nil
		a.Refusal = &cp
		return a
	}
	n := len(recs)
	if n > 0 && recs[n-1].Entry.Outcome == store.OutcomeRefused && recs[n-1].Entry.Error == codes.Rejected {
		a.Refusal = rejection(recs[n-1].Audit.Reason)
		return a
	}
	switch {
	case isAnswered(v):
		// What the caller was given (a bounded result's envelope
		// included): an entry may keep only its result's digest. A
		// batch's step results too, as they were given.
		av := v.(answered)
		a.Value = av.text
		_, a.Bounded = av.value.(*bound.Bounded)
		if av.steps != nil {
			a.Steps = make([]answerStep, len(av.steps))
			for i, sv := range av.steps {
				text := "null"
				if sv != nil {
					text, _ = exactText(sv)
				}
				_, b := sv.(*bound.Bounded)
				a.Steps[i] = answerStep{Value: json.RawMessage(text), Bounded: b}
			}
		}
	case k != nil && k.action == batchKeyAction:
		if v != nil {
			a.Value, _ = exactText(v)
		}
	case n > 0:
		a.Value = recs[n-1].Entry.Result
	}
	return a
}

// answerText is a's canonical JSON. An answer always has one: its
// texts are canonical JSON already, its refusal plain data.
func answerText(a answer) json.RawMessage {
	text, err := CanonicalJSON(a)
	if err != nil {
		text, _ = CanonicalJSON(answer{Refusal: NewRefusal(codes.Internal, "the answer has no canonical JSON")})
	}
	return text
}

// isAnswered reports whether v is a unit's value with its text.
func isAnswered(v any) bool {
	_, ok := v.(answered)
	return ok
}

// answeredFrom is the result and error a recorded answer (canonical JSON)
// gives a retry: its value in JSON's Go types, the records, its refusal.
func answeredFrom(text json.RawMessage, recs []store.Record) (Result, error) {
	res := Result{Records: recs}
	var a answer
	if err := json.Unmarshal(text, &a); err != nil {
		return res, internalRefusal("a recorded answer cannot be read back", err)
	}
	if a.Refusal != nil {
		return res, a.Refusal
	}
	if a.Value != "" {
		v, err := answerValue(a.Value, a.Bounded)
		if err != nil {
			return res, err
		}
		res.Value, res.Text = v, a.Value
	}
	if a.Steps != nil {
		res.StepResults = make([]any, len(a.Steps))
		for i, st := range a.Steps {
			v, err := answerValue(string(st.Value), st.Bounded)
			if err != nil {
				return Result{Records: recs}, err
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
	b := &bound.Bounded{Value: m["value"]}
	d := json.NewDecoder(strings.NewReader(btext))
	d.UseNumber()
	if err := d.Decode(&b.Bound); err != nil {
		return nil, internalRefusal("a recorded result cannot be read back", err)
	}
	return b, nil
}

// keySentence ends the description of a tool whose action needs an
// idempotency key, in every export profile: the model reads it.
const keySentence = "Each call needs an idempotency key (MCP _meta \"" + idempotencyKeyMeta +
	"\"): a new one for each intended change, the same one only to retry that call, which then runs once."

// giveUpClaim deletes the claim token of k, if it is still there
// unsettled, in a unit of its own that keeps nothing else. The call
// ended (or panicked) already: the write is detached from ctx's
// cancellation and bounded.
func giveUpClaim(ctx context.Context, ks store.KeyStore, k *unitKey, token string) {
	undone, _ := k.record(token, nil)
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), giveUpTimeout)
	defer cancel()
	_, _ = ks.Atomic(wctx, func(ctx context.Context) store.Unit {
		return store.Unit{Err: ks.SettleKey(ctx, store.KeyRecord{}, undone)}
	})
}

// giveUpTimeout bounds the write of giveUpClaim.
const giveUpTimeout = 10 * time.Second
