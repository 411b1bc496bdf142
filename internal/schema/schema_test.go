package schema

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions/internal/ijson"
)

const base = "https://actions.invalid/parameters.json"

func decode(t *testing.T, s string) any {
	t.Helper()
	v, err := ijson.Decode([]byte(s), 0)
	require.NoError(t, err)
	return v
}

func TestCheck(t *testing.T) {
	cases := []struct {
		name, schema, pointer string // pointer "" and ok: accepted
		ok                    bool
	}{
		{"plain", `{"type":"object","properties":{"a":{"type":"string","default":"x"}}}`, "", true},
		{"root not object", `{"type":"array"}`, "/type", false},
		{"root without type", `{"properties":{}}`, "/type", false},
		{"unknown keyword deep", `{"type":"object","properties":{"a":{"items":{"maxlength":1}}}}`, "/properties/a/items/maxlength", false},
		{"draft 7 keyword", `{"type":"object","definitions":{}}`, "/definitions", false},
		{"schema draft", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`, "/$schema", false},
		{"schema 2020 with hash", `{"$schema":"https://json-schema.org/draft/2020-12/schema#","type":"object"}`, "", true},
		{"ref outside", `{"type":"object","properties":{"a":{"$ref":"https://x.invalid/s"}}}`, "/properties/a/$ref", false},
		{"ref to missing pointer", `{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}}}`, "/properties/a/$ref", false},
		{"ref to defs", `{"type":"object","$defs":{"x":{}},"properties":{"a":{"$ref":"#/$defs/x"}}}`, "", true},
		{"ref to embedded id", `{"type":"object","$defs":{"x":{"$id":"https://e.invalid/x","type":"string"}},"properties":{"a":{"$ref":"https://e.invalid/x"}}}`, "", true},
		{"id shadows metaschema", `{"type":"object","$defs":{"x":{"$id":"https://json-schema.org/draft/2020-12/schema"}}}`, "/$defs/x/$id", false},
		{"ref keyword not a string", `{"type":"object","properties":{"a":{"ref":1}}}`, "/properties/a/ref", false},
		{"ref keyword empty", `{"type":"object","properties":{"a":{"ref":""}}}`, "/properties/a/ref", false},
		{"ref under not", `{"type":"object","properties":{"a":{"not":{"ref":"x"}}}}`, "/properties/a/not/ref", false},
		{"ref in anyOf branch", `{"type":"object","properties":{"a":{"anyOf":[{"type":"string","ref":"x"},{"type":"integer"}]}}}`, "", true},
		{"default at root", `{"type":"object","default":{}}`, "/default", false},
		{"default in anyOf", `{"type":"object","anyOf":[{"properties":{"a":{"default":1}}}]}`, "/anyOf/0/properties/a/default", false},
		{"default under if", `{"type":"object","if":{"properties":{"a":{"default":1}}},"then":{}}`, "/if/properties/a/default", false},
		// Build refuses it, once the compiled schema says no $ref under
		// properties leads there (testdata/params/defaults_ref.json).
		{"default on items", `{"type":"object","properties":{"l":{"items":{"default":1}}}}`, "", true},
		{"default in then", `{"type":"object","if":{},"then":{"properties":{"a":{"default":1}}}}`, "", true},
		{"then without if", `{"type":"object","then":{}}`, "/then", false},
		{"if alone", `{"type":"object","if":{}}`, "/if", false},
		{"minContains alone", `{"type":"object","properties":{"l":{"minContains":1}}}`, "/properties/l/minContains", false},
		{"empty enum", `{"type":"object","properties":{"e":{"enum":[]}}}`, "/properties/e/enum", false},
		{"pattern not RE2", `{"type":"object","properties":{"a":{"pattern":"(?=x)"}}}`, "/properties/a/pattern", false},
		{"patternProperties name not RE2", `{"type":"object","properties":{"a":{"patternProperties":{"^ok$":{},"(?=x)":{}}}}}`, "/properties/a/patternProperties/(?=x)", false},
		{"too deep", `{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"type":"object","properties":{"c":{"type":"object","properties":{"d":{"type":"object","properties":{"e":{"type":"object","properties":{"f":{"type":"object"}}}}}}}}}}}}}`, "/properties/a/properties/b/properties/c/properties/d/properties/e/properties/f", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Check(decode(t, c.schema), base, 5, true)
			if c.ok {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			e, ok := err.(*Error)
			require.True(t, ok)
			assert.Equal(t, c.pointer, e.Pointer, e.Reason)
			assert.NotEmpty(t, e.Keyword, "every fault names a keyword")
		})
	}
}

func TestCheckReportsRefLocations(t *testing.T) {
	r, err := Check(decode(t, `{"type":"object","$defs":{"who":{"type":"string","ref":"actor"}},
		"properties":{"a~b":{"ref":"site"},"e":{"$id":"https://e.invalid/x","properties":{"z":{"ref":"zone"}}}}}`), base, 10, true)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{
		base + "#/$defs/who":                "actor",
		base + "#/properties/a~0b":          "site",
		"https://e.invalid/x#/properties/z": "zone",
	}, r.Refs)
	assert.Equal(t, 0, r.Defaults)
}

func compile(t *testing.T, s string) (*Plan, *jsonschema.Schema, error) {
	t.Helper()
	doc := decode(t, s)
	r, err := Check(doc, base, 32, true)
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource(base, doc))
	sch, err := c.Compile(base)
	require.NoError(t, err)
	p, err := Build(sch, r, 1<<20)
	return p, sch, err
}

func TestBuildRefusesBrokenAndTriedDefaults(t *testing.T) {
	_, _, err := compile(t, `{"type":"object","properties":{"a":{"type":"integer","default":"x"}}}`)
	require.Error(t, err)
	assert.Equal(t, "/properties/a/default", err.(*Error).Pointer)

	// An object default that meets required once its own defaults fill.
	_, _, err = compile(t, `{"type":"object","properties":{"a":{"type":"object","required":["b"],"default":{},"properties":{"b":{"default":1}}}}}`)
	require.NoError(t, err)

	// A default brought into anyOf by $ref.
	_, _, err = compile(t, `{"type":"object","$defs":{"d":{"properties":{"x":{"default":1}}}},
		"properties":{"a":{"$ref":"#/$defs/d"},"b":{"anyOf":[{"$ref":"#/$defs/d"}]}}}`)
	require.Error(t, err)
	assert.Equal(t, "/$defs/d/properties/x/default", err.(*Error).Pointer)
}

func TestFill(t *testing.T) {
	cases := []struct{ name, schema, in, want string }{
		{"properties", `{"type":"object","properties":{"a":{"default":1},"b":{"default":[]}}}`, `{"b":null}`, `{"a":1,"b":null}`},
		{"nested in default", `{"type":"object","properties":{"a":{"type":"object","default":{},"properties":{"b":{"default":2}}}}}`, `{}`, `{"a":{"b":2}}`},
		{"items", `{"type":"object","properties":{"l":{"items":{"properties":{"n":{"default":0}}}}}}`, `{"l":[{},{"n":5}]}`, `{"l":[{"n":0},{"n":5}]}`},
		{"prefixItems then items", `{"type":"object","properties":{"l":{"prefixItems":[{"properties":{"p":{"default":"p"}}}],"items":{"properties":{"i":{"default":"i"}}}}}}`, `{"l":[{},{}]}`, `{"l":[{"p":"p"},{"i":"i"}]}`},
		{"ref and allOf win", `{"type":"object","$defs":{"d":{"properties":{"m":{"default":"ref"}}}},"$ref":"#/$defs/d","properties":{"m":{"default":"own"}}}`, `{}`, `{"m":"ref"}`},
		{"else before own defaults, then a second walk", `{"type":"object","properties":{"mode":{"default":"fast"}},"if":{"required":["mode"]},"then":{"properties":{"w":{"default":4}}},"else":{"properties":{"r":{"default":3}}}}`, `{}`, `{"mode":"fast","r":3,"w":4}`},
		{"then applies", `{"type":"object","properties":{"mode":{}},"if":{"required":["mode"]},"then":{"properties":{"w":{"default":4}}},"else":{"properties":{"r":{"default":3}}}}`, `{"mode":1}`, `{"mode":1,"w":4}`},
		{"dependentSchemas after own defaults", `{"type":"object","properties":{"a":{"default":1}},"dependentSchemas":{"a":{"properties":{"b":{"default":2}}}}}`, `{}`, `{"a":1,"b":2}`},
		{"additional and pattern", `{"type":"object","properties":{"k":{}},"patternProperties":{"^p":{"properties":{"x":{"default":"p"}}}},"additionalProperties":{"properties":{"y":{"default":"a"}}}}`, `{"k":{},"p1":{},"o":{}}`, `{"k":{},"p1":{"x":"p"},"o":{"y":"a"}}`},
		{"ref cycle without a value", `{"type":"object","$defs":{"a":{"allOf":[{"$ref":"#/$defs/a"}],"properties":{"z":{"default":1}}}},"$ref":"#/$defs/a"}`, `{}`, `{"z":1}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, _, err := compile(t, c.schema)
			require.NoError(t, err)
			v := decode(t, c.in)
			assert.True(t, p.Fill(v, 0))
			assert.Equal(t, decode(t, c.want), v)
		})
	}
}

