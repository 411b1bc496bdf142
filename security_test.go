package actions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions/bound"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/store"
)

func requireRefusal(t *testing.T, err error, code codes.Code) *Refusal {
	t.Helper()
	require.Error(t, err)
	var r *Refusal
	require.True(t, errors.As(err, &r), "want a *Refusal, got %T: %v", err, err)
	require.Equal(t, code, r.Code, r.Error())
	return r
}

// TestSchemasNeverLoad points $ref and $schema at files, URLs and
// relative documents; each is refused at registration and the content of
// a local file never shows up anywhere.
func TestSchemasNeverLoad(t *testing.T) {
	const marker = "FILE-MARKER-4242"
	dir := t.TempDir()
	local := filepath.Join(dir, "schema.json")
	require.NoError(t, os.WriteFile(local, []byte(`{"type":"string","description":"`+marker+`"}`), 0o600))
	cases := map[string]string{
		"passwd":          `{"type":"object","properties":{"a":{"$ref":"file:///etc/passwd"}}}`,
		"local file":      `{"type":"object","properties":{"a":{"$ref":"file://` + local + `"}}}`,
		"https":           `{"type":"object","properties":{"a":{"$ref":"https://example.com/s.json"}}}`,
		"relative":        `{"type":"object","properties":{"a":{"$ref":"schema.json"}}}`,
		"dynamic":         `{"type":"object","properties":{"a":{"$dynamicRef":"file://` + local + `#x"}}}`,
		"metaschema ref":  `{"type":"object","properties":{"a":{"$ref":"https://json-schema.org/draft/2020-12/schema"}}}`,
		"schema file":     `{"$schema":"file://` + local + `","type":"object"}`,
		"schema passwd":   `{"$schema":"file:///etc/passwd","type":"object"}`,
		"schema draft7":   `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`,
		"shadow meta":     `{"type":"object","$defs":{"x":{"$id":"https://json-schema.org/draft/2020-12/schema"}}}`,
		"duplicate id":    `{"type":"object","$defs":{"x":{"$id":"https://a.invalid/x"},"y":{"$id":"https://a.invalid/x"}}}`,
		"id then ref out": `{"$id":"file://` + dir + `/","type":"object","properties":{"a":{"$ref":"schema.json"}}}`,
	}
	for name, s := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := CompileParameters(s, Limits{})
			r := requireRefusal(t, err, codes.ConstraintViolation)
			require.Len(t, r.Issues, 1)
			assert.NotContains(t, r.Error(), marker)
			assert.NotContains(t, fmt.Sprintf("%+v", err), marker)
			assert.NotContains(t, r.Error(), "root:") // nothing of /etc/passwd
		})
	}
}

// TestSchemaIDCannotShadowAcrossActions registers two actions whose
// schemas claim the same $id; each keeps its own meaning.
func TestSchemaIDCannotShadowAcrossActions(t *testing.T) {
	reg := NewRegistry(nil)
	body := func(context.Context, map[string]any, *Trace) (any, error) { return nil, nil }
	require.NoError(t, reg.Register(Action{Definition: Definition{ID: "a/one",
		Parameters: `{"$id":"https://shared.invalid/s","type":"object","properties":{"x":{"type":"string"}}}`}, Run: body}))
	require.NoError(t, reg.Register(Action{Definition: Definition{ID: "a/two",
		Parameters: `{"$id":"https://shared.invalid/s","type":"object","properties":{"x":{"type":"integer"}}}`}, Run: body}))
	_, _, err := call3(reg, context.Background(), "a/one", map[string]any{"x": "s"})
	require.NoError(t, err)
	_, _, err = call3(reg, context.Background(), "a/two", map[string]any{"x": "s"})
	requireRefusal(t, err, codes.InvalidParameters)
}

func TestPatternsAreRE2(t *testing.T) {
	// Lookahead is ECMA-262 only: refused at registration, not ignored.
	_, err := CompileParameters(`{"type":"object","properties":{"a":{"type":"string","pattern":"^(?=a)"}}}`, Limits{})
	r := requireRefusal(t, err, codes.ConstraintViolation)
	assert.Equal(t, "/properties/a/pattern", r.Issues[0].Path)
}

func nested(depth int, leaf string) string {
	return strings.Repeat(`{"a":`, depth) + leaf + strings.Repeat("}", depth)
}

