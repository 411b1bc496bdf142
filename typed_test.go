package actions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	googleschema "github.com/google/jsonschema-go/jsonschema"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/store"
)

// typedFixture is one file of testdata/typed: cases of one kind.
type typedFixture struct {
	Description string      `json:"description"`
	Cases       []typedCase `json:"cases"`
}

// typedCase is one case. type names a Go type of goTypes; as says whether
// it is the parameters (P) or the result (R). parameters and
// outputSchema are given schemas (nil: inferred); schema and output are
// the schemas expected after Register. params are a call's parameters
// (JSON text), resolve the ref resolver's table (value → key), decoded
// the P the body receives (see dumpGo). return is what the body returns
// ("zero": R's zero value, "new": a pointer to a zero value, or JSON
// text decoded into R); result is the entry's result text.
type typedCase struct {
	Name         string            `json:"name"`
	Type         string            `json:"type"`
	As           string            `json:"as"`
	Parameters   json.RawMessage   `json:"parameters"`
	OutputSchema json.RawMessage   `json:"outputSchema"`
	Schema       json.RawMessage   `json:"schema"`
	Output       json.RawMessage   `json:"output"`
	Params       json.RawMessage   `json:"params"`
	Resolve      map[string]string `json:"resolve"`
	Decoded      json.RawMessage   `json:"decoded"`
	Return       json.RawMessage   `json:"return"`
	Untyped      bool              `json:"untyped"`
	Result       *string           `json:"result"`
	Error        *typedError       `json:"error"`
}

type typedError struct {
	Code    codes.Code   `json:"code"`
	Message string       `json:"message"`
	Issues  []typedIssue `json:"issues"`
}

// typedIssue is an expected issue; contains is a part of its message.
type typedIssue struct {
	Path     string `json:"path"`
	Keyword  string `json:"keyword"`
	Contains string `json:"contains"`
}

func loadTyped(t *testing.T, name string) []typedCase {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "typed", name+".json"))
	require.NoError(t, err)
	var f typedFixture
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&f), name)
	require.NotEmpty(t, f.Cases, name)
	return f.Cases
}

func (c *typedCase) goType(t *testing.T) goType {
	t.Helper()
	gt, ok := goTypes[c.Type]
	require.True(t, ok, "unknown type %q (known: %s)", c.Type, goTypeNames())
	return gt
}

func rawOrNil(r json.RawMessage) any {
	if len(r) == 0 {
		return nil
	}
	return r
}

// requireTypedRefusal checks err against an expected refusal: the code, the
// message when given, and the issues in order (path, keyword, a part of
// the message).
func requireTypedRefusal(t *testing.T, want *typedError, err error) {
	t.Helper()
	var r *Refusal
	require.ErrorAs(t, err, &r)
	assert.Equal(t, want.Code, r.Code)
	if want.Message != "" {
		assert.Equal(t, want.Message, r.Message)
	}
	require.Len(t, r.Issues, len(want.Issues), "issues: %+v", r.Issues)
	for i, w := range want.Issues {
		assert.Equal(t, w.Path, r.Issues[i].Path, "issue %d", i)
		if w.Keyword != "" {
			assert.Equal(t, w.Keyword, r.Issues[i].Keyword, "issue %d", i)
		}
		assert.Contains(t, r.Issues[i].Message, w.Contains, "issue %d", i)
	}
}

// TestTypedSchemas: Go types → the inferred parameters and output
// schemas, or the registration refusal; each inferred tool is valid
// against $defs/Tool of both MCP versions.
func TestTypedSchemas(t *testing.T) {
	for _, c := range append(loadTyped(t, "schemas"), loadTyped(t, "agree")...) {
		t.Run(c.Name, func(t *testing.T) {
			gt := c.goType(t)
			def := Definition{ID: "typed/case", Parameters: rawOrNil(c.Parameters), OutputSchema: rawOrNil(c.OutputSchema)}
			var a Action
			switch c.As {
			case "parameters":
				var got any
				a = gt.params(def, &got)
			case "result":
				a = gt.result(def, func() (any, error) { return gt.zero(), nil })
			default:
				t.Fatalf("as must be parameters or result, not %q", c.As)
			}
			reg := NewRegistry(nil)
			err := reg.Register(a)
			if c.Error != nil {
				requireTypedRefusal(t, c.Error, err)
				return
			}
			require.NoError(t, err)
			d := reg.Definitions()[0]
			if c.Schema != nil {
				assert.JSONEq(t, string(c.Schema), toolsJSON(t, d.Parameters), "parameters")
			}
			switch {
			case c.Output != nil:
				assert.JSONEq(t, string(c.Output), toolsJSON(t, d.OutputSchema), "output schema")
			case c.As == "result":
				assert.Nil(t, d.OutputSchema, "output schema")
			}
			tools, err := reg.Tools(nil)
			require.NoError(t, err)
			require.Len(t, tools, 1)
			requireMCPToolAnyOutput(t, tools[0])
		})
	}
}

