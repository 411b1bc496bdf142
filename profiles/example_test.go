package profiles_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/profiles"
)

// orderRegistry holds one action whose schema shows what the profiles
// change: an optional property with a default, a length bound and the
// registry's ref keyword.
func orderRegistry() *actions.Registry {
	reg := actions.NewRegistry(nil)
	reg.MustRegister(actions.New(actions.Definition{
		ID:          "shop/order",
		Description: "Orders an item.",
		Parameters: `{"type": "object",
			"properties": {
				"item": {"type": "string", "ref": "Product", "minLength": 1},
				"qty": {"type": "integer", "minimum": 1, "default": 1}
			},
			"required": ["item"],
			"additionalProperties": false}`,
	}, func(_ context.Context, p map[string]any, _ *actions.Trace) (any, error) { return p, nil }))
	return reg
}

func printExport(e *profiles.Export) {
	for _, t := range e.Tools {
		b, _ := json.Marshal(t)
		fmt.Println(string(b))
	}
	for _, l := range e.Losses {
		fmt.Printf("%s %q %s: %s\n", l.Action, l.Pointer, l.Keyword, l.Why)
	}
}

// exportFor exports the example's registry for p.
func exportFor(p profiles.Profile) (*profiles.Export, error) {
	a, err := profiles.New(orderRegistry(), p)
	if err != nil {
		return nil, err
	}
	return a.Export(nil)
}

