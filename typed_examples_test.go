package actions_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
)

// TestTypedExamplesAgainstMCP: the tools of the typed actions the
// examples declare, with their inferred input and output schemas, are
// valid $defs/Tool of both MCP versions (testdata/mcp-schema).
func TestTypedExamplesAgainstMCP(t *testing.T) {
	reg := actions.NewRegistry(nil)
	reg.MustRegister(
		actions.Typed(actions.Definition{ID: "garden/plant"}, func(context.Context, plantParams, *actions.Trace) (plantResult, error) {
			return plantResult{}, nil
		}),
		actions.Typed(actions.Definition{ID: "garden/plant_ptr"}, func(context.Context, *plantParams, *actions.Trace) (*plantResult, error) {
			return &plantResult{}, nil
		}),
		actions.Typed(actions.Definition{ID: "garden/list"}, func(context.Context, map[string]any, *actions.Trace) ([]plantResult, error) {
			return nil, nil
		}),
		actions.Typed(actions.Definition{ID: "shop/order", Parameters: `{"type": "object", "required": ["customer"],
			"properties": {"customer": {"type": "string", "ref": "customer"}, "size": {"enum": ["S", "M"]}, "qty": {"type": "integer"}}}`},
			func(context.Context, orderParams, *actions.Trace) (string, error) { return "", nil }),
	)
	tools, err := reg.Tools(nil)
	require.NoError(t, err)
	require.Len(t, tools, 4)
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		data, err := os.ReadFile(filepath.Join("testdata", "mcp-schema", version+".json"))
		require.NoError(t, err)
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		require.NoError(t, err)
		url := "https://mcp.invalid/" + version + ".json"
		c := jsonschema.NewCompiler()
		require.NoError(t, c.AddResource(url, doc))
		sch, err := c.Compile(url + "#/$defs/Tool")
		require.NoError(t, err)
		for _, tool := range tools {
			require.NotNil(t, tool.OutputSchema, tool.Name)
			if version == "2025-11-25" && tool.OutputSchema["type"] != "object" {
				tool.OutputSchema = nil // as mcpserver lists it
			}
			text, err := json.Marshal(tool)
			require.NoError(t, err)
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader(text))
			require.NoError(t, err)
			assert.NoError(t, sch.Validate(v), "%s against MCP %s", tool.Name, version)
		}
	}
}
