package actions

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/internal/fixture"
	"github.com/actionreg/actions/internal/ijson"
)

// paramsFile is one file of testdata/params or testdata/refs.
type paramsFile struct {
	Description string                  `json:"description"`
	Instances   map[string][]refFixture `json:"instances"`
	Groups      []paramsGroup           `json:"groups"`
}

type paramsGroup struct {
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	SchemaText  *string         `json:"schema_text"` // the schema as text, for text that is not JSON
	Refused     *struct {
		Pointer string `json:"pointer"`
		Keyword string `json:"keyword"` // when given, the issue's keyword
		Message string `json:"message"` // when given, a part of the issue's message
	} `json:"refused"`
	Cases []paramsCase `json:"cases"`
}

// schema returns the group's schema as CompileParameters takes it.
func (g paramsGroup) schema() any {
	switch {
	case g.SchemaText != nil:
		return *g.SchemaText
	case len(g.Schema) > 0:
		return json.RawMessage(g.Schema)
	}
	return nil
}

type paramsCase struct {
	Description  string          `json:"description"`
	Params       json.RawMessage `json:"params"`
	ParamsText   *string         `json:"params_text"`
	ParamsBase64 *string         `json:"params_base64"`
	Valid        bool            `json:"valid"`
	Checked      json.RawMessage `json:"checked"`
	Issues       []struct {
		Path    string `json:"path"`
		Keyword string `json:"keyword"`
		Message string `json:"message"` // when given, the issue's exact message
	} `json:"issues"`
	AjvNote string `json:"ajv_note"`
	// Code, when given, is the refusal's code (internal for a schema whose
	// defaults contradict it); such a refusal lists no issues.
	Code codes.Code `json:"code"`
}

type refFixture struct {
	Key         string            `json:"key"`
	ID          string            `json:"id"`
	DisplayName map[string]string `json:"display_name"`
}

// fixtureResolver resolves refs against a fixture's instances.
func fixtureResolver(instances map[string][]refFixture) RefResolver {
	return func(_ context.Context, schema, value string) (RefMatches, error) {
		var m RefMatches
		for _, in := range instances[schema] {
			if in.ID == value {
				k := in.Key
				m.ID = &k
			}
			for _, n := range in.DisplayName {
				if n == value {
					m.Names = append(m.Names, in.Key)
					break
				}
			}
		}
		return m, nil
	}
}

func decodeExact(t *testing.T, raw []byte) any {
	t.Helper()
	v, err := ijson.Decode(raw, 0)
	require.NoError(t, err)
	return v
}

func runParamsFixtures(t *testing.T, dir string) int {
	count := 0
	for name, f := range fixture.Files[paramsFile](t, "testdata/"+dir) {
		var resolve RefResolver
		if f.Instances != nil {
			resolve = fixtureResolver(f.Instances)
		}
		for gi, g := range f.Groups {
			t.Run(name+"/"+g.Description, func(t *testing.T) {
				s := g.schema()
				ps, err := CompileParameters(s, Limits{})
				if g.Refused != nil {
					count++
					require.Error(t, err, "group %d must be refused", gi)
					var r *Refusal
					require.True(t, errors.As(err, &r))
					assert.Equal(t, codes.ConstraintViolation, r.Code)
					require.Len(t, r.Issues, 1)
					assert.Equal(t, g.Refused.Pointer, r.Issues[0].Path, r.Error())
					assert.NotEmpty(t, r.Issues[0].Keyword, "every registration issue names a keyword: %v", r)
					if g.Refused.Keyword != "" {
						assert.Equal(t, g.Refused.Keyword, r.Issues[0].Keyword, r.Error())
					}
					assert.Contains(t, r.Issues[0].Message, g.Refused.Message)
					return
				}
				require.NoError(t, err)
				for _, c := range g.Cases {
					count++
					t.Run(c.Description, func(t *testing.T) {
						var inputs []any
						switch {
						case c.ParamsText != nil:
							inputs = []any{[]byte(*c.ParamsText)}
						case c.ParamsBase64 != nil:
							b, err := base64.StdEncoding.DecodeString(*c.ParamsBase64)
							require.NoError(t, err)
							inputs = []any{json.RawMessage(b)}
						case len(c.Params) > 0:
							// The same parameters as a Go value and as JSON text.
							inputs = []any{decodeExact(t, c.Params), json.RawMessage(c.Params)}
						default:
							inputs = []any{nil}
						}
						for _, in := range inputs {
							got, err := ps.Check(context.Background(), in, resolve)
							if c.Valid {
								require.NoError(t, err)
								if len(c.Checked) > 0 {
									assert.Equal(t, decodeExact(t, c.Checked), any(got))
								}
								continue
							}
							require.Error(t, err)
							var r *Refusal
							require.True(t, errors.As(err, &r), "%v", err)
							if c.Code != "" {
								assert.Equal(t, c.Code, r.Code, r.Error())
								assert.Empty(t, r.Issues, "the caller is not told to edit what it did not send")
								assert.Error(t, r.Cause(), "the host gets the details")
								continue
							}
							assert.Equal(t, codes.InvalidParameters, r.Code)
							var gotIssues []string
							for _, is := range r.Issues {
								gotIssues = append(gotIssues, is.Path+" "+is.Keyword)
							}
							var want []string
							for _, is := range c.Issues {
								want = append(want, is.Path+" "+is.Keyword)
							}
							assert.Equal(t, want, gotIssues, r.Error())
							for i, is := range c.Issues {
								if is.Message != "" && i < len(r.Issues) {
									assert.Equal(t, is.Message, r.Issues[i].Message, is.Path)
								}
							}
						}
					})
				}
			})
		}
	}
	return count
}

