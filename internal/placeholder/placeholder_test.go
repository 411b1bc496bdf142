package placeholder

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testScope builds a fresh scope for each test, so that a test that changes
// what it got cannot affect another.
func testScope() map[string]any {
	return map[string]any{
		"p": map[string]any{
			"id":     "a1",
			"name":   "Plant",
			"co2":    json.Number("12.5"),
			"active": true,
			"note":   nil,
			"tags":   []any{"x", "y"},
			"0":      "zero",
			"loc":    map[string]any{"lat": json.Number("1")},
		},
		"items": []any{
			map[string]any{"id": "i1", "parts": []any{
				map[string]any{"sku": "s1"},
				map[string]any{"sku": "s2"},
			}},
			map[string]any{"id": "i2", "parts": []any{}},
			map[string]any{"parts": []any{map[string]any{"sku": "s3"}}},
		},
		"grid":  []any{[]any{json.Number("1"), json.Number("2")}, []any{json.Number("3")}},
		"nest":  []any{[]any{map[string]any{"a": "deep"}}},
		"empty": []any{},
		"f":     1.5,
		"i":     3,
		"s":     "str",
		"z":     nil,
	}
}

func lookupIn(scope map[string]any) func(string) (any, bool) {
	return func(name string) (any, bool) {
		v, ok := scope[name]
		return v, ok
	}
}

