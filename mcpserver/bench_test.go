package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/mcpserver"
	"github.com/actionreg/actions/store"
)

// benchSchema is the typical action of the root package's benchmarks
// (bench_test.go): eight properties, two defaults, one ref, an array of
// objects with a pattern.
const benchSchema = `{
  "type": "object",
  "required": ["name", "owner", "lines"],
  "additionalProperties": false,
  "properties": {
    "name":     {"type": "string", "minLength": 1, "maxLength": 200},
    "owner":    {"type": "string", "ref": "actor"},
    "kind":     {"type": "string", "enum": ["plant", "depot", "store"], "default": "plant"},
    "priority": {"type": "integer", "minimum": 0, "maximum": 9, "default": 3},
    "email":    {"type": "string", "format": "email"},
    "active":   {"type": "boolean"},
    "tags":     {"type": "array", "items": {"type": "string"}, "maxItems": 10},
    "lines":    {"type": "array", "minItems": 1, "items": {
      "type": "object", "required": ["sku", "qty"], "additionalProperties": false,
      "properties": {"sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"}, "qty": {"type": "number", "exclusiveMinimum": 0}}
    }}
  }
}`

const benchParams = `{"name":"North plant","owner":"Usine Nord","email":"ops@example.org","active":true,
 "tags":["north","eu"],"lines":[{"sku":"ABC-0001","qty":12},{"sku":"XYZ-0420","qty":0.5},{"sku":"QQQ-9999","qty":3}]}`

type benchIn struct {
	Name     string   `json:"name"`
	Owner    string   `json:"owner" actions:"ref=actor"`
	Kind     string   `json:"kind,omitempty"`
	Priority int      `json:"priority,omitempty"`
	Email    string   `json:"email,omitempty"`
	Active   bool     `json:"active,omitempty"`
	Tags     []string `json:"tags,omitempty"`
	Lines    []struct {
		SKU string  `json:"sku"`
		Qty float64 `json:"qty"`
	} `json:"lines"`
}

type benchOut struct {
	ID    string `json:"id"`
	Owner string `json:"owner"`
	Lines int    `json:"lines"`
}

func benchResolve(_ context.Context, _, value string) (actions.RefMatches, error) {
	if value == "Usine Nord" {
		return actions.RefMatches{Names: []string{"actor:17"}}, nil
	}
	return actions.RefMatches{}, nil
}

// benchSession connects a client to s over in-memory transports.
func benchSession(b *testing.B, s *mcp.Server) *mcp.ClientSession {
	ctx := context.Background()
	serverT, clientT := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, serverT, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v0.0.1"}, nil).Connect(ctx, clientT, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cs.Close() })
	return cs
}

// BenchmarkToolCall is one MCP tools/call end to end, through the official
// Go SDK's client and server over in-memory transports, for the same tool
// (the typical action: same input schema, same parameters, the ref looked
// up in the same in-memory model, a typed result with its output schema):
//
//   - sdk: declared with the bare SDK's mcp.AddTool and a typed handler
//     (the SDK applies the defaults, validates the input with
//     google/jsonschema-go, decodes it, validates the result); the
//     handler looks the ref up itself, as it has no registry to do it.
//   - actions: a typed action served through mcpserver.AddTools, with the
//     gate on (a caller with its capability, surface mcp, a record hook)
//     and the output check of the inferred output schema, each call
//     recorded as an entry.
//
// scripts/benchratio compares them.
func BenchmarkToolCall(b *testing.B) {
	ctx := context.Background()
	var args map[string]any
	if err := json.Unmarshal([]byte(benchParams), &args); err != nil {
		b.Fatal(err)
	}
	b.Run("sdk", func(b *testing.B) {
		s := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "v0.0.1"}, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "supply-create_site", InputSchema: json.RawMessage(benchSchema)},
			func(ctx context.Context, _ *mcp.CallToolRequest, p benchIn) (*mcp.CallToolResult, benchOut, error) {
				m, err := benchResolve(ctx, "actor", p.Owner)
				if err != nil || len(m.Names) != 1 {
					return nil, benchOut{}, err
				}
				return nil, benchOut{ID: "site:1", Owner: m.Names[0], Lines: len(p.Lines)}, nil
			})
		benchCalls(ctx, b, benchSession(b, s), args)
	})
	b.Run("actions", func(b *testing.B) {
		reg := actions.NewRegistry(&actions.Options{Gate: &actions.GateOptions{}, Resolve: benchResolve,
			OnRecord: func(store.Record) {}})
		reg.MustRegister(actions.Typed(
			actions.Definition{ID: "supply/create_site", Parameters: benchSchema, Effect: actions.EffectWrite, Capability: "supply.write"},
			func(_ context.Context, p benchIn, _ *actions.Trace) (benchOut, error) {
				return benchOut{ID: "site:1", Owner: p.Owner, Lines: len(p.Lines)}, nil
			}))
		s := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "v0.0.1"}, nil)
		err := mcpserver.AddTools(s, reg, &mcpserver.Options{
			Caller: func(context.Context, *auth.TokenInfo, http.Header) *identity.Caller {
				return &identity.Caller{Principal: "ann", Capabilities: []string{"supply.write"}}
			},
		})
		if err != nil {
			b.Fatal(err)
		}
		benchCalls(ctx, b, benchSession(b, s), args)
	})
}

func benchCalls(ctx context.Context, b *testing.B, cs *mcp.ClientSession, args map[string]any) {
	params := &mcp.CallToolParams{Name: "supply-create_site", Arguments: args}
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		b.Fatal(err)
	}
	if res.IsError {
		text, _ := json.Marshal(res.Content)
		b.Fatalf("tool error: %s", text)
	}
	if got, _ := json.Marshal(res.StructuredContent); string(got) != `{"id":"site:1","lines":3,"owner":"actor:17"}` {
		b.Fatalf("structured content %s", got)
	}
	b.ReportAllocs()
	for b.Loop() {
		res, err := cs.CallTool(ctx, params)
		if err != nil || res.IsError {
			b.Fatal(err, res.IsError)
		}
	}
}