func TestParamDepthLimit(t *testing.T) {
	ps, err := CompileParameters(`{"type":"object"}`, Limits{MaxParamDepth: 10})
	require.NoError(t, err)
	ctx := context.Background()
	_, err = ps.Check(ctx, json.RawMessage(nested(10, "1")), nil) // 10 objects: at the limit
	require.NoError(t, err)
	_, err = ps.Check(ctx, json.RawMessage(nested(11, "1")), nil) // one past
	r := requireRefusal(t, err, codes.InvalidParameters)
	assert.Equal(t, "json", r.Issues[0].Keyword)

	var v any = 1
	for range 10 {
		v = map[string]any{"a": v}
	}
	_, err = ps.Check(ctx, v, nil)
	require.NoError(t, err)
	_, err = ps.Check(ctx, map[string]any{"a": v}, nil)
	requireRefusal(t, err, codes.InvalidParameters)

	// Far past the limit: a typed refusal, not a stack overflow.
	_, err = ps.Check(ctx, json.RawMessage(strings.Repeat("[", 1_000_000)), nil)
	requireRefusal(t, err, codes.InvalidParameters)
}

func TestParamSizeLimit(t *testing.T) {
	ps, err := CompileParameters(`{"type":"object"}`, Limits{MaxParamBytes: 100})
	require.NoError(t, err)
	at := `{"s":"` + strings.Repeat("x", 100-8) + `"}`
	require.Len(t, at, 100)
	_, err = ps.Check(context.Background(), json.RawMessage(at), nil)
	require.NoError(t, err)
	_, err = ps.Check(context.Background(), json.RawMessage(at+" "), nil)
	requireRefusal(t, err, codes.InvalidParameters)
}

// TestParamSizeRefusalSaysSize: text past MaxParamBytes is refused for
// its size, and the refusal says so (not that the text is not I-JSON,
// which valid text is not).
func TestParamSizeRefusalSaysSize(t *testing.T) {
	ps, err := CompileParameters(`{"type":"object"}`, Limits{MaxParamBytes: 100})
	require.NoError(t, err)
	_, err = ps.Check(context.Background(), json.RawMessage(`{"s":"`+strings.Repeat("x", 200)+`"}`), nil)
	r := requireRefusal(t, err, codes.InvalidParameters)
	assert.Equal(t, "the parameters are too large", r.Message)
	assert.NotContains(t, r.Error(), "I-JSON")
	require.Len(t, r.Issues, 1)
	assert.Equal(t, "json", r.Issues[0].Keyword)
	assert.Equal(t, "the parameters are larger than 100 bytes", r.Issues[0].Message)
}

// TestRefusedEntryHoldsNoMoreThanALimit: the entry of a call refused for
// its size records null, not a canonical copy of what was sent.
func TestRefusedEntryHoldsNoMoreThanALimit(t *testing.T) {
	reg := NewRegistry(&Options{Limits: Limits{MaxParamBytes: 100}})
	require.NoError(t, reg.Register(Action{Definition: Definition{ID: "a/b"},
		Run: func(context.Context, map[string]any, *Trace) (any, error) { return nil, nil }}))
	big := `{"s":"` + strings.Repeat("x", 200) + `"}`
	_, entry, err := call3(reg, context.Background(), "a/b", json.RawMessage(big))
	requireRefusal(t, err, codes.InvalidParameters)
	assert.Equal(t, "null", entry.Parameters, "text over the limit")

	_, entry, err = call3(reg, context.Background(), "a/b", map[string]any{"s": strings.Repeat("x", 200)})
	requireRefusal(t, err, codes.InvalidParameters)
	assert.Equal(t, "null", entry.Parameters, "a Go value whose text passes the limit")

	_, entry, err = call3(reg, context.Background(), "x/unknown", json.RawMessage(big))
	requireRefusal(t, err, codes.UnknownAction)
	assert.Equal(t, "null", entry.Parameters, "any refusal before the check")

	small := `{"s":[1,2]}`
	_, entry, _ = call3(reg, context.Background(), "x/unknown", json.RawMessage(small))
	assert.Equal(t, small, entry.Parameters, "within the limit, as given")
}

func schemaOfDepth(depth int) string {
	// depth schema objects: the root and depth-1 nested properties.
	return strings.Repeat(`{"type":"object","properties":{"a":`, depth-1) + `{"type":"string"}` + strings.Repeat("}}", depth-1)
}

func TestSchemaDepthLimit(t *testing.T) {
	l := Limits{MaxSchemaDepth: 8}
	_, err := CompileParameters(schemaOfDepth(9), l) // 8 levels below the root
	require.NoError(t, err)
	_, err = CompileParameters(schemaOfDepth(10), l)
	requireRefusal(t, err, codes.ConstraintViolation)
	// Far past the default limit: refused quickly, never compiled.
	_, err = CompileParameters(schemaOfDepth(5000), Limits{})
	requireRefusal(t, err, codes.ConstraintViolation)
}

