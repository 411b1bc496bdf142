package otelactions

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// w3c reads W3C Trace Context (traceparent, tracestate): from a request's
// _meta, as MCP 2026-07-28 reserves those keys and the MCP conventions
// advise, and from HTTP headers.
var w3c = propagation.TraceContext{}

// Middleware is receiving middleware for an *mcp.Server
// (s.AddReceivingMiddleware(o.Middleware)). Add it after
// mcpserver.AddTools: the SDK runs the middleware added last first, and
// AddTools answers some calls (a tool the caller may not see) in
// middleware of its own, which would otherwise leave them without a span.
// It makes the span of every
// request and notification the server receives, named
// "{mcp.method.name} {target}" (target: the tool's or the prompt's name;
// none for other methods), kind SERVER, with mcp.method.name,
// mcp.session.id (when the session has one), mcp.protocol.version,
// gen_ai.tool.name and gen_ai.operation.name execute_tool for tools/call,
// gen_ai.prompt.name for prompts/get; on failure error.type (the JSON-RPC
// error code, "tool_error" for a tool result with isError set, as the
// conventions say) and status Error. Its duration goes into
// mcp.server.operation.duration (s).
//
// The span's parent is the trace context in the request's
// params._meta (traceparent, tracestate); without one, that of the HTTP
// request's W3C headers; without either, the context's own span. When
// _meta gives the parent, the context's own span (an HTTP server span)
// is linked. The tool call's execute_tool span is the child of this one.
//
// It does not record jsonrpc.request.id: go-sdk v1.8.0 keeps the request
// id under an unexported context key, out of a middleware's reach.
func (o *Observer) Middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		name, attrs := mcpDescribe(method, req)
		opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...)}
		if parent, ok := metaParent(ctx, req); ok {
			if ambient := trace.SpanContextFromContext(ctx); ambient.IsValid() {
				opts = append(opts, trace.WithLinks(trace.Link{SpanContext: ambient}))
			}
			ctx = parent
		} else if parent, ok := headerParent(ctx, req); ok {
			ctx = parent
		}
		start := time.Now()
		ctx, span := o.tracer.Start(ctx, name, opts...)
		res, err := next(ctx, method, req)
		code, status := mcpErrorType(res, err)
		if code != "" {
			span.SetAttributes(AttrErrorType.String(code))
			if status != "" {
				span.SetAttributes(AttrRPCResponseCode.String(status))
			}
			msg := ""
			var je *jsonrpc.Error
			if errors.As(err, &je) {
				msg = cut(je.Message, MaxAttributeLength)
			}
			span.SetStatus(codes.Error, msg)
		}
		span.End()
		mattrs := o.metricAttrs(method, attrs, err == nil)
		if code != "" {
			mattrs = append(mattrs, AttrErrorType.String(code))
		}
		o.mcpDur.Record(context.Background(), time.Since(start).Seconds(), metric.WithAttributes(mattrs...))
		return res, err
	}
}

// mcpDescribe returns the span name and attributes of a request, each
// name taken from the request cut to MaxAttributeLength.
func mcpDescribe(method string, req mcp.Request) (string, []attribute.KeyValue) {
	method = cut(method, MaxAttributeLength)
	attrs := []attribute.KeyValue{AttrMCPMethod.String(method)}
	name := method
	var params mcp.Params
	if req != nil {
		params = req.GetParams()
	}
	tool := ""
	switch p := params.(type) {
	case *mcp.CallToolParamsRaw:
		if p != nil {
			tool = p.Name
		}
	case *mcp.CallToolParams:
		if p != nil {
			tool = p.Name
		}
	case *mcp.GetPromptParams:
		if p != nil && p.Name != "" {
			prompt := cut(p.Name, MaxAttributeLength)
			name += " " + prompt
			attrs = append(attrs, AttrPromptName.String(prompt))
		}
	}
	if tool != "" {
		tool = cut(tool, MaxAttributeLength)
		name += " " + tool
		attrs = append(attrs, AttrToolName.String(tool), AttrOperationName.String("execute_tool"))
	}
	if req != nil {
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
			if id := ss.ID(); id != "" {
				attrs = append(attrs, AttrMCPSession.String(cut(id, MaxAttributeLength)))
			}
		}
	}
	if v := protocolVersion(method, req); v != "" {
		attrs = append(attrs, AttrMCPProtocol.String(cut(v, MaxAttributeLength)))
	}
	return name, attrs
}

