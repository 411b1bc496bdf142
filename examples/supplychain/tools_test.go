package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestToolsAgainstMCPSchemas: every tool the example lists, with the
// input and output schemas its typed actions inferred or declared, is a
// valid $defs/Tool of both MCP versions in testdata/mcp-schema, as
// mcpserver lists it (an output schema whose root is not an object only
// from 2026-07-28).
func TestToolsAgainstMCPSchemas(t *testing.T) {
	model, reg, err := setup()
	require.NoError(t, err)
	defer model.Close()
	tools, err := reg.Tools(nil)
	require.NoError(t, err)
	require.NotEmpty(t, tools)
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "mcp-schema", version+".json"))
		require.NoError(t, err)
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		require.NoError(t, err)
		url := "https://mcp.invalid/" + version + ".json"
		c := jsonschema.NewCompiler()
		require.NoError(t, c.AddResource(url, doc))
		sch, err := c.Compile(url + "#/$defs/Tool")
		require.NoError(t, err)
		for _, tool := range tools {
			assert.NotNil(t, tool.OutputSchema, "%s has an output schema", tool.Name)
			if version == "2025-11-25" && tool.OutputSchema["type"] != "object" {
				tool.OutputSchema = nil
			}
			text, err := json.Marshal(tool)
			require.NoError(t, err)
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader(text))
			require.NoError(t, err)
			assert.NoError(t, sch.Validate(v), "%s against MCP %s", tool.Name, version)
		}
	}
}