func TestSchemaSizeLimit(t *testing.T) {
	s := `{"type":"object","description":"` + strings.Repeat("d", 200) + `"}`
	_, err := CompileParameters(s, Limits{MaxSchemaBytes: len(s)})
	require.NoError(t, err)
	_, err = CompileParameters(s, Limits{MaxSchemaBytes: len(s) - 1})
	requireRefusal(t, err, codes.ConstraintViolation)
}

func TestRefFanOutLimit(t *testing.T) {
	ps, err := CompileParameters(`{"type":"object","properties":{"ids":{"type":"array","items":{"type":"string","ref":"actor"}}}}`,
		Limits{MaxRefs: 5})
	require.NoError(t, err)
	calls := 0
	resolve := func(_ context.Context, _, v string) (RefMatches, error) {
		calls++
		return RefMatches{ID: &v}, nil
	}
	ids := func(n int) map[string]any {
		a := make([]any, n)
		for i := range a {
			a[i] = fmt.Sprint("id", i)
		}
		return map[string]any{"ids": a}
	}
	_, err = ps.Check(context.Background(), ids(5), resolve)
	require.NoError(t, err)
	assert.Equal(t, 5, calls)
	calls = 0
	_, err = ps.Check(context.Background(), ids(6), resolve)
	requireRefusal(t, err, codes.InvalidParameters)
	assert.Zero(t, calls, "the resolver must not be called once the limit is passed")
}

func TestResolverFailures(t *testing.T) {
	ps, err := CompileParameters(`{"type":"object","properties":{"who":{"type":"string","ref":"actor"}}}`, Limits{})
	require.NoError(t, err)
	boom := errors.New("model store down")
	_, err = ps.Check(context.Background(), map[string]any{"who": "x"}, func(context.Context, string, string) (RefMatches, error) {
		return RefMatches{}, boom
	})
	require.ErrorIs(t, err, boom)
	var r *Refusal
	assert.False(t, errors.As(err, &r), "a resolver's error is the host's failure, not a refusal")

	_, err = ps.Check(context.Background(), map[string]any{"who": "x"}, func(context.Context, string, string) (RefMatches, error) {
		panic("resolver bug")
	})
	requireRefusal(t, err, codes.Internal)
}

// TestPanicsLeaveRegistryServing panics in a body, a resolver and
// OnRecord; each call is refused with internal and the
// next call is served.
func TestPanicsLeaveRegistryServing(t *testing.T) {
	// The registry's hooks, switched by the test: each panics in turn.
	var (
		resolve  RefResolver = func(context.Context, string, string) (RefMatches, error) { return RefMatches{}, nil }
		onRecord             = func(store.Record) {}
	)
	reg := NewRegistry(&Options{
		Resolve: func(ctx context.Context, schema, value string) (RefMatches, error) {
			return resolve(ctx, schema, value)
		},
		OnRecord: func(rec store.Record) { onRecord(rec) },
	})
	ok := func(context.Context, map[string]any, *Trace) (any, error) { return "ok", nil }
	require.NoError(t, reg.Register(Action{Definition: Definition{ID: "t/ok",
		Parameters: `{"type":"object","properties":{"who":{"type":"string","ref":"actor"}}}`}, Run: ok}))
	require.NoError(t, reg.Register(Action{Definition: Definition{ID: "t/boom"},
		Run: func(context.Context, map[string]any, *Trace) (any, error) { panic("body bug") }}))
	ctx := context.Background()
	serving := func() {
		t.Helper()
		res, _, err := call3(reg, ctx, "t/ok", nil)
		require.NoError(t, err)
		require.Equal(t, "ok", res)
	}
	_, entry, err := call3(reg, ctx, "t/boom", nil)
	r := requireRefusal(t, err, codes.Internal)
	assert.NotContains(t, r.Message, "body bug")
	assert.Contains(t, fmt.Sprint(r.Cause()), "body bug", "the host gets the panic value")
	assert.Equal(t, codes.Code("internal"), entry.Error)
	serving()

	good := resolve
	resolve = func(context.Context, string, string) (RefMatches, error) { panic("resolver bug") }
	_, _, err = call3(reg, ctx, "t/ok", map[string]any{"who": "x"})
	requireRefusal(t, err, codes.Internal)
	resolve = good
	serving()

	onRecord = func(store.Record) { panic("log bug") }
	res, _, err := call3(reg, ctx, "t/ok", nil)
	requireRefusal(t, err, codes.Internal)
	assert.Nil(t, res, "the body ran, but the host's log failed: no result beside the error")
	onRecord = func(store.Record) {}
	serving()
}