// requireMCPToolAnyOutput checks a tool against $defs/Tool of both MCP
// versions, as mcpserver lists it: without its output schema for
// 2025-11-25 when the schema's root is not an object.
func requireMCPToolAnyOutput(t *testing.T, tool Tool) {
	t.Helper()
	schemas, err := mcpToolSchemas()
	require.NoError(t, err)
	for version, sch := range schemas {
		tv := tool
		if version == "2025-11-25" && tv.OutputSchema != nil && tv.OutputSchema["type"] != "object" {
			tv.OutputSchema = nil
		}
		data, err := json.Marshal(tv)
		require.NoError(t, err)
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		require.NoError(t, err)
		assert.NoError(t, sch.Validate(v), "tool %s against MCP %s", tool.Name, version)
	}
	_, err = CompileParameters(tool.InputSchema, Limits{})
	assert.NoError(t, err, "the inputSchema is a parameters schema")
}

// TestTypedDecode: parameters → the P the body receives, or the refusal
// (the body then does not run).
func TestTypedDecode(t *testing.T) {
	for _, c := range loadTyped(t, "decode") {
		t.Run(c.Name, func(t *testing.T) {
			gt := c.goType(t)
			var got any
			ran := false
			def := Definition{ID: "typed/case", Parameters: rawOrNil(c.Parameters)}
			a := gt.params(def, &got)
			body := a.Run
			a.Run = func(ctx context.Context, p map[string]any, c *Trace) (any, error) {
				ran = true
				return body(ctx, p, c)
			}
			var opts Options
			if c.Resolve != nil {
				opts.Resolve = func(_ context.Context, _, value string) (RefMatches, error) {
					if k, ok := c.Resolve[value]; ok {
						return RefMatches{Names: []string{k}}, nil
					}
					return RefMatches{}, nil
				}
			}
			reg := NewRegistry(&opts)
			require.NoError(t, reg.Register(a))
			res, err := reg.Run(context.Background(), Call{Action: "typed/case", Params: json.RawMessage(c.Params)})
			entry := res.Entry()
			if c.Error != nil {
				requireTypedRefusal(t, c.Error, err)
				assert.Equal(t, store.OutcomeRefused, entry.Outcome)
				assert.Equal(t, string(c.Error.Code), string(entry.Error))
				if c.Error.Code == codes.InvalidParameters && got == nil {
					// A decoding refusal happens inside Run, before the
					// typed body: it never sees a half-filled P.
					assert.Nil(t, got)
				}
				return
			}
			require.NoError(t, err)
			require.True(t, ran)
			assert.JSONEq(t, string(c.Decoded), toolsJSON(t, got))
		})
	}
}

