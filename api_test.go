package actions

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/store"
)

// Faults the API review found, one test each: each failed before the API
// settled.

// The zero Registry is ready: default limits, nested calls and batches
// run.
func TestZeroRegistryIsUsable(t *testing.T) {
	var reg Registry
	assert.Equal(t, Limits{}.withDefaults(), reg.Limits())
	reg.MustRegister(
		New(Definition{ID: "a/inner"}, func(context.Context, map[string]any, *Trace) (any, error) { return "in", nil }),
		New(Definition{ID: "a/outer"}, func(ctx context.Context, _ map[string]any, t *Trace) (any, error) {
			return t.Call(ctx, "a/inner", nil)
		}),
	)
	res, err := reg.Run(context.Background(), Call{Action: "a/outer"})
	require.NoError(t, err)
	assert.Equal(t, "in", res.Value)
	res, err = reg.Run(context.Background(), Call{Batch: &Batch{Steps: []Step{{Call: "a/outer"}, {Call: "a/inner"}}}})
	require.NoError(t, err)
	assert.Len(t, res.Records, 2)
	assert.Equal(t, "in", res.Value)
}

// Register keeps its own copy of the schema: changing the caller's map
// afterwards changes neither what Get returns nor what is checked.
func TestRegisterCopiesTheSchema(t *testing.T) {
	schema := map[string]any{
		"type":       "object",
		"properties": map[string]any{"n": map[string]any{"type": "integer"}},
		"required":   []any{"n"},
	}
	reg := NewRegistry(nil)
	reg.MustRegister(New(Definition{ID: "a/n", Parameters: schema}, func(context.Context, map[string]any, *Trace) (any, error) { return nil, nil }))
	schema["required"] = []any{}
	schema["properties"].(map[string]any)["n"].(map[string]any)["type"] = "string"

	a, ok := getAction(reg, "a/n")
	require.True(t, ok)
	got, err := json.Marshal(a.Parameters)
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`, string(got))
	_, err = reg.Run(context.Background(), Call{Action: "a/n"})
	requireRefusal(t, err, codes.InvalidParameters)

	text := []byte(`{"type":"object"}`)
	reg.MustRegister(New(Definition{ID: "a/t", Parameters: text}, func(context.Context, map[string]any, *Trace) (any, error) { return nil, nil }))
	copy(text, `{"type":"array"} `)
	a, _ = getAction(reg, "a/t")
	assert.Equal(t, `{"type":"object"}`, string(a.Parameters.([]byte)))
}

// Every nested call that runs is recorded: a call started by a goroutine
// of the body just before the body returns either runs and is a step of
// the entry, or does not run at all.
func TestNestedCallRacingTheBodysReturnIsRecordedOrNotRun(t *testing.T) {
	var inner, recorded atomic.Int64
	reg := NewRegistry(&Options{OnRecord: func(rec store.Record) { recorded.Add(int64(len(rec.Entry.Steps))) }})
	reg.MustRegister(
		New(Definition{ID: "a/inner"}, func(context.Context, map[string]any, *Trace) (any, error) {
			inner.Add(1)
			return nil, nil
		}),
		New(Definition{ID: "a/outer"}, func(ctx context.Context, _ map[string]any, t *Trace) (any, error) {
			go func() { _, _ = t.Call(ctx, "a/inner", nil) }()
			return nil, nil
		}),
	)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				_, err := reg.Run(context.Background(), Call{Action: "a/outer"})
				assert.NoError(t, err)
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, inner.Load(), recorded.Load(), "nested calls run = nested calls recorded")
}

// A nested call's refusal is not passed off as the caller's: the caller
// gets internal, the host the nested refusal whole.
func TestNestedRefusalIsTheActionsFault(t *testing.T) {
	reg := NewRegistry(nil)
	reg.MustRegister(
		New(Definition{ID: "a/strict", Parameters: `{"type":"object","required":["n"]}`}, func(context.Context, map[string]any, *Trace) (any, error) { return nil, nil }),
		New(Definition{ID: "a/missing"}, func(ctx context.Context, _ map[string]any, t *Trace) (any, error) {
			return t.Call(ctx, "a/gone", nil)
		}),
		New(Definition{ID: "a/wrapped"}, func(ctx context.Context, _ map[string]any, t *Trace) (any, error) {
			_, err := t.Call(ctx, "a/strict", nil)
			return nil, errors.Join(errors.New("while preparing"), err)
		}),
		New(Definition{ID: "a/own"}, func(ctx context.Context, _ map[string]any, t *Trace) (any, error) {
			if _, err := t.Call(ctx, "a/strict", nil); err != nil {
				return nil, NewRefusal("not_ready", "the bed is not ready")
			}
			return nil, nil
		}),
	)
	for id, nested := range map[string]error{"a/missing": codes.UnknownAction, "a/wrapped": codes.InvalidParameters} {
		res, err := reg.Run(context.Background(), Call{Action: id})
		r := requireRefusal(t, err, codes.Internal)
		// One error model: the caller's error is
		// internal only; the host finds the nested refusal in Cause
		// (errors.Is on the error itself found it before).
		assert.NotErrorIs(t, err, nested, "the caller's error matches its own code only")
		assert.ErrorIs(t, r.Cause(), nested, "the host finds the nested refusal")
		assert.Equal(t, codes.Internal, res.Entry().Error)
		assert.Empty(t, r.Issues, "no issue of the nested call reaches the caller")
	}
	// A refusal the body raises on its own terms keeps its code.
	_, err := reg.Run(context.Background(), Call{Action: "a/own"})
	requireRefusal(t, err, "not_ready")
}

// Every refusal's Error reads without a repeated clause, for every code
// the registry raises and for a literal with nothing but a code.
func TestRefusalTextHasNoRepeats(t *testing.T) {
	reg := NewRegistry(nil)
	reg.MustRegister(New(Definition{ID: "a/n", Parameters: `{"type":"object","required":["n"]}`},
		func(context.Context, map[string]any, *Trace) (any, error) { panic("boom") }))
	var errs []error
	_, err := reg.Run(context.Background(), Call{Action: "a/none"})
	errs = append(errs, err)
	_, err = reg.Run(context.Background(), Call{Action: "a/n"})
	errs = append(errs, err)
	_, err = reg.Run(context.Background(), Call{Action: "a/n", Params: `{"n":1}`})
	errs = append(errs, err)
	errs = append(errs, reg.Register(New(Definition{ID: "a/n"}, func(context.Context, map[string]any, *Trace) (any, error) { return nil, nil })))
	errs = append(errs, reg.Register(New(Definition{ID: "bad"}, func(context.Context, map[string]any, *Trace) (any, error) { return nil, nil })))
	_, err = reg.DecodeBatch([]byte(`{"commands":[{"call":"a/n","when":1}]}`))
	errs = append(errs, err)
	_, err = reg.DecodeBatch([]byte(`{"commands":[{"call":"a/n","with":{"x":"${q}"}}]}`))
	errs = append(errs, err)
	for _, c := range registryCodes() {
		errs = append(errs, &Refusal{Code: c})
	}
	errs = append(errs, &Refusal{})
	for _, err := range errs {
		require.Error(t, err)
		text := err.Error()
		assert.NotEmpty(t, text)
		seen := map[string]bool{}
		for _, clause := range strings.FieldsFunc(text, func(r rune) bool { return r == ':' || r == ';' }) {
			clause = strings.TrimSpace(clause)
			assert.False(t, seen[clause], "%q repeats %q", text, clause)
			seen[clause] = true
		}
	}
	assert.Equal(t, "internal", (&Refusal{}).Error())
	assert.Equal(t, codes.Policy{Transport: codes.TransportToolResult, Retry: codes.RetryAfterEdit}, (&Refusal{Code: codes.InvalidParameters}).Policy())
}

// A body is unit-tested with NewTrace: its commands are recorded, and a
// nested call is refused without a registry.
func TestNewTrace(t *testing.T) {
	tr := NewTrace("a/b")
	assert.Equal(t, "a/b", tr.Action())
	require.NoError(t, tr.Command(map[string]any{"op": "x"}, 1))
	_, err := tr.Call(context.Background(), "a/c", nil)
	requireRefusal(t, err, codes.UnknownAction)
	steps := tr.Steps()
	require.Len(t, steps, 2)
	assert.Equal(t, `{"op":"x"}`, string(steps[0].Command))
	assert.Equal(t, codes.UnknownAction, steps[1].Call.Error)
	steps[0].Command[0] = 'X'
	assert.Equal(t, `{"op":"x"}`, string(tr.Steps()[0].Command), "Steps is a copy")
}

// A refusal without a code is internal in every reading: its text, the
// code a run entry records, errors.Is, and how a connector delivers it
// (NewRefusal("", ...) gave the domain policy, a tool result never
// retried, while its text and entry said internal).
func TestRefusalWithoutCodeIsInternal(t *testing.T) {
	for _, r := range []*Refusal{{}, NewRefusal("", "no code")} {
		assert.Equal(t, codes.Internal, CodeOf(r))
		assert.True(t, errors.Is(r, codes.Internal), "errors.Is(codes.Internal)")
		assert.Equal(t, codes.PolicyOf(codes.Internal), r.Policy())
	}
	assert.Equal(t, codes.PolicyOf(codes.Internal), codes.PolicyOf(""))
}

// A result without a JSON form tells the host why, typed or not: the
// internal refusal's cause is a *CanonicalError with the reason (a typed
// action's said only "the value has no JSON form"), and the pointer where
// the value is JSON's Go types (a struct goes to encoding/json whole).
func TestResultWithoutJSONFormNamesReason(t *testing.T) {
	type out struct {
		Score float64 `json:"score"`
	}
	reg := NewRegistry(nil)
	reg.MustRegister(
		Typed(Definition{ID: "a/typed"}, func(context.Context, struct{}, *Trace) (out, error) {
			return out{Score: math.NaN()}, nil
		}),
		New(Definition{ID: "a/plain", OutputSchema: `{"type":"object"}`}, func(context.Context, map[string]any, *Trace) (any, error) {
			return map[string]any{"score": math.Inf(1)}, nil
		}))
	for id, pointer := range map[string]string{"a/typed": "", "a/plain": "/score"} {
		_, err := reg.Run(context.Background(), Call{Action: id})
		r := requireRefusal(t, err, codes.Internal)
		var ce *CanonicalError
		require.True(t, errors.As(err, &ce), "%s: %v", id, r.Cause())
		assert.Equal(t, "non-finite number", ce.Reason, id)
		assert.Equal(t, pointer, ce.Pointer, id)
	}
}

// A manifest that is not I-JSON is described as parameters and batches
// are, at a byte offset, without the name of the internal decoder.
func TestManifestNotIJSONMessage(t *testing.T) {
	for text, want := range map[string]string{
		``:                          "actions: the manifest is not I-JSON text: not JSON text, at byte 0 (line 1, column 1)",
		`[{"id":"a/b","id":"a/c"}]`: "actions: the manifest is not I-JSON text: at /0/id: duplicate member name (RFC 7493 §2.3), at byte 13 (line 1, column 14)",
	} {
		_, err := DecodeManifest([]byte(text))
		require.Error(t, err)
		assert.Equal(t, want, err.Error())
	}
}