func TestCallDepthLimit(t *testing.T) {
	reg := NewRegistry(&Options{Limits: Limits{MaxCallDepth: 3}})
	require.NoError(t, reg.Register(Action{Definition: Definition{ID: "t/down",
		Parameters: `{"type":"object","properties":{"n":{"type":"integer"}}}`},
		Run: func(ctx context.Context, p map[string]any, tr *Trace) (any, error) {
			n, _ := p["n"].(json.Number).Int64()
			if n == 0 {
				return "bottom", nil
			}
			return tr.Call(ctx, "t/down", map[string]any{"n": n - 1})
		}}))
	ctx := context.Background()
	res, _, err := call3(reg, ctx, "t/down", map[string]any{"n": 3}) // three nested calls
	require.NoError(t, err)
	assert.Equal(t, "bottom", res)
	_, entry, err := call3(reg, ctx, "t/down", map[string]any{"n": 4})
	requireRefusal(t, err, codes.Internal) // the body returned its nested call's refusal
	assert.NotErrorIs(t, err, codes.ConstraintViolation, "one code per error: the caller's")
	assert.Equal(t, codes.ConstraintViolation, deepestCause(err), "the host finds the nested one down the causes")
	assert.Equal(t, codes.Internal, entry.Error)

	// Unbounded recursion is refused at the limit, never a stack overflow.
	reg2 := NewRegistry(nil)
	require.NoError(t, reg2.Register(Action{Definition: Definition{ID: "t/loop"},
		Run: func(ctx context.Context, _ map[string]any, tr *Trace) (any, error) {
			return tr.Call(ctx, "t/loop", nil)
		}}))
	_, _, err = call3(reg2, ctx, "t/loop", nil)
	requireRefusal(t, err, codes.Internal)
	assert.Equal(t, codes.ConstraintViolation, deepestCause(err))
}

// deepestCause is the code of the last refusal down err's causes.
func deepestCause(err error) codes.Code {
	code := CodeOf(err)
	for r := asRefusal(err); r != nil; {
		code = r.Code
		next, ok := r.Cause().(*Refusal)
		if !ok {
			break
		}
		r = next
	}
	return code
}

// codedNil is an error type with a Code method, returned as a typed nil.
type codedNil struct{}

func (*codedNil) Error() string { return "coded" }
func (*codedNil) Code() string  { panic("nil receiver") }

func TestTypedNilErrorsFromBodies(t *testing.T) {
	reg := NewRegistry(nil)
	require.NoError(t, reg.Register(Action{Definition: Definition{ID: "t/nil_refusal"},
		Run: func(context.Context, map[string]any, *Trace) (any, error) {
			var r *Refusal
			return nil, r
		}}))
	require.NoError(t, reg.Register(Action{Definition: Definition{ID: "t/nil_coded"},
		Run: func(context.Context, map[string]any, *Trace) (any, error) {
			var c *codedNil
			return nil, c
		}}))
	for _, id := range []string{"t/nil_refusal", "t/nil_coded"} {
		res, err := reg.Run(context.Background(), Call{Action: id})
		require.Error(t, err)
		assert.Equal(t, codes.Code("internal"), res.Entry().Error, id)
		assert.Len(t, res.Records, 1, "one record of each call")
	}
	assert.NotPanics(t, func() { _ = (*Refusal)(nil).Error() })
}

func TestUnknownActionDoesNotEchoTheID(t *testing.T) {
	reg := NewRegistry(nil)
	_, entry, err := call3(reg, context.Background(), "ns/SECRET_MARKER", nil)
	r := requireRefusal(t, err, codes.UnknownAction)
	assert.NotContains(t, r.Error(), "SECRET_MARKER")
	assert.Equal(t, "ns/SECRET_MARKER", entry.Action, "the host's own log keeps the id")
}

func TestManifestRefusesDuplicateNames(t *testing.T) {
	_, err := DecodeManifest([]byte(`[{"id":"a/b","parameters":{"type":"object"},"id":"c/d"}]`))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "duplicate")
	_, err = DecodeManifest([]byte(`[{"id":"a/b","kind":"write"}]`))
	require.Error(t, err)
	assert.Equal(t, 1, strings.Count(err.Error(), "actions:"), err.Error())
}

