package mcpserver

import (
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// idempotencyKeyHeader is the HTTP header of the IETF Idempotency-Key
// draft (draft-ietf-httpapi-idempotency-key-header).
const idempotencyKeyHeader = "Idempotency-Key"

// IdempotencyKeyMeta is the _meta member of a tools/call request that
// carries the call's idempotency key (a string; the HTTP header
// Idempotency-Key is read too), and the _meta member of a listed tool
// whose action wants one (the value "required").
const IdempotencyKeyMeta = "io.actionreg/idempotency-key"

// malformedKey stands for a key the client sent that is no key at all (a
// _meta value that is not a string, an empty string, an empty header):
// a key the registry refuses (invalid_parameters). An empty
// actions.Call.IdempotencyKey means no key, so a key given empty must not
// be passed on as "".
const malformedKey = "\x00"

// idempotencyKey returns the idempotency key of a tools/call, "" for
// none: the _meta member IdempotencyKeyMeta when present, else
// the Idempotency-Key header of the HTTP request that carried it (a
// structured-field string, its quotes removed; a bare token is taken as
// it is). A key that is present but empty, or a _meta value that is not
// a string, gives a key the registry refuses (invalid_parameters), never
// a call without key: a client that meant to send a key must not have
// its call run twice.
func idempotencyKey(req *mcp.CallToolRequest) string {
	if req == nil {
		return ""
	}
	if req.Params != nil && req.Params.Meta != nil {
		if v, ok := req.Params.Meta[IdempotencyKeyMeta]; ok {
			s, isString := v.(string)
			if !isString || s == "" {
				return malformedKey // not a key: refused, not ignored
			}
			return s
		}
	}
	_, header := extraOf(req)
	if header == nil {
		return ""
	}
	values, present := header[idempotencyKeyHeader]
	if !present {
		return ""
	}
	v := ""
	if len(values) > 0 {
		v = strings.TrimSpace(values[0])
	}
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	if v == "" || len(values) > 1 {
		return malformedKey
	}
	return v
}
