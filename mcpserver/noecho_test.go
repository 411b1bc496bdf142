package mcpserver_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAttackMarkersNeverEchoed: a marker in every header, tool name,
// method, member and value a client can send; no byte the client receives
// (status line, headers, body) holds it.
func TestAttackMarkersNeverEchoed(t *testing.T) {
	g := newGateShop(t)
	url := g.serveRaw(t, false)
	editor := rawAs(t, url, "editor-token")
	type attempt struct {
		name   string
		method string
		body   string
		header []string
		fresh  bool // without the session
	}
	attempts := []attempt{
		{name: "tool name", body: callParams(`{"name":"` + marker + `","arguments":{}}`)},
		{name: "tool name with a slash", body: callParams(`{"name":"shop-` + marker + `","arguments":{}}`)},
		{name: "values and keys", body: callParams(`{"name":"shop-restock","arguments":{"item":"` + marker + `","count":"` + marker + `","` + marker + `":1}}`)},
		{name: "non-object arguments", body: callParams(`{"name":"shop-restock","arguments":"` + marker + `"}`)},
		{name: "name not a string", body: callParams(`{"name":["` + marker + `"],"arguments":{}}`)},
		{name: "meta not an object", body: callParams(`{"name":"shop-stock","arguments":{},"_meta":"` + marker + `"}`)},
		{name: "request state", body: callParams(`{"name":"shop-discard","arguments":{"item":"x"},"requestState":"` + marker + `"}`)},
		{name: "method", body: `{"jsonrpc":"2.0","id":9,"method":"` + marker + `","params":{}}`},
		{name: "prompt", body: `{"jsonrpc":"2.0","id":9,"method":"prompts/get","params":{"name":"` + marker + `"}}`},
		{name: "resource", body: `{"jsonrpc":"2.0","id":9,"method":"resources/read","params":{"uri":"file:///` + marker + `"}}`},
		{name: "malformed body", body: `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"` + marker + `"`},
		{name: "not JSON", body: marker},
		{name: "batch", body: `[` + callParams(`{"name":"`+marker+`"}`) + `]`},
		{name: "protocol version header", body: callParams(`{"name":"shop-stock"}`), header: []string{"MCP-Protocol-Version", marker}},
		{name: "session header", body: callParams(`{"name":"shop-stock"}`), header: []string{"Mcp-Session-Id", marker}},
		{name: "origin header", body: callParams(`{"name":"shop-stock"}`), header: []string{"Origin", "http://" + marker + ".example"}},
		{name: "bearer token", body: callParams(`{"name":"shop-stock"}`), header: []string{"Authorization", "Bearer " + marker}},
		{name: "host header", body: callParams(`{"name":"shop-stock"}`), header: []string{"Host", marker + ".example"}},
		{name: "last event id", method: http.MethodGet, header: []string{"Last-Event-ID", marker}},
		{name: "content type", body: callParams(`{"name":"shop-stock"}`), header: []string{"Content-Type", marker}},
		{name: "initialize", fresh: true, body: `{"jsonrpc":"2.0","id":9,"method":"initialize","params":{"protocolVersion":"` + marker + `","capabilities":{},"clientInfo":{"name":"` + marker + `","version":"` + marker + `"}}}`},
	}
	for _, a := range attempts {
		t.Run(a.name, func(t *testing.T) {
			method := a.method
			if method == "" {
				method = http.MethodPost
			}
			req, err := http.NewRequest(method, url, strings.NewReader(a.body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer editor-token")
			if !a.fresh {
				req.Header.Set("Mcp-Session-Id", editor.session)
				req.Header.Set("MCP-Protocol-Version", editor.version)
			}
			for i := 0; i+1 < len(a.header); i += 2 {
				if a.header[i] == "Host" {
					req.Host = a.header[i+1]
				}
				req.Header.Set(a.header[i], a.header[i+1])
			}
			ctx, cancel := context.WithTimeout(context.Background(), eventually)
			defer cancel()
			resp, err := http.DefaultClient.Do(req.WithContext(ctx))
			require.NoError(t, err)
			defer resp.Body.Close()
			var all strings.Builder
			fmt.Fprintf(&all, "%s\n", resp.Status)
			for k, vs := range resp.Header {
				fmt.Fprintf(&all, "%s: %s\n", k, strings.Join(vs, ", "))
			}
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20)) // a GET stream ends with ctx
			all.Write(body)
			assert.NotContains(t, all.String(), marker, "what the client received:\n%s", all.String())
		})
	}
}

// TestAttackStdioMarkersNeverEchoed: over stdio too, no answer quotes a
// marker sent in a tool name, a method, a prompt, a resource or params
// that do not decode.
func TestAttackStdioMarkersNeverEchoed(t *testing.T) {
	w := newWaiter(t)
	lines := []string{initializeBody, initializedLine,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + marker + `","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":["` + marker + `"]}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"wait-echo","arguments":{"n":"` + marker + `"},"_meta":"` + marker + `"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"` + marker + `","params":{}}`,
		`{"jsonrpc":"2.0","id":6,"method":"prompts/get","params":{"name":"` + marker + `"}}`,
		`{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"file:///` + marker + `"}}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"wait-echo","arguments":{"n":"` + marker + `"}}}`,
	}
	out, _ := serveInput(t, w.server(t), strings.Join(lines, "\n")+"\n", nil)
	require.Contains(t, out, `"id":8`)
	assert.NotContains(t, out, marker, "what the client received:\n%s", out)
}
