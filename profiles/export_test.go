package profiles

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/internal/fixture"
	"github.com/actionreg/actions/internal/ijson"
	"github.com/actionreg/actions/internal/schema"
	"github.com/actionreg/actions/store"
)

var updateProfiles = flag.Bool("update", false, "rewrite the golden files of testdata from the current export")

// profileGolden is one file of testdata/profiles: the actions made of the
// groups of one parameters fixture (the groups whose schema the registry
// accepts), and for each action and profile the exported tool and its
// losses, or the refusal of the export.
type profileGolden struct {
	Source  string              `json:"source"`
	Actions []json.RawMessage   `json:"actions"`
	Exports []profileGoldenTool `json:"exports"`
}

type profileGoldenTool struct {
	Action   string                       `json:"action"`
	Profiles map[Profile]profileGoldenOne `json:"profiles"`
}

type profileGoldenOne struct {
	Tool   json.RawMessage `json:"tool,omitempty"`
	Losses []Loss          `json:"losses,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// fixtureActions turns every compiling group of the parameters fixtures
// in testdata/params and testdata/refs into a definition.
func fixtureActions(t *testing.T) map[string][]actions.Definition {
	t.Helper()
	out := map[string][]actions.Definition{}
	for _, dir := range []string{"params", "refs"} {
		for name, f := range fixture.Files[paramsFile](t, "../testdata/"+dir) {
			stem := strings.TrimSuffix(name, ".json")
			key := dir + "/" + name
			for gi, g := range f.Groups {
				if g.Refused != nil {
					continue
				}
				def := actions.Definition{ID: fmt.Sprintf("fx/%s_%d", stem, gi), Description: g.Description}
				if len(g.Schema) > 0 {
					def.Parameters = json.RawMessage(g.Schema)
				}
				out[key] = append(out[key], def)
			}
		}
	}
	return out
}

func exportJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func canonical(t *testing.T, raw []byte) string {
	t.Helper()
	v, err := ijson.Decode(raw, 0)
	require.NoError(t, err)
	c, err := actions.CanonicalJSON(v)
	require.NoError(t, err)
	return string(c)
}

func TestProfilesGolden(t *testing.T) {
	fixtures := fixtureActions(t)
	keys := make([]string, 0, len(fixtures))
	for k := range fixtures {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	require.GreaterOrEqual(t, len(keys), 15, "too few parameters fixtures")
	tools := 0
	for _, key := range keys {
		defs := fixtures[key]
		golden := filepath.Join("testdata", strings.ReplaceAll(key, "/", "_"))
		t.Run(key, func(t *testing.T) {
			got := profileGolden{Source: "../testdata/" + key}
			for _, d := range defs {
				got.Actions = append(got.Actions, exportJSON(t, d))
				one := profileGoldenTool{Action: d.ID, Profiles: map[Profile]profileGoldenOne{}}
				for _, p := range All() {
					e, err := exportDefs([]actions.Definition{d}, p)
					if err != nil {
						var r *actions.Refusal
						require.True(t, errors.As(err, &r), "%s %s: %v", d.ID, p, err)
						one.Profiles[p] = profileGoldenOne{Error: string(r.Code) + ": " + r.Issues[0].Message}
						continue
					}
					require.Len(t, e.Tools, 1)
					assert.Empty(t, checkTool(p, e.Tools[0]), "%s %s breaks its provider's rules", d.ID, p)
					tools++
					one.Profiles[p] = profileGoldenOne{Tool: exportJSON(t, e.Tools[0]), Losses: e.Losses}
				}
				got.Exports = append(got.Exports, one)
			}
			text, err := json.MarshalIndent(got, "", "  ")
			require.NoError(t, err)
			text = append(text, '\n')
			if *updateProfiles {
				require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
				require.NoError(t, os.WriteFile(golden, text, 0o644))
				return
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run go test -run TestProfilesGolden -update to write it")
			// Byte for byte: a JSON comparison through float64 would miss
			// a number that lost digits.
			assert.Equal(t, string(want), string(text), "%s differs from the export", golden)
		})
	}
	t.Logf("%d fixture files, %d exported tools checked", len(keys), tools)
}

// The whole list of each fixture exported at once passes the request
// rules too (Anthropic's caps over the strict tools).
func TestProfilesWholeListsPass(t *testing.T) {
	var all []actions.Definition
	for _, defs := range fixtureActions(t) {
		all = append(all, defs...)
	}
	for _, p := range All() {
		e, err := exportDefs(all, p)
		if p == GeminiOpenAPI {
			require.Error(t, err, "a recursive fixture schema cannot be inlined")
			continue
		}
		require.NoError(t, err, p)
		assert.Empty(t, checkRequest(p, e.Tools), p)
	}
}

func TestProfileAnthropicCaps(t *testing.T) {
	var defs []actions.Definition
	for i := range 30 {
		defs = append(defs, actions.Definition{ID: fmt.Sprintf("ns/t%02d", i), Parameters: `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}`})
	}
	e, err := exportDefs(defs, AnthropicStrict)
	require.NoError(t, err)
	strict := 0
	for _, tool := range e.Tools {
		if tool["strict"] == true {
			strict++
		}
	}
	assert.Equal(t, 20, strict, "the first 20 tools by name are strict")
	assert.Nil(t, e.Tools[20]["strict"])
	assert.Empty(t, checkRequest(AnthropicStrict, e.Tools))
	last := e.Losses[len(e.Losses)-1]
	assert.Equal(t, "ns/t29", last.Action)
	assert.Equal(t, "strict", last.Keyword)
	assert.Contains(t, last.Why, "at most 20 strict tools")

	// 13 optional properties each: the second tool would pass 24.
	opt := `{"type":"object","properties":{` + func() string {
		var ps []string
		for i := range 13 {
			ps = append(ps, fmt.Sprintf(`"p%d":{"type":"string"}`, i))
		}
		return strings.Join(ps, ",")
	}() + `},"additionalProperties":false}`
	e, err = exportDefs([]actions.Definition{{ID: "ns/a", Parameters: opt}, {ID: "ns/b", Parameters: opt}}, AnthropicStrict)
	require.NoError(t, err)
	assert.Equal(t, true, e.Tools[0]["strict"])
	assert.Nil(t, e.Tools[1]["strict"])
	assert.Empty(t, checkRequest(AnthropicStrict, e.Tools))
}

// Each checker refuses a tool that breaks each of its rules: the tool
// starts from one the profile exported, and one rule is broken.
func TestProfileCheckersReject(t *testing.T) {
	def := actions.Definition{ID: "shop/order", Description: "Order.", Parameters: `{"type":"object",
		"properties":{"item":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}}},
		"required":["item"],"additionalProperties":false}`}
	good := func(p Profile) map[string]any {
		e, err := exportDefs([]actions.Definition{def}, p)
		require.NoError(t, err)
		require.Empty(t, checkTool(p, e.Tools[0]), p)
		return e.Tools[0]
	}
	params := func(p Profile, tool map[string]any) map[string]any {
		switch p {
		case MCP:
			return tool["inputSchema"].(map[string]any)
		case OpenAIChat:
			return tool["function"].(map[string]any)["parameters"].(map[string]any)
		case OpenAIResponses:
			return tool["parameters"].(map[string]any)
		case Anthropic, AnthropicStrict:
			return tool["input_schema"].(map[string]any)
		case Gemini:
			return tool["parametersJsonSchema"].(map[string]any)
		}
		return tool["parameters"].(map[string]any)
	}
	setName := func(p Profile, tool map[string]any, n string) {
		if p == OpenAIChat {
			tool["function"].(map[string]any)["name"] = n
			return
		}
		tool["name"] = n
	}
	prop := func(p Profile, tool map[string]any) map[string]any {
		return params(p, tool)["properties"].(map[string]any)["item"].(map[string]any)
	}
	long := strings.Repeat("a", 65)
	type breakRule struct {
		rule  string
		apply func(p Profile, tool map[string]any)
	}
	common := []breakRule{
		{"name", func(p Profile, tool map[string]any) { setName(p, tool, "has space") }},
		{"root not an object", func(p Profile, tool map[string]any) { params(p, tool)["type"] = "array" }},
		{"root anyOf", func(p Profile, tool map[string]any) {
			params(p, tool)["anyOf"] = []any{map[string]any{"required": []any{"item"}}}
		}},
		{"root oneOf", func(p Profile, tool map[string]any) { params(p, tool)["oneOf"] = []any{map[string]any{}} }},
		{"root allOf", func(p Profile, tool map[string]any) { params(p, tool)["allOf"] = []any{map[string]any{}} }},
		{"unknown field", func(p Profile, tool map[string]any) { tool["extra"] = 1 }},
	}
	cases := map[Profile][]breakRule{
		MCP: append(common[:len(common):len(common)],
			breakRule{"name", func(p Profile, tool map[string]any) { tool["name"] = strings.Repeat("a", 129) }},
			breakRule{"root $schema", func(p Profile, tool map[string]any) { params(p, tool)["$schema"] = "x" }},
			breakRule{"destructiveHint missing", func(p Profile, tool map[string]any) {
				delete(tool["annotations"].(map[string]any), "destructiveHint")
			}},
		),
		OpenAIChat: append(common[:len(common):len(common)],
			breakRule{"name", func(p Profile, tool map[string]any) { setName(p, tool, long) }},
			breakRule{"strict not sent", func(p Profile, tool map[string]any) { delete(tool["function"].(map[string]any), "strict") }},
			breakRule{"strict keyword minLength", func(p Profile, tool map[string]any) { prop(p, tool)["minLength"] = 1 }},
			breakRule{"strict keyword allOf", func(p Profile, tool map[string]any) { prop(p, tool)["allOf"] = []any{} }},
			breakRule{"strict format", func(p Profile, tool map[string]any) { prop(p, tool)["format"] = "uri" }},
			breakRule{"strict object not closed", func(p Profile, tool map[string]any) { delete(params(p, tool), "additionalProperties") }},
			breakRule{"strict property not required", func(p Profile, tool map[string]any) { params(p, tool)["required"] = []any{"item"} }},
			breakRule{"strict schema without type", func(p Profile, tool map[string]any) { delete(prop(p, tool), "type") }},
			breakRule{"strict nesting over 10 levels", func(p Profile, tool map[string]any) {
				var s any = map[string]any{"type": "string"}
				for range 11 {
					s = map[string]any{"type": "object", "properties": map[string]any{"x": s}, "required": []any{"x"}, "additionalProperties": false}
				}
				params(p, tool)["properties"].(map[string]any)["item"] = s
			}},
			breakRule{"strict over 5000 properties", func(p Profile, tool map[string]any) {
				ps := params(p, tool)["properties"].(map[string]any)
				var req []any
				for i := range 5001 {
					n := fmt.Sprintf("p%d", i)
					ps[n] = map[string]any{"type": "string"}
					req = append(req, n)
				}
				params(p, tool)["required"] = append(req, "item", "tags")
			}},
			breakRule{"strict over 1000 enum values", func(p Profile, tool map[string]any) {
				var e []any
				for i := range 1001 {
					e = append(e, fmt.Sprint(i))
				}
				prop(p, tool)["enum"] = e
			}},
		),
		OpenAIResponses: append(common[:len(common):len(common)],
			breakRule{"type not function", func(p Profile, tool map[string]any) { tool["type"] = "custom" }},
			breakRule{"strict not sent", func(p Profile, tool map[string]any) { delete(tool, "strict") }},
		),
		Anthropic: append(common[:len(common):len(common)],
			breakRule{"name", func(p Profile, tool map[string]any) { setName(p, tool, long) }},
			breakRule{"strict other than true", func(p Profile, tool map[string]any) { tool["strict"] = false }},
		),
		AnthropicStrict: append(common[:len(common):len(common)],
			breakRule{"strict keyword minimum", func(p Profile, tool map[string]any) { prop(p, tool)["minimum"] = 1 }},
			breakRule{"strict keyword maxLength", func(p Profile, tool map[string]any) { prop(p, tool)["maxLength"] = 1 }},
			breakRule{"strict format", func(p Profile, tool map[string]any) { prop(p, tool)["format"] = "regex" }},
			breakRule{"strict minItems over 1", func(p Profile, tool map[string]any) {
				params(p, tool)["properties"].(map[string]any)["tags"].(map[string]any)["minItems"] = 2
			}},
			breakRule{"strict object not closed", func(p Profile, tool map[string]any) { params(p, tool)["additionalProperties"] = true }},
			breakRule{"strict recursion", func(p Profile, tool map[string]any) {
				params(p, tool)["$defs"] = map[string]any{"n": map[string]any{"type": "array", "items": map[string]any{"$ref": "#/$defs/n"}}}
				params(p, tool)["properties"].(map[string]any)["tree"] = map[string]any{"$ref": "#/$defs/n"}
			}},
			breakRule{"strict enum of a non-primitive", func(p Profile, tool map[string]any) { prop(p, tool)["enum"] = []any{[]any{}} }},
			breakRule{"strict allOf with $ref", func(p Profile, tool map[string]any) {
				prop(p, tool)["allOf"] = []any{map[string]any{"$ref": "#/$defs/x"}}
			}},
		),
		Gemini: append(common[:len(common):len(common)],
			breakRule{"name", func(p Profile, tool map[string]any) { setName(p, tool, "9starts_with_digit") }},
			breakRule{"keyword const", func(p Profile, tool map[string]any) { prop(p, tool)["const"] = "x" }},
			breakRule{"keyword minLength", func(p Profile, tool map[string]any) { prop(p, tool)["minLength"] = 1 }},
			breakRule{"keyword $schema", func(p Profile, tool map[string]any) { prop(p, tool)["$schema"] = "x" }},
		),
		GeminiOpenAPI: append(common[:len(common):len(common)],
			breakRule{"name", func(p Profile, tool map[string]any) { setName(p, tool, long) }},
			breakRule{"field additionalProperties", func(p Profile, tool map[string]any) { params(p, tool)["additionalProperties"] = false }},
			breakRule{"field $ref", func(p Profile, tool map[string]any) { prop(p, tool)["$ref"] = "#/x" }},
			breakRule{"field const", func(p Profile, tool map[string]any) { prop(p, tool)["const"] = "x" }},
			breakRule{"type not one upper-case type", func(p Profile, tool map[string]any) { prop(p, tool)["type"] = []any{"STRING", "null"} }},
			breakRule{"type not one upper-case type", func(p Profile, tool map[string]any) { prop(p, tool)["type"] = "string" }},
			breakRule{"enum of a non-string", func(p Profile, tool map[string]any) { prop(p, tool)["enum"] = []any{json.Number("1")} }},
		),
	}
	for _, p := range All() {
		for _, b := range cases[p] {
			t.Run(string(p)+"/"+b.rule, func(t *testing.T) {
				tool := good(p)
				b.apply(p, tool)
				found := false
				for _, v := range checkTool(p, tool) {
					found = found || strings.Contains(v, b.rule)
				}
				assert.True(t, found, "the %s checker lets through a tool breaking %q: %v", p, b.rule, checkTool(p, tool))
			})
		}
	}
	t.Run("anthropic caps", func(t *testing.T) {
		var tools []map[string]any
		for range 21 {
			tools = append(tools, good(AnthropicStrict))
		}
		assert.Contains(t, checkRequest(AnthropicStrict, tools), "over 20 strict tools")
		many := good(AnthropicStrict)
		ps := many["input_schema"].(map[string]any)["properties"].(map[string]any)
		for i := range 25 {
			ps[fmt.Sprint("o", i)] = map[string]any{"anyOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "null"}}}
		}
		v := checkRequest(AnthropicStrict, []map[string]any{many})
		assert.Contains(t, v, "over 24 optional parameters in strict tools")
		assert.Contains(t, v, "over 16 union parameters in strict tools")
	})
}

func TestProfileErrors(t *testing.T) {
	long := actions.Definition{ID: "ns/" + strings.Repeat("a", 62)} // a 65-character tool name
	for _, p := range All() {
		_, err := exportDefs([]actions.Definition{long}, p)
		if p == MCP {
			assert.NoError(t, err)
			continue
		}
		require.Error(t, err, p)
		assert.ErrorIs(t, err, codes.ConstraintViolation)
		assert.Contains(t, err.Error(), long.ID, "the error names the action")
	}
	_, err := exportDefs(nil, "nope")
	assert.ErrorIs(t, err, codes.ConstraintViolation)

	rec := actions.Definition{ID: "ns/tree", Parameters: `{"type":"object","properties":{"root":{"$ref":"#/$defs/node"}},
		"$defs":{"node":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}}}}}`}
	_, err = exportDefs([]actions.Definition{rec}, GeminiOpenAPI)
	require.Error(t, err)
	var r *actions.Refusal
	require.True(t, errors.As(err, &r))
	assert.Equal(t, "/$defs/node/properties/kids/items", r.Issues[0].Path)
	assert.Contains(t, err.Error(), "ns/tree")
	for _, p := range []Profile{OpenAIChat, Gemini, Anthropic} {
		_, err := exportDefs([]actions.Definition{rec}, p)
		assert.NoError(t, err, "%s takes references as they are", p)
	}
	e, err := exportDefs([]actions.Definition{rec}, AnthropicStrict)
	require.NoError(t, err)
	assert.Nil(t, e.Tools[0]["strict"], "a recursive schema is not strict for Anthropic")
}

func TestPortableNames(t *testing.T) {
	reg := actions.NewRegistry(&actions.Options{PortableNames: true})
	body := func(context.Context, map[string]any, *actions.Trace) (any, error) { return nil, nil }
	ok64 := "ns/" + strings.Repeat("a", 61)
	require.NoError(t, reg.Register(actions.New(actions.Definition{ID: ok64}, body)))
	err := reg.Register(actions.New(actions.Definition{ID: ok64 + "b"}, body))
	assert.ErrorIs(t, err, codes.ConstraintViolation)
	err = reg.Bind([]actions.Definition{{ID: "ns/" + strings.Repeat("b", 62)}}, map[string]actions.Body{"ns/" + strings.Repeat("b", 62): body})
	assert.ErrorIs(t, err, codes.ConstraintViolation, "a manifest is checked too")
	require.NoError(t, actions.NewRegistry(nil).Register(actions.New(actions.Definition{ID: ok64 + "b"}, body)), "off by default")
	assert.NoError(t, CheckPortableName(ok64))
	assert.Error(t, CheckPortableName(ok64+"b"))
	assert.Error(t, CheckPortableName("no-slash"))
}

// exportDefs registers defs in a fresh registry and exports them.
func exportDefs(defs []actions.Definition, p Profile) (*Export, error) {
	reg := actions.NewRegistry(nil)
	for _, d := range defs {
		if err := reg.Register(actions.New(d, echo)); err != nil {
			return nil, err
		}
	}
	return exportOf(reg, p, nil)
}

// exportOf exports r's actions for p through a fresh adapter.
func exportOf(r *actions.Registry, p Profile, opts *actions.ToolOptions) (*Export, error) {
	a, err := New(r, p)
	if err != nil {
		return nil, err
	}
	return a.Export(opts)
}

// runToolCall runs c through a fresh adapter of r for p, which learns
// the strict exports again.
func runToolCall(ctx context.Context, r *actions.Registry, p Profile, c actions.Call) (actions.Result, error) {
	a, err := New(r, p)
	if err != nil {
		return actions.Result{}, err
	}
	return a.RunToolCall(ctx, c)
}

// paramsFile is one file of the root's testdata/params or testdata/refs,
// as far as the exports read it.
type paramsFile struct {
	Instances map[string]json.RawMessage `json:"instances"`
	Groups    []struct {
		Description string          `json:"description"`
		Schema      json.RawMessage `json:"schema"`
		Refused     json.RawMessage `json:"refused"`
		Cases       []struct {
			Params json.RawMessage `json:"params"`
			Valid  bool            `json:"valid"`
		} `json:"cases"`
	} `json:"groups"`
}

func decodeExact(t *testing.T, raw []byte) any {
	t.Helper()
	v, err := ijson.Decode(raw, 0)
	require.NoError(t, err)
	return v
}

// echo is a body that returns its checked parameters.
func echo(_ context.Context, p map[string]any, _ *actions.Trace) (any, error) { return p, nil }

func TestRunToolCall(t *testing.T) {
	var seen []store.RunEntry
	reg := actions.NewRegistry(&actions.Options{OnRecord: func(rec store.Record) { seen = append(seen, rec.Entry) }})
	require.NoError(t, reg.Register(actions.Action{Definition: actions.Definition{ID: "shop/order", Parameters: `{"type":"object",
		"properties":{
			"item":{"type":"string"},
			"qty":{"type":"integer","default":1},
			"note":{"type":["string","null"]},
			"ship":{"type":"object","properties":{"fast":{"type":"boolean","default":false}},"additionalProperties":false}
		},
		"required":["item"],"additionalProperties":false}`}, Run: echo}))
	ctx := context.Background()
	tool := func(name, args string) actions.Call {
		c := actions.Call{Action: name}
		if args != "" {
			c.Params = []byte(args)
		}
		return c
	}

	res, err := runToolCall(ctx, reg, OpenAIChat, tool("shop-order", `{"item":"tea","qty":null,"note":null,"ship":{"fast":null}}`))
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"item": "tea", "qty": json.Number("1"), "note": nil,
		"ship": map[string]any{"fast": false}}, res.Value, "nulls of optional properties are left out, so defaults fill; a null the schema takes stays")
	assert.Equal(t, store.OutcomeDone, res.Entry().Outcome)
	assert.Len(t, seen, 1)

	_, err = runToolCall(ctx, reg, Anthropic, tool("shop-order", `{"item":"tea","qty":null}`))
	assert.ErrorIs(t, err, codes.InvalidParameters, "other profiles pass nulls as they are")

	res, err = runToolCall(ctx, reg, OpenAIChat, tool("shop-order", `{"item":`))
	assert.ErrorIs(t, err, codes.InvalidParameters)
	assert.Equal(t, store.OutcomeRefused, res.Entry().Outcome)

	seen = nil
	res, err = runToolCall(ctx, reg, OpenAIChat, tool("nope", `{}`))
	assert.ErrorIs(t, err, codes.UnknownAction)
	assert.Equal(t, "nope", res.Entry().Action)
	assert.Len(t, seen, 1, "a refused tool call is recorded too")

	_, err = runToolCall(ctx, reg, OpenAIChat, tool("shop-other", ""))
	assert.ErrorIs(t, err, codes.UnknownAction)

	res, err = runToolCall(ctx, reg, Gemini, tool("shop-order", `{"item":"x"}`))
	require.NoError(t, err)
	assert.Equal(t, json.Number("1"), res.Value.(map[string]any)["qty"])
}

// strictEncode sets null for each property the strict export made
// nullable (or listed as required while it accepted null) and v leaves
// out: what a model under strict mode sends. With nulls false it only
// sets the properties of keptNull, and drops the members no schema
// names (a closed strict object has no room for them): that gives the
// call a strict model can express at all.
func strictEncode(root map[string]any, nullable map[string]bool, v any, starts []place) {
	w := nullWalker{root: root, nullable: nullable}
	var places []place
	for _, p := range starts {
		places = w.expand(p.s, p.ptr, p.merged, places, 0)
	}
	switch x := v.(type) {
	case map[string]any:
		open := false
		for _, p := range places {
			if _, ok := p.s["additionalProperties"]; ok && p.s["additionalProperties"] != false {
				open = true
			}
		}
		declared := map[string]bool{}
		for _, p := range places {
			props, _ := p.s["properties"].(map[string]any)
			for k := range props {
				declared[k] = true
				if _, ok := x[k]; !ok && (nullable[p.ptr+"\x00"+k] || nullable[p.merged+"\x00"+k]) {
					x[k] = nil
				}
			}
		}
		for k := range x {
			if !open && !declared[k] {
				delete(x, k)
			}
		}
		for k, e := range x {
			var subs []place
			for _, p := range places {
				props, _ := p.s["properties"].(map[string]any)
				if sub, ok := props[k].(map[string]any); ok {
					subs = append(subs, place{sub, ijson.AppendToken(ijson.AppendToken(p.ptr, "properties"), k), ijson.AppendToken(ijson.AppendToken(p.merged, "properties"), k)})
				}
			}
			if e != nil && len(subs) > 0 {
				strictEncode(root, nullable, e, subs)
			}
		}
	case []any:
		for _, e := range x {
			var subs []place
			for _, p := range places {
				if it, ok := p.s["items"].(map[string]any); ok {
					subs = append(subs, place{it, ijson.AppendToken(p.ptr, "items"), ijson.AppendToken(p.merged, "items")})
				}
			}
			if len(subs) > 0 {
				strictEncode(root, nullable, e, subs)
			}
		}
	}
}

// dropRandom removes optional members of v at random.
func dropRandom(rng *rand.Rand, v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if rng.Intn(3) == 0 {
				delete(x, k)
				continue
			}
			dropRandom(rng, e)
		}
	case []any:
		for _, e := range x {
			dropRandom(rng, e)
		}
	}
}

// Round trip: for random valid parameters of every fixture schema that
// exports strict for OpenAI, the strict encoding (omitted → null) passes
// the exported schema, and mapped back it gives the checked value of the
// original call.
func TestProfileRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(13))
	ctx := context.Background()
	trips, strictTools := 0, 0
	for _, dir := range []string{"params", "refs"} {
		for name, f := range fixture.Files[paramsFile](t, "../testdata/"+dir) {
			for gi, g := range f.Groups {
				if g.Refused != nil || len(g.Schema) == 0 {
					continue
				}
				reg := actions.NewRegistry(nil)
				id := fmt.Sprintf("fx/g%d", gi)
				require.NoError(t, reg.Register(actions.Action{Definition: actions.Definition{ID: id, Parameters: json.RawMessage(g.Schema)}, Run: echo}))
				ad, err := New(reg, OpenAIChat)
				require.NoError(t, err)
				ex := ad.strictOf(ctx, id)
				require.NotNil(t, ex)
				if !ex.strict {
					continue
				}
				strictTools++
				e, err := ad.Export(nil)
				require.NoError(t, err)
				exported := e.Tools[0]["function"].(map[string]any)["parameters"]
				ps, err := actions.CompileParameters(json.RawMessage(g.Schema), reg.Limits())
				require.NoError(t, err)
				c := jsonschema.NewCompiler()
				require.NoError(t, c.AddResource("https://x.invalid/s.json", schema.Copy(exported)))
				strictSchema, err := c.Compile("https://x.invalid/s.json")
				require.NoError(t, err, "%s group %d: the exported schema compiles", name, gi)
				for ci, cs := range g.Cases {
					if !cs.Valid || len(cs.Params) == 0 || f.Instances != nil {
						continue
					}
					for try := range 8 {
						v := decodeExact(t, cs.Params)
						if try > 0 {
							dropRandom(rng, v)
						}
						// What a strict model can say at all: no member
						// the closed objects leave out, and null for an
						// optional property that accepted null already.
						strictEncode(ex.source, ex.keptNull, v, []place{{ex.source, "", ""}})
						want, err := ps.Check(ctx, schema.Copy(v), nil)
						if err != nil {
							continue // dropping made it invalid: not a valid input
						}
						enc := schema.Copy(v)
						strictEncode(ex.source, ex.nullable, enc, []place{{ex.source, "", ""}})
						assert.NoError(t, strictSchema.Validate(enc), "%s group %d case %d: the strict encoding passes the exported schema", name, gi, ci)
						text, err := json.Marshal(enc)
						require.NoError(t, err)
						got, err := ad.RunToolCall(ctx, actions.Call{Action: actions.ToolName(id), Params: text})
						require.NoError(t, err, "%s group %d case %d: %s", name, gi, ci, text)
						assert.Equal(t, want, got.Value, "%s group %d case %d", name, gi, ci)
						trips++
					}
				}
			}
		}
	}
	t.Logf("%d strict tools, %d round trips", strictTools, trips)
	assert.Greater(t, trips, 20)
}

// The way back costs one walk of the schema more than Run: compare
// RunToolCall under a strict OpenAI tool with Run on the same call.
func BenchmarkRunToolCall(b *testing.B) {
	reg := actions.NewRegistry(nil)
	require.NoError(b, reg.Register(actions.New(actions.Definition{ID: "shop/order", Parameters: `{"type":"object",
		"properties":{"item":{"type":"string"},"qty":{"type":"integer","default":1},"note":{"type":["string","null"]},
			"ship":{"type":"object","properties":{"fast":{"type":"boolean","default":false}},"additionalProperties":false}},
		"required":["item"],"additionalProperties":false}`}, echo)))
	ctx := context.Background()
	strictArgs := []byte(`{"item":"tea","qty":null,"note":null,"ship":{"fast":null}}`)
	plainArgs := []byte(`{"item":"tea","note":null,"ship":{}}`)
	b.Run("run", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := reg.Run(ctx, actions.Call{Action: "shop/order", Params: json.RawMessage(plainArgs)}); err != nil {
				b.Fatal(err)
			}
		}
	})
	strict, err := New(reg, OpenAIChat)
	require.NoError(b, err)
	plain, err := New(reg, Anthropic)
	require.NoError(b, err)
	b.Run("openai-strict", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := strict.RunToolCall(ctx, actions.Call{Action: "shop-order", Params: strictArgs}); err != nil {
				b.Fatal(err)
			}
		}
	})
	// What the adapter's cache saves: a new adapter learns the strict
	// exports again on its first call.
	b.Run("openai-strict-new-adapter", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := runToolCall(ctx, reg, OpenAIChat, actions.Call{Action: "shop-order", Params: strictArgs}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("anthropic", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := plain.RunToolCall(ctx, actions.Call{Action: "shop-order", Params: plainArgs}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// Export of every fixture action, per profile.
func BenchmarkExport(b *testing.B) {
	reg := actions.NewRegistry(nil)
	n := 0
	for _, dir := range []string{"params", "refs"} {
		names, _ := filepath.Glob(filepath.Join("..", "testdata", dir, "*.json"))
		for _, name := range names {
			data, err := os.ReadFile(name)
			require.NoError(b, err)
			var f paramsFile
			require.NoError(b, json.Unmarshal(data, &f))
			for gi, g := range f.Groups {
				d := actions.Definition{ID: fmt.Sprintf("fx/%s_%d", strings.TrimSuffix(filepath.Base(name), ".json"), gi)}
				if len(g.Schema) > 0 {
					d.Parameters = json.RawMessage(g.Schema)
				}
				if reg.Register(actions.New(d, echo)) == nil {
					n++
				}
			}
		}
	}
	for _, p := range []Profile{MCP, OpenAIChat, AnthropicStrict, Gemini} {
		a, err := New(reg, p)
		require.NoError(b, err)
		b.Run(string(p), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := a.Export(nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/tool")
		})
	}
}

// The MCP profile is Registry.Tools as JSON values; the provider profiles
// show what is offered on the ai surface.
func TestProfileMCPIsTools(t *testing.T) {
	reg := actions.NewRegistry(nil)
	for _, defs := range fixtureActions(t) {
		for _, d := range defs {
			require.NoError(t, reg.Register(actions.New(d, echo)))
		}
	}
	require.NoError(t, reg.Register(
		actions.New(actions.Definition{ID: "only/mcp", Surfaces: []identity.Surface{identity.SurfaceMCP}}, echo),
		actions.New(actions.Definition{ID: "only/ai", Surfaces: []identity.Surface{identity.SurfaceAI}}, echo)))
	tools, err := reg.Tools(nil)
	require.NoError(t, err)
	e, err := exportOf(reg, MCP, nil)
	require.NoError(t, err)
	assert.Equal(t, canonical(t, exportJSON(t, tools)), canonical(t, exportJSON(t, e.Tools)))

	names := func(p Profile, opts *actions.ToolOptions) []string {
		e, err := exportOf(reg, p, opts)
		require.NoError(t, err)
		var out []string
		for _, tool := range e.Tools {
			if n, ok := tool["name"].(string); ok && strings.HasPrefix(n, "only-") {
				out = append(out, n)
			}
		}
		return out
	}
	assert.Equal(t, []string{"only-mcp"}, names(MCP, nil))
	assert.Equal(t, []string{"only-ai"}, names(Gemini, nil))
	assert.Equal(t, []string{"only-mcp"}, names(Gemini, &actions.ToolOptions{Caller: &identity.Caller{Surface: identity.SurfaceMCP}}))
}

// FuzzExportProfiles: any schema the registry accepts exports under every
// profile without a panic, as a refusal or as tools that pass their
// provider's checker; a strict OpenAI tool maps a call of nulls back
// without a panic. Seeds: the fixture schemas.
func FuzzExportProfiles(f *testing.F) {
	for _, dir := range []string{"params", "refs"} {
		names, _ := filepath.Glob(filepath.Join("..", "testdata", dir, "*.json"))
		for _, name := range names {
			data, err := os.ReadFile(name)
			require.NoError(f, err)
			var pf paramsFile
			require.NoError(f, json.Unmarshal(data, &pf))
			for _, g := range pf.Groups {
				if len(g.Schema) > 0 {
					f.Add([]byte(g.Schema))
				}
			}
		}
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		reg := actions.NewRegistry(nil)
		if reg.Register(actions.New(actions.Definition{ID: "fz/tool", Parameters: json.RawMessage(text)}, echo)) != nil {
			return
		}
		for _, p := range All() {
			e, err := exportOf(reg, p, nil)
			if err != nil {
				var r *actions.Refusal
				if !errors.As(err, &r) || r.Code != codes.ConstraintViolation || p != GeminiOpenAPI {
					t.Fatalf("%s: %v", p, err)
				}
				continue
			}
			if v := checkRequest(p, e.Tools); len(v) > 0 {
				t.Fatalf("%s breaks %v", p, v)
			}
		}
		_, _ = runToolCall(context.Background(), reg, OpenAIChat, actions.Call{Action: "fz-tool", Params: []byte(`{"a":null,"b":{"c":null},"d":[null,{"e":null}]}`)})
		_, _ = runToolCall(context.Background(), reg, Anthropic, actions.Call{Action: "fz-tool", Params: []byte(`{"a_b":1,"_":{"c_d":[{"":2}]},"d":[null,{"e f":null}]}`)})
	})
}

func TestPlainNumbers(t *testing.T) {
	in := map[string]any{"a": []any{json.Number("7"), json.Number("1.50"), json.Number("0.1"), json.Number("1e2"),
		json.Number("12345678901234567890"), json.Number("-0"), json.Number("1e400")}}
	out := plainNumbers(in).(map[string]any)["a"].([]any)
	assert.Equal(t, []any{int64(7), 1.5, 0.1, 100.0, json.RawMessage("12345678901234567890"), int64(0), json.RawMessage("1e400")}, out,
		"a number a float64 does not hold exactly stays as it was written")
}

// References that fan out cannot blow up the inlined OpenAPI export.
func TestProfileInliningBounded(t *testing.T) {
	defs := map[string]any{"d0": map[string]any{"type": "string"}}
	for i := 1; i <= 20; i++ {
		ref := map[string]any{"$ref": fmt.Sprintf("#/$defs/d%d", i-1)}
		defs[fmt.Sprintf("d%d", i)] = map[string]any{"type": "object", "properties": map[string]any{"a": ref, "b": ref}}
	}
	s := map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"$ref": "#/$defs/d20"}}, "$defs": defs}
	_, err := exportDefs([]actions.Definition{{ID: "ns/fan", Parameters: s}}, GeminiOpenAPI)
	require.Error(t, err, "2^20 copies")
	assert.ErrorIs(t, err, codes.ConstraintViolation)
	assert.Contains(t, err.Error(), "more than 1000")
	e, err := exportDefs([]actions.Definition{{ID: "ns/fan", Parameters: s}}, Gemini)
	require.NoError(t, err, "parametersJsonSchema keeps the references")
	assert.Len(t, e.Tools, 1)
}

// A required property with a default (its own or behind its $ref) may be
// left out of a call, so strict mode makes it nullable too.
func TestRunToolCallRequiredWithDefault(t *testing.T) {
	reg := actions.NewRegistry(nil)
	require.NoError(t, reg.Register(actions.New(actions.Definition{ID: "ns/say", Parameters: `{"type":"object",
		"properties":{"lang":{"$ref":"#/$defs/lang"},"tone":{"type":"string","default":"plain"}},
		"required":["lang","tone"],"additionalProperties":false,
		"$defs":{"lang":{"type":"string","default":"en"}}}`}, echo)))
	e, err := exportOf(reg, OpenAIChat, nil)
	require.NoError(t, err)
	fn := e.Tools[0]["function"].(map[string]any)
	assert.Equal(t, true, fn["strict"])
	res, err := runToolCall(context.Background(), reg, OpenAIChat, actions.Call{Action: "ns-say", Params: []byte(`{"lang":null,"tone":null}`)})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"lang": "en", "tone": "plain"}, res.Value)
}
