package actions

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
)

// toolFixture is one file of testdata/tools: actions as a manifest, the
// export's options, and what the export gives (tools) or the code of the
// refusal it gives (error). hidden lists what the export gives for each
// hidden action, in id order.
type toolFixture struct {
	Description string          `json:"description"`
	Actions     json.RawMessage `json:"actions"`
	Options     struct {
		Languages []string `json:"languages"`
	} `json:"options"`
	Tools  json.RawMessage `json:"tools"`
	Hidden json.RawMessage `json:"hidden"`
	Error  codes.Code      `json:"error"`
}

func (f *toolFixture) options() *ToolOptions {
	if f.Options.Languages == nil {
		return nil
	}
	return &ToolOptions{Languages: f.Options.Languages}
}

// exportTools is the export of a manifest: its visible definitions
// registered in a fresh registry, then listed as tools.
func exportTools(defs []Definition, opts *ToolOptions) ([]Tool, error) {
	r := NewRegistry(nil)
	for _, d := range defs {
		if !d.offers(identity.SurfaceMCP) {
			continue
		}
		if err := r.Register(New(d, noBody)); err != nil {
			return nil, fmt.Errorf("actions: exporting %s: %w", d.ID, err)
		}
	}
	return r.Tools(opts)
}

// exportTool is the tool of one definition, hidden or not.
func exportTool(def Definition, opts *ToolOptions) (Tool, error) {
	def.Surfaces = nil // offered everywhere
	tools, err := exportTools([]Definition{def}, opts)
	if err != nil {
		return Tool{}, err
	}
	return tools[0], nil
}

// inputSchema is the inputSchema of def's tool.
func inputSchema(def Definition, languages []string) (map[string]any, error) {
	t, err := exportTool(def, &ToolOptions{Languages: languages})
	return t.InputSchema, err
}

func loadToolFixtures(t *testing.T) map[string]*toolFixture {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "tools", "*.json"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 14, "testdata/tools holds too few fixtures")
	out := map[string]*toolFixture{}
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		var f toolFixture
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&f), file)
		require.True(t, (f.Error == "") != (f.Tools == nil), "%s: give tools or error, not both", file)
		out[strings.TrimSuffix(filepath.Base(file), ".json")] = &f
	}
	return out
}

// mcpToolSchemas compiles $defs/Tool of each MCP schema version in
// testdata/mcp-schema.
var mcpToolSchemas = sync.OnceValues(func() (map[string]*jsonschema.Schema, error) {
	out := map[string]*jsonschema.Schema{}
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		data, err := os.ReadFile(filepath.Join("testdata", "mcp-schema", version+".json"))
		if err != nil {
			return nil, err
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		url := "https://mcp.invalid/schema/" + version + ".json"
		c := jsonschema.NewCompiler()
		c.UseLoader(refuseLoader{})
		if err := c.AddResource(url, doc); err != nil {
			return nil, err
		}
		sch, err := c.Compile(url + "#/$defs/Tool")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", version, err)
		}
		out[version] = sch
	}
	return out, nil
})

// requireMCPTool checks a tool's JSON against $defs/Tool of every MCP
// version, and its inputSchema against the parameters rules.
func requireMCPTool(t *testing.T, tool Tool) {
	t.Helper()
	schemas, err := mcpToolSchemas()
	require.NoError(t, err)
	data, err := json.Marshal(tool)
	require.NoError(t, err)
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	require.NoError(t, err)
	for version, sch := range schemas {
		assert.NoError(t, sch.Validate(v), "tool %s against MCP %s", tool.Name, version)
	}
	_, err = CompileParameters(tool.InputSchema, Limits{})
	assert.NoError(t, err, "the inputSchema of %s is a parameters schema", tool.Name)
}

func requireCode(t *testing.T, err error, code codes.Code) {
	t.Helper()
	var r *Refusal
	require.ErrorAs(t, err, &r)
	assert.Equal(t, code, r.Code)
}

func toolsJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	return string(data)
}

func noBody(context.Context, map[string]any, *Trace) (any, error) { return nil, nil }

