package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The SDK's own refusals quote what the client sent: a tools/call whose
// params do not decode (the whole params, arguments included), an unknown
// method, prompt or resource, a protocol version header, a Host header, a
// body that is not JSON. A refusal never echoes submitted text, so every
// JSON-RPC error and HTTP error body that does not come from this package
// is rewritten on its way out into a text that quotes nothing: the same
// code, a message by code, no data (but the versions a server supports).

// ours reports whether a JSON-RPC error was written by this package: its
// data always holds a retry verdict.
func ours(data json.RawMessage) bool {
	var d struct {
		Retry *string `json:"retry"`
	}
	return len(data) > 0 && json.Unmarshal(data, &d) == nil && d.Retry != nil
}

// scrubError returns e, or when this package did not write it, an error of
// the same code that quotes nothing.
func scrubError(e *jsonrpc.Error) *jsonrpc.Error {
	if e == nil || ours(e.Data) {
		return e
	}
	out := &jsonrpc.Error{Code: e.Code, Message: scrubbedMessage(e.Code)}
	if e.Code == CodeMissingCapability {
		// What the client must declare: the server's words, not the
		// client's.
		var d struct {
			Required json.RawMessage `json:"requiredCapabilities"`
		}
		if json.Unmarshal(e.Data, &d) == nil && d.Required != nil {
			out.Data, _ = json.Marshal(map[string]json.RawMessage{"requiredCapabilities": d.Required})
		}
	}
	if e.Code == codeUnsupportedVersion {
		var d struct {
			Supported []string `json:"supported"`
		}
		if json.Unmarshal(e.Data, &d) == nil && d.Supported != nil {
			out.Data, _ = json.Marshal(d)
		}
	}
	return out
}

// codeUnsupportedVersion is the SDK's error for a protocol version it does
// not serve; its data lists those it does.
const codeUnsupportedVersion = -32022

func scrubbedMessage(code int64) string {
	switch code {
	case jsonrpc.CodeParseError:
		return "parse error: the message is not JSON"
	case jsonrpc.CodeInvalidRequest:
		return "invalid request: the message is not a valid request"
	case jsonrpc.CodeMethodNotFound:
		return "method not found: the server does not handle this method"
	case jsonrpc.CodeInvalidParams:
		return "invalid params: the params do not decode, or name nothing this server has"
	case jsonrpc.CodeInternalError:
		return "internal error"
	case codeUnsupportedVersion:
		return "unsupported protocol version: see the versions this server supports"
	case CodeMissingCapability:
		return "missing required client capability"
	case -32002:
		return "resource not found"
	case 0:
		return "the request was not handled"
	}
	return "the request was refused"
}

// scrubErrors is a receiving middleware rewriting the errors of every
// method handled through the server's middleware (prompts, resources...).
func scrubErrors(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err == nil {
			return res, nil
		}
		var je *jsonrpc.Error
		if errors.As(err, &je) {
			return res, scrubError(je)
		}
		if ctx.Err() != nil {
			return res, err // the SDK's own cancelled answer (code 0)
		}
		return res, scrubError(&jsonrpc.Error{Code: 0})
	}
}

// scrubMessage rewrites the error of a response message.
func scrubMessage(msg jsonrpc.Message) jsonrpc.Message {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || resp.Error == nil {
		return msg
	}
	var je *jsonrpc.Error
	if !errors.As(resp.Error, &je) {
		je = &jsonrpc.Error{Code: 0}
	}
	if scrubbed := scrubError(je); scrubbed != je {
		cp := *resp
		cp.Error = scrubbed
		return &cp
	}
	return msg
}

// scrubJSON rewrites the JSON-RPC errors in data (one message, or a
// batch); data that is neither is returned as it is.
func scrubJSON(data []byte) []byte {
	t := bytes.TrimSpace(data)
	if !bytes.Contains(t, []byte(`"error"`)) {
		return data
	}
	if len(t) > 0 && t[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(t, &batch) != nil {
			return data
		}
		for i, m := range batch {
			batch[i] = scrubJSON(m)
		}
		out, err := json.Marshal(batch)
		if err != nil {
			return data
		}
		return out
	}
	msg, err := jsonrpc.DecodeMessage(t)
	if err != nil {
		return data
	}
	scrubbed := scrubMessage(msg)
	if scrubbed == msg {
		return data
	}
	out, err := jsonrpc.EncodeMessage(scrubbed)
	if err != nil {
		return data
	}
	return out
}

// scrubEvent rewrites the JSON-RPC errors of one server-sent event (the
// SDK writes each event in one Write: "event: ...\nid: ...\ndata: {...}\n\n").
func scrubEvent(p []byte) []byte {
	i := bytes.Index(p, []byte("data: "))
	if i < 0 || (i > 0 && p[i-1] != '\n') {
		return p
	}
	rest := p[i+len("data: "):]
	j := bytes.IndexByte(rest, '\n')
	if j < 0 {
		return p
	}
	data := rest[:j]
	scrubbed := scrubJSON(data)
	if bytes.Equal(scrubbed, data) {
		return p
	}
	out := make([]byte, 0, len(p)-len(data)+len(scrubbed))
	out = append(out, p[:i+len("data: ")]...)
	out = append(out, scrubbed...)
	return append(out, rest[j:]...)
}

// httpErrorText is what an HTTP error answer of the SDK says instead of
// its own text, which may quote the request: the SDK's texts that quote
// nothing are kept.
func httpErrorText(status int, sdk string) string {
	sdk = strings.TrimSpace(sdk)
	for _, keep := range constantHTTPErrors {
		if sdk == keep || (strings.HasSuffix(keep, "*") && strings.HasPrefix(sdk, strings.TrimSuffix(keep, "*"))) {
			return sdk
		}
	}
	return http.StatusText(status) + ": the request was refused (its content is not quoted)"
}

// constantHTTPErrors are the SDK's HTTP error texts that quote nothing of
// the request ("*": any ending the SDK writes from its own state).
var constantHTTPErrors = []string{
	"Method Not Allowed",
	"Content-Type must be 'application/json'",
	"Accept must contain both 'application/json' and 'text/event-stream'",
	"Accept must contain 'text/event-stream' for GET requests",
	"no server available",
	"failed connection",
	"Bad Request: DELETE requires an Mcp-Session-Id header",
	"Bad Request: GET requires an Mcp-Session-Id header",
	"session not found",
	"session user mismatch",
	"session is closing",
	"Bad Request: Unsupported protocol version (supported versions: *",
	"request body exceeds *",
	"stream replay unsupported",
	"stream ID conflicts with ongoing stream",
	"failed to replay events",
	"can't send Last-Event-ID for POST request",
	"failed to read body",
	"POST requires a non-empty body",
	"transport not connected",
	"unsupported method",
	"Forbidden: cross-origin request",
	"Service Unavailable: *",
	"insufficient_scope: *",
}
