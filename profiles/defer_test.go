package profiles_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/profiles"
)

// deferRegistry has three actions offered on ai and one that needs a
// capability.
func deferRegistry(t *testing.T) *actions.Registry {
	t.Helper()
	reg := actions.NewRegistry(nil)
	body := func(context.Context, map[string]any, *actions.Trace) (any, error) { return nil, nil }
	for _, id := range []string{"shop/order", "shop/cancel", "shop/list_items"} {
		require.NoError(t, reg.Register(actions.New(actions.Definition{ID: id, Description: "About " + id + ".",
			Parameters: `{"type":"object","properties":{"n":{"type":"integer"}}}`}, body)))
	}
	require.NoError(t, reg.Register(actions.New(actions.Definition{ID: "vault/open", Capability: "vault.open"}, body)))
	return reg
}

func TestExportDeferred(t *testing.T) {
	reg := deferRegistry(t)
	cases := []struct {
		name    string
		profile profiles.Profile
		d       profiles.Deferral
		search  map[string]any
	}{
		{"openai", profiles.OpenAIResponses, profiles.Deferral{Pinned: []string{"shop/list_items"}, Search: profiles.SearchOpenAI},
			map[string]any{"type": "tool_search"}},
		{"anthropic regex", profiles.Anthropic, profiles.Deferral{Pinned: []string{"shop-list_items"}, Search: profiles.SearchAnthropicRegex},
			map[string]any{"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"}},
		{"anthropic strict bm25", profiles.AnthropicStrict, profiles.Deferral{Pinned: []string{"shop/list_items", "vault/open", "no/such"}, Search: profiles.SearchAnthropicBM25},
			map[string]any{"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, err := profiles.New(reg, c.profile)
			require.NoError(t, err)
			opts := &actions.ToolOptions{Caller: &identity.Caller{Surface: identity.SurfaceAI}}
			plain, err := a.Export(opts)
			require.NoError(t, err)
			e, err := a.ExportDeferred(opts, c.d)
			require.NoError(t, err)
			require.Len(t, e.Tools, len(plain.Tools)+1, "the tools and the search tool")
			assert.Equal(t, c.search, e.Tools[len(e.Tools)-1], "the search tool comes last")
			deferred := map[string]any{}
			for _, tool := range e.Tools[:len(e.Tools)-1] {
				deferred[tool["name"].(string)] = tool["defer_loading"]
			}
			assert.Equal(t, map[string]any{"shop-cancel": true, "shop-list_items": nil, "shop-order": true}, deferred)
			assert.Equal(t, plain.Losses, e.Losses)
		})
	}
}

func TestExportDeferredRefusesInconsistent(t *testing.T) {
	reg := deferRegistry(t)
	all := []string{"shop/order", "shop/cancel", "shop/list_items", "vault/open"}
	cases := []struct {
		name    string
		profile profiles.Profile
		d       profiles.Deferral
		keyword string
	}{
		{"deferred tools, no search tool", profiles.OpenAIResponses, profiles.Deferral{Pinned: []string{"shop/order"}}, "defer_loading"},
		{"zero deferral", profiles.Anthropic, profiles.Deferral{}, "defer_loading"},
		{"search tool, nothing deferred", profiles.OpenAIResponses, profiles.Deferral{Pinned: all, Search: profiles.SearchOpenAI}, "defer_loading"},
		{"search tool, nothing deferred (anthropic)", profiles.AnthropicStrict, profiles.Deferral{Pinned: all, Search: profiles.SearchAnthropicBM25}, "defer_loading"},
		{"anthropic search under openai", profiles.OpenAIResponses, profiles.Deferral{Search: profiles.SearchAnthropicRegex}, "search"},
		{"openai search under anthropic", profiles.Anthropic, profiles.Deferral{Search: profiles.SearchOpenAI}, "search"},
		{"unknown search tool", profiles.Anthropic, profiles.Deferral{Search: "grep"}, "search"},
		{"chat completions", profiles.OpenAIChat, profiles.Deferral{Search: profiles.SearchOpenAI}, "search"},
		{"gemini", profiles.Gemini, profiles.Deferral{Pinned: all}, "search"},
		{"mcp", profiles.MCP, profiles.Deferral{Pinned: all}, "search"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, err := profiles.New(reg, c.profile)
			require.NoError(t, err)
			e, err := a.ExportDeferred(nil, c.d)
			assert.Nil(t, e)
			require.ErrorIs(t, err, codes.ConstraintViolation)
			var r *actions.Refusal
			require.True(t, errors.As(err, &r))
			require.Len(t, r.Issues, 1)
			assert.Equal(t, c.keyword, r.Issues[0].Keyword)
		})
	}
}

// The pinned list is the host's: a caller who may see more tools gets
// them deferred, and what it may not see is neither listed nor pinned.
func TestExportDeferredFollowsTheCaller(t *testing.T) {
	reg := deferRegistry(t)
	a, err := profiles.New(reg, profiles.Anthropic)
	require.NoError(t, err)
	d := profiles.Deferral{Pinned: []string{"shop/list_items", "vault/open"}, Search: profiles.SearchAnthropicRegex}
	names := func(caps ...string) map[string]any {
		e, err := a.ExportDeferred(&actions.ToolOptions{Caller: &identity.Caller{Surface: identity.SurfaceAI, Capabilities: caps}}, d)
		require.NoError(t, err)
		out := map[string]any{}
		for _, tool := range e.Tools {
			out[tool["name"].(string)] = tool["defer_loading"]
		}
		return out
	}
	assert.Equal(t, map[string]any{"shop-cancel": true, "shop-list_items": nil, "shop-order": true, "tool_search_tool_regex": nil}, names())
	assert.Equal(t, map[string]any{"shop-cancel": true, "shop-list_items": nil, "shop-order": true, "tool_search_tool_regex": nil, "vault-open": nil}, names("vault.open"))
}

// A deferred tool's call comes back as any other.
func TestDeferredToolCallRunsBack(t *testing.T) {
	reg := orderRegistry()
	a, err := profiles.New(reg, profiles.OpenAIResponses)
	require.NoError(t, err)
	_, err = a.ExportDeferred(nil, profiles.Deferral{Search: profiles.SearchOpenAI})
	require.NoError(t, err)
	res, err := a.RunToolCall(context.Background(), actions.Call{Action: "shop-order", Params: `{"item":"tea","qty":null}`,
		Caller: &identity.Caller{Surface: identity.SurfaceAI}})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"item": "tea", "qty": json.Number("1")}, res.Value)
}