func TestParamsFixtures(t *testing.T) {
	n := runParamsFixtures(t, "params")
	t.Logf("params fixtures: %d cases", n)
}

func TestRefsFixtures(t *testing.T) {
	n := runParamsFixtures(t, "refs")
	t.Logf("refs fixtures: %d cases", n)
}

func TestCheckDoesNotChangeCallerValue(t *testing.T) {
	ps, err := CompileParameters(`{"type":"object","properties":{
		"a":{"type":"object","default":{},"properties":{"b":{"default":1}}},
		"list":{"type":"array","items":{"type":"object","properties":{"n":{"default":"x"}}}},
		"who":{"type":"string","ref":"actor"}}}`, Limits{})
	require.NoError(t, err)
	in := map[string]any{"list": []any{map[string]any{}}, "who": "Plant"}
	resolve := func(context.Context, string, string) (RefMatches, error) {
		return RefMatches{Names: []string{"actor:1"}}, nil
	}
	got, err := ps.Check(context.Background(), in, resolve)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"list": []any{map[string]any{}}, "who": "Plant"}, in, "the caller's value changed")
	assert.Equal(t, map[string]any{
		"a":    map[string]any{"b": json.Number("1")},
		"list": []any{map[string]any{"n": "x"}},
		"who":  "actor:1",
	}, got)
	// The body may change its copy without touching the next call's defaults.
	got["a"].(map[string]any)["b"] = "changed"
	again, err := ps.Check(context.Background(), nil, nil)
	require.NoError(t, err)
	assert.Equal(t, json.Number("1"), again["a"].(map[string]any)["b"])
}

// TestNoSubmittedValueInMessages sends a marker through every keyword kind
// and checks that no refusal text carries it.
func TestNoSubmittedValueInMessages(t *testing.T) {
	const marker = "SECRET-MARKER-7731"
	ps, err := CompileParameters(`{"type":"object","additionalProperties":false,
		"propertyNames":{"maxLength":40},
		"properties":{
		"e":{"enum":["a","b"]}, "c":{"const":"x"}, "p":{"type":"string","pattern":"^[0-9]+$"},
		"f":{"type":"string","format":"email","maxLength":3}, "n":{"type":"number","maximum":1},
		"t":{"type":"integer"}, "u":{"type":"array","uniqueItems":true},
		"o":{"oneOf":[{"type":"string"},{"type":"string"}]}, "x":{"not":{"type":"string"}},
		"r":{"type":"string","ref":"actor"},
		"pn":{"type":"object","propertyNames":{"pattern":"^a"}}
	}}`, Limits{})
	require.NoError(t, err)
	params := map[string]any{
		"e": marker, "c": marker, "p": marker, "f": marker, "n": 1e300, "t": marker,
		"u": []any{marker, marker}, "o": marker, "x": marker, "r": marker,
		"pn": map[string]any{marker: 1}, marker: marker,
	}
	_, err = ps.Check(context.Background(), params, func(context.Context, string, string) (RefMatches, error) { return RefMatches{}, nil })
	require.Error(t, err)
	var r *Refusal
	require.True(t, errors.As(err, &r))
	assert.GreaterOrEqual(t, len(r.Issues), 10)
	for _, is := range r.Issues {
		assert.NotContains(t, is.Message, marker, is.Keyword)
		assert.NotContains(t, is.Message, "1e+300")
	}
	assert.NotContains(t, r.Message, marker)
	// The error text names paths (which may hold a property name) but no value.
	assert.NotContains(t, strings.ReplaceAll(r.Error(), "/"+marker, ""), marker)
	_, err = ps.Check(context.Background(), map[string]any{"r": marker}, func(context.Context, string, string) (RefMatches, error) {
		return RefMatches{Names: []string{"a", "b"}}, nil
	})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), marker)
}

// TestIssuesDeterministic checks every fixture the project has for
// parameters, many times each: a refused schema gets the same issue, and
// refused parameters the same issues (path, keyword, message), on every
// run, whatever the order in which Go's maps are walked.
func TestIssuesDeterministic(t *testing.T) {
	const runs = 25
	for _, dir := range []string{"params", "refs"} {
		for name, f := range fixture.Files[paramsFile](t, "testdata/"+dir) {
			var resolve RefResolver
			if f.Instances != nil {
				resolve = fixtureResolver(f.Instances)
			}
			for _, g := range f.Groups {
				s := g.schema()
				first, firstErr := CompileParameters(s, Limits{})
				if g.Refused != nil {
					for i := 0; i < runs; i++ {
						_, err := CompileParameters(s, Limits{})
						require.Error(t, err)
						require.Equal(t, firstErr.Error(), err.Error(), "%s/%s: run %d", name, g.Description, i)
					}
					continue
				}
				require.NoError(t, firstErr, "%s/%s", name, g.Description)
				for _, c := range g.Cases {
					if c.Valid || len(c.Params) == 0 {
						continue
					}
					var want *Refusal
					if c.Code != "" {
						continue
					}
					for i := 0; i < runs; i++ {
						_, err := first.Check(context.Background(), json.RawMessage(c.Params), resolve)
						var r *Refusal
						require.True(t, errors.As(err, &r), "%s/%s/%s: %v", name, g.Description, c.Description, err)
						if want == nil {
							want = r
							continue
						}
						require.Equal(t, want.Issues, r.Issues, "%s/%s/%s: run %d", name, g.Description, c.Description, i)
						require.Equal(t, want.Message, r.Message)
					}
				}
			}
		}
	}
}