func TestToolFixtures(t *testing.T) {
	for name, f := range loadToolFixtures(t) {
		t.Run(name, func(t *testing.T) {
			defs, err := DecodeManifest(f.Actions)
			require.NoError(t, err)
			opts := f.options()

			tools, err := exportTools(defs, opts)
			if f.Error != "" {
				requireCode(t, err, f.Error)
			} else {
				require.NoError(t, err)
				assert.JSONEq(t, string(f.Tools), toolsJSON(t, tools))
				for _, tool := range tools {
					requireMCPTool(t, tool)
				}
				checkHiddenTools(t, f, defs, opts)
				checkOneByOne(t, f, defs, tools)
			}
			checkRegistryTools(t, f, defs, opts)
		})
	}
}

// checkHiddenTools: the export maps a hidden action all the same.
func checkHiddenTools(t *testing.T, f *toolFixture, defs []Definition, opts *ToolOptions) {
	t.Helper()
	var hidden []Definition
	for _, d := range defs {
		if !d.offers(identity.SurfaceMCP) {
			hidden = append(hidden, d)
		}
	}
	if f.Hidden == nil {
		return
	}
	sort.Slice(hidden, func(i, j int) bool { return hidden[i].ID < hidden[j].ID })
	got := make([]Tool, 0, len(hidden))
	for _, d := range hidden {
		tool, err := exportTool(d, opts)
		require.NoError(t, err, d.ID)
		requireMCPTool(t, tool)
		got = append(got, tool)
	}
	assert.JSONEq(t, string(f.Hidden), toolsJSON(t, got))
}

// checkOneByOne: the export of one definition agrees with the list.
func checkOneByOne(t *testing.T, f *toolFixture, defs []Definition, tools []Tool) {
	t.Helper()
	byName := map[string]Tool{}
	for _, tool := range tools {
		byName[tool.Name] = tool
	}
	for _, d := range defs {
		if !d.offers(identity.SurfaceMCP) {
			continue
		}
		want, ok := byName[ToolName(d.ID)]
		require.True(t, ok, "no tool for %s", d.ID)
		one, err := exportTool(d, f.options())
		require.NoError(t, err)
		assert.Equal(t, toolsJSON(t, want), toolsJSON(t, one), d.ID)
		in, err := inputSchema(d, f.Options.Languages)
		require.NoError(t, err)
		assert.Equal(t, toolsJSON(t, want.InputSchema), toolsJSON(t, in), d.ID)
		id, err := ActionID(want.Name)
		require.NoError(t, err)
		assert.Equal(t, d.ID, id)
	}
}

// checkRegistryTools: a registry of the same actions exports the same
// tools from its compiled schemas, or refuses at Register or at Tools
// with the fixture's code.
func checkRegistryTools(t *testing.T, f *toolFixture, defs []Definition, opts *ToolOptions) {
	t.Helper()
	r := NewRegistry(nil)
	for _, d := range defs {
		if err := r.Register(Action{Definition: d, Run: noBody}); err != nil {
			if !d.offers(identity.SurfaceMCP) && f.Error == "" {
				continue // refused at Register, as the export skips it
			}
			require.NotEmpty(t, f.Error, "register %s: %v", d.ID, err)
			requireCode(t, err, f.Error)
			return
		}
	}
	tools, err := r.Tools(opts)
	if f.Error != "" {
		requireCode(t, err, f.Error)
		return
	}
	require.NoError(t, err)
	assert.JSONEq(t, string(f.Tools), toolsJSON(t, tools), "Registry.Tools")
	again, err := exportTools(r.Definitions(), opts)
	require.NoError(t, err)
	assert.JSONEq(t, string(f.Tools), toolsJSON(t, again), "the tools of Registry.Definitions() registered again")
}

func TestToolNameRoundTrip(t *testing.T) {
	for _, tc := range []struct{ id, name string }{
		{"scflow/create_actor", "scflow-create_actor"},
		{"a/b", "a-b"},
		{"_/_", "_-_"},
		{"Ns2/Name_3", "Ns2-Name_3"},
		{"x_1/y__", "x_1-y__"},
	} {
		t.Run(tc.id, func(t *testing.T) {
			require.NoError(t, checkID(tc.id))
			assert.Equal(t, tc.name, ToolName(tc.id))
			id, err := ActionID(tc.name)
			require.NoError(t, err)
			assert.Equal(t, tc.id, id)
		})
	}
}

func TestActionIDOfToolBadNames(t *testing.T) {
	for _, name := range []string{
		"",
		"-",
		"scflow",
		"scflow_create",
		"scflow-",
		"-create",
		"a-b-c",
		"a--b",
		"1ns-name",
		"ns-2name",
		"ns.v2-name",
		"ns-na.me",
		"ns/name",
		"ns-na me",
		"ns-nàme",
	} {
		t.Run(fmt.Sprintf("%q", name), func(t *testing.T) {
			id, err := ActionID(name)
			assert.Empty(t, id)
			requireCode(t, err, codes.UnknownAction)
			assert.ErrorIs(t, err, codes.UnknownAction)
		})
	}
}