func TestParamsForms(t *testing.T) {
	ps, err := CompileParameters(`{"type":"object","properties":{"n":{"type":"integer","default":1}}}`, Limits{})
	require.NoError(t, err)
	want := map[string]any{"n": json.Number("2")}
	for _, in := range []any{`{"n":2}`, []byte(`{"n":2}`), json.RawMessage(`{"n":2}`), map[string]any{"n": 2}, struct {
		N int `json:"n"`
	}{2}} {
		got, err := ps.Check(context.Background(), in, nil)
		require.NoError(t, err, "%T", in)
		assert.Equal(t, want, got, "%T", in)
	}
	for _, in := range []any{nil, "null", json.RawMessage(" null "), map[string]any(nil)} {
		got, err := ps.Check(context.Background(), in, nil)
		require.NoError(t, err, "%T", in)
		assert.Equal(t, map[string]any{"n": json.Number("1")}, got, "%#v stands for {}", in)
	}
	_, err = ps.Check(context.Background(), `[1]`, nil)
	requireRefusal(t, err, codes.InvalidParameters)
}

func TestSchemaRefusalsSpeakPlainly(t *testing.T) {
	_, err := CompileParameters(`{"type":"object","properties":{"a":{"type":"string","pattern":"["}}}`, Limits{})
	r := requireRefusal(t, err, codes.ConstraintViolation)
	assert.Contains(t, r.Issues[0].Message, "RE2")
	_, err = CompileParameters(`{"type":"object","properties":{"a":{"minLength":-1}}}`, Limits{})
	r = requireRefusal(t, err, codes.ConstraintViolation)
	assert.Equal(t, "/properties/a/minLength", r.Issues[0].Path)
	_, err = CompileParameters(`{"type":"object","type":"object"}`, Limits{})
	r = requireRefusal(t, err, codes.ConstraintViolation)
	assert.Equal(t, "json", r.Issues[0].Keyword)
	assert.Contains(t, r.Issues[0].Message, "duplicate member name")
}

// TestNumbersThatWouldStallTheEngine sends numbers whose exact value would
// make math/big (which the engine uses) work hard or fail: each is refused
// at once as not I-JSON.
func TestNumbersThatWouldStallTheEngine(t *testing.T) {
	ps, err := CompileParameters(`{"type":"object","properties":{"n":{"type":"number","minimum":0,"multipleOf":0.5}}}`, Limits{})
	require.NoError(t, err)
	for _, text := range []string{
		`{"n":1e-10000000}`, `{"n":1e-1000}`, `{"n":0.` + strings.Repeat("0", 500) + `1}`, `{"n":` + strings.Repeat("9", 200) + `e-190}`,
	} {
		_, err := ps.Check(context.Background(), json.RawMessage(text), nil)
		r := requireRefusal(t, err, codes.InvalidParameters)
		assert.Equal(t, "json", r.Issues[0].Keyword)
		_, err = ps.Check(context.Background(), map[string]any{"n": json.Number(text[5 : len(text)-1])}, nil)
		requireRefusal(t, err, codes.InvalidParameters)
	}
	// Within the bounds: checked, and a tiny number is not a multiple.
	_, err = ps.Check(context.Background(), json.RawMessage(`{"n":1e-300}`), nil)
	r := requireRefusal(t, err, codes.InvalidParameters)
	assert.Equal(t, "multipleOf", r.Issues[0].Keyword)
	_, err = CompileParameters(`{"type":"object","properties":{"n":{"minimum":1e-10000000}}}`, Limits{})
	requireRefusal(t, err, codes.ConstraintViolation)
}

type panickyMarshaler struct{}

func (panickyMarshaler) MarshalJSON() ([]byte, error) { panic("marshal bug") }

func TestPanickingMarshalerInAResult(t *testing.T) {
	reg := NewRegistry(nil)
	require.NoError(t, reg.Register(Action{Definition: Definition{ID: "t/p"},
		Run: func(_ context.Context, _ map[string]any, tr *Trace) (any, error) {
			assert.Error(t, tr.Command(panickyMarshaler{}, nil))
			return panickyMarshaler{}, nil
		}}))
	_, entry, err := call3(reg, context.Background(), "t/p", nil)
	requireRefusal(t, err, codes.Internal)
	assert.Equal(t, codes.Code("internal"), entry.Error)
	_, err = CanonicalJSON(map[string]any{"x": panickyMarshaler{}})
	var ce *CanonicalError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "/x", ce.Pointer)
}

func TestPanickingMarshalerInParamsAndSchema(t *testing.T) {
	ps, err := CompileParameters(`{"type":"object"}`, Limits{})
	require.NoError(t, err)
	_, err = ps.Check(context.Background(), map[string]any{"x": panickyMarshaler{}}, nil)
	requireRefusal(t, err, codes.InvalidParameters)
	_, err = CompileParameters(panickyMarshaler{}, Limits{})
	requireRefusal(t, err, codes.ConstraintViolation)
}

