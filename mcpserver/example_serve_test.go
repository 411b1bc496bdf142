package mcpserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/mcpserver"
)

// Serving one session on a stream: here a script of requests, as a client
// piping them in would send them, then the end of the input. Every request
// read is answered before Serve returns.
func ExampleServe() {
	reg := actions.NewRegistry(nil)
	_ = reg.Register(actions.Action{
		Definition: actions.Definition{ID: "clock/ping", Effect: actions.EffectRead},
		Run:        func(context.Context, map[string]any, *actions.Trace) (any, error) { return "pong", nil },
	})
	server := mcp.NewServer(&mcp.Implementation{Name: "clock", Version: "v1.0.0"}, nil)
	if err := mcpserver.AddTools(server, reg, nil); err != nil {
		log.Fatal(err)
	}
	input := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"script","version":"0"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"clock-ping"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"clock-ping"}}`,
	}, "\n")
	var out bytes.Buffer
	err := mcpserver.Serve(context.Background(), server, &mcp.IOTransport{
		Reader: io.NopCloser(strings.NewReader(input)),
		Writer: nopWriteCloser{&out},
	}, &mcpserver.ServeOptions{MaxCallsInFlight: 8, DrainTime: 5 * time.Second})
	fmt.Println("serve:", err)
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var m struct {
			ID     int `json:"id"`
			Result struct {
				Content []struct{ Text string } `json:"content"`
			} `json:"result"`
		}
		_ = json.Unmarshal(sc.Bytes(), &m)
		if m.ID > 1 {
			fmt.Println(m.ID, m.Result.Content[0].Text)
		}
	}
	// Unordered output:
	// serve: <nil>
	// 2 "pong"
	// 3 "pong"
}

// A handler with stricter bounds than the defaults, and its shutdown: new
// sessions are refused, the calls in flight may end until the context is
// done, the rest are cancelled, every session is closed.
func ExampleHandler_Shutdown() {
	server := mcp.NewServer(&mcp.Implementation{Name: "host", Version: "v1.0.0"}, nil)
	h := mcpserver.HTTPHandler(server, &mcpserver.HTTPOptions{
		TrustedOrigins:   []string{"https://app.example.com"},
		SessionTimeout:   5 * time.Minute,
		MaxSessions:      100,
		MaxCallsInFlight: 4,
	})
	httpServer := httptest.NewServer(h)
	defer httpServer.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fmt.Println("shutdown:", h.Shutdown(ctx), "open sessions:", h.Sessions())
	// Output:
	// shutdown: <nil> open sessions: 0
}
