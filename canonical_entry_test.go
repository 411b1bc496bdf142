package actions

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/store"
)

// viaMarshal is what the writer did before it knew the entry's form:
// encoding/json's text of v, canonicalised in the entry's exact mode.
func viaMarshal(t *testing.T, v any) (string, error) {
	t.Helper()
	w := new(canonicalWriter)
	w.exact = true
	if err := w.marshal(v, 0); err != nil {
		return "", finishCanonicalError(err)
	}
	return string(w.buf), nil
}

// entryCases are entries of every shape a record holds: each member
// set and left out, nested calls, commands with numbers a double does
// not hold, text to escape.
func entryCases() map[string]store.RunEntry {
	nested := store.RunEntry{Action: "t/inner", Parameters: `{"n":1}`, Steps: []store.RunStep{}, Outcome: store.OutcomeRefused, Error: codes.InvalidParameters, AsHost: true}
	return map[string]store.RunEntry{
		"zero": {},
		"typical": {Action: "carbon/record", Parameters: `{"actor":"act_6","co2_t":310.25}`, Steps: []store.RunStep{{Command: []byte(`{"op":"upsert","values":{"b":2,"a":1}}`)}},
			Outcome: store.OutcomeDone, Result: `{"ok":true}`},
		"every member": {Action: "x/é\u2028\"\\", Parameters: "null", ParametersSHA256: "ab12", ParametersBytes: 70000,
			Steps: []store.RunStep{{Command: []byte(`{"big":123456789012345678901234567890,"f":1e400000000}`[:43] + `}`), Result: `{"r":1}`},
				{Call: &nested}, {Call: &nested, Result: "x"}, {}},
			Outcome: store.OutcomeRefused, Error: "domain_code", Result: "", ResultSHA256: "ff", ResultBytes: 9, AsHost: true},
		"nil steps":            {Action: "a", Steps: nil, Outcome: store.OutcomeDone},
		"control chars":        {Action: "a\u0000\u001f\t", Parameters: "<&>", Steps: []store.RunStep{}, Outcome: store.OutcomeDone, Result: "\u00e9\U0001F600"},
		"escaped html command": {Action: "a", Steps: []store.RunStep{{Command: []byte(` { "s" : "<&>\u00e9", "n" : [ 1.0, -0, 2e2 ] } `)}}},
	}
}

// TestCanonicalEntry: the writer's own form of an entry gives the same
// text, byte for byte, as encoding/json's text canonicalised, for every
// shape, alone, behind a pointer and inside a record.
func TestCanonicalEntry(t *testing.T) {
	for name, e := range entryCases() {
		t.Run(name, func(t *testing.T) {
			want, err := viaMarshal(t, e)
			require.NoError(t, err)
			got, err := CanonicalJSON(e)
			require.NoError(t, err)
			assert.Equal(t, want, string(got))
			got, err = CanonicalJSON(&e)
			require.NoError(t, err)
			assert.Equal(t, want, string(got))
			rec := store.Record{Entry: e, Audit: store.Audit{Stage: store.StageHeld}}
			wantRec, err := viaMarshal(t, rec)
			require.NoError(t, err)
			gotRec, err := CanonicalJSON(rec)
			require.NoError(t, err)
			assert.Equal(t, wantRec, string(gotRec))
			rec.RolledBack = true
			wantRec, err = viaMarshal(t, &rec)
			require.NoError(t, err)
			gotRec, err = CanonicalJSON(&rec)
			require.NoError(t, err)
			assert.Equal(t, wantRec, string(gotRec))
		})
	}
	got, err := CanonicalJSON((*store.RunEntry)(nil))
	require.NoError(t, err)
	assert.Equal(t, "null", string(got))
}

// TestCanonicalEntryFaults: an entry without a JSON form is refused
// with the reason the encoding/json route gave.
func TestCanonicalEntryFaults(t *testing.T) {
	loop := store.RunEntry{Action: "a", Steps: []store.RunStep{{}}}
	loop.Steps[0].Call = &loop
	for _, c := range []struct {
		name   string
		entry  store.RunEntry
		reason string
	}{
		{"invalid utf-8 in a string", store.RunEntry{Action: "a\xff"}, reasonUTF8},
		{"invalid utf-8 in a nested call", store.RunEntry{Steps: []store.RunStep{{Call: &store.RunEntry{Result: "\xfe"}}}}, reasonUTF8},
		{"command not json", store.RunEntry{Steps: []store.RunStep{{Command: []byte(`{"a":`)}}}, reasonUnsupported},
		{"command with a duplicate name", store.RunEntry{Steps: []store.RunStep{{Command: []byte(`{"a":1,"a":2}`)}}}, reasonDuplicate},
		{"command with a lone surrogate", store.RunEntry{Steps: []store.RunStep{{Command: []byte(`{"a":"\ud800"}`)}}}, reasonSurrogate},
		{"a call that holds itself", loop, reasonUnsupported},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := CanonicalJSON(c.entry)
			var ce *CanonicalError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, c.reason, ce.Reason)
			if c.name != "a call that holds itself" { // encoding/json's own cycle check is another error
				_, werr := viaMarshal(t, c.entry)
				var wce *CanonicalError
				if errors.As(werr, &wce) {
					assert.Equal(t, wce.Reason, ce.Reason)
				} else {
					assert.Error(t, werr)
				}
			}
		})
	}
}