// TestTypedOutput: what a body's result gives against the output schema:
// the entry's result text, or the output_invalid refusal.
func TestTypedOutput(t *testing.T) {
	for _, c := range loadTyped(t, "output") {
		t.Run(c.Name, func(t *testing.T) {
			ret := func() (any, error) { return nil, nil }
			gt, typed := goTypes[c.Type]
			switch s := string(c.Return); {
			case !typed && !c.Untyped:
				t.Fatalf("unknown type %q", c.Type)
			case s == `"zero"`:
				ret = func() (any, error) { return gt.zero(), nil }
			case s == `"new"`:
				ret = func() (any, error) { return gt.newPtr(), nil }
			case c.Untyped:
				ret = func() (any, error) {
					if s == "" {
						return nil, nil
					}
					var v any
					err := json.Unmarshal(c.Return, &v)
					return v, err
				}
			default:
				ret = func() (any, error) { return gt.decode(c.Return) }
			}
			def := Definition{ID: "typed/case", OutputSchema: rawOrNil(c.OutputSchema)}
			var a Action
			if c.Untyped {
				a = Action{Definition: def, Run: func(context.Context, map[string]any, *Trace) (any, error) { return ret() }}
			} else {
				a = gt.result(def, ret)
			}
			var seen []store.RunEntry
			reg := NewRegistry(&Options{OnRecord: func(rec store.Record) { seen = append(seen, rec.Entry) }})
			require.NoError(t, reg.Register(a))
			res, err := reg.Run(context.Background(), Call{Action: "typed/case"})
			result, entry := res.Value, res.Entry()
			require.Len(t, seen, 1, "OnRecord sees the call once")
			if c.Error != nil {
				requireTypedRefusal(t, c.Error, err)
				assert.Nil(t, result, "a refused result never reaches the caller")
				assert.Equal(t, store.OutcomeRefused, entry.Outcome)
				assert.Equal(t, string(c.Error.Code), string(entry.Error))
				assert.Empty(t, entry.Result)
				assert.NotContains(t, err.Error(), "SECRET", "a refusal never quotes the result")
				if c.Error.Code == codes.OutputInvalid {
					assert.ErrorIs(t, err, codes.OutputInvalid)
					assert.Equal(t, codes.PolicyOf(codes.OutputInvalid), codes.Policy{Transport: codes.TransportProtocol, Retry: codes.RetryNever})
					var r *Refusal
					require.ErrorAs(t, err, &r)
					assert.NotEmpty(t, r.Issues, "the issues reach the host in the refusal")
					for _, is := range r.Issues {
						assert.NotContains(t, is.Message, "SECRET")
					}
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, store.OutcomeDone, entry.Outcome)
			require.NotNil(t, c.Result, "give the expected result text")
			assert.Equal(t, *c.Result, entry.Result)
		})
	}
}

func TestTypedNilBody(t *testing.T) {
	a := Typed[tOrder, tResult](Definition{ID: "typed/nil"}, nil)
	err := NewRegistry(nil).Register(a)
	requireCode(t, err, codes.ConstraintViolation)
}

// TestTypedManifestOutputSchema: outputSchema is a member of a manifest
// entry, as an object or its JSON text, and Definitions gives it back.
func TestTypedManifestOutputSchema(t *testing.T) {
	defs, err := DecodeManifest([]byte(`[
		{"id": "m/a", "outputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}},
		{"id": "m/b", "outputSchema": "{\"type\": \"array\"}"},
		{"id": "m/c"}
	]`))
	require.NoError(t, err)
	require.Len(t, defs, 3)
	assert.JSONEq(t, `{"type": "object", "properties": {"n": {"type": "integer"}}}`, toolsJSON(t, defs[0].OutputSchema))
	assert.JSONEq(t, `{"type": "array"}`, toolsJSON(t, defs[1].OutputSchema))
	assert.Nil(t, defs[2].OutputSchema)
	_, err = DecodeManifest([]byte(`[{"id": "m/a", "outputSchema": 3}]`))
	assert.Error(t, err)
	_, err = DecodeManifest([]byte(`[{"id": "m/a", "OutputSchema": {}}]`))
	assert.Error(t, err, "member names are exact")

	reg := NewRegistry(nil)
	require.NoError(t, reg.Bind(defs, map[string]Body{"m/a": noBody, "m/b": noBody, "m/c": noBody}))
	got := reg.Definitions()
	assert.JSONEq(t, `{"type": "object", "properties": {"n": {"type": "integer"}}}`, toolsJSON(t, got[0].OutputSchema))
	text, err := json.Marshal(got[1])
	require.NoError(t, err)
	assert.JSONEq(t, `{"id": "m/b", "effect": "write", "outputSchema": {"type": "array"}}`, string(text))

	// A broken output schema is refused at Register as the parameters
	// schema would be.
	err = reg.Register(Action{Definition: Definition{ID: "m/d", OutputSchema: `{"type": "objekt"}`}, Run: noBody})
	requireCode(t, err, codes.ConstraintViolation)
	var r *Refusal
	require.ErrorAs(t, err, &r)
	assert.Equal(t, "invalid output schema", r.Message)
}

// TestTypedEncodeMatchesEncodingJSON: a typed result is checked in the
// JSON form encoding/json gives it (the encoder writes JSON values
// directly, without text in between).
func TestTypedEncodeMatchesEncodingJSON(t *testing.T) {
	when := time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 3600))
	s := "s"
	f := 0.1
	for _, v := range []any{
		tOrder{Name: "n", Owner: "o", Count: -3, Due: when, Total: big.NewInt(-12), Tags: []string{}, Via: nil,
			Blob: []byte("hi"), Discount: &f, Notes: map[string]string{"a": "b"}},
		tOrder{},
		&tOrder{Name: "p"},
		tNumbers{I8: -1, I64: 1 << 60, U8: 255, U64: 1<<64 - 1, F32: 0.1, F64: 1e-7, N: "1.50", B: big.NewInt(7)},
		tNumbers{},
		tOptional{S: &s, P: &tSub{X: 1}, L: []int{}, M: map[string]string{}, A: map[string]any{"k": []any{1, "x"}},
			AR: [2]int{1, 2}, T: &when, R: json.RawMessage(`{"b": 1, "a": [true]}`)},
		tOptional{},
		tEmbedded{TBase: TBase{ID: "i"}},
		tEmbedded{TBase: TBase{ID: "i"}, TExtra: &TExtra{Note: "n"}, Own: "o"},
		tPlain{Untagged: "u", Skipped: "s", Dash: "d"},
		tEmbedPtr{Name: "x"},
		tEmbedPtr{TMeta: &TMeta{Owner: "o"}, Name: "x"},
		tShadow{TInner: TInner{E1: "inner"}, E1: "outer"},
		tTwoX{TXA: TXA{X: "1"}, TXB: TXB{X: "2"}},
		tHidden{TFoo: TFoo{Foo: 1}, E1: "s"},
		tDropped{TC1: TC1{ID: "1"}, TC2: TC2{ID: "2"}, Own: "o"},
		tSkipEmbed{TBase: TBase{ID: "i"}, Own: "o"},
		tTaggedEmbed{TBase: TBase{ID: "i"}},
		tDuplicate{A: "a", X: "x"},
		tEmbedCode{TCode: "c", N: 1},
		tEmbedLow{tLow: &tLow{Z: "z"}, N: 1},
		tEmbedLow{N: 1},
		tResult{Key: "k", Lines: 1},
		tEmpty{},
		[]string(nil),
		[]string{"a"},
		map[string]int{"a": 1},
		3,
		"x",
	} {
		t.Run(reflect.TypeOf(v).String(), func(t *testing.T) {
			w := &typeWalk{overrides: map[reflect.Type]*googleschema.Schema{}}
			plan, err := w.plan(reflect.TypeOf(v), "", "")
			require.NoError(t, err)
			got, err := plan.encodeResult(v)
			require.NoError(t, err)
			gotText, err := CanonicalJSON(got)
			require.NoError(t, err)
			wantText, err := CanonicalJSON(v) // through encoding/json
			require.NoError(t, err)
			assert.Equal(t, string(wantText), string(gotText))
		})
	}
}

