package profiles_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/profiles"
)

func exportDeferred(t *testing.T, reg *actions.Registry, p profiles.Profile, d profiles.Deferral) *profiles.Export {
	t.Helper()
	e, err := adapter(t, reg, p).ExportDeferred(nil, d)
	require.NoError(t, err)
	require.Greater(t, len(e.Tools), 2)
	return e
}

// The Responses request built with openai-go's own fields
// (FunctionToolParam.DeferLoading, ToolSearchToolParam) carries the
// deferred export as the same JSON, and the SDK decodes it back into
// those fields.
func TestOpenAIResponsesDeferredRequest(t *testing.T) {
	reg := fixtureRegistry(t)
	e := exportDeferred(t, reg, profiles.OpenAIResponses, profiles.Deferral{Pinned: []string{"shop/order"}, Search: profiles.SearchOpenAI})
	var tools []responses.ToolUnionParam
	deferred := 0
	for _, tool := range e.Tools {
		if tool["type"] == "tool_search" {
			tools = append(tools, responses.ToolUnionParam{OfToolSearch: &responses.ToolSearchToolParam{}})
			continue
		}
		u := responses.ToolParamOfFunction(tool["name"].(string), tool["parameters"].(map[string]any), tool["strict"].(bool))
		if d, ok := tool["description"].(string); ok {
			u.OfFunction.Description = openai.String(d)
		}
		if tool["defer_loading"] == true {
			u.OfFunction.DeferLoading = openai.Bool(true)
			deferred++
		}
		tools = append(tools, u)
	}
	assert.Equal(t, len(e.Tools)-2, deferred, "all but shop-order and the search tool")
	req := responses.ResponseNewParams{
		Model: shared.ResponsesModel("gpt-5.4"),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("order tea")},
		Tools: tools,
	}
	assert.Equal(t, asJSON(t, e.Tools), toolsOf(t, req))

	// The way in: the export's JSON decodes into the SDK's union, each
	// member in its own field.
	text, err := json.Marshal(e.Tools)
	require.NoError(t, err)
	var back []responses.ToolUnionParam
	require.NoError(t, json.Unmarshal(text, &back))
	require.Len(t, back, len(e.Tools))
	last := back[len(back)-1]
	assert.NotNil(t, last.OfToolSearch, "the search tool")
	for _, u := range back[:len(back)-1] {
		require.NotNil(t, u.OfFunction)
		assert.Equal(t, u.OfFunction.Name != "shop-order", u.OfFunction.DeferLoading.Value, u.OfFunction.Name)
	}
}

// A response where the hosted search loaded shop-order and the model
// called it: the call runs back as any other.
func TestOpenAIResponsesDeferredCallRunsBack(t *testing.T) {
	reg := fixtureRegistry(t)
	a := adapter(t, reg, profiles.OpenAIResponses)
	_, err := a.ExportDeferred(nil, profiles.Deferral{Search: profiles.SearchOpenAI})
	require.NoError(t, err)
	body := `{"id":"resp_1","object":"response","created_at":1764553200,"model":"gpt-5.4","status":"completed",
		"output":[
			{"type":"tool_search_call","id":"ts_1","call_id":null,"execution":"server","arguments":{"query":"order"},"status":"completed"},
			{"type":"function_call","id":"fc_1","call_id":"call_1","name":"shop-order","arguments":` + quote(strictArguments) + `,"status":"completed"}],
		"parallel_tool_calls":true,"tool_choice":"auto","tools":[]}`
	var resp responses.Response
	require.NoError(t, json.Unmarshal([]byte(body), &resp))
	require.Len(t, resp.Output, 2)
	assert.Equal(t, "tool_search_call", resp.Output[0].Type)
	call := resp.Output[1].AsFunctionCall()
	res, err := a.RunToolCall(context.Background(), actions.Call{Action: call.Name, Params: []byte(call.Arguments), ToolCallID: call.CallID})
	require.NoError(t, err)
	assert.Equal(t, wantOrder, res.Value)
}

