package ijson

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecodeValues(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want any
	}{
		{"null", `null`, nil},
		{"true", ` true `, true},
		{"false", "\t\r\nfalse\n", false},
		{"integer", `12`, json.Number("12")},
		{"negative zero", `-0`, json.Number("-0")},
		{"exact text kept", `1.50E+02`, json.Number("1.50E+02")},
		{"precision loss accepted", `3.141592653589793238462643383279`, json.Number("3.141592653589793238462643383279")},
		{"underflow accepted", `1e-330`, json.Number("1e-330")},
		{"tiny bound accepted", `0.001e-397`, json.Number("0.001e-397")},
		{"zero with a tiny exponent", `0e-99999`, json.Number("0e-99999")},
		{"largest double", `1.7976931348623157e308`, json.Number("1.7976931348623157e308")},
		{"long integer", `123456789012345678901234567890`, json.Number("123456789012345678901234567890")},
		{"string", `"abc"`, "abc"},
		{"escapes", `"\"\\\/\b\f\n\r\t"`, "\"\\/\b\f\n\r\t"},
		{"unicode escapes", `"\u00e9\u20AC\ud83d\ude02\u0000"`, "é€😂\x00"},
		{"raw utf-8", `"é€😂"`, "é€😂"},
		{"noncharacter accepted", `"\uffff"`, "\uffff"},
		{"empty object", `{}`, map[string]any{}},
		{"empty array", `[ ]`, []any{}},
		{"nested", `{"a":[1,{"b":null}],"c":{"d":"e"}}`, map[string]any{
			"a": []any{json.Number("1"), map[string]any{"b": nil}},
			"c": map[string]any{"d": "e"},
		}},
		{"escaped names differ", `{"a":1,"\u0062":2}`, map[string]any{"a": json.Number("1"), "b": json.Number("2")}},
		{"empty name", `{"":1}`, map[string]any{"": json.Number("1")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Decode([]byte(c.in), 0)
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}

func TestDecodeEmptyContainersAreNotNil(t *testing.T) {
	got, err := Decode([]byte(`[[],{}]`), 0)
	require.NoError(t, err)
	a := got.([]any)
	assert.NotNil(t, a[0].([]any))
	assert.NotNil(t, a[1].(map[string]any))
}

func TestDecodeErrors(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		reason  Reason
		pointer string
		offset  int64
	}{
		{"empty", ``, Syntax, "", 0},
		{"only space", `   `, Syntax, "", 3},
		{"bom", "\uFEFF{}", Syntax, "", 0},
		{"bad literal", `nul`, Syntax, "", 0},
		{"capital literal", `True`, Syntax, "", 0},
		{"unterminated string", `"abc`, Syntax, "", 4},
		{"control character", "[\"a\tb\"]", Syntax, "/0", 3},
		{"bad escape", `["\x"]`, Syntax, "/0", 2},
		{"short unicode escape", `"\u12"`, Syntax, "", 1},
		{"leading zero", `01`, Syntax, "", 1},
		{"leading zero in array", `[-012]`, Syntax, "/0", 3},
		{"plus sign", `+1`, Syntax, "", 0},
		{"bare minus", `-`, Syntax, "", 1},
		{"no fraction digits", `1.`, Syntax, "", 2},
		{"no exponent digits", `1e+`, Syntax, "", 3},
		{"leading dot", `.5`, Syntax, "", 0},
		{"missing colon", `{"a" 1}`, Syntax, "", 5},
		{"name not string", `{1:2}`, Syntax, "", 1},
		{"trailing comma in array", `[1,]`, Syntax, "/1", 3},
		{"trailing comma in object", `{"a":1,}`, Syntax, "", 7},
		{"missing comma", `{"a":[1 2]}`, Syntax, "/a", 8},
		{"unclosed", `{"a":[1,2]`, Syntax, "", 10},
		{"unclosed inner", `{"a":[`, Syntax, "/a/0", 6},
		{"wrong closer", `[1}`, Syntax, "", 2},
		{"single quotes", `{'a':1}`, Syntax, "", 1},
		{"trailing value", `1 2`, TrailingData, "", 2},
		{"trailing after object", `{} x`, TrailingData, "", 3},
		{"trailing letters", `truex`, TrailingData, "", 4},
		{"duplicate", `{"a":1,"a":2}`, DuplicateName, "/a", 7},
		{"duplicate after unescaping", `{"b":{"x":1,"\u0078":2}}`, DuplicateName, "/b/x", 12},
		{"duplicate deep", `[0,{"k":[{"n~/":1,"n~/":2}]}]`, DuplicateName, "/1/k/0/n~0~1", 18},
		{"duplicate empty name", `{"":1,"":2}`, DuplicateName, "/", 6},
		{"invalid utf-8 in string", "[\"a\xffb\"]", InvalidUTF8, "/0", 3},
		{"invalid utf-8 in name", "{\"a\xff\":1}", InvalidUTF8, "", 3},
		{"invalid utf-8 outside string", "[\xff]", InvalidUTF8, "/0", 1},
		{"utf-8 encoded surrogate", "\"\xed\xa0\x80\"", InvalidUTF8, "", 1},
		{"overlong encoding", "\"\xc0\xaf\"", InvalidUTF8, "", 1},
		{"truncated utf-8", "\"\xe2\x82\"", InvalidUTF8, "", 1},
		{"non-ascii outside string", "[\u00e9]", Syntax, "/0", 1},
		{"lone high surrogate", `{"s":"\ud800"}`, LoneSurrogate, "/s", 6},
		{"high surrogate then text", `"\ud800abc"`, LoneSurrogate, "", 1},
		{"high surrogate twice", `"\ud800\ud800"`, LoneSurrogate, "", 1},
		{"lone low surrogate", `["\udc00"]`, LoneSurrogate, "/0", 2},
		{"lone surrogate in name", `{"\udfff":1}`, LoneSurrogate, "", 2},
		{"high surrogate bad escape", `"\ud800\u12"`, Syntax, "", 7},
		{"number too large", `[1e400]`, NumberRange, "/0", 1},
		{"negative number too large", `{"n":-1.8e308}`, NumberRange, "/n", 5},
		{"long integer too large", "1" + strings.Repeat("0", 309), NumberRange, "", 0},
		{"below 1e-400", `[1e-401]`, NumberRange, "/0", 1},
		{"below 1e-400 by its fraction", `[0.01e-399]`, NumberRange, "/0", 1},
		{"huge negative exponent", `{"n":1e-10000000}`, NumberRange, "/n", 5},
		{"text too long", "0." + strings.Repeat("1", MaxNumberLength), NumberRange, "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, err := Decode([]byte(c.in), 0)
			assert.Nil(t, v)
			var e *Error
			require.True(t, errors.As(err, &e), "want *Error, got %v", err)
			assert.Equal(t, c.reason, e.Reason, "reason")
			assert.Equal(t, c.pointer, e.Pointer, "pointer")
			assert.Equal(t, c.offset, e.Offset, "offset")
		})
	}
}