// TestOutputUntypedGoValue: an untyped body's result that is not in
// JSON's Go types (a struct, a typed map) is checked in its JSON form.
func TestOutputUntypedGoValue(t *testing.T) {
	reg := NewRegistry(nil)
	ret := any(tResult{Key: "k", Lines: 2})
	reg.MustRegister(Action{
		Definition: Definition{ID: "u/go", OutputSchema: `{"type": "object", "required": ["key", "lines"], "properties": {"lines": {"maximum": 2}}}`},
		Run:        func(context.Context, map[string]any, *Trace) (any, error) { return ret, nil },
	})
	res, err := reg.Run(context.Background(), Call{Action: "u/go"})
	require.NoError(t, err)
	assert.Equal(t, `{"key":"k","lines":2,"tags":null}`, res.Entry().Result)

	ret = map[string]int{"key": 1}
	_, err = reg.Run(context.Background(), Call{Action: "u/go"})
	requireTypedRefusal(t, &typedError{Code: codes.OutputInvalid, Issues: []typedIssue{{Path: "/lines", Keyword: "required", Contains: "is required"}}}, err)

	ret = tResult{Key: "k", Lines: 3}
	_, err = reg.Run(context.Background(), Call{Action: "u/go"})
	requireTypedRefusal(t, &typedError{Code: codes.OutputInvalid, Issues: []typedIssue{{Path: "/lines", Keyword: "maximum", Contains: "must be <= 2"}}}, err)
}

// TestTypedConcurrentResults: the maps a typed result is encoded into
// are reused once its entry is written; concurrent calls never see
// another call's values.
func TestTypedConcurrentResults(t *testing.T) {
	type inner struct {
		N int    `json:"n"`
		S string `json:"s"`
	}
	type outer struct {
		ID    int     `json:"id"`
		Inner inner   `json:"inner"`
		List  []inner `json:"list"`
	}
	reg := NewRegistry(nil)
	reg.MustRegister(Typed(Definition{ID: "c/echo"}, func(_ context.Context, p struct {
		N int `json:"n"`
	}, _ *Trace) (*outer, error) {
		return &outer{ID: p.N, Inner: inner{N: p.N, S: "x"}, List: []inner{{N: p.N}, {N: -p.N}}}, nil
	}))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				n := g*1000 + i
				res, err := reg.Run(context.Background(), Call{Action: "c/echo", Params: map[string]any{"n": n}})
				if !assert.NoError(t, err) {
					return
				}
				want := fmt.Sprintf(`{"id":%d,"inner":{"n":%d,"s":"x"},"list":[{"n":%d,"s":""},{"n":%d,"s":""}]}`, n, n, n, -n)
				if !assert.Equal(t, want, res.Entry().Result) {
					return
				}
			}
		}()
	}
	wg.Wait()
}

