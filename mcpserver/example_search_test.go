package mcpserver_test

import (
	"context"
	"fmt"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/mcpserver"
)

// With tool search, tools/list shows the pinned tools and the two search
// tools; the model finds the others and calls them by name.
func ExampleToolSearch() {
	reg := actions.NewRegistry(nil)
	body := func(_ context.Context, p map[string]any, _ *actions.Trace) (any, error) { return p, nil }
	reg.MustRegister(
		actions.New(actions.Definition{ID: "stock/count", Title: "Count stock", Effect: actions.EffectRead,
			Description: "Counts the items of a warehouse."}, body),
		actions.New(actions.Definition{ID: "stock/move", Title: "Move stock", Additive: true,
			Description: "Moves items between warehouses."}, body),
		actions.New(actions.Definition{ID: "billing/invoice", Title: "Send an invoice", Additive: true,
			Description: "Sends an invoice to a customer."}, body),
	)
	server := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "v1.0.0"}, nil)
	err := mcpserver.AddTools(server, reg, &mcpserver.Options{ToolSearch: &mcpserver.ToolSearch{Pinned: []string{"stock/count"}}})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	serverT, clientT := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, serverT, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v1.0.0"}, nil).Connect(ctx, clientT, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()

	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range list.Tools {
		fmt.Println("listed:", t.Name)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tool_search", Arguments: map[string]any{"query": "invoice"}})
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range res.StructuredContent.(map[string]any)["tools"].([]any) {
		fmt.Println("found:", t.(map[string]any)["name"])
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "billing-invoice"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// listed: stock-count
	// listed: tool_describe
	// listed: tool_search
	// found: billing-invoice
	// {}
}