func TestDecodeDepth(t *testing.T) {
	nest := func(n int) []byte {
		return []byte(strings.Repeat("[", n) + strings.Repeat("]", n))
	}
	_, err := Decode([]byte(`1`), 1)
	require.NoError(t, err, "a scalar has depth 0")
	_, err = Decode(nest(3), 3)
	require.NoError(t, err)

	_, err = Decode(nest(4), 3)
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, TooDeep, e.Reason)
	assert.Equal(t, int64(3), e.Offset, "the bracket that went too deep")
	assert.Equal(t, "/0/0/0", e.Pointer)

	_, err = Decode([]byte(`{"a":{"b":{}}}`), 2)
	require.ErrorAs(t, err, &e)
	assert.Equal(t, TooDeep, e.Reason)
	assert.Equal(t, "/a/b", e.Pointer)

	_, err = Decode(nest(DefaultMaxDepth), 0)
	require.NoError(t, err, "the default limit")
	_, err = Decode(nest(DefaultMaxDepth+1), -1)
	require.ErrorAs(t, err, &e)
	assert.Equal(t, TooDeep, e.Reason)
}

// The decoder keeps its own stack: a huge limit and huge nesting cost heap,
// not goroutine stack.
func TestDecodeVeryDeepDoesNotOverflow(t *testing.T) {
	const n = 200_000
	v, err := Decode([]byte(strings.Repeat(`{"a":[`, n)+strings.Repeat(`]}`, n)), 1<<30)
	require.NoError(t, err)
	require.NotNil(t, v)

	_, err = Decode([]byte(strings.Repeat("[", 5*n)), 0)
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, TooDeep, e.Reason)
	assert.Equal(t, int64(DefaultMaxDepth), e.Offset)
}

