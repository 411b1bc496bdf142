// Package profiles_test checks the export profiles of package
// github.com/actionreg/actions/profiles against the providers' official
// Go SDKs, used as real clients with no network: requests built with
// each SDK's own param types carry the exported tools byte for byte (as
// JSON values), and tool calls decoded by each SDK run through
// profiles.Adapter.RunToolCall. It is a module of its own so that
// importers of the library never see the SDKs.
package profiles_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/profiles"
)

func echo(_ context.Context, p map[string]any, _ *actions.Trace) (any, error) { return p, nil }

// shopOrder is the action the sample tool calls name.
var shopOrder = actions.Definition{ID: "shop/order", Description: "Orders an item.", Parameters: `{
	"type": "object",
	"properties": {
		"item": {"type": "string", "description": "What to order."},
		"qty": {"type": "integer", "minimum": 1, "default": 1},
		"note": {"type": ["string", "null"]},
		"ship": {"type": "object", "properties": {"fast": {"type": "boolean", "default": false}}}
	},
	"required": ["item"],
	"additionalProperties": false
}`}

// fixtureRegistry registers shop/order and every parameters fixture
// group of the library whose schema compiles, as fx/<file>_<group>.
func fixtureRegistry(t *testing.T) *actions.Registry {
	t.Helper()
	reg := actions.NewRegistry(nil)
	require.NoError(t, reg.Register(actions.New(shopOrder, echo)))
	files, err := filepath.Glob(filepath.Join("..", "testdata", "params", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	n := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		var fx struct {
			Groups []struct {
				Description string          `json:"description"`
				Schema      json.RawMessage `json:"schema"`
			} `json:"groups"`
		}
		require.NoError(t, json.Unmarshal(data, &fx), f)
		stem := strings.TrimSuffix(filepath.Base(f), ".json")
		for gi, g := range fx.Groups {
			def := actions.Definition{ID: fmt.Sprintf("fx/%s_%d", stem, gi), Description: g.Description}
			if len(g.Schema) > 0 {
				def.Parameters = g.Schema
			}
			if reg.Register(actions.New(def, echo)) == nil {
				n++
			}
		}
	}
	require.Greater(t, n, 100, "too few fixture schemas")
	return reg
}

// toolsOf returns the tools array of a marshalled request, decoded with
// numbers kept as text.
func toolsOf(t *testing.T, request any) []any {
	t.Helper()
	b, err := json.Marshal(request)
	require.NoError(t, err)
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&m))
	tools, ok := m["tools"].([]any)
	require.True(t, ok, "the request has no tools array")
	return tools
}

// asJSON decodes the export's tools the same way, for the comparison.
func asJSON(t *testing.T, v any) []any {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var out []any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&out))
	return out
}

func export(t *testing.T, reg *actions.Registry, p profiles.Profile) *profiles.Export {
	t.Helper()
	e, err := adapter(t, reg, p).Export(nil)
	require.NoError(t, err)
	require.NotEmpty(t, e.Tools)
	return e
}

func TestOpenAIChatRequestCarriesTheTools(t *testing.T) {
	reg := fixtureRegistry(t)
	e := export(t, reg, profiles.OpenAIChat)
	var tools []openai.ChatCompletionToolUnionParam
	strict := 0
	for _, tool := range e.Tools {
		fn := tool["function"].(map[string]any)
		def := shared.FunctionDefinitionParam{
			Name:       fn["name"].(string),
			Parameters: shared.FunctionParameters(fn["parameters"].(map[string]any)),
			Strict:     openai.Bool(fn["strict"].(bool)),
		}
		if d, ok := fn["description"].(string); ok {
			def.Description = openai.String(d)
		}
		if fn["strict"] == true {
			strict++
		}
		tools = append(tools, openai.ChatCompletionFunctionTool(def))
	}
	req := openai.ChatCompletionNewParams{
		Model:    shared.ChatModel("gpt-5"),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("order tea")},
		Tools:    tools,
	}
	assert.Equal(t, asJSON(t, e.Tools), toolsOf(t, req))
	t.Logf("%d tools, %d strict", len(e.Tools), strict)
}

func TestOpenAIResponsesRequestCarriesTheTools(t *testing.T) {
	reg := fixtureRegistry(t)
	e := export(t, reg, profiles.OpenAIResponses)
	var tools []responses.ToolUnionParam
	for _, tool := range e.Tools {
		u := responses.ToolParamOfFunction(tool["name"].(string), tool["parameters"].(map[string]any), tool["strict"].(bool))
		if d, ok := tool["description"].(string); ok {
			u.OfFunction.Description = openai.String(d)
		}
		tools = append(tools, u)
	}
	req := responses.ResponseNewParams{
		Model: shared.ResponsesModel("gpt-5"),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("order tea")},
		Tools: tools,
	}
	assert.Equal(t, asJSON(t, e.Tools), toolsOf(t, req))
}

// anthropicTool builds the SDK's tool from an exported one: the schema's
// type, properties and required go to their fields, the rest to
// ExtraFields.
func anthropicTool(tool map[string]any) anthropic.ToolUnionParam {
	s := tool["input_schema"].(map[string]any)
	in := anthropic.ToolInputSchemaParam{ExtraFields: map[string]any{}}
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch v := s[k]; k {
		case "type":
		case "properties":
			in.Properties = v
		case "required":
			for _, n := range v.([]any) {
				in.Required = append(in.Required, n.(string))
			}
			if len(in.Required) == 0 {
				in.ExtraFields[k] = v // the SDK leaves an empty list out
			}
		default:
			in.ExtraFields[k] = v
		}
	}
	p := anthropic.ToolParam{Name: tool["name"].(string), InputSchema: in}
	if d, ok := tool["description"].(string); ok {
		p.Description = anthropic.String(d)
	}
	if tool["strict"] == true {
		p.Strict = anthropic.Bool(true)
	}
	return anthropic.ToolUnionParam{OfTool: &p}
}