// FuzzCanonicalEntry compares the two routes on entries made of
// arbitrary strings and command text.
func FuzzCanonicalEntry(f *testing.F) {
	f.Add("t/set", `{"k":"a"}`, `{"op":"set","v":1.50}`, "r", "code", true)
	f.Add("\xff", "", `[1,`, "\u2028", "", false)
	f.Fuzz(func(t *testing.T, action, params, command, result, code string, asHost bool) {
		e := store.RunEntry{Action: action, Parameters: params, Steps: []store.RunStep{{Command: json.RawMessage(command), Result: result},
			{Call: &store.RunEntry{Action: result, Steps: []store.RunStep{}, Error: codes.Code(code)}}}, Outcome: store.Outcome(code), Result: result, AsHost: asHost}
		got, err := CanonicalJSON(e)
		want, werr := viaMarshal(t, e)
		a := store.Audit{Alias: action, Reason: params, Caller: &identity.Caller{Principal: result}, Stage: store.Stage(code), Batch: asHost}
		gotA, errA := CanonicalJSON(a)
		wantA, werrA := viaMarshal(t, a)
		if werrA == nil {
			require.NoError(t, errA)
			require.Equal(t, wantA, string(gotA))
		} else {
			require.Error(t, errA)
		}
		r := store.Record{Entry: e, Audit: a, RolledBack: asHost}
		gotR, errR := CanonicalJSON(r)
		wantR, werrR := viaMarshal(t, r)
		if werrR == nil {
			require.NoError(t, errR)
			require.Equal(t, wantR, string(gotR))
		} else {
			require.Error(t, errR)
		}
		if werr == nil {
			require.NoError(t, err)
			require.Equal(t, want, string(got))
			return
		}
		require.Error(t, err)
	})
}

// fill sets every field of the struct v points to (and of the structs
// it holds, to depth) to a value other than its zero, so that a field
// added to RunEntry, RunStep, Audit or Caller later and missed by the
// writer's own form shows in TestCanonicalFormsEveryField.
func fill(t *testing.T, v reflect.Value, depth int) {
	t.Helper()
	switch v.Kind() {
	case reflect.String:
		v.SetString("s\u00e9<" + v.Type().Name())
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(70001)
	case reflect.Pointer:
		if depth == 0 {
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, v.Elem(), depth-1)
	case reflect.Slice:
		if v.Type() == reflect.TypeFor[json.RawMessage]() {
			v.SetBytes([]byte(`{"b":[1,2.50,"x"],"a":12345678901234567890}`))
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fill(t, v.Index(i), depth)
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Date(2026, 12, 2, 15, 4, 5, 123456789, time.FixedZone("x", 3600))))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(t, v.Field(i), depth)
			}
		}
	default:
		t.Fatalf("fill: no value for %s", v.Type())
	}
}

// TestCanonicalFormsEveryField: an entry and an audit with every field
// set are written as the encoding/json route writes them.
func TestCanonicalFormsEveryField(t *testing.T) {
	var e store.RunEntry
	fill(t, reflect.ValueOf(&e).Elem(), 2)
	var a store.Audit
	fill(t, reflect.ValueOf(&a).Elem(), 2)
	var r store.Record
	fill(t, reflect.ValueOf(&r).Elem(), 2)
	for name, v := range map[string]any{"entry": e, "audit": a, "zero audit": store.Audit{}, "record": r, "zero record": store.Record{}} {
		t.Run(name, func(t *testing.T) {
			want, err := viaMarshal(t, v)
			require.NoError(t, err)
			got, err := CanonicalJSON(v)
			require.NoError(t, err)
			assert.Equal(t, want, string(got))
			if name == "zero record" { // its entry's outcome, action and parameters are written empty
				return
			}
			assert.NotContains(t, string(got), `""`, "a field left empty")
		})
	}
}

// TestCanonicalAuditFaults: an audit without a JSON form is refused as
// the encoding/json route refused it.
func TestCanonicalAuditFaults(t *testing.T) {
	for name, a := range map[string]store.Audit{
		"year 10000":            {At: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		"invalid utf-8":         {Reason: "\xff"},
		"invalid utf-8, caller": {Caller: &identity.Caller{Principal: "\xfe"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := CanonicalJSON(a)
			var ce *CanonicalError
			require.ErrorAs(t, err, &ce)
			_, werr := viaMarshal(t, a)
			var wce *CanonicalError
			require.ErrorAs(t, werr, &wce)
			assert.Equal(t, wce.Reason, ce.Reason)
		})
	}
}
