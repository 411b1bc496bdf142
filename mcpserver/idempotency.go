package mcpserver

import (
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/actionreg/actions"
)

// idempotencyKeyHeader is the HTTP header of the IETF Idempotency-Key
// draft (draft-ietf-httpapi-idempotency-key-header).
const idempotencyKeyHeader = "Idempotency-Key"

// idempotencyKey returns the idempotency key of a tools/call, "" for
// none: the _meta member actions.IdempotencyKeyMeta when present, else
// the Idempotency-Key header of the HTTP request that carried it (a
// structured-field string, its quotes removed; a bare token is taken as
// it is). A _meta value that is not a string gives a key the registry
// refuses (invalid_parameters), never a call without key.
func idempotencyKey(req *mcp.CallToolRequest) string {
	if req == nil {
		return ""
	}
	if req.Params != nil && req.Params.Meta != nil {
		if v, ok := req.Params.Meta[actions.IdempotencyKeyMeta]; ok {
			s, isString := v.(string)
			if !isString {
				return "\x00" // not a key: refused, not ignored
			}
			return s
		}
	}
	_, header := extraOf(req)
	if header == nil {
		return ""
	}
	v := strings.TrimSpace(header.Get(idempotencyKeyHeader))
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	return v
}
