package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/identity"
	"github.com/actionreg/actions/mcpserver"
	"github.com/actionreg/actions/store"
)

type quoteParams struct {
	Item string `json:"item" jsonschema:"the item to price"`
	Qty  int    `json:"qty"`
}

type quote struct {
	Item  string  `json:"item"`
	Qty   int     `json:"qty"`
	Total float64 `json:"total"`
}

type sizeParams struct {
	Family string `json:"family,omitempty"`
}

// typedServer serves three typed tools: shop-quote (an object result),
// shop-sizes (an array result) and shop-broken (a body that breaks its
// own output contract by returning a nil pointer).
type typedServer struct {
	mu   sync.Mutex
	errs []error
	runs []store.RunEntry
}

func (ts *typedServer) connect(t *testing.T, version string) *mcp.ClientSession {
	t.Helper()
	reg := actions.NewRegistry(&actions.Options{OnRecord: func(rec store.Record) {
		ts.mu.Lock()
		ts.runs = append(ts.runs, rec.Entry)
		ts.mu.Unlock()
	}})
	require.NoError(t, reg.Register(actions.Typed(
		actions.Definition{ID: "shop/quote", Description: "Prices an item.", Effect: actions.EffectRead},
		func(_ context.Context, p quoteParams, _ *actions.Trace) (*quote, error) {
			return &quote{Item: p.Item, Qty: p.Qty, Total: 2.5 * float64(p.Qty)}, nil
		})))
	require.NoError(t, reg.Register(actions.Typed(
		actions.Definition{ID: "shop/sizes", Effect: actions.EffectRead},
		func(context.Context, sizeParams, *actions.Trace) ([]string, error) {
			return []string{"S", "M", "L"}, nil
		})))
	require.NoError(t, reg.Register(actions.Typed(
		actions.Definition{ID: "shop/broken"},
		func(context.Context, quoteParams, *actions.Trace) (*quote, error) {
			return nil, nil // null breaks the object schema inferred from quote
		})))
	server := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "v0.0.1"}, nil)
	require.NoError(t, mcpserver.AddTools(server, reg, &mcpserver.Options{
		OnError: func(_ context.Context, _ string, err error) {
			ts.mu.Lock()
			ts.errs = append(ts.errs, err)
			ts.mu.Unlock()
		},
	}))
	ctx := context.Background()
	serverT, clientT := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, serverT, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })
	client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "v0.0.1"}, nil)
	var opts *mcp.ClientSessionOptions
	if version != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := client.Connect(ctx, clientT, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// compileListed compiles a listed output schema with jsonschema v6.
func compileListed(t *testing.T, schema any) *jsonschema.Schema {
	t.Helper()
	text, err := json.Marshal(schema)
	require.NoError(t, err)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(text))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource("https://test.invalid/output.json", doc))
	sch, err := c.Compile("https://test.invalid/output.json")
	require.NoError(t, err)
	return sch
}

// validateStructured checks a result's structuredContent against a
// listed output schema, as a client would.
func validateStructured(t *testing.T, sch *jsonschema.Schema, res *mcp.CallToolResult) {
	t.Helper()
	text, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(text))
	require.NoError(t, err)
	assert.NoError(t, sch.Validate(v), "structuredContent against the listed outputSchema")
}

