package profiles

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
)

// Keys Anthropic refuses, reached through a recursive $ref, an array, a
// $ref into a renamed property and dependentRequired: the export takes
// only keys Anthropic accepts, and a call written with them reaches the
// body with the schema's own names.
func TestAnthropicKeysRenamedAndNamedBack(t *testing.T) {
	def := actions.Definition{ID: "crm/tree", Parameters: `{
		"type": "object",
		"properties": {
			"root node": {"$ref": "#/$defs/node"},
			"copy": {"$ref": "#/properties/root node"},
			"list": {"type": "array", "items": {"type": "object", "properties": {"x:y": {"type": "integer"}}}},
			"a/b": {"type": "string"},
			"c": {"type": "string"}
		},
		"dependentRequired": {"a/b": ["c"]},
		"$defs": {"node": {"type": "object", "properties": {"the label": {"type": "string"}, "kids!": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}}
	}`}
	for _, p := range []Profile{Anthropic, AnthropicStrict} {
		t.Run(string(p), func(t *testing.T) {
			e, err := exportDefs([]actions.Definition{def}, p)
			require.NoError(t, err)
			require.Len(t, e.Tools, 1)
			assert.Empty(t, checkTool(p, e.Tools[0]))
			s := e.Tools[0]["input_schema"].(map[string]any)
			props := s["properties"].(map[string]any)
			assert.Contains(t, props, "root_node")
			assert.Equal(t, map[string]any{"$ref": "#/properties/root_node"}, props["copy"], "a $ref into a renamed property follows it")
			if dr, ok := s["dependentRequired"]; ok {
				assert.Equal(t, map[string]any{"a_b": []any{"c"}}, dr)
			}
			renamed := 0
			for _, l := range e.Losses {
				if l.Keyword == "properties" {
					renamed++
				}
			}
			assert.Equal(t, 5, renamed, "root node, a/b, x:y, the label, kids!")

			reg := actions.NewRegistry(nil)
			require.NoError(t, reg.Register(actions.New(def, echo)))
			res, err := runToolCall(context.Background(), reg, p, actions.Call{Action: "crm-tree", Params: []byte(`{
				"root_node": {"the_label": "top", "kids_": [{"the_label": "leaf", "kids_": []}]},
				"copy": {"the_label": "again"},
				"list": [{"x_y": 1}, {"x_y": 2}],
				"a_b": "v", "c": "w"}`)})
			require.NoError(t, err)
			assert.Equal(t, map[string]any{
				"root node": map[string]any{"the label": "top", "kids!": []any{map[string]any{"the label": "leaf", "kids!": []any{}}}},
				"copy":      map[string]any{"the label": "again"},
				"list":      []any{map[string]any{"x:y": json.Number("1")}, map[string]any{"x:y": json.Number("2")}},
				"a/b":       "v", "c": "w",
			}, res.Value)
		})
	}
}
