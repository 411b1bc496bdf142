package mcpserver_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/mcpserver"
)

// A registry served as MCP tools, called by the SDK's own client over
// in-memory transports. A real server would call mcpserver.ServeStdio or
// mount mcpserver.HTTPHandler instead of connecting in process.
func ExampleAddTools() {
	reg := actions.NewRegistry(nil)
	err := reg.Register(actions.Action{
		Definition: actions.Definition{
			ID:          "stock/count",
			Title:       "Count stock",
			Description: "Counts the items of a warehouse.",
			Effect:      actions.EffectRead,
			Parameters: `{"type": "object",
				"properties": {"warehouse": {"type": "string"}, "min": {"type": "integer", "default": 0}},
				"required": ["warehouse"]}`,
		},
		Run: func(_ context.Context, p map[string]any, _ *actions.Trace) (any, error) {
			return map[string]any{"warehouse": p["warehouse"], "items": 42}, nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}

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
	for _, t := range list.Tools {
		fmt.Printf("%s (read only: %t, destructive: %t)\n", t.Name, t.Annotations.ReadOnlyHint, *t.Annotations.DestructiveHint)
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "stock-count", Arguments: map[string]any{"warehouse": "north"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "stock-count", Arguments: map[string]any{"min": -1}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.IsError)
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// stock-count (read only: true, destructive: false)
	// {"items":42,"warehouse":"north"}
	// true
	// refused: invalid_parameters: the parameters break the schema
	// - /warehouse [required] is required
	// retry: after-edit
	// next action: Fix the parameters named in the issues and call again.
}

// Serving over streamable HTTP: mount the handler, and any MCP client can
// reach the tools at its URL. Here the SDK's client calls it on loopback.
func ExampleHTTPHandler() {
	reg := actions.NewRegistry(nil)
	_ = reg.Register(actions.Action{
		Definition: actions.Definition{ID: "clock/ping", Effect: actions.EffectRead},
		Run:        func(context.Context, map[string]any, *actions.Trace) (any, error) { return "pong", nil },
	})
	server := mcp.NewServer(&mcp.Implementation{Name: "clock", Version: "v1.0.0"}, nil)
	if err := mcpserver.AddTools(server, reg, nil); err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcpserver.HTTPHandler(server, nil))
	httpServer := httptest.NewServer(mux)
	defer httpServer.Close()

	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v1.0.0"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: httpServer.URL + "/mcp"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "clock-ping"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// "pong"
}

// Serving over standard input and output, as an MCP client that starts
// the host as a subprocess expects (see examples/supplychain). Not run:
// it would read this process's standard input.
func ExampleServeStdio() {
	reg := actions.NewRegistry(nil)
	server := mcp.NewServer(&mcp.Implementation{Name: "host", Version: "v1.0.0"}, nil)
	if err := mcpserver.AddTools(server, reg, nil); err != nil {
		log.Fatal(err)
	}
	if err := mcpserver.ServeStdio(context.Background(), server, nil); err != nil {
		log.Print(err)
	}
}