// Messages say what and where, never what the input said.
func TestErrorMessagesHoldNoInput(t *testing.T) {
	const secret = "hunter2"
	inputs := []string{
		`{"pw":"hunter2` + "\xff" + `"}`,
		`{"pw":"hunter2\ud800"}`,
		`{"pw":"hunter2","pw":"hunter2"}`,
		`{"pw":"hunter2" "x"}`,
		`{"pw":"hunter2"} hunter2`,
		`["hunter2", hunter2]`,
		`{"pw":"hunter2\q"}`,
	}
	for _, in := range inputs {
		_, err := Decode([]byte(in), 0)
		require.Error(t, err)
		assert.NotContains(t, err.Error(), secret, "input %q", in)
		assert.True(t, strings.HasPrefix(err.Error(), "ijson: "))
	}
}

func TestErrorMessage(t *testing.T) {
	_, err := Decode([]byte(`{"a":{"b":1,"b":2}}`), 0)
	require.EqualError(t, err, `ijson: duplicate member name at "/a/b", byte offset 12`)
	_, err = Decode([]byte(`[1,]`), 0)
	require.EqualError(t, err, `ijson: syntax error (unexpected character) at "/1", byte offset 3`)
	_, err = Decode([]byte(`1 1`), 0)
	require.EqualError(t, err, `ijson: trailing data at the root, byte offset 2`)
}

// Decode agrees with encoding/json (numbers kept as text) on valid input.
func TestDecodeMatchesEncodingJSON(t *testing.T) {
	for name, text := range benchTexts() {
		t.Run(name, func(t *testing.T) {
			got, err := Decode(text, 0)
			require.NoError(t, err)
			assert.Equal(t, stdDecode(t, text), got)
		})
	}
}

// Keep gives what Decode gives, errors included, and so does each
// decoding of the Kept: maps of its own, strings and numbers pointing
// into the text, boxed once.
func TestKeep(t *testing.T) {
	texts := map[string]string{
		"escapes and names": `{"a\u0062":"x\ny","plain":"text","n":[1.50E+02,-0,7,"é€",""],"k":{"":true,"t":"string","s":"#7"}}`,
		"duplicate":         `{"a":1,"a":2}`,
		"lone surrogate":    `["\ud800"]`,
		"too deep":          strings.Repeat("[", 70) + strings.Repeat("]", 70),
		"scalar":            `"object"`,
	}
	for name, text := range benchTexts() {
		texts[name] = string(text)
	}
	for name, text := range texts {
		t.Run(name, func(t *testing.T) {
			want, wantErr := Decode([]byte(text), 64)
			k, got, err := Keep(text, 64)
			assert.Equal(t, wantErr, err)
			assert.Equal(t, want, got)
			if err == nil {
				assert.Equal(t, want, k.Decode())
				assert.Equal(t, want, k.Decode(), "again")
				assert.Equal(t, text, k.Text())
			}
		})
	}
	text := `{"plain":"text","n":12.5,"esc":"a\tb","list":[{"x":1}]}`
	k, _, err := Keep(text, 0)
	require.NoError(t, err)
	m := k.Decode().(map[string]any)
	within := func(s string) bool {
		start := uintptr(unsafe.Pointer(unsafe.StringData(text)))
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		return p >= start && p < start+uintptr(len(text))
	}
	assert.True(t, within(m["plain"].(string)), "a plain string points into the text")
	assert.True(t, within(string(m["n"].(json.Number))), "a number points into the text")
	assert.False(t, within(m["esc"].(string)), "an escaped string is a copy")
	for name := range m {
		assert.True(t, within(name), "the name %q points into the text", name)
	}
	m["plain"] = "changed"
	m["list"].([]any)[0].(map[string]any)["x"] = "changed"
	assert.Equal(t, map[string]any{"plain": "text", "n": json.Number("12.5"), "esc": "a\tb", "list": []any{map[string]any{"x": json.Number("1")}}},
		k.Decode(), "a decoding changed changes no other")
	if raceEnabled {
		return
	}
	// Maps and slices only: the strings and numbers are boxed once, as
	// many allocations as the same shape holding only literals.
	shape := func(leaf string) *Kept {
		k, _, err := Keep(strings.ReplaceAll(`{"a":L,"b":[L,L,{"c":L}],"d":{"e":L}}`, "L", leaf), 0)
		require.NoError(t, err)
		return k
	}
	k0 := shape("true")
	literals := testing.AllocsPerRun(100, func() { _ = k0.Decode() })
	for _, leaf := range []string{`"text"`, `12.5`, `"object"`, `7`} {
		k := shape(leaf)
		assert.Equal(t, literals, testing.AllocsPerRun(100, func() { _ = k.Decode() }), leaf)
	}
}