func TestTypedTools(t *testing.T) {
	for _, v := range versions {
		t.Run(v.name, func(t *testing.T) {
			ts := &typedServer{}
			cs := ts.connect(t, v.ask)
			ctx := context.Background()
			newer := v.want >= "2026-07-28"

			list, err := cs.ListTools(ctx, nil)
			require.NoError(t, err)
			listed := map[string]*mcp.Tool{}
			for _, tool := range list.Tools {
				listed[tool.Name] = tool
			}
			require.Contains(t, listed, "shop-quote")
			require.NotNil(t, listed["shop-quote"].OutputSchema, "an object output schema is listed to every version")
			if newer {
				require.NotNil(t, listed["shop-sizes"].OutputSchema, "2026-07-28 lists an array output schema")
			} else {
				assert.Nil(t, listed["shop-sizes"].OutputSchema, "2025-11-25 allows only an object root")
			}

			// A done call: structuredContent and its canonical text.
			quoteSchema := compileListed(t, listed["shop-quote"].OutputSchema)
			res, err := call(t, &fixture{session: cs}, "shop-quote", map[string]any{"item": "bolt", "qty": 4})
			require.NoError(t, err)
			assert.False(t, res.IsError)
			assert.Equal(t, `{"item":"bolt","qty":4,"total":10}`, textOf(t, res))
			require.NotNil(t, res.StructuredContent)
			validateStructured(t, quoteSchema, res)

			// A refused call of the same tool: isError, the refusal in
			// the text and as structuredContent, which the listed output
			// schema admits beside the result (it used
			// to leave structuredContent out, as the result's schema
			// alone would refuse it).
			res, err = call(t, &fixture{session: cs}, "shop-quote", map[string]any{"item": "bolt", "qty": "four"})
			require.NoError(t, err)
			assert.True(t, res.IsError)
			assert.Contains(t, textOf(t, res), "refused: invalid_parameters")
			assert.Contains(t, textOf(t, res), "/qty [type]")
			require.NotNil(t, res.StructuredContent, "a refusal carries structuredContent on a tool with an output schema too")
			var refused struct {
				Code   codes.Code      `json:"code"`
				Issues []actions.Issue `json:"issues"`
			}
			require.NoError(t, json.Unmarshal(mustJSON(t, res.StructuredContent), &refused))
			assert.Equal(t, codes.InvalidParameters, refused.Code)
			require.Len(t, refused.Issues, 1)
			assert.Equal(t, "/qty", refused.Issues[0].Path)
			validateStructured(t, quoteSchema, res)

			// An array result: structuredContent where the version allows.
			res, err = call(t, &fixture{session: cs}, "shop-sizes", nil)
			require.NoError(t, err)
			assert.Equal(t, `["S","M","L"]`, textOf(t, res))
			if newer {
				require.NotNil(t, res.StructuredContent)
				validateStructured(t, compileListed(t, listed["shop-sizes"].OutputSchema), res)
			} else {
				assert.Nil(t, res.StructuredContent, "2025-11-25: structuredContent is an object")
			}

			// A body that breaks its own contract: output_invalid is a
			// protocol error with a generic message; the issues go to
			// OnError, and the entry records the refusal.
			_, err = call(t, &fixture{session: cs}, "shop-broken", map[string]any{"item": "bolt", "qty": 1})
			var je *jsonrpc.Error
			require.ErrorAs(t, err, &je)
			assert.Equal(t, int64(jsonrpc.CodeInternalError), je.Code)
			assert.NotContains(t, je.Message, "output")
			assert.JSONEq(t, `{"code":"output_invalid","retry":"never","nextAction":"Do not retry: the action's result broke its own contract; tell the user the action failed."}`, string(je.Data))
			ts.mu.Lock()
			defer ts.mu.Unlock()
			require.NotEmpty(t, ts.errs)
			last := ts.errs[len(ts.errs)-1]
			assert.ErrorIs(t, last, codes.OutputInvalid)
			var r *actions.Refusal
			require.True(t, errors.As(last, &r), "OnError sees the issues")
			require.Len(t, r.Issues, 1)
			assert.Equal(t, "type", r.Issues[0].Keyword)
			entry := ts.runs[len(ts.runs)-1]
			assert.Equal(t, "shop/broken", entry.Action)
			assert.Equal(t, store.OutcomeRefused, entry.Outcome)
			assert.Equal(t, "output_invalid", string(entry.Error))
		})
	}
}

type discardParams struct {
	Item string `json:"item"`
}

type discarded struct {
	Item string `json:"item"`
}

