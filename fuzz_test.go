package actions

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/store"
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
				ps, err := CompileParameters(s, Limits{})
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
			var ce *contradictionError
			if errors.As(err, &r) && r.Code == codes.Internal && errors.As(err, &ce) {
				return // a schema whose defaults contradict it, for these parameters
			}
			if !errors.As(err, &r) || r.Code != codes.InvalidParameters {
				t.Fatalf("want invalid_parameters, got %v", err)
			}
			if len(r.Issues) == 0 {
				t.Fatal("a refusal without issues")
			}
			return
		}
		if _, err := CanonicalJSON(got); err != nil {
			t.Fatalf("checked value without canonical form: %v", err)
		}
		// The text a run entry records, which replay checks again: the
		// canonical form with each number's own digits (RFC 8785 writes
		// 2^53+1 as the double 2^53, which a const of 2^53+1 refuses).
		out, err := exactText(got)
		if err != nil {
			t.Fatalf("checked value without an entry's text: %v", err)
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
		bodies := map[string]Body{}
		for _, d := range defs {
			bodies[d.ID] = func(context.Context, map[string]any, *Trace) (any, error) { return nil, nil }
		}
		reg := NewRegistry(nil)
		if err := reg.Bind(defs, bodies); err != nil {
			var r *Refusal
			if !errors.As(err, &r) {
				t.Fatalf("Bind returned %T, want *Refusal", err)
			}
			if n := len(reg.Definitions()); n != 0 {
				t.Fatalf("a refused manifest registered %d actions", n)
			}
			return
		}
		if len(reg.Definitions()) != len(defs) {
			t.Fatalf("registered %d of %d", len(reg.Definitions()), len(defs))
		}
		if _, err := reg.Tools(nil); err != nil && !errors.Is(err, codes.ConstraintViolation) {
			t.Fatalf("Tools: %v", err)
		}
	})
}

// FuzzReplay replays arbitrary entries, as a host reads them from a log
// it cannot vouch for, on a registry with nested calls and refs. Replay
// never panics and gives nil or a *Divergence; and the entry a replay
// gives replays without a divergence (a replay records what the code does
// now), the resolver giving keys back for themselves.
func FuzzReplay(f *testing.F) {
	files, _ := filepath.Glob("testdata/replays/*.json")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		var s struct {
			Entry  json.RawMessage `json:"entry"`
			Expect struct {
				Entry json.RawMessage `json:"entry"`
			} `json:"expect"`
		}
		if err := json.Unmarshal(b, &s); err != nil {
			f.Fatal(err)
		}
		for _, e := range []json.RawMessage{s.Entry, s.Expect.Entry} {
			if e != nil {
				f.Add([]byte(e))
			}
		}
	}
	// A resolver that gives a key back for itself, which makes every
	// replay exact (see Replay).
	resolve := func(_ context.Context, _, v string) (RefMatches, error) {
		switch v {
		case "k-rose", "k-tulip":
			return RefMatches{ID: &v}, nil
		case "Rose":
			return RefMatches{Names: []string{"k-rose"}}, nil
		case "Tulip":
			return RefMatches{Names: []string{"k-tulip"}}, nil
		}
		return RefMatches{}, nil
	}
	reg := NewRegistry(&Options{Resolve: resolve})
	plant := `{"type":"object","properties":{"species":{"type":"string","minLength":1},"count":{"type":"integer","minimum":1,"default":1}},"required":["species"],"additionalProperties":false}`
	water := `{"type":"object","properties":{"plant":{"type":"string","ref":"plant"},"litres":{"type":"integer","default":2}},"required":["plant"]}`
	for _, a := range []Action{
		{Definition: Definition{ID: "garden/plant", Parameters: plant}, Run: func(_ context.Context, p map[string]any, t *Trace) (any, error) {
			if err := t.Command(map[string]any{"op": "create", "args": p}, map[string]any{"key": "p1"}); err != nil {
				return nil, err
			}
			return map[string]any{"planted": p}, nil
		}},
		{Definition: Definition{ID: "garden/water", Parameters: water}, Run: func(ctx context.Context, p map[string]any, t *Trace) (any, error) {
			if p["plant"] == "k-rose" {
				return nil, NewRefusal("thirsty", "a rose again")
			}
			return t.Call(ctx, "garden/plant", map[string]any{"species": p["plant"]})
		}},
		{Definition: Definition{ID: "garden/bed"}, Run: func(ctx context.Context, _ map[string]any, t *Trace) (any, error) {
			first, err := t.Call(ctx, "garden/water", map[string]any{"plant": "Tulip"})
			if err != nil {
				return nil, err
			}
			_, err = t.Call(ctx, "garden/water", map[string]any{"plant": "Rose"})
			return first, err
		}},
	} {
		if err := reg.Register(a); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		var e store.RunEntry
		if json.Unmarshal(text, &e) != nil {
			return
		}
		got, err := reg.Replay(context.Background(), store.Record{Entry: e})
		var d *Divergence
		if err != nil && !errors.As(err, &d) {
			t.Fatalf("Replay returned %T: %v", err, err)
		}
		if again, err := reg.Replay(context.Background(), store.Record{Entry: got}); err != nil {
			t.Fatalf("the replayed entry does not replay: %v (%+v)\n%+v", err, d, again)
		}
	})
}