func TestAnthropicRequestCarriesTheTools(t *testing.T) {
	reg := fixtureRegistry(t)
	for _, p := range []profiles.Profile{profiles.Anthropic, profiles.AnthropicStrict} {
		t.Run(string(p), func(t *testing.T) {
			e := export(t, reg, p)
			var tools []anthropic.ToolUnionParam
			for _, tool := range e.Tools {
				tools = append(tools, anthropicTool(tool))
			}
			req := anthropic.MessageNewParams{
				Model:     anthropic.Model("claude-sonnet-4-5"),
				MaxTokens: 1024,
				Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("order tea"))},
				Tools:     tools,
			}
			assert.Equal(t, asJSON(t, e.Tools), toolsOf(t, req))
		})
	}
}

// wantOrder is what shop/order's body receives for the sample calls:
// the nulls of optional properties left out, so that defaults fill; the
// null note kept, since the schema takes null there.
var wantOrder = map[string]any{"item": "tea", "qty": json.Number("1"), "note": nil,
	"ship": map[string]any{"fast": false}}

const strictArguments = `{"item":"tea","qty":null,"note":null,"ship":{"fast":null}}`

func TestOpenAIChatToolCallRunsBack(t *testing.T) {
	reg := fixtureRegistry(t)
	body := `{"id":"chatcmpl-1","object":"chat.completion","created":1764553200,"model":"gpt-5",
		"choices":[{"index":0,"finish_reason":"tool_calls","logprobs":null,
			"message":{"role":"assistant","content":null,"refusal":null,
				"tool_calls":[{"id":"call_1","type":"function","function":{"name":"shop-order","arguments":` + quote(strictArguments) + `}}]}}],
		"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`
	var resp openai.ChatCompletion
	require.NoError(t, json.Unmarshal([]byte(body), &resp))
	require.Len(t, resp.Choices[0].Message.ToolCalls, 1)
	call := resp.Choices[0].Message.ToolCalls[0]
	res, err := adapter(t, reg, profiles.OpenAIChat).RunToolCall(context.Background(),
		actions.Call{Action: call.Function.Name, Params: []byte(call.Function.Arguments), ToolCallID: call.ID})
	require.NoError(t, err)
	assert.Equal(t, wantOrder, res.Value)
	entry := res.Entry()
	assert.Equal(t, "shop/order", entry.Action)
	assert.Equal(t, `{"item":"tea","note":null,"qty":1,"ship":{"fast":false}}`, entry.Parameters)
	require.Len(t, res.Records, 1)
	assert.Equal(t, "call_1", res.Records[0].Audit.ToolCallID, "the model's tool call id is kept for tracing")
}

func TestOpenAIResponsesToolCallRunsBack(t *testing.T) {
	reg := fixtureRegistry(t)
	body := `{"id":"resp_1","object":"response","created_at":1764553200,"model":"gpt-5","status":"completed",
		"output":[{"type":"function_call","id":"fc_1","call_id":"call_1","name":"shop-order","arguments":` + quote(strictArguments) + `,"status":"completed"}],
		"parallel_tool_calls":true,"tool_choice":"auto","tools":[]}`
	var resp responses.Response
	require.NoError(t, json.Unmarshal([]byte(body), &resp))
	require.Len(t, resp.Output, 1)
	call := resp.Output[0].AsFunctionCall()
	res, err := adapter(t, reg, profiles.OpenAIResponses).RunToolCall(context.Background(),
		actions.Call{Action: call.Name, Params: []byte(call.Arguments), ToolCallID: call.CallID})
	require.NoError(t, err)
	assert.Equal(t, wantOrder, res.Value)
}

func TestAnthropicToolUseRunsBack(t *testing.T) {
	reg := fixtureRegistry(t)
	body := `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5",
		"content":[{"type":"tool_use","id":"toolu_1","name":"shop-order","input":{"item":"tea","note":null}}],
		"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`
	var msg anthropic.Message
	require.NoError(t, json.Unmarshal([]byte(body), &msg))
	require.Len(t, msg.Content, 1)
	use := msg.Content[0].AsToolUse()
	res, err := adapter(t, reg, profiles.AnthropicStrict).RunToolCall(context.Background(),
		actions.Call{Action: use.Name, Params: []byte(use.Input), ToolCallID: use.ID})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"item": "tea", "qty": json.Number("1"), "note": nil}, res.Value)

	// Anthropic keeps optional properties optional: a null is passed as
	// it is, and the check refuses it where the schema does not take null.
	_, err = adapter(t, reg, profiles.Anthropic).RunToolCall(context.Background(),
		actions.Call{Action: use.Name, Params: []byte(`{"item":"tea","qty":null}`)})
	assert.ErrorIs(t, err, codes.InvalidParameters)
}

func adapter(t *testing.T, reg *actions.Registry, p profiles.Profile) *profiles.Adapter {
	t.Helper()
	a, err := profiles.New(reg, p)
	require.NoError(t, err)
	return a
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