func TestToolNameLength(t *testing.T) {
	id128 := "ns/" + strings.Repeat("a", maxToolNameLength-3)
	id129 := id128 + "a"
	require.NoError(t, checkID(id128))
	requireCode(t, checkID(id129), codes.ConstraintViolation)

	tool, err := exportTool(Definition{ID: id128}, nil)
	require.NoError(t, err)
	assert.Len(t, tool.Name, maxToolNameLength)
	requireMCPTool(t, tool)

	_, err = exportTool(Definition{ID: id129}, nil)
	requireCode(t, err, codes.ConstraintViolation)
	_, err = exportTools([]Definition{{ID: "ns/ok"}, {ID: id129}}, nil)
	requireCode(t, err, codes.ConstraintViolation)

	r := NewRegistry(nil)
	err = r.Register(Action{Definition: Definition{ID: id129}, Run: noBody})
	requireCode(t, err, codes.ConstraintViolation)
}

func TestToolNameChecks(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"a", true},
		{"a.b-c_D9", true},
		{strings.Repeat("x", 128), true},
		{"", false},
		{strings.Repeat("x", 129), false},
		{"a/b", false},
		{"a b", false},
		{"é", false},
	} {
		t.Run(fmt.Sprintf("%.20q", tc.name), func(t *testing.T) {
			err := checkToolName("id", tc.name)
			if tc.ok {
				assert.NoError(t, err)
			} else {
				requireCode(t, err, codes.ConstraintViolation)
			}
		})
	}
}

func TestToolsDoNotShareMaps(t *testing.T) {
	params := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"name": map[string]any{"type": "string", "maxLength": 5},
			"tags": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		},
		"required": []any{"name"},
	}
	def := Definition{ID: "shop/add", Parameters: params}
	r := NewRegistry(nil)
	require.NoError(t, r.Register(Action{Definition: def, Run: noBody}))
	before, err := r.Tools(nil)
	require.NoError(t, err)
	want := toolsJSON(t, before)
	wantDoc := r.paramsOf("shop/add")
	wantSchema := toolsJSON(t, wantDoc.schema())
	wantParams := toolsJSON(t, params)

	vandalise := func(tool Tool) {
		props := tool.InputSchema["properties"].(map[string]any)
		props["name"].(map[string]any)["maxLength"] = 1000
		props["tags"].(map[string]any)["items"].(map[string]any)["type"] = "integer"
		props["extra"] = map[string]any{}
		tool.InputSchema["required"].([]any)[0] = "other"
		tool.InputSchema["type"] = "array"
	}
	tools, err := r.Tools(&ToolOptions{Languages: []string{"en"}})
	require.NoError(t, err)
	vandalise(tools[0])
	one, err := exportTool(def, nil)
	require.NoError(t, err)
	vandalise(one)
	in, err := inputSchema(def, []string{"en"})
	require.NoError(t, err)
	vandalise(Tool{InputSchema: in})
	for _, d := range r.Definitions() {
		d.Parameters.(map[string]any)["type"] = "string"
	}

	after, err := r.Tools(nil)
	require.NoError(t, err)
	assert.Equal(t, want, toolsJSON(t, after), "Registry.Tools")
	ps := r.paramsOf("shop/add")
	assert.Equal(t, wantSchema, toolsJSON(t, ps.schema()), "the compiled schema")
	assert.Equal(t, wantParams, toolsJSON(t, params), "the definition's parameters")

	// The registry still checks calls against the schema it compiled.
	_, err = r.Run(context.Background(), Call{Action: "shop/add", Params: map[string]any{"name": "too long a name"}})
	assert.ErrorIs(t, err, codes.InvalidParameters)
	_, err = r.Run(context.Background(), Call{Action: "shop/add", Params: map[string]any{"name": "pen", "tags": []any{"a"}}})
	assert.NoError(t, err)
}