func stdDecode(t testing.TB, text []byte) any {
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v))
	return v
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"a":[1,2.5e3,-0,true,false,null,"x\u00e9\ud83d\ude02"]}`,
		`{"a":1,"a":2}`, `"\ud800"`, "\"\xff\"", `1e400`, `[[[[]]]]`, `{} 1`,
		`{"\u0061":1,"a":2}`, `[1,]`, ` "\/\b\f\n\r\t" `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Decode(data, 64)
		n, isNumber := v.(json.Number)
		require.Equal(t, err == nil && isNumber && string(n) == string(data), ValidNumber(string(data)), "ValidNumber")
		k, kv, kerr := Keep(string(data), 64)
		require.Equal(t, err, kerr, "Keep's error")
		require.Equal(t, v, kv, "Keep's value")
		if k != nil {
			require.Equal(t, v, k.Decode(), "a Kept's decoding")
		}
		if err != nil {
			var e *Error
			require.ErrorAs(t, err, &e)
			require.GreaterOrEqual(t, e.Offset, int64(0))
			require.LessOrEqual(t, e.Offset, int64(len(data)))
			if e.Reason == Syntax || e.Reason == TrailingData {
				require.False(t, json.Valid(data), "refused valid JSON as %s", e.Reason)
			}
			return
		}
		require.True(t, json.Valid(data), "accepted invalid JSON")
		require.Equal(t, stdDecode(t, data), v)
	})
}

func TestValidNumber(t *testing.T) {
	for s, want := range map[string]bool{
		"0": true, "-0": true, "12345": true, "-1.5e-3": true, "1E+2": true, "1e400": false,
		"": false, "-": false, "01": false, "1.": false, ".5": false, "1e": false, "+1": false,
		" 1": false, "1 ": false, "1,": false, "0x10": false, "NaN": false, `"1"`: false,
		strings.Repeat("9", MaxNumberLength+1): false,
	} {
		assert.Equal(t, want, ValidNumber(s), "ValidNumber(%q)", s)
	}
	if !raceEnabled {
		// It reads the number where it is: a long batch's numbers cost
		// no copy each.
		assert.Zero(t, testing.AllocsPerRun(100, func() { ValidNumber("123456789.25e-7") }))
	}
}

func TestExact(t *testing.T) {
	for s, want := range map[string]bool{
		"0": true, "-0": true, "1.50": true, "0.1": true, "1e21": true, "100e-2": true,
		"12345678901234567000": true, "123456789012345680000": true, "9007199254740992": true,
		"0.30000000000000004": true, "5e-324": true, "1.7976931348623157e308": true,
		"9007199254740993": false, "12345678901234567890": false, "-9007199254740993": false,
		"3.14159265358979323846": false, "0.10000000000000000001": false, "1.0000000000000000": true,
		"123456789012345678e3": false, "1234567890123456e5": true,
	} {
		if got := Exact(s); got != want {
			t.Errorf("Exact(%s) = %v, want %v", s, got, want)
		}
	}
	if _, err := Decode([]byte(`9007199254740993`), 0); err != nil {
		t.Fatalf("Decode refused: %v", err)
	}
}

func TestText(t *testing.T) {
	for _, v := range []any{json.RawMessage(`{"a":1}`), []byte(`{"a":1}`), `{"a":1}`} {
		text, ok := Text(v)
		assert.True(t, ok, "%T", v)
		assert.Equal(t, `{"a":1}`, string(text), "%T", v)
	}
	for _, v := range []any{nil, map[string]any{"a": 1}, 1, json.Number("1")} {
		_, ok := Text(v)
		assert.False(t, ok, "%T is no text", v)
	}
}
