package actions

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions/internal/ijson"
	"github.com/actionreg/actions/store"
)

// The RFC 8785 vectors: each input, read strictly and canonicalised, gives
// its output byte for byte; so does the input handed over as raw JSON text.
func TestCanonicalJSONVectors(t *testing.T) {
	inputs, err := filepath.Glob("testdata/jcs/input/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, inputs)
	for _, in := range inputs {
		name := filepath.Base(in)
		t.Run(name, func(t *testing.T) {
			text, err := os.ReadFile(in)
			require.NoError(t, err)
			want, err := os.ReadFile(filepath.Join("testdata/jcs/output", name))
			require.NoError(t, err)

			v, err := ijson.Decode(text, 0)
			require.NoError(t, err)
			got, err := CanonicalJSON(v)
			require.NoError(t, err)
			assert.Equal(t, string(want), string(got), "decoded value")

			got, err = CanonicalJSON(json.RawMessage(text))
			require.NoError(t, err)
			assert.Equal(t, string(want), string(got), "raw message")
		})
	}
}

// Every line of the ES6 number file: the hex bits of a double and the text
// ECMAScript writes for it.
func TestCanonicalNumberES6(t *testing.T) {
	f, err := os.Open("testdata/jcs/es6testfile-first10000.txt")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	lines := 0
	for sc.Scan() {
		lines++
		hexBits, want, ok := strings.Cut(sc.Text(), ",")
		require.True(t, ok, "line %d", lines)
		bits, err := strconv.ParseUint(hexBits, 16, 64)
		require.NoError(t, err, "line %d", lines)
		d := math.Float64frombits(bits)

		got, err := CanonicalJSON(d)
		require.NoError(t, err, "line %d", lines)
		if string(got) != want {
			t.Errorf("line %d: %s: got %s, want %s", lines, hexBits, got, want)
			continue
		}
		// The same double reached through number text.
		got, err = CanonicalJSON(json.Number(strconv.FormatFloat(d, 'g', -1, 64)))
		require.NoError(t, err, "line %d", lines)
		assert.Equal(t, want, string(got), "line %d as json.Number", lines)
	}
	require.NoError(t, sc.Err())
	assert.Equal(t, 10000, lines)
}

func TestCanonicalJSONValues(t *testing.T) {
	type tagged struct {
		Zeta   string         `json:"zeta"`
		Alpha  int            `json:"alpha"`
		Hidden string         `json:"-"`
		Empty  string         `json:"empty,omitempty"`
		HTML   string         `json:"html"`
		Nested map[string]int `json:"nested"`
		Raw    json.RawMessage
	}
	cases := []struct {
		name string
		in   any
		want string
	}{
		{"nil", nil, `null`},
		{"true", true, `true`},
		{"empty map", map[string]any{}, `{}`},
		{"nil map", map[string]any(nil), `null`},
		{"empty slice", []any{}, `[]`},
		{"nil slice", []any(nil), `null`},
		{"nil raw", json.RawMessage(nil), `null`},
		{"negative zero", math.Copysign(0, -1), `0`},
		{"json.Number -0", json.Number("-0"), `0`},
		{"json.Number -0.0", json.Number("-0.0e5"), `0`},
		{"json.Number empty", json.Number(""), `0`},
		{"json.Number exponent", json.Number("1E3"), `1000`},
		{"json.Number 1e21", json.Number("1000000000000000000000"), `1e+21`},
		{"json.Number long integer", json.Number("123456789012345678"), `123456789012345680`},
		{"json.Number precision", json.Number("0.1000000000000000000001"), `0.1`},
		{"json.Number underflow", json.Number("1e-400"), `0`},
		{"large double", 1e21, `1e+21`},
		{"below 1e21", 1e20 * 9.99, `999000000000000000000`},
		{"small double", 1e-7, `1e-7`},
		{"above 1e-7", 0.000001, `0.000001`},
		{"2^53", float64(1 << 53), `9007199254740992`},
		{"2^60", float64(1 << 60), `1152921504606847000`},
		{"max double", math.MaxFloat64, `1.7976931348623157e+308`},
		{"min subnormal", math.SmallestNonzeroFloat64, `5e-324`},
		{"float32", float32(0.1), `0.1`},
		{"int", -42, `-42`},
		{"int8", int8(-128), `-128`},
		{"uint8", uint8(255), `255`},
		{"int64 beyond 2^53", int64(1<<53 + 1), `9007199254740992`},
		{"int64 min", int64(math.MinInt64), `-9223372036854776000`},
		{"uint64 max", uint64(math.MaxUint64), `18446744073709552000`},
		{"uintptr", uintptr(7), `7`},
		{"escapes", "\"\\/\b\f\n\r\t\x00\x1f\x7f", `"\"\\/\b\f\n\r\t\u0000\u001f` + "\x7f\""},
		{"no html escaping", "<a href='x'>&amp;</a>", `"<a href='x'>&amp;</a>"`},
		{"line separators raw", "\u2028\u2029", "\"\u2028\u2029\""},
		{"replacement character raw", "\ufffd", "\"\ufffd\""},
		{"nested", map[string]any{"b": []any{1, "x", nil}, "a": map[string]any{"d": 1.5, "c": false}},
			`{"a":{"c":false,"d":1.5},"b":[1,"x",null]}`},
		{"struct with tags", tagged{Zeta: "z", Alpha: 1, Hidden: "h", HTML: "<&>", Nested: map[string]int{"y": 2, "x": 1}, Raw: json.RawMessage(`{"q": [1.0, 2e0]}`)},
			`{"Raw":{"q":[1,2]},"alpha":1,"html":"<&>","nested":{"x":1,"y":2},"zeta":"z"}`},
		{"pointer to struct", &tagged{Raw: json.RawMessage(`null`)}, `{"Raw":null,"alpha":0,"html":"","nested":null,"zeta":""}`},
		{"typed map", map[string]string{"b": "2", "a": "1"}, `{"a":"1","b":"2"}`},
		{"typed slice", []float64{1, 0.5, 1e300}, `[1,0.5,1e+300]`},
		{"byte slice is base64", []byte("hi"), `"aGk="`},
		{"struct inside map", map[string]any{"k": struct{ A []int }{[]int{3, 2}}}, `{"k":{"A":[3,2]}}`},
		{"raw in map", map[string]any{"r": json.RawMessage(" [ \"\\u00e9\" , 1.0E2 ] ")}, `{"r":["é",100]}`},
		{"escaped backslash before ufffd text", struct{ S string }{`\ufffd`}, `{"S":"\\ufffd"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := CanonicalJSON(c.in)
			require.NoError(t, err)
			assert.Equal(t, c.want, string(got))
		})
	}
}

// RFC 8785 §3.2.3 sorts names by UTF-16 code units: a supplementary
// character (a surrogate pair from 0xD800) sorts before U+E000–U+FFFF,
// although its UTF-8 bytes and its code point are greater.
func TestCanonicalJSONSortsByUTF16(t *testing.T) {
	keys := []string{
		"\U0001F600", // 😀, D83D DE00
		"\uFB33",     // דּ
		"\uE000",     // private use
		"\uFFFF",
		"\u00e9",
		"a",
		"ab",
		"",
		"\U00010000", // D800 DC00
		"\u20ac",
		"A\U0001F600",
		"A\uFFFD",
		"A",
	}
	m := map[string]any{}
	for i, k := range keys {
		m[k] = i
	}
	got, err := CanonicalJSON(m)
	require.NoError(t, err)
	wantOrder := []string{"", "A", "A\U0001F600", "A\uFFFD", "a", "ab", "\u00e9", "\u20ac",
		"\U00010000", "\U0001F600", "\uE000", "\uFB33", "\uFFFF"}
	var want strings.Builder
	want.WriteByte('{')
	for i, k := range wantOrder {
		if i > 0 {
			want.WriteByte(',')
		}
		want.WriteString(`"` + k + `":` + strconv.Itoa(slices.Index(keys, k)))
	}
	want.WriteByte('}')
	assert.Equal(t, want.String(), string(got))

	// Larger objects take the other sorting path.
	big := map[string]any{}
	for i := range 40 {
		big[string(rune(0xE000+i))] = i
		big[string(rune(0x10000+i))] = i
		big[strconv.Itoa(i)] = i
	}
	got, err = CanonicalJSON(big)
	require.NoError(t, err)
	assertSortedUTF16(t, got)
}

// assertSortedUTF16 checks member order in canonical text against a sort of
// the names converted to UTF-16.
func assertSortedUTF16(t *testing.T, text []byte) {
	t.Helper()
	v, err := ijson.Decode(text, 0)
	require.NoError(t, err)
	var names []string
	dec := json.NewDecoder(strings.NewReader(string(text)))
	_, err = dec.Token()
	require.NoError(t, err)
	for dec.More() {
		tok, err := dec.Token()
		require.NoError(t, err)
		names = append(names, tok.(string))
		var skip any
		require.NoError(t, dec.Decode(&skip))
	}
	require.Len(t, names, len(v.(map[string]any)))
	for i := 1; i < len(names); i++ {
		assert.Negative(t, compareUTF16Slow(names[i-1], names[i]), "%q before %q", names[i-1], names[i])
	}
}

func compareUTF16Slow(a, b string) int {
	ua, ub := utf16Units(a), utf16Units(b)
	for i := 0; i < len(ua) && i < len(ub); i++ {
		if ua[i] != ub[i] {
			return int(ua[i]) - int(ub[i])
		}
	}
	return len(ua) - len(ub)
}

func utf16Units(s string) []uint16 {
	var u []uint16
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			u = append(u, uint16(0xD800+(r>>10)), uint16(0xDC00+(r&0x3FF)))
		} else {
			u = append(u, uint16(r))
		}
	}
	return u
}

func TestCompareUTF16(t *testing.T) {
	samples := []string{"", "a", "ab", "b", "\u007f", "\u0080", "\u07ff", "\u0800", "\ud7ff", "\ue000",
		"\uefff", "\uf000", "\uffff", "\U00010000", "\U0001F600", "\U0010FFFF", "a\uffff", "a\U00010000",
		"\u00e9t\u00e9", "\u00e9t\U0001F600"}
	for _, a := range samples {
		for _, b := range samples {
			want := compareUTF16Slow(a, b)
			got := compareUTF16(a, b)
			assert.Equal(t, sign(want), sign(got), "%q vs %q", a, b)
		}
	}
}

func sign(i int) int {
	switch {
	case i < 0:
		return -1
	case i > 0:
		return 1
	}
	return 0
}

func TestCanonicalJSONErrors(t *testing.T) {
	type withFloat struct{ F float64 }
	type withString struct {
		S string `json:"s"`
	}
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	cyclicSlice := []any{nil}
	cyclicSlice[0] = cyclicSlice

	cases := []struct {
		name    string
		in      any
		reason  string
		pointer string
	}{
		{"NaN", math.NaN(), "non-finite number", ""},
		{"+Inf in map", map[string]any{"a": math.Inf(1)}, "non-finite number", "/a"},
		{"-Inf in slice", []any{1, math.Inf(-1)}, "non-finite number", "/1"},
		{"float32 Inf", float32(math.Inf(1)), "non-finite number", ""},
		{"NaN in struct", []any{withFloat{math.NaN()}}, "non-finite number", "/0"},
		{"json.Number too large", map[string]any{"n": json.Number("1e400")}, "number out of range", "/n"},
		{"json.Number too small", json.Number("-1.8e308"), "number out of range", ""},
		{"json.Number not a number", json.Number("0x10"), "invalid number", ""},
		{"json.Number NaN", json.Number("NaN"), "invalid number", ""},
		{"json.Number with space", json.Number(" 1"), "invalid number", ""},
		{"invalid utf-8 in value", map[string]any{"a": []any{"ok\xff"}}, "invalid utf-8", "/a/0"},
		{"invalid utf-8 in name", map[string]any{"x": map[string]any{"b\xc3": 1}}, "invalid utf-8", "/x"},
		{"invalid utf-8 in struct field", map[string]any{"w": withString{"\xff"}}, "invalid utf-8", "/w"},
		{"invalid utf-8 in typed map name", map[string]int{"\xff": 1}, "invalid utf-8", ""},
		{"encoded surrogate", "\xed\xb0\x80", "invalid utf-8", ""},
		{"raw duplicate", json.RawMessage(`{"a":{"b":1,"b":2}}`), "duplicate member name", "/a/b"},
		{"raw duplicate in map", map[string]any{"p": []any{json.RawMessage(`{"b":1,"\u0062":2}`)}}, "duplicate member name", "/p/0/b"},
		{"raw invalid utf-8", json.RawMessage("[\"\xff\"]"), "invalid utf-8", "/0"},
		{"raw lone surrogate", json.RawMessage(`{"s":"\udc00"}`), "lone surrogate", "/s"},
		{"raw number too large", json.RawMessage(`[1e400]`), "number out of range", "/0"},
		{"raw syntax", json.RawMessage(`{"a":}`), "invalid json text", "/a"},
		{"raw trailing data", json.RawMessage(`1 2`), "invalid json text", ""},
		{"raw empty", json.RawMessage(``), "invalid json text", ""},
		{"raw too deep", json.RawMessage(strings.Repeat("[", 10001) + strings.Repeat("]", 10001)), "nesting too deep", strings.Repeat("/0", 10000)},
		{"cyclic map", cyclic, "cycle", "/self"},
		{"cyclic slice", cyclicSlice, "cycle", "/0"},
		{"map holding itself by many keys", wideCycle(), "cycle", "/k000"},
		{"nesting too deep", deepNest(10001), "nesting too deep", strings.Repeat("/a", 10000)},
		{"channel", map[string]any{"c": make(chan int)}, "unsupported value", "/c"},
		{"func", []any{func() {}}, "unsupported value", "/0"},
		{"complex", complex(1, 2), "unsupported value", ""},
		{"marshaler error", failingMarshaler{}, "unsupported value", ""},
		{"marshaler duplicate", dupMarshaler{}, "duplicate member name", "/k"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := CanonicalJSON(c.in)
			assert.Nil(t, got)
			var ce *CanonicalError
			require.True(t, errors.As(err, &ce), "want *CanonicalError, got %v", err)
			assert.Equal(t, c.reason, ce.Reason)
			assert.Equal(t, c.pointer, ce.Pointer)
			assert.True(t, strings.HasPrefix(err.Error(), "actions: canonical json: "+c.reason+" at "), err.Error())
		})
	}
}

func TestCanonicalErrorUnwrap(t *testing.T) {
	_, err := CanonicalJSON(failingMarshaler{})
	assert.ErrorIs(t, err, errMarshal)

	_, err = CanonicalJSON(json.RawMessage(`{"a":1,"a":1}`))
	var de *ijson.Error
	require.ErrorAs(t, err, &de)
	assert.Equal(t, ijson.DuplicateName, de.Reason)

	_, err = CanonicalJSON(map[string]any{"list": []any{0, math.NaN()}})
	assert.EqualError(t, err, `actions: canonical json: non-finite number at "/list/1"`)
	_, err = CanonicalJSON(math.NaN())
	assert.EqualError(t, err, `actions: canonical json: non-finite number at the root`)
}

// A message names the place, never the submitted text.
func TestCanonicalErrorHoldsNoValue(t *testing.T) {
	const secret = "hunter2"
	inputs := []any{
		map[string]any{"pw": secret + "\xff"},
		map[string]any{"pw": json.RawMessage(`"` + secret + `\ud800"`)},
		map[string]any{"pw": json.RawMessage(`{"x":"` + secret + `","x":"` + secret + `"}`)},
		map[string]any{"pw": json.RawMessage(`"` + secret)},
		map[string]any{"pw": secretMarshaler{}},
		map[string]any{"pw": json.Number(secret)},
	}
	for _, in := range inputs {
		_, err := CanonicalJSON(in)
		require.Error(t, err)
		assert.NotContains(t, err.Error(), secret)
	}
}

var errMarshal = errors.New("marshal failed")

type failingMarshaler struct{}

func (failingMarshaler) MarshalJSON() ([]byte, error) { return nil, errMarshal }

type dupMarshaler struct{}

func (dupMarshaler) MarshalJSON() ([]byte, error) { return []byte(`{"k":1,"k":2}`), nil }

type secretMarshaler struct{}

func (secretMarshaler) MarshalJSON() ([]byte, error) { return nil, errors.New("hunter2") }

// canonical(decode(canonical(x))) == canonical(x), and the output is JSON
// that the strict decoder accepts.
func TestCanonicalJSONIdempotent(t *testing.T) {
	values := []any{
		benchSmall(), benchNested(), benchLarge(20),
		map[string]any{"n": []any{1e21, 1e-7, math.Copysign(0, -1), 123e-20, json.Number("1.000"), uint64(1 << 63)}},
		map[string]any{"\U0001F600": "\u2028", "\uE000": "\x01", "x": json.RawMessage(`{"b":[],"a":{}}`)},
	}
	for i, v := range values {
		first, err := CanonicalJSON(v)
		require.NoError(t, err, "value %d", i)
		back, err := ijson.Decode(first, 0)
		require.NoError(t, err, "value %d", i)
		second, err := CanonicalJSON(back)
		require.NoError(t, err, "value %d", i)
		assert.Equal(t, string(first), string(second), "value %d", i)
	}
}

// CanonicalJSON matches encoding/json where the two agree by design: the
// same value, marshaled by encoding/json and then canonicalised, gives the
// same text as canonicalising it directly.
func TestCanonicalJSONAgreesWithEncodingJSON(t *testing.T) {
	for _, v := range []any{benchSmall(), benchNested(), benchLarge(50),
		map[string]any{"f32": float32(3.3), "i": int16(-7), "u": uint32(9), "big": uint64(1<<60 + 1)}} {
		direct, err := CanonicalJSON(v)
		require.NoError(t, err)
		text, err := json.Marshal(v)
		require.NoError(t, err)
		viaText, err := CanonicalJSON(json.RawMessage(text))
		require.NoError(t, err)
		assert.Equal(t, string(viaText), string(direct))
	}
}

func FuzzCanonicalJSON(f *testing.F) {
	inputs, err := filepath.Glob("testdata/jcs/input/*.json")
	require.NoError(f, err)
	for _, in := range inputs {
		text, err := os.ReadFile(in)
		require.NoError(f, err)
		f.Add(text)
	}
	f.Add([]byte(`[1e21,1e-7,-0,0.1,5e-324,1.7976931348623157e308,{"\ud83d\ude00":1,"\ue000":2}]`))
	f.Add([]byte(`{"a":1,"a":2}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := ijson.Decode(data, 0)
		raw, rawErr := CanonicalJSON(json.RawMessage(data))
		if err != nil {
			require.Error(t, rawErr, "raw text accepted although the decoder refused it")
			return
		}
		out, err := CanonicalJSON(v)
		require.NoError(t, err)
		require.NoError(t, rawErr)
		require.Equal(t, out, raw, "decoded value and raw text disagree")
		require.True(t, json.Valid(out))

		back, err := ijson.Decode(out, 0)
		require.NoError(t, err)
		again, err := CanonicalJSON(back)
		require.NoError(t, err)
		require.Equal(t, out, again, "not idempotent")
		require.Equal(t, normalizeNumbers(t, v), normalizeNumbers(t, back))
	})
}

// normalizeNumbers replaces every json.Number by the double it denotes.
func normalizeNumbers(t *testing.T, v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = normalizeNumbers(t, e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = normalizeNumbers(t, e)
		}
		return a
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		require.NoError(t, err)
		if f == 0 {
			f = 0 // -0 and 0 are one number in canonical form
		}
		return f
	}
	return v
}

// wideCycle is a map whose thousand members all hold the map itself.
func wideCycle() map[string]any {
	m := map[string]any{}
	for i := range 1000 {
		m[fmt.Sprintf("k%03d", i)] = m
	}
	return m
}

// deepNest is n levels of {"a": ...}, acyclic.
func deepNest(n int) any {
	var v any = 1
	for range n {
		v = map[string]any{"a": v}
	}
	return v
}

// TestCanonicalJSONSlicesOfOneArray: a slice holding a shorter slice of
// its own array is no cycle when the shorter one does not recur; one that
// does is still caught.
func TestCanonicalJSONSlicesOfOneArray(t *testing.T) {
	s := make([]any, 2)
	s[1] = s[:1]
	got, err := CanonicalJSON(s)
	require.NoError(t, err)
	assert.Equal(t, `[null,[null]]`, string(got))

	r := make([]any, 2)
	r[0] = r[:1] // r[:1] holds itself
	_, err = CanonicalJSON(r)
	var ce *CanonicalError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "cycle", ce.Reason)
}

// TestExactText checks the entry's form: RFC 8785, except that a number
// a double does not hold keeps its digits, laid out as ECMAScript lays out
// a number, so that one value has one text.
func TestExactText(t *testing.T) {
	for in, want := range map[string]string{
		`9007199254740993`:           `9007199254740993`,
		`9007199254740992`:           `9007199254740992`,
		`12345678901234567890`:       `12345678901234567890`,
		`1.2345678901234567890e1`:    `12.34567890123456789`,
		`123456789012345678901234`:   `1.23456789012345678901234e+23`,
		`0.000012345678901234567891`: `0.000012345678901234567891`,
		`1.2345678901234567891e-9`:   `1.2345678901234567891e-9`,
		`-3.14159265358979323846`:    `-3.14159265358979323846`,
		`3.1415926535897930`:         `3.141592653589793`,
		`1.50`:                       `1.5`,
		`[1E30, 4.50, 2e-3]`:         `[1e+30,4.5,0.002]`,
	} {
		got, err := exactText(json.RawMessage(in))
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
		again, err := exactText(json.RawMessage(got))
		require.NoError(t, err)
		assert.Equal(t, got, again, "idempotent: %s", in)
	}
	got, err := exactText(map[string]any{"i": int64(9007199254740993), "u": uint64(18446744073709551615), "n": json.Number("9007199254740993")})
	require.NoError(t, err)
	assert.Equal(t, `{"i":9007199254740993,"n":9007199254740993,"u":18446744073709551615}`, got)
	// CanonicalJSON stays RFC 8785: the double's text.
	b, err := CanonicalJSON(json.RawMessage(`9007199254740993`))
	require.NoError(t, err)
	assert.Equal(t, `9007199254740992`, string(b))
	// An entry, written by whoever, keeps the digits in its command.
	b, err = CanonicalJSON(store.RunEntry{Action: "a/b", Parameters: "{}", Steps: []store.RunStep{{Command: json.RawMessage(`{"id":9007199254740993}`)}}, Outcome: store.OutcomeDone})
	require.NoError(t, err)
	assert.Contains(t, string(b), `"command":{"id":9007199254740993}`)
}

// TestOwnDecimalAgrees checks the fast path of decimal fractions against
// the double's canonical text: whenever ownDecimal takes a text as its
// own canonical form, reading it as a double and writing that double
// gives the same text.
func TestOwnDecimalAgrees(t *testing.T) {
	texts := []string{"0.5", "-0.5", "0.1", "0.000001", "0.0000001", "1.5", "123456789012.345", "1234567890123.456",
		"0.123456789012345", "0.1234567890123456", "9007199254740.993", "0.30000000000000004", "2.50", "-0.000005", "100.25"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		digits := strconv.FormatUint(1+rng.Uint64N(uint64(math.Pow10(1+rng.IntN(17)))), 10)
		point := rng.IntN(len(digits) + 7)
		var s string
		if point < len(digits) {
			s = strings.TrimLeft(digits[:point], "0")
			if s == "" {
				s = "0"
			}
			s += "." + digits[point:]
		} else {
			s = "0." + strings.Repeat("0", point-len(digits)) + digits
		}
		if rng.IntN(2) == 0 {
			s = "-" + s
		}
		texts = append(texts, s)
	}
	taken := 0
	for _, s := range texts {
		if !ownDecimal(s) {
			continue
		}
		taken++
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if got := string(canonicalNumber(nil, f)); got != s {
			t.Errorf("ownDecimal(%s): its double's canonical text is %s", s, got)
		}
	}
	if taken < 1000 {
		t.Fatalf("only %d texts took the fast path", taken)
	}
	for _, s := range []string{"0.0000001", "1234567890123.456", "0.1234567890123456", "2.50", "1e5", "1", "0.30000000000000004"} {
		if ownDecimal(s) {
			t.Errorf("ownDecimal(%s) = true, want false", s)
		}
	}
}