// A host makes one adapter per profile it serves, at start-up, and
// exports the tools it puts into each request with it.
func ExampleNew() {
	a, err := profiles.New(orderRegistry(), profiles.OpenAIResponses)
	if err != nil {
		fmt.Println(err)
		return
	}
	e, err := a.Export(nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(e.Profile, len(e.Tools), e.Tools[0]["name"])

	_, err = profiles.New(orderRegistry(), "openai")
	fmt.Println(errors.Is(err, codes.ConstraintViolation))
	// Output:
	// openai-responses 1 shop-order
	// true
}

// Every profile, in a fixed order.
func ExampleAll() {
	fmt.Println(profiles.All())
	// Output:
	// [mcp openai-chat openai-responses anthropic anthropic-strict gemini gemini-openapi]
}

// The MCP profile is what Registry.Tools gives, as JSON values, with the
// keywords the export leaves out reported.
func ExampleAdapter_Export_mcp() {
	e, err := exportFor(profiles.MCP)
	if err != nil {
		fmt.Println(err)
		return
	}
	printExport(e)
	// Output:
	// {"annotations":{"destructiveHint":true,"idempotentHint":false,"openWorldHint":false,"readOnlyHint":false},"description":"Orders an item.","inputSchema":{"additionalProperties":false,"properties":{"item":{"description":"The id or the exact display name of a Product.","minLength":1,"ref":"Product","type":"string"},"qty":{"default":1,"minimum":1,"type":"integer"}},"required":["item"],"type":"object"},"name":"shop-order"}
}

// OpenAI Chat Completions: strict, so every property is required and the
// optional one is nullable; a null sent for it comes back as left out.
func ExampleAdapter_Export_openAIChat() {
	e, err := exportFor(profiles.OpenAIChat)
	if err != nil {
		fmt.Println(err)
		return
	}
	printExport(e)
	// Output:
	// {"function":{"description":"Orders an item.","name":"shop-order","parameters":{"additionalProperties":false,"properties":{"item":{"description":"The id or the exact display name of a Product.","type":"string"},"qty":{"minimum":1,"type":["integer","null"]}},"required":["item","qty"],"type":"object"},"strict":true},"type":"function"}
	// shop/order "" required: optional properties listed as required and made nullable (qty): a null sent for one is taken as left out
	// shop/order "/properties/item" minLength: left out in strict mode: OpenAI structured outputs do not support it; the registry checks it when the call comes back
	// shop/order "/properties/item" ref: rewritten as a sentence of the description; the registry resolves the value when the call comes back
	// shop/order "/properties/qty" default: left out in strict mode: OpenAI structured outputs do not support it; the registry checks it when the call comes back
}

// OpenAI Responses: the same schema in the flat tool shape.
func ExampleAdapter_Export_openAIResponses() {
	e, err := exportFor(profiles.OpenAIResponses)
	if err != nil {
		fmt.Println(err)
		return
	}
	b, _ := json.Marshal(e.Tools[0])
	fmt.Println(string(b))
	// Output:
	// {"description":"Orders an item.","name":"shop-order","parameters":{"additionalProperties":false,"properties":{"item":{"description":"The id or the exact display name of a Product.","type":"string"},"qty":{"minimum":1,"type":["integer","null"]}},"required":["item","qty"],"type":"object"},"strict":true,"type":"function"}
}

// Anthropic without strict takes the schema as it is, but for the
// registry's ref keyword.
func ExampleAdapter_Export_anthropic() {
	e, err := exportFor(profiles.Anthropic)
	if err != nil {
		fmt.Println(err)
		return
	}
	printExport(e)
	// Output:
	// {"description":"Orders an item.","input_schema":{"additionalProperties":false,"properties":{"item":{"description":"The id or the exact display name of a Product.","minLength":1,"type":"string"},"qty":{"default":1,"minimum":1,"type":"integer"}},"required":["item"],"type":"object"},"name":"shop-order"}
	// shop/order "/properties/item" ref: rewritten as a sentence of the description; the registry resolves the value when the call comes back
}

// Anthropic strict tool use keeps optional properties optional but has
// no numeric or length bounds.
func ExampleAdapter_Export_anthropicStrict() {
	e, err := exportFor(profiles.AnthropicStrict)
	if err != nil {
		fmt.Println(err)
		return
	}
	printExport(e)
	// Output:
	// {"description":"Orders an item.","input_schema":{"additionalProperties":false,"properties":{"item":{"description":"The id or the exact display name of a Product.","type":"string"},"qty":{"default":1,"type":"integer"}},"required":["item"],"type":"object"},"name":"shop-order","strict":true}
	// shop/order "/properties/item" minLength: left out in strict mode: Anthropic strict tool use does not support it; the registry checks it when the call comes back
	// shop/order "/properties/item" ref: rewritten as a sentence of the description; the registry resolves the value when the call comes back
	// shop/order "/properties/qty" minimum: left out in strict mode: Anthropic strict tool use does not support it; the registry checks it when the call comes back
}

// Gemini with parametersJsonSchema: the documented JSON Schema subset.
func ExampleAdapter_Export_gemini() {
	e, err := exportFor(profiles.Gemini)
	if err != nil {
		fmt.Println(err)
		return
	}
	printExport(e)
	// Output:
	// {"description":"Orders an item.","name":"shop-order","parametersJsonSchema":{"additionalProperties":false,"properties":{"item":{"description":"The id or the exact display name of a Product.","type":"string"},"qty":{"minimum":1,"type":"integer"}},"required":["item"],"type":"object"}}
	// shop/order "/properties/item" minLength: left out: outside the JSON Schema subset Gemini documents; the registry checks it when the call comes back
	// shop/order "/properties/item" ref: rewritten as a sentence of the description; the registry resolves the value when the call comes back
	// shop/order "/properties/qty" default: left out: outside the JSON Schema subset Gemini documents; the registry checks it when the call comes back
}

// Gemini's older parameters field: an OpenAPI 3.0 schema, types in upper
// case, no additionalProperties.
func ExampleAdapter_Export_geminiOpenAPI() {
	e, err := exportFor(profiles.GeminiOpenAPI)
	if err != nil {
		fmt.Println(err)
		return
	}
	printExport(e)
	// Output:
	// {"description":"Orders an item.","name":"shop-order","parameters":{"properties":{"item":{"description":"The id or the exact display name of a Product.","minLength":1,"type":"STRING"},"qty":{"default":1,"minimum":1,"type":"INTEGER"}},"required":["item"],"type":"OBJECT"}}
	// shop/order "" additionalProperties: left out: Gemini's parameters form (OpenAPI 3.0 subset) has no such field; the registry checks it when the call comes back
	// shop/order "/properties/item" ref: rewritten as a sentence of the description; the registry resolves the value when the call comes back
}

// A tool call an OpenAI model made with the strict tool: the null it
// sent for qty is taken as left out, so the default fills. A name no
// tool has is refused unknown_action, and recorded.
func ExampleAdapter_RunToolCall() {
	a, err := profiles.New(orderRegistry(), profiles.OpenAIChat)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := a.RunToolCall(context.Background(),
		actions.Call{Action: "shop-order", Params: []byte(`{"item":"tea","qty":null}`), ToolCallID: "call_7"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Value)
	fmt.Println(res.Entry().Parameters, res.Records[0].Audit.ToolCallID)

	res, err = a.RunToolCall(context.Background(), actions.Call{Action: "shop-refund"})
	fmt.Println(actions.CodeOf(err), res.Entry().Action, res.Entry().Outcome)
	// Output:
	// map[item:tea qty:1]
	// {"item":"tea","qty":1} call_7
	// unknown_action shop/refund refused
}

// A host checks an id before it registers it; Options.PortableNames
// refuses, at Register, the ids a provider would refuse (over 64
// characters) by the same rule.
func ExampleCheckPortableName() {
	fmt.Println(profiles.CheckPortableName("shop/order"))
	err := profiles.CheckPortableName("inventory/reconcile_every_warehouse_against_the_supplier_catalogue")
	fmt.Println(err)
	// Output:
	// <nil>
	// constraint_violation: invalid action id: /id the tool name has 66 characters, more than the 64 AI providers accept
}

// A host with many actions pins the few a conversation starts with and
// lets the provider's tool search find the rest.
func ExampleAdapter_ExportDeferred() {
	reg := orderRegistry()
	reg.MustRegister(actions.New(actions.Definition{ID: "shop/list_items", Description: "Lists the items.", Effect: actions.EffectRead},
		func(context.Context, map[string]any, *actions.Trace) (any, error) { return nil, nil }))
	a, err := profiles.New(reg, profiles.Anthropic)
	if err != nil {
		fmt.Println(err)
		return
	}
	e, err := a.ExportDeferred(nil, profiles.Deferral{Pinned: []string{"shop/list_items"}, Search: profiles.SearchAnthropicBM25})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range e.Tools {
		fmt.Println(t["name"], t["defer_loading"] == true)
	}
	// Without a search tool, deferred tools would be refused by the
	// provider: the export is refused instead.
	_, err = a.ExportDeferred(nil, profiles.Deferral{Pinned: []string{"shop/list_items"}})
	fmt.Println(errors.Is(err, codes.ConstraintViolation))
	// Output:
	// shop-list_items false
	// shop-order true
	// tool_search_tool_bm25 false
	// true
}