// TestTypedToolHeldForConfirmation: a typed tool whose action needs a
// person's confirmation: the receipt goes in the text and as
// structuredContent (pending.id, pending.expires), which the listed
// output schema admits (it used to go in the text
// only), and the confirmed call's result is rendered as any result of the
// tool.
func TestTypedToolHeldForConfirmation(t *testing.T) {
	for _, accept := range []bool{false, true} {
		t.Run(map[bool]string{false: "no elicitation", true: "accepted"}[accept], func(t *testing.T) {
			reg := actions.NewRegistry(&actions.Options{Gate: &actions.GateOptions{DecideFrom: []identity.Surface{identity.SurfaceUI, identity.SurfaceMCP}}})
			reg.MustRegister(actions.Typed(actions.Definition{ID: "shop/discard", Effect: actions.EffectDelete, Capability: "stock.write", NeedsConfirmation: true},
				func(_ context.Context, p discardParams, _ *actions.Trace) (discarded, error) {
					return discarded{Item: p.Item}, nil
				}))
			server := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "v0"}, nil)
			require.NoError(t, mcpserver.AddTools(server, reg, &mcpserver.Options{
				Caller: func(context.Context, *auth.TokenInfo, http.Header) *identity.Caller {
					return &identity.Caller{Principal: "editor", Capabilities: []string{"stock.write"}}
				},
			}))
			ctx := context.Background()
			serverT, clientT := mcp.NewInMemoryTransports()
			ss, err := server.Connect(ctx, serverT, nil)
			require.NoError(t, err)
			defer ss.Close()
			var copts *mcp.ClientOptions
			if accept {
				copts = &mcp.ClientOptions{
					Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
					ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
						return &mcp.ElicitResult{Action: "accept"}, nil
					},
				}
			}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v0"}, copts).Connect(ctx, clientT, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			require.NoError(t, err)
			defer cs.Close()
			list, err := cs.ListTools(ctx, nil)
			require.NoError(t, err)
			require.Len(t, list.Tools, 1)
			listed := compileListed(t, list.Tools[0].OutputSchema)
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "shop-discard", Arguments: map[string]any{"item": "milk"}})
			require.NoError(t, err)
			validateStructured(t, listed, res)
			if !accept {
				assert.True(t, res.IsError)
				assert.Contains(t, textOf(t, res), "pending change: ")
				var receipt struct {
					Code    codes.Code       `json:"code"`
					Pending *actions.Receipt `json:"pending"`
				}
				require.NoError(t, json.Unmarshal(mustJSON(t, res.StructuredContent), &receipt))
				assert.Equal(t, codes.ConfirmationRequired, receipt.Code)
				require.NotNil(t, receipt.Pending, "the receipt is structured data")
				assert.NotEmpty(t, receipt.Pending.ID)
				assert.Contains(t, textOf(t, res), "pending change: "+receipt.Pending.ID)
				assert.False(t, receipt.Pending.Expires.IsZero())
				return
			}
			assert.False(t, res.IsError, textOf(t, res))
			assert.Equal(t, `{"item":"milk"}`, textOf(t, res))
			assert.JSONEq(t, `{"item":"milk"}`, jsonText(t, res.StructuredContent))
		})
	}
}