// FuzzTyped feeds arbitrary JSON text to typed actions whose given
// schemas let any value through to the decoder (each property {}). A call
// never panics: it is done, or refused with invalid_parameters (never
// internal), and no issue message holds the text.
func FuzzTyped(f *testing.F) {
	anyProps := func(names ...string) string {
		props := map[string]any{}
		for _, n := range names {
			props[n] = map[string]any{}
		}
		b, _ := json.Marshal(map[string]any{"type": "object", "properties": props})
		return string(b)
	}
	reg := NewRegistry(nil)
	var got any
	reg.MustRegister(
		goTypes["tNumbers"].params(Definition{ID: "f/numbers", Parameters: anyProps("i8", "i64", "u8", "u64", "f32", "f64", "n", "b", "bv")}, &got),
		goTypes["tOptional"].params(Definition{ID: "f/optional", Parameters: anyProps("s", "p", "l", "m", "a", "ar", "t", "r")}, &got),
		goTypes["tEmbedded"].params(Definition{ID: "f/embedded", Parameters: anyProps("id", "note", "own")}, &got),
		goTypes["tOrder"].params(Definition{ID: "f/order"}, &got),
	)
	ids := []string{"f/numbers", "f/optional", "f/embedded", "f/order"}
	data, err := os.ReadFile(filepath.Join("testdata", "typed", "decode.json"))
	if err != nil {
		f.Fatal(err)
	}
	var fx typedFixture
	if err := json.Unmarshal(data, &fx); err != nil {
		f.Fatal(err)
	}
	for i, c := range fx.Cases {
		f.Add(uint8(i), []byte(c.Params))
	}
	f.Fuzz(func(t *testing.T, which uint8, text []byte) {
		id := ids[int(which)%len(ids)]
		_, err := reg.Run(context.Background(), Call{Action: id, Params: json.RawMessage(text)})
		if err == nil {
			return
		}
		var r *Refusal
		if !errors.As(err, &r) || r.Code != codes.InvalidParameters {
			t.Fatalf("%s: %v", id, err)
		}
		if len(text) >= 16 {
			for _, is := range r.Issues {
				if strings.Contains(is.Message, string(text)) {
					t.Fatalf("%s: an issue quotes the parameters: %v", id, is)
				}
			}
		}
	})
}

// FuzzTypedEncode: for values json.Unmarshal makes of arbitrary text,
// the plan's encoding of a result has the canonical JSON encoding/json's
// gives it (or both refuse it).
func FuzzTypedEncode(f *testing.F) {
	f.Add(uint8(0), []byte(`{"name": "n", "owner": "o", "count": 3, "due": "2026-01-02T03:04:05.5+01:00", "total": 12, "blob": "aGk=", "discount": 0.1, "notes": {"a": "b"}}`))
	f.Add(uint8(1), []byte(`{"i8": -1, "i64": 9007199254740993, "u64": 18446744073709551615, "f32": 0.1, "f64": 1e300, "n": 1.50, "b": 7, "bv": -3}`))
	f.Add(uint8(2), []byte(`{"s": "x", "p": {"x": 1}, "l": [], "m": {}, "a": {"k": [1, "x", null]}, "ar": [1, 2], "t": "2026-01-02T03:04:05Z", "r": {"b": 1}}`))
	f.Add(uint8(3), []byte(`{"id": "i", "note": "n"}`))
	types := []string{"tOrder", "tNums", "tOptional", "tEmbedded", "tPlain", "tResult"}
	f.Fuzz(func(t *testing.T, which uint8, text []byte) {
		gt := goTypes[types[int(which)%len(types)]]
		v, err := gt.decode(text)
		if err != nil {
			return
		}
		w := &typeWalk{overrides: map[reflect.Type]*googleschema.Schema{}}
		plan, err := w.plan(reflect.TypeOf(v), "", "")
		if err != nil {
			t.Fatal(err)
		}
		want, wantErr := CanonicalJSON(v)
		enc, encErr := plan.encodeResult(v)
		var got []byte
		if encErr == nil {
			got, encErr = CanonicalJSON(enc)
		}
		if (wantErr == nil) != (encErr == nil) {
			t.Fatalf("encoding/json: %v; plan: %v", wantErr, encErr)
		}
		if wantErr == nil && string(want) != string(got) {
			t.Fatalf("encoding/json: %s\nplan:          %s", want, got)
		}
	})
}