// The Messages request built with anthropic-sdk-go's own fields
// (ToolParam.DeferLoading, the regex and BM25 search tool params)
// carries the deferred export as the same JSON.
func TestAnthropicDeferredRequest(t *testing.T) {
	reg := fixtureRegistry(t)
	cases := []struct {
		profile profiles.Profile
		search  profiles.Search
		sdk     anthropic.ToolUnionParam
	}{
		{profiles.Anthropic, profiles.SearchAnthropicRegex, anthropic.ToolUnionParam{OfToolSearchToolRegex20251119: &anthropic.ToolSearchToolRegex20251119Param{
			Type: anthropic.ToolSearchToolRegex20251119TypeToolSearchToolRegex20251119}}},
		{profiles.AnthropicStrict, profiles.SearchAnthropicBM25, anthropic.ToolUnionParam{OfToolSearchToolBm25_20251119: &anthropic.ToolSearchToolBm25_20251119Param{
			Type: anthropic.ToolSearchToolBm25_20251119TypeToolSearchToolBm25_20251119}}},
	}
	for _, c := range cases {
		t.Run(string(c.profile)+" "+string(c.search), func(t *testing.T) {
			e := exportDeferred(t, reg, c.profile, profiles.Deferral{Pinned: []string{"shop-order"}, Search: c.search})
			var tools []anthropic.ToolUnionParam
			for _, tool := range e.Tools[:len(e.Tools)-1] {
				u := anthropicTool(tool)
				if tool["defer_loading"] == true {
					u.OfTool.DeferLoading = anthropic.Bool(true)
				}
				tools = append(tools, u)
			}
			tools = append(tools, c.sdk)
			req := anthropic.MessageNewParams{
				Model:     anthropic.Model("claude-opus-4-5"),
				MaxTokens: 1024,
				Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("order tea"))},
				Tools:     tools,
			}
			assert.Equal(t, asJSON(t, e.Tools), toolsOf(t, req))

			text, err := json.Marshal(e.Tools)
			require.NoError(t, err)
			var back []anthropic.ToolUnionParam
			require.NoError(t, json.Unmarshal(text, &back))
			require.Len(t, back, len(e.Tools))
			last := back[len(back)-1]
			if c.search == profiles.SearchAnthropicRegex {
				assert.NotNil(t, last.OfToolSearchToolRegex20251119)
			} else {
				assert.NotNil(t, last.OfToolSearchToolBm25_20251119)
			}
			for _, u := range back[:len(back)-1] {
				require.NotNil(t, u.OfTool)
				assert.Equal(t, u.OfTool.Name != "shop-order", u.OfTool.DeferLoading.Value, u.OfTool.Name)
			}
		})
	}
}

// A message where the search tool found shop-order and the model used
// it: the tool_use runs back as any other.
func TestAnthropicDeferredToolUseRunsBack(t *testing.T) {
	reg := fixtureRegistry(t)
	a := adapter(t, reg, profiles.Anthropic)
	_, err := a.ExportDeferred(nil, profiles.Deferral{Search: profiles.SearchAnthropicRegex})
	require.NoError(t, err)
	body := `{"id":"msg_1","type":"message","role":"assistant","model":"claude-opus-4-5",
		"content":[
			{"type":"server_tool_use","id":"srvtoolu_1","name":"tool_search_tool_regex","input":{"pattern":"order"}},
			{"type":"tool_search_tool_result","tool_use_id":"srvtoolu_1","content":{"type":"tool_search_tool_search_result","tool_references":[{"type":"tool_reference","tool_name":"shop-order"}]}},
			{"type":"tool_use","id":"toolu_1","name":"shop-order","input":{"item":"tea"}}],
		"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`
	var msg anthropic.Message
	require.NoError(t, json.Unmarshal([]byte(body), &msg))
	require.Len(t, msg.Content, 3)
	found := msg.Content[1].AsToolSearchToolResult()
	refs := found.Content.AsResponseToolSearchToolSearchResultBlock().ToolReferences
	require.Len(t, refs, 1)
	assert.Equal(t, "shop-order", refs[0].ToolName)
	use := msg.Content[2].AsToolUse()
	res, err := a.RunToolCall(context.Background(), actions.Call{Action: use.Name, Params: []byte(use.Input), ToolCallID: use.ID})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"item": "tea", "qty": json.Number("1")}, res.Value)
}