// TestTypedOutputSchemaAdmitsRefusalsAndReceipts: on a typed tool (an
// output schema inferred from its result type), a result, a refusal of
// the parameters, a body's own refusal and a held call's receipt all
// carry structuredContent, and the outputSchema tools/list shows (an
// anyOf of the result's schema and a refusal's object), compiled with
// jsonschema v6 as a client would, validates each of them while still
// refusing an object that is neither.
func TestTypedOutputSchemaAdmitsRefusalsAndReceipts(t *testing.T) {
	bothVersions(t, func(t *testing.T, version string) {
		reg := actions.NewRegistry(&actions.Options{Gate: &actions.GateOptions{}})
		quoteBody := func(_ context.Context, p quoteParams, _ *actions.Trace) (heldQuote, error) {
			if p.Qty > 100 {
				return heldQuote{}, actions.NewRefusal("too_many", "at most 100 items")
			}
			return heldQuote{Item: p.Item, Total: 2.5 * float64(p.Qty)}, nil
		}
		reg.MustRegister(
			actions.Typed(actions.Definition{ID: "shop/quote", Effect: actions.EffectRead,
				Refusals: []actions.DeclaredRefusal{{Code: "too_many", Retry: codes.RetryAfterEdit}}}, quoteBody),
			actions.Typed(actions.Definition{ID: "shop/order", Effect: actions.EffectWrite, NeedsConfirmation: true}, quoteBody),
			actions.Typed(actions.Definition{ID: "shop/sizes", Effect: actions.EffectRead},
				func(context.Context, sizeParams, *actions.Trace) ([]string, error) { return []string{"S", "M"}, nil }),
		)
		server := mcp.NewServer(&mcp.Implementation{Name: "shop", Version: "v0"}, nil)
		require.NoError(t, mcpserver.AddTools(server, reg, &mcpserver.Options{
			Caller: func(context.Context, *auth.TokenInfo, http.Header) *identity.Caller {
				return &identity.Caller{Principal: "editor"}
			},
		}))
		ctx := context.Background()
		serverT, clientT := mcp.NewInMemoryTransports()
		ss, err := server.Connect(ctx, serverT, nil)
		require.NoError(t, err)
		defer ss.Close()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v0"}, nil).Connect(ctx, clientT, &mcp.ClientSessionOptions{ProtocolVersion: version})
		require.NoError(t, err)
		defer cs.Close()

		list, err := cs.ListTools(ctx, nil)
		require.NoError(t, err)
		schemas := map[string]any{}
		for _, tool := range list.Tools {
			if tool.OutputSchema != nil {
				schemas[tool.Name] = tool.OutputSchema
			}
		}
		names := []string{"shop-order", "shop-quote"}
		if version >= "2026-07-28" {
			names = append(names, "shop-sizes") // an array root: listed from 2026-07-28 only
		} else {
			assert.NotContains(t, schemas, "shop-sizes")
		}
		for _, name := range names {
			require.Contains(t, schemas, name)
			var listed struct {
				Type  string           `json:"type"`
				AnyOf []map[string]any `json:"anyOf"`
			}
			require.NoError(t, json.Unmarshal(mustJSON(t, schemas[name]), &listed))
			require.Len(t, listed.AnyOf, 3, "%s: the result's schema, a refusal's or a bounded result's", name)
			if name != "shop-sizes" {
				assert.Equal(t, "object", listed.Type, "%s: an object root stays an object root", name)
			}
			sch := compileListed(t, schemas[name])
			neither, err := jsonschemaValue(`{"nope":1}`)
			require.NoError(t, err)
			assert.Error(t, sch.Validate(neither), "%s: the listed schema still refuses what is neither", name)
		}
		quote, order := compileListed(t, schemas["shop-quote"]), compileListed(t, schemas["shop-order"])

		check := func(tool string, sch *jsonschema.Schema, args any, isError bool, code codes.Code) map[string]any {
			t.Helper()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
			require.NoError(t, err, tool)
			require.Equal(t, isError, res.IsError, "%s: %s", tool, textOf(t, res))
			var out map[string]any
			structured(t, res, &out)
			v, err := jsonschemaValue(string(mustJSON(t, res.StructuredContent)))
			require.NoError(t, err)
			assert.NoError(t, sch.Validate(v), "%s %v: structuredContent against the listed outputSchema", tool, args)
			if code != "" {
				assert.Equal(t, string(code), out["code"], tool)
			}
			return out
		}
		check("shop-quote", quote, map[string]any{"item": "bolt", "qty": 2}, false, "")
		out := check("shop-quote", quote, map[string]any{"item": "bolt", "qty": "two"}, true, codes.InvalidParameters)
		assert.NotEmpty(t, out["issues"])
		out = check("shop-quote", quote, map[string]any{"item": "bolt", "qty": 101}, true, "too_many")
		assert.Equal(t, "after-edit", out["retry"], "the body's refusal with its declared retry")
		out = check("shop-order", order, map[string]any{"item": "bolt", "qty": 2}, true, codes.ConfirmationRequired)
		pending, _ := out["pending"].(map[string]any)
		require.NotNil(t, pending, "the receipt")
		assert.NotEmpty(t, pending["id"])
		assert.NotEmpty(t, pending["expires"])
		if version >= "2026-07-28" {
			sizes := compileListed(t, schemas["shop-sizes"])
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "shop-sizes"})
			require.NoError(t, err)
			v, err := jsonschemaValue(string(mustJSON(t, res.StructuredContent)))
			require.NoError(t, err)
			assert.NoError(t, sizes.Validate(v), "an array result")
			check("shop-sizes", sizes, map[string]any{"family": 3}, true, codes.InvalidParameters)
		}
	})
}

// jsonschemaValue decodes JSON text as jsonschema v6 validates it.
func jsonschemaValue(text string) (any, error) {
	return jsonschema.UnmarshalJSON(strings.NewReader(text))
}

type heldQuote struct {
	Item  string  `json:"item"`
	Total float64 `json:"total"`
}