func TestToolsRootCombinatorStillChecked(t *testing.T) {
	def := Definition{ID: "style/set", Parameters: `{"type":"object","properties":{"icon":{"type":"string"},"color":{"type":"string"}},"anyOf":[{"required":["icon"]},{"required":["color"]}]}`}
	r := NewRegistry(nil)
	require.NoError(t, r.Register(Action{Definition: def, Run: noBody}))
	tools, err := r.Tools(nil)
	require.NoError(t, err)
	require.Len(t, tools, 1)
	assert.NotContains(t, tools[0].InputSchema, "anyOf")
	_, err = r.Run(context.Background(), Call{Action: "style/set", Params: map[string]any{}})
	assert.ErrorIs(t, err, codes.InvalidParameters, "the full schema still holds at run time")
}

func TestWithLanguagesNothingUseful(t *testing.T) {
	def := Definition{ID: "wiki/edit", Parameters: `{"type":"object","properties":{"t":{"anyOf":[{"type":"string"},{"type":"object","additionalProperties":{"type":"string"}}]}}}`}
	plain, err := exportTool(def, nil)
	require.NoError(t, err)
	for _, langs := range [][]string{nil, {}, {""}, {"", ""}} {
		t.Run(fmt.Sprintf("%q", langs), func(t *testing.T) {
			tool, err := exportTool(def, &ToolOptions{Languages: langs})
			require.NoError(t, err)
			assert.Equal(t, toolsJSON(t, plain), toolsJSON(t, tool))
			in, err := inputSchema(def, langs)
			require.NoError(t, err)
			assert.Equal(t, toolsJSON(t, plain.InputSchema), toolsJSON(t, in))
		})
	}
}

func TestToolsLanguagesSkipOpaqueKeywords(t *testing.T) {
	loc := `{"anyOf":[{"type":"string"},{"type":"object","additionalProperties":{"type":"string"}}]}`
	def := Definition{ID: "wiki/edit", Parameters: `{"type":"object","properties":{"t":{"not":` + loc + `}},"propertyNames":{"not":` + loc + `}}`}
	plain, err := exportTool(def, nil)
	require.NoError(t, err)
	tool, err := exportTool(def, &ToolOptions{Languages: []string{"en"}})
	require.NoError(t, err)
	assert.Equal(t, toolsJSON(t, plain), toolsJSON(t, tool))
}

func TestToAIToolRefusesBadDefinitions(t *testing.T) {
	for name, def := range map[string]Definition{
		"empty id":          {},
		"no namespace":      {ID: "list"},
		"two slashes":       {ID: "a/b/c"},
		"hyphen in id":      {ID: "shop-x/list"},
		"not json":          {ID: "shop/list", Parameters: `{"type":`},
		"root not object":   {ID: "shop/list", Parameters: map[string]any{"type": "array"}},
		"unknown keyword":   {ID: "shop/list", Parameters: `{"type":"object","maxproperties":1}`},
		"$ref leaving it":   {ID: "shop/list", Parameters: `{"type":"object","properties":{"a":{"$ref":"https://example.com/s.json"}}}`},
		"duplicate members": {ID: "shop/list", Parameters: `{"type":"object","type":"object"}`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := exportTool(def, nil)
			requireCode(t, err, codes.ConstraintViolation)
			_, err = inputSchema(def, []string{"en"})
			requireCode(t, err, codes.ConstraintViolation)
		})
	}
}

func TestToAIToolsEmpty(t *testing.T) {
	tools, err := exportTools(nil, nil)
	require.NoError(t, err)
	assert.NotNil(t, tools)
	assert.Equal(t, "[]", toolsJSON(t, tools))
	tools, err = NewRegistry(nil).Tools(nil)
	require.NoError(t, err)
	assert.Equal(t, "[]", toolsJSON(t, tools))
}

func TestToolsFromDefinitions(t *testing.T) {
	r := NewRegistry(nil)
	require.NoError(t, r.Register(Action{Definition: Definition{ID: "b/x", Surfaces: []identity.Surface{}, Writes: []string{"Actor"}}, Run: noBody}))
	require.NoError(t, r.Register(Action{Definition: Definition{ID: "a/y", Parameters: `{"type":"object"}`}, Run: noBody}))
	defs := r.Definitions()
	require.Len(t, defs, 2)
	assert.Equal(t, "a/y", defs[0].ID)
	assert.Equal(t, map[string]any{"type": "object"}, defs[0].Parameters)
	assert.Equal(t, "b/x", defs[1].ID)
	assert.Nil(t, defs[1].Parameters)
	defs[1].Writes[0] = "changed"
	assert.Equal(t, []string{"Actor"}, r.Definitions()[1].Writes)
}