// testText stands for the root package's canonical JSON.
func testText(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

// nothing marks a case whose result is nothing (ok false).
type nothingType struct{}

var nothing = nothingType{}

func TestSubstitute(t *testing.T) {
	cases := []struct {
		name string
		with any
		want any // nothing: ok must be false
	}{
		// whole-string placeholders keep the type
		{"whole string", "${p.id}", "a1"},
		{"whole number", "${p.co2}", json.Number("12.5")},
		{"whole bool", "${p.active}", true},
		{"whole null", "${p.note}", nil},
		{"whole object", "${p.loc}", map[string]any{"lat": json.Number("1")}},
		{"whole array", "${p.tags}", []any{"x", "y"}},
		{"whole name only", "${s}", "str"},
		{"whole float64", "${f}", 1.5},
		{"whole int", "${i}", 3},
		{"whole null name", "${z}", nil},

		// placeholders in text give their text
		{"text string", "Plant ${p.name}!", "Plant Plant!"},
		{"text number", "co2=${p.co2}", "co2=12.5"},
		{"text bool", "on=${p.active}", "on=true"},
		{"text null", "note=${p.note}", "note=null"},
		{"text object", "at ${p.loc}", `at {"lat":1}`},
		{"text array", "tags ${p.tags}", `tags ["x","y"]`},
		{"text float64", "${f} kg", "1.5 kg"},
		{"multiple", "${p.id}-${p.name}", "a1-Plant"},
		{"adjacent", "${p.id}${p.id}", "a1a1"},
		{"dollar before", "$${p.id}", "$a1"},
		{"brace after", "${p.id}}", "a1}"},

		// arrays
		{"index", "${p.tags.1}", "y"},
		{"index out of range", "${p.tags.2}", nothing},
		{"huge index", "${p.tags.99999999999999999999999}", nothing},
		{"index on object", "${p.0}", "zero"},
		{"default entry 0", "${items.id}", "i1"},
		{"default entry 0 twice", "${items.parts.sku}", "s1"},
		{"default entry 0 of nested array", "${nest.a}", "deep"},
		{"default on empty array", "${empty.id}", nothing},
		{"wildcard with field", "${items.*.id}", []any{"i1", "i2"}},
		{"wildcard alone", "${p.tags.*}", []any{"x", "y"}},
		{"wildcard on empty array", "${empty.*}", []any{}},
		{"wildcard nothing reached", "${items.*.missing}", []any{}},
		{"wildcard on object", "${p.*}", nothing},
		{"wildcard on scalar", "${p.id.*}", nothing},
		{"nested wildcard", "${items.*.parts.*.sku}", []any{[]any{"s1", "s2"}, []any{}, []any{"s3"}}},
		{"nested wildcard grid", "${grid.*.*}", []any{[]any{json.Number("1"), json.Number("2")}, []any{json.Number("3")}}},
		{"wildcard then index", "${grid.*.1}", []any{json.Number("2")}},
		{"wildcard in text", "ids: ${items.*.id}", `ids: ["i1","i2"]`},

		// missing values
		{"missing member", "${p.missing}", nothing},
		{"segment on scalar", "${p.id.x}", nothing},
		{"missing in object", map[string]any{"a": "${p.missing}", "b": json.Number("1")}, map[string]any{"b": json.Number("1")}},
		{"null in object is kept", map[string]any{"a": "${p.note}"}, map[string]any{"a": nil}},
		{"missing in array", []any{"${p.missing}", "x", "${p.id}"}, []any{"x", "a1"}},
		{"missing in text", "x ${p.missing} y", nothing},
		{"missing after found in text", "${p.id} ${p.missing}", nothing},
		{"missing text in object", map[string]any{"a": "id ${p.missing}"}, map[string]any{}},

		// not placeholders, or not paths: literal text
		{"call unchanged", "${now()}", "${now()}"},
		{"call in text", "at ${now()} by ${p.name}", "at ${now()} by Plant"},
		{"empty", "${}", "${}"},
		{"double dot", "${a..b}", "${a..b}"},
		{"trailing dot", "${p.}", "${p.}"},
		{"leading dot", "${.p}", "${.p}"},
		{"digit name", "${0}", "${0}"},
		{"star name", "${*}", "${*}"},
		{"leading zero", "${p.tags.01}", "${p.tags.01}"},
		{"star then text", "${p.*x}", "${p.*x}"},
		{"spaces", "${ p.id }", "${ p.id }"},
		{"unknown name in non-path", "${q()}", "${q()}"},
		{"first brace closes", "${${p.id}}", "${${p.id}}"},
		{"dollar alone", "cost $5", "cost $5"},
		{"dollar then name", "$p.id", "$p.id"},
		{"unclosed", "${p.id", "${p.id"},
		{"unclosed after one", "${p.id} and ${p.name", "a1 and ${p.name"},
		{"no placeholder", "plain", "plain"},
		{"empty string", "", ""},

		// walking
		{"object keys are not substituted", map[string]any{"${p.id}": "${p.name}"}, map[string]any{"${p.id}": "Plant"}},
		{"deep nested", map[string]any{"a": []any{map[string]any{"b": map[string]any{"c": []any{"${p.id}", "${p.co2}", "n=${p.tags.0}"}}}}},
			map[string]any{"a": []any{map[string]any{"b": map[string]any{"c": []any{"a1", json.Number("12.5"), "n=x"}}}}}},
		{"scalars kept", []any{json.Number("1"), true, nil, 2.5, 7}, []any{json.Number("1"), true, nil, 2.5, 7}},
		{"nil object kept", map[string]any{"a": map[string]any(nil)}, map[string]any{"a": map[string]any(nil)}},
		{"top-level scalar", json.Number("4"), json.Number("4")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := deepCopy(c.with)
			got, ok, err := Substitute(c.with, lookupIn(testScope()), testText, Limits{})
			require.NoError(t, err)
			assert.Equal(t, before, c.with, "input changed")
			if c.want == nothing {
				assert.False(t, ok)
				assert.Nil(t, got)
				return
			}
			require.True(t, ok)
			assert.Equal(t, c.want, got)
		})
	}
}

