package actions_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/identity"
)

func ExampleRegistry_Tools_languages() {
	defs := []actions.Definition{
		{
			ID:          "shop/set_label",
			Title:       "Set a label",
			Description: "Changes the label or the colour of an item.",
			Parameters: `{
				"type": "object",
				"properties": {
					"item": {"type": "string", "ref": "Item"},
					"label": {"anyOf": [
						{"type": "string"},
						{"type": "object", "additionalProperties": {"type": "string"}}
					]},
					"color": {"type": "string"}
				},
				"required": ["item"],
				"anyOf": [{"required": ["label"]}, {"required": ["color"]}]
			}`,
		},
		{ID: "shop/list_items", Title: "List items", Effect: actions.EffectRead, Idempotent: true},
		{ID: "shop/rebuild_index", Surfaces: []identity.Surface{}}, // offered nowhere: the host calls it
	}
	reg := actions.NewRegistry(nil)
	for _, d := range defs {
		reg.MustRegister(actions.New(d, func(context.Context, map[string]any, *actions.Trace) (any, error) { return nil, nil }))
	}
	tools, err := reg.Tools(&actions.ToolOptions{Languages: []string{"en", "fr"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(tools); err != nil {
		fmt.Println(err)
	}
	// Output:
	// [
	//   {
	//     "name": "shop-list_items",
	//     "title": "List items",
	//     "inputSchema": {
	//       "additionalProperties": false,
	//       "properties": {},
	//       "type": "object"
	//     },
	//     "annotations": {
	//       "readOnlyHint": true,
	//       "destructiveHint": false,
	//       "idempotentHint": true,
	//       "openWorldHint": false
	//     }
	//   },
	//   {
	//     "name": "shop-set_label",
	//     "title": "Set a label",
	//     "description": "Changes the label or the colour of an item. Give at least one of: label, color.",
	//     "inputSchema": {
	//       "properties": {
	//         "color": {
	//           "type": "string"
	//         },
	//         "item": {
	//           "description": "The id or the exact display name of an Item.",
	//           "ref": "Item",
	//           "type": "string"
	//         },
	//         "label": {
	//           "anyOf": [
	//             {
	//               "type": "string"
	//             },
	//             {
	//               "additionalProperties": {
	//                 "type": "string"
	//               },
	//               "type": "object"
	//             }
	//           ],
	//           "description": "Localized text in en, fr: a string, or an object from language to string; the source language is en."
	//         }
	//       },
	//       "required": [
	//         "item"
	//       ],
	//       "type": "object"
	//     },
	//     "annotations": {
	//       "readOnlyHint": false,
	//       "destructiveHint": true,
	//       "idempotentHint": false,
	//       "openWorldHint": false
	//     }
	//   }
	// ]
}

func ExampleToolName() {
	name := actions.ToolName("scflow/create_actor")
	fmt.Println(name)

	id, err := actions.ActionID(name)
	fmt.Println(id, err)

	_, err = actions.ActionID("scflow-create-actor")
	fmt.Println(err)
	// Output:
	// scflow-create_actor
	// scflow/create_actor <nil>
	// unknown_action: the tool name does not come from an action id: a tool name is namespace-name with both parts identifiers
}

// An MCP Apps view's helper tool: listed with _meta.ui.visibility ["app"]
// for the view, never offered on ai (a model API's tools).
func ExampleTool_AppOnly() {
	reg := actions.NewRegistry(nil)
	reg.MustRegister(actions.New(actions.Definition{ID: "cart/set_quantity", AppOnly: true},
		func(context.Context, map[string]any, *actions.Trace) (any, error) { return nil, nil }))
	tools, _ := reg.Tools(nil)
	fmt.Println(tools[0].Name, tools[0].AppOnly(), tools[0].Meta)
	forModel, _ := reg.Tools(&actions.ToolOptions{Caller: &identity.Caller{Principal: "m", Surface: identity.SurfaceAI}})
	fmt.Println(len(forModel))
	// Output:
	// cart-set_quantity true map[ui:map[visibility:[app]]]
	// 0
}
