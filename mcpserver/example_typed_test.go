package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/mcpserver"
)

type countParams struct {
	Warehouse string `json:"warehouse" jsonschema:"the warehouse code"`
}

type countResult struct {
	Warehouse string `json:"warehouse"`
	Items     int    `json:"items"`
}

// A typed action served as a tool: tools/list carries the output schema
// inferred from the result type, in an anyOf with the object of a refusal
// (so that a client validating structuredContent accepts a refusal or a
// receipt too), and a call answers structuredContent with its canonical
// JSON text.
func ExampleAddTools_typed() {
	reg := actions.NewRegistry(nil)
	reg.MustRegister(actions.Typed(actions.Definition{ID: "stock/count", Effect: actions.EffectRead},
		func(_ context.Context, p countParams, _ *actions.Trace) (countResult, error) {
			return countResult{Warehouse: p.Warehouse, Items: 42}, nil
		}))
	server := mcp.NewServer(&mcp.Implementation{Name: "stock", Version: "v1.0.0"}, nil)
	if err := mcpserver.AddTools(server, reg, nil); err != nil {
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
	schema, _ := json.Marshal(list.Tools[0].OutputSchema)
	fmt.Println(string(schema))
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "stock-count", Arguments: map[string]any{"warehouse": "north"}})
	if err != nil {
		log.Fatal(err)
	}
	structured, _ := json.Marshal(res.StructuredContent)
	fmt.Println(res.Content[0].(*mcp.TextContent).Text, string(structured))
	// Output:
	// {"anyOf":[{"additionalProperties":false,"properties":{"items":{"type":"integer"},"warehouse":{"type":"string"}},"required":["warehouse","items"],"type":"object"},{"required":["code"],"type":"object"},{"required":["bounded"],"type":"object"}],"type":"object"}
	// {"items":42,"warehouse":"north"} {"items":42,"warehouse":"north"}
}
