package profiles

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
)

// TestAppOnlyToolsNeverExported: no profile's export, deferred or not,
// offers a model an app-only tool (an MCP Apps view's helper).
func TestAppOnlyToolsNeverExported(t *testing.T) {
	echo := func(_ context.Context, p map[string]any, _ *actions.Trace) (any, error) { return p, nil }
	reg := actions.NewRegistry(nil)
	reg.MustRegister(
		actions.New(actions.Definition{ID: "cart/set_quantity", AppOnly: true}, echo),
		actions.New(actions.Definition{ID: "cart/show", Effect: actions.EffectRead}, echo))
	for _, p := range []Profile{MCP, OpenAIChat, OpenAIResponses, Anthropic, AnthropicStrict, Gemini, GeminiOpenAPI} {
		a, err := New(reg, p)
		require.NoError(t, err, p)
		e, err := a.Export(nil)
		require.NoError(t, err, p)
		var names []string
		for _, tl := range e.Tools {
			if n, ok := tl["name"].(string); ok {
				names = append(names, n)
			} else if fn, ok := tl["function"].(map[string]any); ok {
				names = append(names, fn["name"].(string))
			}
		}
		assert.NotContains(t, names, "cart-set_quantity", p)
		assert.Contains(t, names, "cart-show", p)
	}
}
