package mcpserver_test

import (
	"context"
	"fmt"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/mcpserver"
)

// The batch tool runs several calls as one tool call. Here BatchTool.Run
// is nil, so the batch runs without a transaction; a host on a database
// sets it to sqlstore.Runner.RunBatch (see docs/database.md), and a
// refused step then undoes the steps before it.
func ExampleBatchTool() {
	reg := actions.NewRegistry[*actions.Trace](nil)
	reg.MustRegister(actions.New(actions.Definition{ID: "stock/reserve",
		Parameters: `{"type":"object","required":["item"],"properties":{"item":{"type":"string","minLength":1}}}`},
		func(_ context.Context, p map[string]any, _ *actions.Trace) (any, error) {
			return map[string]any{"reservation": "r-" + p["item"].(string)}, nil
		}))

	server := mcp.NewServer(&mcp.Implementation{Name: "stock", Version: "v1.0.0"}, nil)
	err := mcpserver.AddTools(server, reg, mcpserver.Options[*actions.Trace]{Batch: &mcpserver.BatchTool[*actions.Trace]{}})
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
		map[string]any{"call": "stock/reserve", "with": map[string]any{"item": "bolt"}, "as": "r"},
		map[string]any{"call": "stock/reserve", "with": map[string]any{"item": "${r.reservation}"}},
	}}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_batch", Arguments: map[string]any{"commands": []any{
		map[string]any{"call": "stock/reserve", "with": map[string]any{"item": "bolt"}},
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
	// step /commands/1 was refused; the steps before it stay done
	// refused: invalid_parameters: the parameters break the schema
	// - /commands/1/with/item [minLength] must be at least 1 character long
	// retry: after-edit
	// next action: Fix the parameters named in the issues and call again.
}
