package placeholder

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
)

// FuzzSubstitute places the fuzzed string in a small "with" object and
// substitutes it against a fixed scope. Seeds: testdata/fuzz/FuzzSubstitute.
func FuzzSubstitute(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		scope := testScope()
		with := map[string]any{"a": s, "b": []any{s, "id ${p.id}"}, "c": map[string]any{"d": s}}
		before := deepCopy(with)

		out, ok, err := Substitute(with, lookupIn(scope), testText, Limits{})
		refs, perr := Paths(with, Limits{})

		if !jsonEqual(t, before, with) {
			t.Fatal("input changed")
		}
		if !jsonEqual(t, testScope(), scope) {
			t.Fatal("scope changed")
		}
		if err == nil && ok {
			if _, merr := json.Marshal(out); merr != nil {
				t.Fatalf("result is not JSON: %v", merr)
			}
		}
		if !ok && err == nil {
			t.Fatal("an object never resolves to nothing")
		}

		// Substitute and Paths agree on the limits, and a batch checked
		// with Paths never meets an unknown reference.
		var e *Error
		if err != nil && !errors.As(err, &e) {
			t.Fatalf("error of type %T", err)
		}
		if perr != nil {
			// Substitute may stop earlier, at an unknown name
			if err == nil || e.Kind != UnknownReference && err.Error() != perr.Error() {
				t.Fatalf("Paths: %v, Substitute: %v", perr, err)
			}
			return
		}
		known := true
		for _, r := range refs {
			if _, in := scope[r.Name]; !in {
				known = false
			}
		}
		switch {
		case known && err != nil:
			t.Fatalf("names all in scope, yet %v", err)
		case !known && (e == nil || e.Kind != UnknownReference):
			t.Fatalf("unknown name not refused: %v", err)
		}
		if e != nil {
			// the message names only a pointer and an identifier
			switch e.Pointer {
			case "/a", "/b/0", "/c/d":
			default:
				t.Fatalf("pointer %q", e.Pointer)
			}
			if e.Name != "" {
				if _, ok := ParsePath(e.Name); !ok || strings.Contains(e.Name, ".") {
					t.Fatalf("name %q is not an identifier", e.Name)
				}
			}
		}

		if !strings.Contains(s, "${") {
			want := map[string]any{"a": s, "b": []any{s, "id a1"}, "c": map[string]any{"d": s}}
			if !jsonEqual(t, want, out) {
				t.Fatalf("string without placeholder changed: %v", out)
			}
		}
	})
}

// FuzzParsePath checks ParsePath against the grammar written as a regular
// expression, and that a parsed path prints back as it was written.
// Seeds: testdata/fuzz/FuzzParsePath.
func FuzzParsePath(f *testing.F) {
	grammar := regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.([A-Za-z_][A-Za-z0-9_]*|0|[1-9][0-9]*|\*))*$`)
	f.Fuzz(func(t *testing.T, inner string) {
		p, ok := ParsePath(inner)
		if ok != grammar.MatchString(inner) {
			t.Fatalf("ParsePath says %v", ok)
		}
		if !ok {
			if p.Name != "" || p.Segments != nil {
				t.Fatal("a failed parse returns a path")
			}
			if !strings.Contains(inner, "}") && len(inner) <= DefaultMaxLength {
				s := "${" + inner + "}"
				out, ok, err := Substitute(s, nil, testText, Limits{})
				if err != nil || !ok || out != s {
					t.Fatalf("non-path changed: %v %v %v", out, ok, err)
				}
			}
			return
		}
		if p.String() != inner {
			t.Fatalf("prints back as %q", p.String())
		}
		for _, seg := range p.Segments {
			if seg.Kind == IndexSegment && seg.Index < 0 {
				t.Fatalf("negative index %d", seg.Index)
			}
		}
		// resolving against any value never panics
		_, _ = Resolve(p, testScope())
		_, _ = Resolve(p, testScope()["items"])
	})
}

func jsonEqual(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(ja) == string(jb)
}
