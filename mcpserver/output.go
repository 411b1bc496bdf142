package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/actionreg/actions"
)

// protocolVersionAnyOutput is the first MCP version whose Tool.outputSchema
// may have any root and whose structuredContent may be any JSON value;
// 2025-11-25 and earlier require an object for both.
const protocolVersionAnyOutput = "2026-07-28"

// output is what a tool's output schema means for serving it.
type output struct {
	schema     json.RawMessage // canonical JSON of the output schema; nil for none
	listed     json.RawMessage // the schema tools/list shows: the result's or a refusal's
	objectRoot bool            // the schema's root is "type": "object"
}

// outputOf reads a tool's output schema, and makes the one listed: an
// anyOf of the result's schema, a refusal's object and a bounded
// result's envelope (boundedSchema), so that a client validating
// structuredContent accepts a refusal (or a held call's receipt) and a
// result cut to its bound as well as a result. The result schema's $defs move to the
// root, where its "#/$defs/..." references still find them, and an
// object root keeps "type": "object" at the root, as 2025-11-25 requires.
func outputOf(t actions.Tool) (output, error) {
	if t.OutputSchema == nil {
		return output{}, nil
	}
	text, err := actions.CanonicalJSON(t.OutputSchema)
	if err != nil {
		return output{}, fmt.Errorf("mcpserver: tool %s: output schema: %w", t.Name, err)
	}
	inner := map[string]any{}
	listed := map[string]any{}
	for k, v := range t.OutputSchema {
		switch k {
		case "$defs", "$schema", "$id":
			listed[k] = v
		default:
			inner[k] = v
		}
	}
	objectRoot := t.OutputSchema["type"] == "object"
	if objectRoot {
		listed["type"] = "object"
	}
	listed["anyOf"] = []any{inner, refusalSchema, boundedSchema}
	lt, err := actions.CanonicalJSON(listed)
	if err != nil {
		return output{}, fmt.Errorf("mcpserver: tool %s: output schema: %w", t.Name, err)
	}
	return output{schema: text, listed: lt, objectRoot: objectRoot}, nil
}

// refusalSchema is the branch of a listed output schema that a
// refusal's structured content (refusalJSON) takes, a held call's receipt
// included: an object with a "code" member. It says no more, so that it
// costs each listed tool few bytes (the members are documented once).
var refusalSchema = map[string]any{"type": "object", "required": []any{"code"}}

// anyOutput reports whether a request's protocol version allows an output
// schema of any root and a structuredContent of any JSON type.
func anyOutput(version string) bool {
	return version >= protocolVersionAnyOutput
}

// protocolVersion is the version a request follows: its own (2026-07-28
// and later carry it in _meta) or its session's.
func protocolVersion(req interface{ ProtocolVersion() string }) (v string) {
	defer func() {
		if recover() != nil {
			v = ""
		}
	}()
	return req.ProtocolVersion()
}

// result renders a done call of a tool with an output schema: the
// canonical JSON text as the one content item and, where the version
// allows the result's JSON type, the same value as structuredContent. The
// registry checked the result against the schema before it got here.
func (o output) result(text string, version string) *mcp.CallToolResult {
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
	if text[0] == '{' || anyOutput(version) {
		res.StructuredContent = json.RawMessage(text)
	}
	return res
}

// listOutputSchemas adds, to the tools/list answers of requests at
// 2026-07-28 or later, the output schemas whose root is not an object
// (by tool name): 2025-11-25 allows only an object root, so those tools
// are registered without one. The listed tools are copied, never changed:
// the server shares them between sessions.
func listOutputSchemas(schemas map[string]json.RawMessage) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if method != "tools/list" || err != nil {
				return res, err
			}
			lr, ok := res.(*mcp.ListToolsResult)
			vr, hasVersion := req.(interface{ ProtocolVersion() string })
			if !ok || !hasVersion || !anyOutput(protocolVersion(vr)) {
				return res, err
			}
			copied := *lr
			copied.Tools = make([]*mcp.Tool, len(lr.Tools))
			for i, t := range lr.Tools {
				copied.Tools[i] = t
				if s, ok := schemas[t.Name]; ok && t.OutputSchema == nil {
					tc := *t
					tc.OutputSchema = s
					copied.Tools[i] = &tc
				}
			}
			return &copied, nil
		}
	}
}
