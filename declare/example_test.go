package declare_test

import (
	"context"
	"fmt"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/declare"
	"github.com/actionreg/actions/identity"
)

// The declarations of what one caller may call, for a model that writes
// a program against them.
func ExampleTypeScript() {
	reg := actions.NewRegistry(nil)
	reg.MustRegister(actions.New(actions.Definition{
		ID: "shop/order", Title: "Order an item", Additive: true,
		Parameters: `{"type": "object", "properties": {
			"item": {"type": "string", "ref": "product"},
			"qty": {"type": "integer", "default": 1, "description": "How many."},
			"speed": {"enum": ["slow", "fast"]}},
			"required": ["item"]}`,
		OutputSchema: `{"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]}`,
	}, func(context.Context, map[string]any, *actions.Trace) (any, error) {
		return map[string]any{"order": "o1"}, nil
	}))
	tools, err := reg.Tools(&actions.ToolOptions{Caller: &identity.Caller{Surface: identity.SurfaceAI}})
	if err != nil {
		fmt.Println(err)
		return
	}
	ts, err := declare.TypeScript(tools)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(ts)
	// Output:
	// /** The id or exact display name of a record of the named kind, as a ref parameter takes it. */
	// type Ref<Kind extends string> = string & { readonly __ref: Kind };
	//
	// declare namespace shop {
	//   /** The parameters of shop.order. */
	//   type OrderParams = {
	//     /** The id or the exact display name of a product. */
	//     item: Ref<"product">;
	//     /**
	//      * How many.
	//      * @default 1
	//      */
	//     qty?: number;
	//     speed?: "slow" | "fast";
	//   };
	//   /** What shop.order gives. */
	//   type OrderResult = {
	//     order: string;
	//   };
	// }
	//
	// declare const shop: {
	//   /**
	//    * Order an item.
	//    *
	//    * Tool: shop-order.
	//    */
	//   order(params: shop.OrderParams): Promise<shop.OrderResult>;
	// };
}

// The global a program finds a namespace's functions under.
func ExampleGlobal() {
	fmt.Println(declare.Global("supply"), declare.Global("new"), declare.Global("Promise"))
	// Output:
	// supply new_ Promise_
}