func TestSubstituteErrors(t *testing.T) {
	cases := []struct {
		name    string
		with    any
		limits  Limits
		kind    Kind
		pointer string
		refName string
	}{
		{"unknown whole", "${q.id}", Limits{}, UnknownReference, "", "q"},
		{"unknown in text", "a ${q} b", Limits{}, UnknownReference, "", "q"},
		{"unknown after nothing", "${p.missing} ${q}", Limits{}, UnknownReference, "", "q"},
		{"unknown pointer escaped", map[string]any{"a": map[string]any{"b/c~d": []any{"x", "${q}"}}}, Limits{}, UnknownReference, "/a/b~1c~0d/1", "q"},
		{"first error in key order", map[string]any{"b": "${qb}", "a": "${qa}"}, Limits{}, UnknownReference, "/a", "qa"},

		{"too long default", "${p." + strings.Repeat("a", 255) + "}", Limits{}, TooLong, "", ""},
		{"too long non-path", []any{"x ${" + strings.Repeat("(", 257) + "}"}, Limits{}, TooLong, "/0", ""},
		{"too long custom", "${p.id0}", Limits{MaxLength: 4}, TooLong, "", ""},

		{"too many in array", repeat("${p.id}", 1001), Limits{}, TooMany, "/1000", ""},
		{"too many in a string", strings.Repeat("${p.id}", 1001), Limits{}, TooMany, "", ""},
		{"too many non-paths", repeat("${x()}", 1001), Limits{}, TooMany, "/1000", ""},
		{"too many custom", []any{"${p.id}", "${p.id}", "${p.id}"}, Limits{MaxPlaceholders: 2}, TooMany, "/2", ""},

		{"too deep default", nested(65, "x"), Limits{}, TooDeep, pointerOfDepth(64), ""},
		{"too deep custom", map[string]any{"a": []any{map[string]any{}}}, Limits{MaxDepth: 2}, TooDeep, "/a/0", ""},
		{"too deep copied value", map[string]any{"a": map[string]any{"b": "${p.loc}"}}, Limits{MaxDepth: 2}, TooDeep, "/a/b", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok, err := Substitute(c.with, lookupIn(testScope()), testText, c.limits)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Nil(t, got)
			assert.False(t, ok)
			assert.Equal(t, c.kind, e.Kind)
			assert.Equal(t, c.pointer, e.Pointer)
			assert.Equal(t, c.refName, e.Name)
		})
	}
}

func TestSubstituteAtLimits(t *testing.T) {
	scope := lookupIn(testScope())
	t.Run("length", func(t *testing.T) {
		long := "${p." + strings.Repeat("a", 254) + "}" // 256 bytes inside
		_, ok, err := Substitute(long, scope, testText, Limits{})
		require.NoError(t, err)
		assert.False(t, ok) // no such member
		_, ok, err = Substitute("${p.id}", scope, testText, Limits{MaxLength: 4})
		require.NoError(t, err)
		assert.True(t, ok)
	})
	t.Run("count", func(t *testing.T) {
		got, ok, err := Substitute(repeat("${p.id}", 1000), scope, testText, Limits{})
		require.NoError(t, err)
		require.True(t, ok)
		assert.Len(t, got, 1000)
		_, _, err = Substitute(strings.Repeat("${p.id}", 1000), scope, testText, Limits{})
		require.NoError(t, err)
	})
	t.Run("depth", func(t *testing.T) {
		v := nested(64, "${p.id}")
		got, ok, err := Substitute(v, scope, testText, Limits{})
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, nested(64, "a1"), got)
		// a copied value may reach the limit too
		_, _, err = Substitute(map[string]any{"a": "${p.loc}"}, scope, testText, Limits{MaxDepth: 2})
		require.NoError(t, err)
	})
	t.Run("negative means default", func(t *testing.T) {
		_, _, err := Substitute("${p.id}", scope, testText, Limits{MaxLength: -1, MaxPlaceholders: -1, MaxDepth: -1})
		require.NoError(t, err)
	})
}

func TestSubstituteTextError(t *testing.T) {
	cause := errors.New("secret value 42 cannot be written")
	failing := func(any) (string, error) { return "", cause }
	_, ok, err := Substitute(map[string]any{"a": "n=${p.co2}"}, lookupIn(testScope()), failing, Limits{})
	assert.False(t, ok)
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, Text, e.Kind)
	assert.Equal(t, "/a", e.Pointer)
	assert.ErrorIs(t, err, cause)
	assert.NotContains(t, err.Error(), "secret")

	// strings need no text function, and a whole placeholder never uses it
	got, ok, err := Substitute([]any{"id=${p.id}", "${p.co2}"}, lookupIn(testScope()), failing, Limits{})
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, []any{"id=a1", json.Number("12.5")}, got)
}

