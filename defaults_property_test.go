package actions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions/codes"
)

// schemaGen makes random parameters schemas of properties, allOf,
// dependentSchemas, if/then/else, $ref and defaults, over a few member
// names, so that defaults meet each other often.
type schemaGen struct {
	r    *rand.Rand
	defs map[string]any
}

var genNames = []string{"a", "b", "c", "k", "n", "w"}

func (g *schemaGen) pick(xs ...any) any { return xs[g.r.IntN(len(xs))] }

func (g *schemaGen) name() string { return genNames[g.r.IntN(len(genNames))] }

func (g *schemaGen) scalarValue() any {
	return g.pick("x", "y", json.Number("1"), json.Number("2"), true, false, map[string]any{}, nil)
}

// member returns the schema of one member, with a default half the time.
func (g *schemaGen) member(depth int) map[string]any {
	var s map[string]any
	var fit any // a default that fits, mostly
	switch g.r.IntN(6) {
	case 0:
		s, fit = map[string]any{"type": "string"}, g.pick("x", "y")
	case 1:
		s, fit = map[string]any{"type": "integer", "maximum": json.Number("2")}, g.pick(json.Number("1"), json.Number("2"))
	case 2:
		s, fit = map[string]any{"enum": []any{"x", "y"}}, g.pick("x", "y")
	case 3:
		s, fit = map[string]any{"type": "boolean"}, g.pick(true, false)
	case 4:
		if depth > 0 {
			s = g.object(depth - 1)
		} else {
			s = map[string]any{"type": "object"}
		}
		fit = map[string]any{}
	default:
		name := fmt.Sprintf("d%d", g.r.IntN(3))
		if _, ok := g.defs[name]; !ok {
			g.defs[name] = map[string]any{} // placeholder against recursion
			d := g.member(depth - 1)
			g.defs[name] = d
		}
		s = map[string]any{"$ref": "#/$defs/" + name}
	}
	switch g.r.IntN(6) {
	case 0, 1:
		if fit != nil {
			s["default"] = fit
		}
	case 2:
		s["default"] = g.scalarValue()
	}
	return s
}

// object returns an object schema with members and applicators.
func (g *schemaGen) object(depth int) map[string]any {
	s := map[string]any{}
	props := map[string]any{}
	for range g.r.IntN(3) + 1 {
		props[g.name()] = g.member(depth)
	}
	s["properties"] = props
	if g.r.IntN(4) == 0 {
		s["additionalProperties"] = false
	}
	if g.r.IntN(5) == 0 {
		s["maxProperties"] = json.Number(fmt.Sprint(g.r.IntN(3) + 1))
	}
	if g.r.IntN(6) == 0 {
		s["required"] = []any{g.name()}
	}
	if depth > 0 && g.r.IntN(3) == 0 {
		var all []any
		for range g.r.IntN(2) + 1 {
			all = append(all, g.part(depth-1))
		}
		s["allOf"] = all
	}
	if depth > 0 && g.r.IntN(3) == 0 {
		s["dependentSchemas"] = map[string]any{g.name(): g.part(depth - 1)}
	}
	if depth > 0 && g.r.IntN(3) == 0 {
		cond := map[string]any{"properties": map[string]any{g.name(): map[string]any{"const": g.pick("x", json.Number("1"), true)}}}
		if g.r.IntN(2) == 0 {
			cond["required"] = []any{g.name()}
		}
		s["if"] = cond
		s["then"] = g.part(depth - 1)
		if g.r.IntN(2) == 0 {
			s["else"] = g.part(depth - 1)
		}
	}
	return s
}

// part is an in-place subschema: an object schema without "type".
func (g *schemaGen) part(depth int) map[string]any {
	if g.r.IntN(4) == 0 {
		name := fmt.Sprintf("p%d", g.r.IntN(2))
		if _, ok := g.defs[name]; !ok {
			g.defs[name] = map[string]any{}
			g.defs[name] = g.object(depth)
		}
		return map[string]any{"$ref": "#/$defs/" + name}
	}
	return g.object(depth)
}

func (g *schemaGen) schema() map[string]any {
	g.defs = map[string]any{}
	s := g.object(2)
	s["type"] = "object"
	if len(g.defs) > 0 {
		s["$defs"] = g.defs
	}
	return s
}

// paramsFor returns random parameters over the member names.
func (g *schemaGen) params() map[string]any {
	p := map[string]any{}
	for range g.r.IntN(3) {
		p[g.name()] = g.scalarValue()
	}
	return p
}

// TestDefaultsNeverContradict is the defaults' property: for random schemas,
// every schema the registry accepts accepts {} unless a member is missing
// (required, dependentRequired), never refuses a call for what its
// defaults filled as the caller's fault, and every value it fills passes
// a second check unchanged.
func TestDefaultsNeverContradict(t *testing.T) {
	ctx := context.Background()
	accepted, refused, internal := 0, 0, 0
	for seed := range uint64(2000) {
		g := &schemaGen{r: rand.New(rand.NewPCG(seed, 16))}
		s := g.schema()
		text, err := json.Marshal(s)
		require.NoError(t, err)
		ps, err := CompileParameters(json.RawMessage(text), Limits{})
		if err != nil {
			var r *Refusal
			require.True(t, errors.As(err, &r), "seed %d: %v", seed, err)
			require.Equal(t, codes.ConstraintViolation, r.Code, "seed %d: %v", seed, err)
			refused++
			continue
		}
		accepted++
		got, err := ps.Check(ctx, nil, nil)
		if err != nil {
			var r *Refusal
			require.True(t, errors.As(err, &r), "seed %d: %v", seed, err)
			require.Equal(t, codes.InvalidParameters, r.Code, "seed %d: {} refused by its own defaults\nschema %s\n%v", seed, text, err)
			for _, is := range r.Issues {
				require.Contains(t, []string{"required", "dependentRequired"}, is.Keyword, "seed %d: {} refused for more than a missing member\nschema %s\n%v", seed, text, err)
			}
		} else {
			recheck(t, ps, got, seed, text)
		}
		for range 3 {
			got, err := ps.Check(ctx, g.params(), nil)
			var r *Refusal
			switch {
			case err == nil:
				recheck(t, ps, got, seed, text)
			case errors.As(err, &r) && r.Code == codes.Internal:
				internal++ // the caller's values picked a branch whose defaults break the schema
			default:
				require.True(t, errors.As(err, &r) && r.Code == codes.InvalidParameters, "seed %d: %v", seed, err)
			}
		}
	}
	t.Logf("%d schemas accepted, %d refused; %d calls refused as internal", accepted, refused, internal)
	require.Greater(t, accepted, 300, "the generator must give many accepted schemas")
}

// recheck checks that a checked value passes a second check unchanged.
func recheck(t *testing.T, ps *ParameterSchema, got map[string]any, seed uint64, schema []byte) {
	t.Helper()
	again, err := ps.Check(context.Background(), got, nil)
	require.NoError(t, err, "seed %d: a filled value fails a second check\nschema %s\nvalue %v", seed, schema, got)
	require.Equal(t, got, again, "seed %d: a second check changed the value", seed)
}