func TestToolsConcurrentWithRegister(t *testing.T) {
	r := NewRegistry(nil)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			def := Definition{ID: fmt.Sprintf("ns/a%d", i), Parameters: `{"type":"object","properties":{"t":{"anyOf":[{"type":"string"},{"type":"object","additionalProperties":{"type":"string"}}]}}}`}
			assert.NoError(t, r.Register(Action{Definition: def, Run: noBody}))
		}()
		go func() {
			defer wg.Done()
			tools, err := r.Tools(&ToolOptions{Languages: []string{"en", "fr"}})
			if assert.NoError(t, err) && len(tools) > 0 {
				tools[0].InputSchema["properties"].(map[string]any)["t"].(map[string]any)["description"] = "x"
			}
		}()
	}
	wg.Wait()
	tools, err := r.Tools(nil)
	require.NoError(t, err)
	require.Len(t, tools, 8)
	for _, tool := range tools {
		assert.NotContains(t, tool.InputSchema["properties"].(map[string]any)["t"], "description")
	}
}

func TestToolJSONShape(t *testing.T) {
	data, err := json.Marshal(Tool{Name: "a-b", InputSchema: map[string]any{"type": "object"}})
	require.NoError(t, err)
	assert.JSONEq(t, `{"name":"a-b","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":false,"destructiveHint":false,"idempotentHint":false,"openWorldHint":false}}`, string(data))
}

// The MCP schemas used above do refuse a broken tool, in both versions.
func TestToolMCPSchemasRefuseBrokenTools(t *testing.T) {
	schemas, err := mcpToolSchemas()
	require.NoError(t, err)
	require.Len(t, schemas, 2)
	for _, broken := range []string{
		`{"inputSchema":{"type":"object"}}`,
		`{"name":"a-b","inputSchema":{"type":"array"}}`,
		`{"name":"a-b"}`,
		`{"name":"a-b","inputSchema":{"type":"object"},"annotations":{"destructiveHint":"yes"}}`,
	} {
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(broken))
		require.NoError(t, err)
		for version, sch := range schemas {
			assert.Error(t, sch.Validate(v), "%s against MCP %s", broken, version)
		}
	}
}

// An app-only action is exported with _meta.ui.visibility ["app"], never
// offered on ai (a model's call reads as unknown), and refused at
// registration when its surfaces list ai or leave out mcp.
func TestAppOnlyAction(t *testing.T) {
	echo := func(_ context.Context, p map[string]any, _ *Trace) (any, error) { return p, nil }
	reg := NewRegistry(&Options{Gate: &GateOptions{}})
	reg.MustRegister(New(Definition{ID: "cart/set_quantity", AppOnly: true}, echo), New(Definition{ID: "cart/show", Effect: EffectRead}, echo))
	tools, err := reg.Tools(nil)
	require.NoError(t, err)
	require.Len(t, tools, 2)
	assert.Equal(t, "cart-set_quantity", tools[0].Name)
	assert.True(t, tools[0].AppOnly())
	assert.Equal(t, map[string]any{"ui": map[string]any{"visibility": []any{"app"}}}, tools[0].Meta)
	assert.False(t, tools[1].AppOnly())

	model := &identity.Caller{Principal: "m", Surface: identity.SurfaceAI}
	tools, err = reg.Tools(&ToolOptions{Caller: model})
	require.NoError(t, err)
	require.Len(t, tools, 1)
	assert.Equal(t, "cart-show", tools[0].Name)
	_, err = reg.Run(context.Background(), Call{Action: "cart/set_quantity", Caller: model})
	assert.ErrorIs(t, err, codes.UnknownAction)
	_, err = reg.Run(context.Background(), Call{Action: "cart/set_quantity", Caller: &identity.Caller{Principal: "v", Surface: identity.SurfaceMCP}})
	assert.NoError(t, err)

	for _, s := range [][]identity.Surface{{identity.SurfaceMCP, identity.SurfaceAI}, {identity.SurfaceUI}} {
		err := NewRegistry(nil).Register(New(Definition{ID: "cart/bad", AppOnly: true, Surfaces: s}, echo))
		assert.ErrorIs(t, err, codes.ConstraintViolation, "%v", s)
	}
	// A tool whose visibility lists the model too is not app-only.
	assert.False(t, Tool{Meta: map[string]any{"ui": map[string]any{"visibility": []any{"model", "app"}}}}.AppOnly())
}
