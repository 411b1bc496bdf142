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

// TestListActorsSchema: list_actors' schema is the one it declares (the
// page's bounds, the cursor), which Register checked against
// what listActorsParams' tags say (the enum of type, the enum and default
// of lang, the default limit): a schema that disagreed would be refused.
func TestListActorsSchema(t *testing.T) {
	model, reg, err := setup()
	require.NoError(t, err)
	defer model.Close()
	tools, err := reg.Tools(nil)
	require.NoError(t, err)
	for _, tool := range tools {
		if tool.Name != "supply-list_actors" {
			continue
		}
		text, err := json.Marshal(tool.InputSchema)
		require.NoError(t, err)
		assert.JSONEq(t, `{"type": "object", "additionalProperties": false, "properties": {
			"type": {"enum": ["plant", "warehouse", "depot", "supplier"], "description": "Only actors of this type."},
			"lang": {"type": "string", "enum": ["en", "fr"], "default": "en", "description": "The language of the names."},
			"limit": {"type": "integer", "minimum": 1, "maximum": 500, "default": 100, "description": "At most this many actors per page."},
			"cursor": {"type": "string", "minLength": 1, "maxLength": 512, "description": "Where to start: give the cursor a previous answer's next or nextCall holds, as it is; leave it out for the first page."}}}`, string(text))
		return
	}
	t.Fatal("no tool supply-list_actors")
}