func TestFillCopiesDefaults(t *testing.T) {
	p, _, err := compile(t, `{"type":"object","properties":{"a":{"default":{"l":[1]}}}}`)
	require.NoError(t, err)
	v1, v2 := map[string]any{}, map[string]any{}
	p.Fill(v1, 0)
	v1["a"].(map[string]any)["l"].([]any)[0] = "changed"
	p.Fill(v2, 0)
	assert.Equal(t, json.Number("1"), v2["a"].(map[string]any)["l"].([]any)[0])
}

func TestRefs(t *testing.T) {
	p, _, err := compile(t, `{"type":"object","properties":{
		"one":{"type":"string","ref":"actor"},
		"list":{"type":"array","items":{"type":"string","ref":"site"}},
		"either":{"anyOf":[{"type":"string","ref":"actor"},{"type":"integer"}]},
		"obj":{"type":"object","properties":{"deep":{"ref":"zone"}}}}}`)
	require.NoError(t, err)
	v := decode(t, `{"one":"a","list":["s1","s2"],"either":5,"obj":{"deep":"z"}}`)
	var got []string
	sites := p.Refs(v, nil, 10)
	for i := range sites {
		s := &sites[i]
		got = append(got, ijson.Pointer(s.Path)+"="+s.Schema+":"+s.Value)
		s.Set("key:" + s.Value)
	}
	assert.ElementsMatch(t, []string{"/one=actor:a", "/list/0=site:s1", "/list/1=site:s2", "/obj/deep=zone:z"}, got)
	assert.Equal(t, decode(t, `{"one":"key:a","list":["key:s1","key:s2"],"either":5,"obj":{"deep":"key:z"}}`), v)

	// A branch that holds is resolved; the walk stops past the limit.
	v = decode(t, `{"either":"x","one":"y","list":["a","b","c"]}`)
	assert.Len(t, p.Refs(v, nil, 10), 5)
	assert.Len(t, p.Refs(v, nil, 1), 2, "one past the limit, then the walk stops")
	assert.False(t, strings.HasPrefix(v.(map[string]any)["either"].(string), "key:"))
}