func TestIssuesAreCapped(t *testing.T) {
	ps, err := CompileParameters(`{"type":"object","properties":{"a":{"items":{"type":"string"}}}}`, Limits{})
	require.NoError(t, err)
	text := `{"a":[` + strings.Repeat("1,", 999) + `1]}`
	_, err = ps.Check(context.Background(), json.RawMessage(text), nil)
	r := requireRefusal(t, err, codes.InvalidParameters)
	assert.Len(t, r.Issues, 100)
	assert.Contains(t, r.Message, "1000 breaches")
}

type panickyWrap struct{ inner error }

func (w *panickyWrap) Error() string { return "wrapped" }
func (w *panickyWrap) Unwrap() error { return w.inner }

func TestBatchSurvivesAPanickingErrorChain(t *testing.T) {
	reg := NewRegistry(nil)
	require.NoError(t, reg.Register(Action{Definition: Definition{ID: "a/b"},
		Run: func(context.Context, map[string]any, *Trace) (any, error) {
			var w *panickyWrap
			return nil, w
		}}))
	_, entries, err := batch3(reg, context.Background(), Batch{Steps: []Step{{Call: "a/b"}}}, nil)
	require.Error(t, err)
	require.Len(t, entries, 1)
	assert.Equal(t, codes.Internal, entries[0].Error)
}