// protocolVersion is the MCP version a request is made under: per
// request (2026-07-28 _meta) or per session (initialize).
func protocolVersion(method string, req mcp.Request) string {
	if req == nil {
		return ""
	}
	if pv, ok := req.(interface{ ProtocolVersion() string }); ok {
		if v := pv.ProtocolVersion(); v != "" {
			return v
		}
	}
	if p, ok := req.GetParams().(*mcp.InitializeParams); ok && p != nil {
		return p.ProtocolVersion
	}
	return ""
}

// knownVersions are the MCP protocol versions a metric names; any other
// is OtherValue.
var knownVersions = map[string]bool{
	"2024-11-05": true, "2025-03-26": true, "2025-06-18": true, "2025-11-25": true, "2026-07-28": true,
}

// metricAttrs keeps of a request's span attributes those the metric
// takes, each with a value from a bounded set: no session id (too many
// values for a metric dimension); a tool, prompt or method name only once
// the server has answered it without a protocol error (an unknown tool or
// method is answered with one), otherwise OtherValue; a known protocol
// version, otherwise OtherValue. answered says this request was answered
// so.
func (o *Observer) metricAttrs(method string, attrs []attribute.KeyValue, answered bool) []attribute.KeyValue {
	out := make([]attribute.KeyValue, 0, len(attrs)+1)
	for _, a := range attrs {
		switch a.Key {
		case AttrMCPSession:
			continue
		case AttrMCPMethod:
			a = a.Key.String(o.learn("method:", a.Value.AsString(), answered))
		case AttrToolName:
			a = a.Key.String(o.learn("tool:", a.Value.AsString(), answered))
		case AttrPromptName:
			a = a.Key.String(o.learn("prompt:", a.Value.AsString(), answered))
		case AttrMCPProtocol:
			if !knownVersions[a.Value.AsString()] {
				a = a.Key.String(OtherValue)
			}
		}
		out = append(out, a)
	}
	return out
}

// learn returns name as a metric value when the server answered it, now
// (answered) or before, and OtherValue otherwise; it keeps at most
// maxLearned names.
func (o *Observer) learn(kind, name string, answered bool) string {
	key := kind + name
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.learned[key] {
		return name
	}
	if !answered || len(o.learned) >= maxLearned {
		return OtherValue
	}
	if o.learned == nil {
		o.learned = map[string]bool{}
	}
	o.learned[key] = true
	return name
}

// metaParent returns ctx with the remote span context of the request's
// params._meta traceparent and tracestate, if valid.
func metaParent(ctx context.Context, req mcp.Request) (context.Context, bool) {
	if req == nil {
		return ctx, false
	}
	p := req.GetParams()
	if p == nil {
		return ctx, false
	}
	meta := p.GetMeta()
	tp, _ := meta["traceparent"].(string)
	if tp == "" {
		return ctx, false
	}
	carrier := propagation.MapCarrier{"traceparent": tp}
	if ts, _ := meta["tracestate"].(string); ts != "" {
		carrier["tracestate"] = ts
	}
	out := w3c.Extract(ctx, carrier)
	sc := trace.SpanContextFromContext(out)
	return out, sc.IsValid() && sc.IsRemote()
}

// headerParent returns ctx with the remote span context of the HTTP
// request's traceparent and tracestate headers, if valid.
func headerParent(ctx context.Context, req mcp.Request) (context.Context, bool) {
	if req == nil || req.GetExtra() == nil || req.GetExtra().Header == nil {
		return ctx, false
	}
	out := w3c.Extract(ctx, propagation.HeaderCarrier(req.GetExtra().Header))
	sc := trace.SpanContextFromContext(out)
	return out, sc.IsValid() && sc.IsRemote()
}

// mcpErrorType is error.type and rpc.response.status_code of an answer:
// the JSON-RPC error code, "tool_error" for a tool result with isError,
// "_OTHER" for an error with no code; "" for success.
func mcpErrorType(res mcp.Result, err error) (errorType, status string) {
	if err != nil {
		var je *jsonrpc.Error
		if errors.As(err, &je) {
			c := strconv.FormatInt(je.Code, 10)
			return c, c
		}
		return "_OTHER", ""
	}
	if r, ok := res.(*mcp.CallToolResult); ok && r != nil && r.IsError {
		return "tool_error", ""
	}
	return "", ""
}