func TestSubstituteDefaultText(t *testing.T) {
	scope := map[string]any{"v": map[string]any{"html": "<a&b>"}}
	got, ok, err := Substitute("v=${v}", lookupIn(scope), nil, Limits{})
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, `v={"html":"<a&b>"}`, got)
}

func TestSubstituteNilLookup(t *testing.T) {
	_, _, err := Substitute("${p}", nil, testText, Limits{})
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, UnknownReference, e.Kind)
}

func TestSubstituteDoesNotShareScope(t *testing.T) {
	scope := testScope()
	got, ok, err := Substitute(map[string]any{"loc": "${p.loc}", "ids": "${items.*.parts}"}, lookupIn(scope), testText, Limits{})
	require.NoError(t, err)
	require.True(t, ok)
	out := got.(map[string]any)
	out["loc"].(map[string]any)["lat"] = "changed"
	out["ids"].([]any)[0].([]any)[0] = "changed"
	assert.Equal(t, testScope(), scope)
}

func TestSubstituteReturnsSameString(t *testing.T) {
	in := any("a long string with $ signs and { braces } but no placeholder")
	got, ok, err := Substitute(in, nil, testText, Limits{})
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, in, got)

	allocs := testing.AllocsPerRun(100, func() {
		_, _, _ = Substitute(in, nil, testText, Limits{})
		_, _, _ = Substitute(any("no path: ${now()}"), nil, testText, Limits{})
	})
	assert.Zero(t, allocs)
}

func TestErrorMessages(t *testing.T) {
	cases := []struct {
		err  *Error
		want string
	}{
		{&Error{Kind: UnknownReference, Pointer: "/a/0", Name: "plant"}, `placeholder at "/a/0": unknown reference "plant"`},
		{&Error{Kind: TooLong, Pointer: "/a", Limit: 256}, `placeholder at "/a": longer than 256 bytes`},
		{&Error{Kind: TooMany, Pointer: "", Limit: 1000}, `placeholder at "": more than 1000 placeholders in one value`},
		{&Error{Kind: TooDeep, Pointer: "/x", Limit: 64}, `value at "/x": nested deeper than 64 levels`},
		{&Error{Kind: Text, Pointer: "/t", Err: errors.New("boom")}, `placeholder at "/t": value has no text`},
	}
	for _, c := range cases {
		t.Run(c.err.Kind.String(), func(t *testing.T) {
			assert.Equal(t, c.want, c.err.Error())
		})
	}

	// a refused placeholder is never echoed
	secret := "${p." + strings.Repeat("secret", 50) + "}"
	_, _, err := Substitute(map[string]any{"k": secret}, lookupIn(testScope()), testText, Limits{})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "secret")
}

func TestKindString(t *testing.T) {
	assert.Equal(t, "unknown_reference", UnknownReference.String())
	assert.Equal(t, "too_long", TooLong.String())
	assert.Equal(t, "too_many", TooMany.String())
	assert.Equal(t, "too_deep", TooDeep.String())
	assert.Equal(t, "text", Text.String())
	assert.Equal(t, "kind(0)", Kind(0).String())
}

