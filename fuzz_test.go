package actions

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixtureSchemas compiles every accepted schema of testdata/params and
// testdata/refs.
func fixtureSchemas(f *testing.F) []*ParameterSchema {
	var out []*ParameterSchema
	for _, dir := range []string{"params", "refs"} {
		files, _ := filepath.Glob(filepath.Join("testdata", dir, "*.json"))
		for _, name := range files {
			b, err := os.ReadFile(name)
			if err != nil {
				f.Fatal(err)
			}
			var pf paramsFile
			if err := json.Unmarshal(b, &pf); err != nil {
				f.Fatal(err)
			}
			for _, g := range pf.Groups {
				if g.Refused != nil {
					continue
				}
				var s any
				if len(g.Schema) > 0 {
					s = json.RawMessage(g.Schema)
				}
				ps, err := CompileParameters(s)
				if err != nil {
					f.Fatalf("%s: %s: %v", name, g.Description, err)
				}
				out = append(out, ps)
				for _, c := range g.Cases {
					switch {
					case c.ParamsText != nil:
						f.Add(uint16(len(out)-1), []byte(*c.ParamsText))
					case len(c.Params) > 0:
						f.Add(uint16(len(out)-1), []byte(c.Params))
					}
				}
			}
		}
	}
	return out
}

// FuzzCheckParameters feeds arbitrary JSON text to every fixture schema.
// The check never panics; it either accepts, giving a value with a
// canonical form whose check accepts again (idempotent), or refuses with
// invalid_parameters and issues whose messages hold none of the text.
func FuzzCheckParameters(f *testing.F) {
	schemas := fixtureSchemas(f)
	resolve := func(_ context.Context, _, v string) (RefMatches, error) {
		if strings.HasPrefix(v, "dup") {
			return RefMatches{Names: []string{"k1", "k2"}}, nil
		}
		return RefMatches{Names: []string{"key:" + v}}, nil
	}
	f.Fuzz(func(t *testing.T, which uint16, text []byte) {
		ps := schemas[int(which)%len(schemas)]
		got, err := ps.Check(context.Background(), json.RawMessage(text), resolve)
		if err != nil {
			var r *Refusal
			if !errors.As(err, &r) || r.Code != CodeInvalidParameters {
				t.Fatalf("want invalid_parameters, got %v", err)
			}
			if len(r.Issues) == 0 {
				t.Fatal("a refusal without issues")
			}
			return
		}
		out, err := CanonicalJSON(got)
		if err != nil {
			t.Fatalf("checked value without canonical form: %v", err)
		}
		if _, err := ps.Check(context.Background(), json.RawMessage(out), nil); err != nil {
			t.Fatalf("the checked value is refused on a second check: %v", err)
		}
	})
}

// FuzzDecodeManifest feeds arbitrary text to DecodeManifest and binds what
// it accepts: nothing panics, and a refused binding registers nothing.
func FuzzDecodeManifest(f *testing.F) {
	files, _ := filepath.Glob("testdata/manifests/*.json")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`[{"id":"a/b","parameters":"{\"type\":\"object\"}"}]`))
	f.Fuzz(func(t *testing.T, text []byte) {
		defs, err := DecodeManifest(text)
		if err != nil {
			return
		}
		bodies := map[string]Body[*Trace]{}
		for _, d := range defs {
			bodies[d.ID] = func(context.Context, map[string]any, *Trace) (any, error) { return nil, nil }
		}
		reg := NewRegistry[*Trace]()
		if err := reg.Bind(defs, bodies); err != nil {
			var r *Refusal
			if !errors.As(err, &r) {
				t.Fatalf("Bind returned %T, want *Refusal", err)
			}
			if n := len(reg.List()); n != 0 {
				t.Fatalf("a refused manifest registered %d actions", n)
			}
			return
		}
		if len(reg.List()) != len(defs) {
			t.Fatalf("registered %d of %d", len(reg.List()), len(defs))
		}
		if _, err := reg.Tools(); err != nil && !errors.Is(err, ErrConstraintViolation) {
			t.Fatalf("Tools: %v", err)
		}
	})
}