// TestMultiplyingSchemasAreRefused: schemas on which the engine's work
// for one value doubles with each level of the parameters, or with each
// link of a chain of $defs, are refused at registration (an adversarial
// review measured seconds per call for 211-byte parameters).
func TestMultiplyingSchemasAreRefused(t *testing.T) {
	var defs []string
	for i := range 24 {
		defs = append(defs, fmt.Sprintf(`"d%d":{"allOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]}`, i, i+1, i+1))
	}
	defs = append(defs, `"d24":{"type":"object"}`)
	for name, s := range map[string]string{
		"recursive anyOf, both branches recurse on child": `{"type":"object","properties":{"root":{"$ref":"#/$defs/node"}},"$defs":{"node":{"anyOf":[
			{"type":"object","properties":{"owner":{"type":"string","ref":"actor"},"child":{"$ref":"#/$defs/node"}}},
			{"type":"object","properties":{"site":{"type":"string","ref":"site"},"child":{"$ref":"#/$defs/node"}}}]}}}`,
		"allOf of two parts recursing on child": `{"type":"object","properties":{"root":{"$ref":"#/$defs/node"}},"$defs":{
			"node":{"allOf":[{"$ref":"#/$defs/base"},{"$ref":"#/$defs/ext"}]},
			"base":{"properties":{"child":{"$ref":"#/$defs/node"}}},
			"ext":{"properties":{"child":{"$ref":"#/$defs/node"},"x":{"type":"string"}}}}}`,
		"diamond chain of $defs": `{"type":"object","$ref":"#/$defs/d0","$defs":{` + strings.Join(defs, ",") + `}}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := CompileParameters(s, Limits{})
			requireRefusal(t, err, codes.ConstraintViolation)
		})
	}
	// Ordinary recursion passes: a tree, and an expression whose left and
	// right members each recurse once.
	for _, s := range []string{
		`{"type":"object","properties":{"root":{"$ref":"#/$defs/node"}},"$defs":{"node":{"type":"object",
			"properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#/$defs/node"}}}}}}`,
		`{"type":"object","properties":{"e":{"$ref":"#/$defs/expr"}},"$defs":{"expr":{"anyOf":[{"type":"number"},
			{"type":"object","properties":{"op":{"enum":["+","-"]},"left":{"$ref":"#/$defs/expr"},"right":{"$ref":"#/$defs/expr"}}}]}}}`,
	} {
		_, err := CompileParameters(s, Limits{})
		require.NoError(t, err)
	}
}

// TestBatchPlaceholdersCannotMultiplyMemory repeats a placeholder over a
// large result: past Limits.MaxParamBytes of substituted values the step
// is refused before its call.
func TestBatchPlaceholdersCannotMultiplyMemory(t *testing.T) {
	reg := NewRegistry(&Options{Limits: Limits{MaxParamBytes: 64 << 10}})
	big := make([]any, 100)
	for i := range big {
		big[i] = strings.Repeat("x", 100)
	}
	require.NoError(t, reg.Register(Action{Definition: Definition{ID: "a/list"},
		Run: func(context.Context, map[string]any, *Trace) (any, error) { return big, nil }}))
	require.NoError(t, reg.Register(Action{Definition: Definition{ID: "a/echo", Parameters: `{"type":"object"}`},
		Run: func(_ context.Context, p map[string]any, _ *Trace) (any, error) { return len(p), nil }}))
	with := map[string]any{}
	for i := range 1000 {
		with[fmt.Sprint("k", i)] = "${l}"
	}
	_, entries, err := batch3(reg, context.Background(), Batch{Steps: []Step{{Call: "a/list", As: "l"}, {Call: "a/echo", With: with}}}, nil)
	r := requireRefusal(t, err, codes.InvalidScriptStep)
	assert.Contains(t, r.Issues[0].Message, "would pass 65536 bytes")
	assert.Len(t, entries, 1, "the second call is not made")
}

// TestBatchEmptyContainersAndWalksAreCharged: a result of many empty
// arrays, copied or walked by many placeholders, is refused before the
// call like a large one (each container and each walked entry counts).
func TestBatchEmptyContainersAndWalksAreCharged(t *testing.T) {
	reg := NewRegistry(nil)
	empties := make([]any, 100_000)
	for i := range empties {
		empties[i] = []any{}
	}
	require.NoError(t, reg.Register(Action{Definition: Definition{ID: "a/list"},
		Run: func(context.Context, map[string]any, *Trace) (any, error) { return empties, nil }}))
	var sinkRuns atomic.Int64
	require.NoError(t, reg.Register(Action{Definition: Definition{ID: "a/sink", Parameters: `{"type":"object"}`},
		Run: func(context.Context, map[string]any, *Trace) (any, error) { sinkRuns.Add(1); return nil, nil }}))
	copies := map[string]any{}
	for i := range 200 {
		copies[fmt.Sprint("k", i)] = "${l}"
	}
	walks := map[string]any{"s": strings.Repeat("${l.*.x}", 200)}
	for name, with := range map[string]map[string]any{"copies": copies, "walks": walks} {
		_, entries, err := batch3(reg, context.Background(), Batch{Steps: []Step{{Call: "a/list", As: "l"}, {Call: "a/sink", With: with}}}, nil)
		r := requireRefusal(t, err, codes.InvalidScriptStep)
		assert.Contains(t, r.Issues[0].Message, "would pass 1048576 bytes", name)
		assert.Len(t, entries, 1, name)
	}
	assert.Zero(t, sinkRuns.Load())
}

// TestBatchResultIsNotBoundLikeParameters: a batch's result is one
// placeholder, a single copy of a result the batch holds, so a result
// larger than MaxParamBytes comes back as it would without "result".
func TestBatchResultIsNotBoundLikeParameters(t *testing.T) {
	reg := NewRegistry(nil)
	big := strings.Repeat("x", 2<<20)
	require.NoError(t, reg.Register(Action{Definition: Definition{ID: "a/big"},
		Run: func(context.Context, map[string]any, *Trace) (any, error) { return map[string]any{"text": big}, nil }}))
	result, _, err := batch3(reg, context.Background(), Batch{Steps: []Step{{Call: "a/big", As: "a"}}, Result: "${a.text}"}, nil)
	require.NoError(t, err)
	// Not refused as parameters would be; bounded as every result is.
	b, ok := result.(*bound.Bounded)
	require.True(t, ok, "a result over MaxResultBytes is bounded")
	assert.Equal(t, len(big), b.Bound.Total)
	assert.True(t, strings.HasPrefix(big, b.Value.(string)))
}

func TestDefaultsCannotMultiplyACall(t *testing.T) {
	ps, err := CompileParameters(`{"type":"object","properties":{"lines":{"type":"array","items":{"type":"object",
		"properties":{"options":{"type":"object","default":{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6}}}}}}}`, Limits{MaxParamBytes: 64 << 10})
	require.NoError(t, err)
	text := `{"lines":[` + strings.Repeat(`{},`, 20000) + `{}]}` // 60 KB: fits
	_, err = ps.Check(context.Background(), json.RawMessage(text), nil)
	r := requireRefusal(t, err, codes.InvalidParameters)
	assert.Equal(t, "default", r.Issues[0].Keyword)
	_, err = ps.Check(context.Background(), json.RawMessage(`{"lines":[{},{}]}`), nil)
	require.NoError(t, err)
}

// TestDynamicRefIsRefused: $dynamicRef's target is chosen while
// validating, so the plans built at registration (defaults, refs, cost)
// could not follow it: a ref under it would reach the body unresolved and
// a doubling recursion would pass the cost check.
func TestDynamicRefIsRefused(t *testing.T) {
	for name, s := range map[string]string{
		"ref under it": `{"type":"object","properties":{"a":{"$dynamicRef":"#/$defs/actor"}},"$defs":{"actor":{"type":"string","ref":"actor"}}}`,
		"doubling":     `{"type":"object","properties":{"n":{"$dynamicRef":"#/$defs/node"}},"$defs":{"node":{"allOf":[{"$dynamicRef":"#/$defs/base"},{"$dynamicRef":"#/$defs/ext"}]},"base":{"properties":{"child":{"$dynamicRef":"#/$defs/node"}}},"ext":{"properties":{"child":{"$dynamicRef":"#/$defs/node"}}}}}`,
		"anchor":       `{"type":"object","$dynamicAnchor":"root","properties":{"a":{"$dynamicRef":"#root"}}}`,
	} {
		_, err := CompileParameters(s, Limits{})
		r := requireRefusal(t, err, codes.ConstraintViolation)
		require.NotEmpty(t, r.Issues, name)
		assert.Equal(t, "$dynamicRef", r.Issues[0].Keyword, name)
	}
	// A $dynamicAnchor alone is a plain anchor.
	_, err := CompileParameters(`{"type":"object","properties":{"a":{"$ref":"#s"}},"$defs":{"s":{"$dynamicAnchor":"s","type":"string"}}}`, Limits{})
	assert.NoError(t, err)
}

// TestManifestMemberNamesAreExact: encoding/json matches member names in
// any case, so "Exposure" after "exposure" would silently win; a manifest
// is refused instead.
func TestManifestMemberNamesAreExact(t *testing.T) {
	for _, text := range []string{
		`[{"id":"a/b","exposure":"hidden","Exposure":"visible"}]`,
		`[{"id":"a/b","ID":"c/d"}]`,
		`[{"id":"a/b","PARAMETERS":{"type":"object"}}]`,
	} {
		_, err := DecodeManifest([]byte(text))
		assert.Error(t, err, text)
	}
	defs, err := DecodeManifest([]byte(`[{"id":"a/b","title":"T","description":"D","kind":"read","destructive":false,"exposure":"hidden","parameters":{"type":"object"},"writes":["x"]}]`))
	require.NoError(t, err, "every member, spelt exactly")
	assert.Equal(t, []identity.Surface{}, defs[0].Surfaces, "exposure hidden folds into no surface")
	assert.Equal(t, EffectRead, defs[0].Effect, "kind read folds into effect read")
}

// TestPlainErrorThroughAStore: a body's plain error comes back as it is
// whether or not the registry has a Store (a store's own failure is an
// internal refusal; the unit's own error is not one).
func TestPlainErrorThroughAStore(t *testing.T) {
	boom := errors.New("the body's own failure")
	for name, store := range map[string]store.Store{"no store": nil, "run log": NewRunLog()} {
		reg := NewRegistry(&Options{Store: store})
		reg.MustRegister(New(Definition{ID: "a/b"}, func(context.Context, map[string]any, *Trace) (any, error) { return nil, boom }))
		res, err := reg.Run(context.Background(), Call{Action: "a/b"})
		assert.Same(t, boom, err, name)
		assert.Equal(t, codes.Internal, res.Entry().Error, name)
	}
}

// A manifest member of the wrong JSON type is refused naming the member
// and what it must be, never the value written there (encoding/json
// quotes a number's digits) nor the decoder's own Go types.
func TestManifestTypeErrorsEchoNothing(t *testing.T) {
	for text, want := range map[string]string{
		`[{"id":"a/b","maxResultBytes":4915551234567890123456}]`: "actions: definition: maxResultBytes must be an integer",
		`[{"id":"a/b","maxResultBytes":1.5e3}]`:                  "actions: definition: maxResultBytes must be an integer",
		`[{"id":"a/b","maxResultBytes":"4915551234"}]`:           "actions: definition: maxResultBytes must be an integer",
		`[{"id":"a/b","title":4915551234}]`:                      "actions: definition: title must be a string",
		`[{"id":"a/b","destructive":"4915551234"}]`:              "actions: definition: destructive must be true or false",
		`[{"id":"a/b","refusals":[{"code":4915551234}]}]`:        "actions: definition: refusals.code must be a string",
		`[{"id":"a/b","writes":"4915551234"}]`:                   "actions: definition: writes must be an array",
		`[4915551234]`:                                           "actions: definition: a definition must be an object",
		`{"id":"a/b"}`:                                           "actions: manifest: a manifest is an array of definitions",
	} {
		_, err := DecodeManifest([]byte(text))
		require.Error(t, err, text)
		assert.Equal(t, want, err.Error(), text)
		for _, leak := range []string{"4915551234", "1.5e3", "plain", "legacy", "Go ", "json."} {
			assert.NotContains(t, err.Error(), leak, text)
		}
		var d Definition
		if text[0] == '[' {
			err = json.Unmarshal([]byte(text[1:len(text)-1]), &d)
			require.Error(t, err, text)
			assert.Equal(t, want, err.Error(), "%s: the same through Definition.UnmarshalJSON", text)
		}
	}
}