func TestParsePath(t *testing.T) {
	field := func(s string) Segment { return Segment{Kind: FieldSegment, Text: s} }
	index := func(s string, i int) Segment { return Segment{Kind: IndexSegment, Text: s, Index: i} }
	star := Segment{Kind: WildcardSegment, Text: "*"}
	cases := []struct {
		inner string
		want  Path
		ok    bool
	}{
		{"p", Path{Name: "p"}, true},
		{"_P9", Path{Name: "_P9"}, true},
		{"plant.id", Path{Name: "plant", Segments: []Segment{field("id")}}, true},
		{"a.0.b", Path{Name: "a", Segments: []Segment{index("0", 0), field("b")}}, true},
		{"a.10", Path{Name: "a", Segments: []Segment{index("10", 10)}}, true},
		{"a.*.b.*", Path{Name: "a", Segments: []Segment{star, field("b"), star}}, true},
		{"a._x1", Path{Name: "a", Segments: []Segment{field("_x1")}}, true},
		{"a.99999999999999999999", Path{Name: "a", Segments: []Segment{index("99999999999999999999", math.MaxInt)}}, true},
		{"", Path{}, false},
		{"now()", Path{}, false},
		{"a..b", Path{}, false},
		{"a.", Path{}, false},
		{".a", Path{}, false},
		{"0", Path{}, false},
		{"*", Path{}, false},
		{"1a", Path{}, false},
		{"a.01", Path{}, false},
		{"a.1b", Path{}, false},
		{"a.**", Path{}, false},
		{"a.b-c", Path{}, false},
		{"a b", Path{}, false},
		{"a.é", Path{}, false},
		{"a[0]", Path{}, false},
		{"a.-1", Path{}, false},
	}
	for _, c := range cases {
		t.Run(c.inner, func(t *testing.T) {
			got, ok := ParsePath(c.inner)
			require.Equal(t, c.ok, ok)
			assert.Equal(t, c.want, got)
			if ok {
				assert.Equal(t, c.inner, got.String())
			}
		})
	}
}

func TestResolve(t *testing.T) {
	root := testScope()["items"]
	p, ok := ParsePath("items.*.parts.0.sku")
	require.True(t, ok)
	got, ok := Resolve(p, root)
	require.True(t, ok)
	assert.Equal(t, []any{"s1", "s3"}, got)

	got, ok = Resolve(Path{Name: "items"}, root)
	require.True(t, ok)
	assert.Equal(t, root, got)

	_, ok = Resolve(Path{Name: "x", Segments: []Segment{{Kind: FieldSegment, Text: "a"}}}, "scalar")
	assert.False(t, ok)
}

func TestPaths(t *testing.T) {
	v := map[string]any{
		"b":   []any{"${plant.id}", "x ${now()} ${carbon.total} and ${plant}"},
		"a/~": "${first}",
		"c":   map[string]any{"${key.not.read}": json.Number("1"), "d": "${a..b} $x ${unclosed"},
		"e":   true,
	}
	refs, err := Paths(v, Limits{})
	require.NoError(t, err)
	assert.Equal(t, []Ref{
		{Pointer: "/a~1~0", Name: "first"},
		{Pointer: "/b/0", Name: "plant"},
		{Pointer: "/b/1", Name: "carbon"},
		{Pointer: "/b/1", Name: "plant"},
	}, refs)

	refs, err = Paths("no placeholder", Limits{})
	require.NoError(t, err)
	assert.Empty(t, refs)
}

func TestPathsLimits(t *testing.T) {
	cases := []struct {
		name    string
		with    any
		limits  Limits
		kind    Kind
		pointer string
	}{
		{"too long", map[string]any{"a": "${" + strings.Repeat("a", 257) + "}"}, Limits{}, TooLong, "/a"},
		{"too many", repeat("${x}", 1001), Limits{}, TooMany, "/1000"},
		{"too deep", nested(65, "${x}"), Limits{}, TooDeep, pointerOfDepth(64)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Paths(c.with, c.limits)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, c.kind, e.Kind)
			assert.Equal(t, c.pointer, e.Pointer)
			// Substitute refuses the same value the same way
			_, _, serr := Substitute(c.with, func(string) (any, bool) { return "v", true }, testText, c.limits)
			assert.Equal(t, err, serr)
		})
	}
	refs, err := Paths(nested(64, "${x}"), Limits{})
	require.NoError(t, err)
	assert.Len(t, refs, 1)
}

