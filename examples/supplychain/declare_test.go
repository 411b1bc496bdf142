package main

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/declare"
	"github.com/actionreg/actions/identity"
)

var updateDeclarations = flag.Bool("update", false, "rewrite testdata/supplychain.d.ts from the current declarations")

// The example host's actions, as a caller holding both capabilities on
// the ai surface sees them, declared for a program; scripts/tsc checks
// the file (and a program written against it) with tsc --strict.
func TestDeclarationsGolden(t *testing.T) {
	reg := actions.NewRegistry(nil)
	require.NoError(t, reg.Register(definitions(nil)...))
	tools, err := reg.Tools(&actions.ToolOptions{Caller: &identity.Caller{Surface: identity.SurfaceAI, Capabilities: []string{capRead, capWrite}}})
	require.NoError(t, err)
	got, err := declare.TypeScript(tools)
	require.NoError(t, err)
	path := filepath.Join("testdata", "supplychain.d.ts")
	if *updateDeclarations {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -run TestDeclarationsGolden -update")
	assert.Equal(t, string(want), got)
	text, err := json.Marshal(tools)
	require.NoError(t, err)
	t.Logf("%d tools: %d bytes of declarations, %d bytes of tool JSON", len(tools), len(got), len(text))
}
