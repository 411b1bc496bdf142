package mcpserver_test

import (
	"context"
	"fmt"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/mcpserver"
)

// The batch tool runs several calls as one tool call, through the same
// runner as every tool. Steps name tools as tools/list shows them
// (stock-reserve), or by action id. A refused step stops the batch, and
// the answer names it by its pointer and its tool name. The unit does not
// commit, so its records are marked rolled back; a registry whose
// Options.Store is a sqlstore.Store runs each batch in one transaction
// (see docs/database.md), which then undoes what the steps before it did.
// Here the registry has no store and the bodies change nothing.
func ExampleBatchTool() {
	reg := actions.NewRegistry(nil)
	reg.MustRegister(actions.New(actions.Definition{ID: "stock/reserve",
		Parameters: `{"type":"object","required":["item"],"properties":{"item":{"type":"string","minLength":1}}}`},
		func(_ context.Context, p map[string]any, _ *actions.Trace) (any, error) {
			return map[string]any{"reservation": "r-" + p["item"].(string)}, nil
		}))

	server := mcp.NewServer(&mcp.Implementation{Name: "stock", Version: "v1.0.0"}, nil)
	err := mcpserver.AddTools(server, reg, &mcpserver.Options{Batch: &mcpserver.BatchTool{}})
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

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_batch", Arguments: map[string]any{"commands": []any{
		map[string]any{"call": "stock-reserve", "with": map[string]any{"item": "bolt"}, "as": "r"},
		map[string]any{"call": "stock-reserve", "with": map[string]any{"item": "${r.reservation}"}},
	}}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_batch", Arguments: map[string]any{"commands": []any{
		map[string]any{"call": "stock-reserve", "with": map[string]any{"item": "bolt"}},
		map[string]any{"call": "stock/reserve", "with": map[string]any{"item": ""}},
	}}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.IsError)
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// {"result":{"reservation":"r-r-bolt"},"steps":[{"call":"stock/reserve","outcome":"done","result":{"reservation":"r-bolt"}},{"call":"stock/reserve","outcome":"done","result":{"reservation":"r-r-bolt"}}]}
	// true
	// step /commands/1 (stock-reserve) was refused; nothing of the batch was kept
	// refused: invalid_parameters: the parameters break the schema
	// - /commands/1/with/item [minLength] must be at least 1 character long
	// retry: after-edit
	// next action: Fix the parameters named in the issues and call again.
}