func BenchmarkSubstitute(b *testing.B) {
	scope := lookupIn(testScope())
	cases := []struct {
		name string
		with any
	}{
		{"plain string", "a string with no placeholder at all, of a usual length"},
		{"whole", "${p.id}"},
		{"text", "Plant ${p.name} emits ${p.co2} t"},
		{"wildcard", "${items.*.parts.*.sku}"},
		{"object", map[string]any{"id": "${p.id}", "co2": json.Number("12"), "note": "for ${p.name}", "tags": []any{"a", "b"}}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _, _ = Substitute(c.with, scope, testText, Limits{})
			}
		})
	}
}

// repeat gives an array of n copies of s.
func repeat(s string, n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// nested wraps leaf in depth arrays.
func nested(depth int, leaf any) any {
	v := leaf
	for range depth {
		v = []any{v}
	}
	return v
}

// pointerOfDepth is the pointer of the container at depth+1 in nested.
func pointerOfDepth(depth int) string {
	return strings.Repeat("/0", depth)
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if x == nil {
			return x
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		if x == nil {
			return x
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}

func TestSubstituteByteBudget(t *testing.T) {
	big := make([]any, 100)
	for i := range big {
		big[i] = strings.Repeat("x", 100) // about 10 KB in all
	}
	lookup := func(string) (any, bool) { return big, true }
	with := map[string]any{}
	for i := range 9 {
		with[fmt.Sprint("k", i)] = "${l}"
	}
	_, _, err := Substitute(with, lookup, nil, Limits{MaxBytes: 100_000})
	require.NoError(t, err, "nine copies of 10 KB fit in 100 KB")
	with["k9"] = "${l}"
	with["k10"] = "${l}"
	_, _, err = Substitute(with, lookup, nil, Limits{MaxBytes: 100_000})
	var pe *Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, TooLarge, pe.Kind)
	assert.Equal(t, 100_000, pe.Limit)

	// Text interpolation counts too.
	_, _, err = Substitute(map[string]any{"s": strings.Repeat("${l}", 20)}, lookup, nil, Limits{MaxBytes: 100_000})
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, TooLarge, pe.Kind)
}

// TestEmptyContainersAndWalksCount: copying empty objects and arrays, and
// walking a large array with "*", spend the byte budget too; otherwise a
// few placeholders over a result of many empty entries would multiply
// memory or time without bound.
func TestEmptyContainersAndWalksCount(t *testing.T) {
	empties := make([]any, 10_000)
	for i := range empties {
		empties[i] = []any{}
	}
	lookup := func(string) (any, bool) { return empties, true }
	var pe *Error

	// One copy: 10,001 containers at 8 bytes each, 80,008 bytes.
	_, _, err := Substitute(map[string]any{"a": "${l}"}, lookup, nil, Limits{MaxBytes: 80_008})
	require.NoError(t, err)
	_, _, err = Substitute(map[string]any{"a": "${l}", "b": "${l}"}, lookup, nil, Limits{MaxBytes: 100_000})
	require.ErrorAs(t, err, &pe, "two copies of 10,000 empty arrays")
	assert.Equal(t, TooLarge, pe.Kind)

	// A walk that reaches nothing in each entry visits them all: 10,000
	// bytes each, and "[]" written.
	walk := strings.Repeat("${l.*.x}", 9)
	_, _, err = Substitute(map[string]any{"s": walk}, lookup, nil, Limits{MaxBytes: 100_000})
	require.NoError(t, err)
	_, _, err = Substitute(map[string]any{"s": walk + "${l.*.x}"}, lookup, nil, Limits{MaxBytes: 100_000})
	require.ErrorAs(t, err, &pe, "ten walks of 10,000 entries")
	assert.Equal(t, TooLarge, pe.Kind)

	// Once a string reaches nothing, the rest of its paths are not walked,
	// though their names are still checked.
	dropped := "${l.nope}" + strings.Repeat("${l.*.x}", 999)
	got, _, err := Substitute(map[string]any{"s": dropped}, lookup, nil, Limits{MaxBytes: 100_000})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{}, got)
	_, _, err = Substitute(map[string]any{"s": "${l.nope}${other.x}"}, func(n string) (any, bool) { return empties, n == "l" }, nil, Limits{})
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, UnknownReference, pe.Kind)
}
