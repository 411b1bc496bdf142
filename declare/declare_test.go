package declare_test

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/declare"
)

var update = flag.Bool("update", false, "rewrite testdata/actions.d.ts from the current declarations")

// fixtureTools registers the actions of testdata/actions.json and gives
// their tools.
func fixtureTools(t *testing.T) []actions.Tool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "actions.json"))
	require.NoError(t, err)
	var fx struct {
		Actions []actions.Definition `json:"actions"`
	}
	require.NoError(t, json.Unmarshal(data, &fx))
	reg := actions.NewRegistry(nil)
	for _, d := range fx.Actions {
		require.NoError(t, reg.Register(actions.New(d, func(context.Context, map[string]any, *actions.Trace) (any, error) { return nil, nil })), d.ID)
	}
	tools, err := reg.Tools(nil)
	require.NoError(t, err)
	return tools
}

func TestTypeScriptGolden(t *testing.T) {
	got, err := declare.TypeScript(fixtureTools(t))
	require.NoError(t, err)
	path := filepath.Join("testdata", "actions.d.ts")
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -run TestTypeScriptGolden -update")
	assert.Equal(t, string(want), got)
}

// The order of the tools given makes no difference.
func TestTypeScriptOrder(t *testing.T) {
	tools := fixtureTools(t)
	a, err := declare.TypeScript(tools)
	require.NoError(t, err)
	for i, j := 0, len(tools)-1; i < j; i, j = i+1, j-1 {
		tools[i], tools[j] = tools[j], tools[i]
	}
	b, err := declare.TypeScript(tools)
	require.NoError(t, err)
	assert.Equal(t, a, b)
}

func TestTypeScriptRefusesForeignTool(t *testing.T) {
	_, err := declare.TypeScript([]actions.Tool{{Name: "tool_search", InputSchema: map[string]any{"type": "object"}}})
	require.Error(t, err)
	assert.ErrorIs(t, err, codes.UnknownAction)
}