func TestFillBudget(t *testing.T) {
	p, _, err := compile(t, `{"type":"object","properties":{"l":{"items":{"properties":{"o":{"default":"0123456789"}}}}}}`)
	require.NoError(t, err)
	v := decode(t, `{"l":[{},{},{},{}]}`)
	assert.True(t, p.Fill(v, 44), "four fills of 11 fit in 44")
	v = decode(t, `{"l":[{},{},{},{},{}]}`)
	assert.False(t, p.Fill(v, 44), "a fifth passes the budget")
}

// TestWalksRememberTheirVisits: the defaults and refs walks stay linear
// where subschemas reach one value by several paths (Multiplies refuses
// such schemas at registration; the walks must not depend on it).
func TestWalksRememberTheirVisits(t *testing.T) {
	p, _, err := compile(t, `{"type":"object","properties":{"root":{"$ref":"#/$defs/node"}},"$defs":{"node":{"anyOf":[
		{"type":"object","properties":{"owner":{"type":"string","ref":"actor"},"child":{"$ref":"#/$defs/node"}}},
		{"type":"object","properties":{"site":{"type":"string","ref":"site"},"child":{"$ref":"#/$defs/node"}}}]}}}`)
	require.NoError(t, err)
	v := decode(t, `{"root":`+strings.Repeat(`{"child":`, 40)+`{"owner":"o"}`+strings.Repeat(`}`, 40)+`}`)
	assert.Len(t, p.Refs(v, nil, 10), 1)

	var defs []string
	for i := range 24 {
		defs = append(defs, fmt.Sprintf(`"d%d":{"allOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]}`, i, i+1, i+1))
	}
	defs = append(defs, `"d24":{"type":"object","properties":{"who":{"default":"w"}}}`)
	p, _, err = compile(t, `{"type":"object","$ref":"#/$defs/d0","$defs":{`+strings.Join(defs, ",")+`}}`)
	require.NoError(t, err)
	v = map[string]any{}
	assert.True(t, p.Fill(v, 0))
	assert.Equal(t, "w", v.(map[string]any)["who"])
}

func TestMultiplies(t *testing.T) {
	for name, c := range map[string]struct {
		schema string
		bad    bool
	}{
		"flat":               {`{"type":"object","properties":{"a":{"type":"string"}}}`, false},
		"tree":               {`{"type":"object","properties":{"kids":{"items":{"$ref":"#"}}}}`, false},
		"self twice":         {`{"type":"object","properties":{"a":{"$ref":"#"}},"allOf":[{"properties":{"a":{"$ref":"#"}}}]}`, true},
		"two members":        {`{"type":"object","properties":{"a":{"$ref":"#"},"b":{"$ref":"#"}}}`, false},
		"pattern and member": {`{"type":"object","properties":{"a":{"$ref":"#"}},"patternProperties":{"^z":{"$ref":"#"}}}`, false},
	} {
		t.Run(name, func(t *testing.T) {
			_, sch, err := compile(t, c.schema)
			require.NoError(t, err)
			if c.bad {
				assert.Error(t, Multiplies(sch))
			} else {
				assert.NoError(t, Multiplies(sch))
			}
		})
	}
}

func TestKeywordOf(t *testing.T) {
	for ptr, want := range map[string]string{
		"":                                     "",
		"/type":                                "type",
		"/properties/minLength":                "properties",
		"/properties/a/minLength":              "minLength",
		"/properties/a/enum/0":                 "enum",
		"/allOf/1/properties/b/default":        "default",
		"/$defs/node":                          "$defs",
		"/patternProperties/(?=x)":             "patternProperties",
		"/properties/a~1b/items/const/x":       "const",
		"/dependentSchemas/a/properties/w":     "properties",
		"/properties/l/prefixItems/0/required": "required",
	} {
		assert.Equal(t, want, KeywordOf(ptr), ptr)
	}
}
