// Package otelactions traces and measures a registry's calls with
// OpenTelemetry, by the GenAI and MCP semantic conventions
// (open-telemetry/semantic-conventions-genai, docs/gen-ai/gen-ai-spans.md,
// gen-ai-metrics.md and mcp.md), so that the root package imports no
// OpenTelemetry. [New] returns an [*Observer]: give it to the registry
// (actions.Options.Observer) for the execute_tool spans and the
// gen_ai.execute_tool.duration histogram, and its [Observer.Middleware]
// to an *mcp.Server (AddReceivingMiddleware) for the MCP server spans and
// the mcp.server.operation.duration histogram. docs/observability.md
// shows the spans of one batch.
//
// No parameter or result value is put on a span unless Options.Values
// says so: they may be personal data.
package otelactions

import (
	"context"
	"encoding/json"
	"sync"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/codes"
	"github.com/actionreg/actions/store"
)

// ScopeName is the instrumentation scope of the tracer and meter.
const ScopeName = "github.com/actionreg/actions/otelactions"

// The conventions' attribute names this package writes (GenAI and MCP
// semantic conventions, and error.type of the general registry).
const (
	AttrOperationName   = attribute.Key("gen_ai.operation.name")
	AttrToolName        = attribute.Key("gen_ai.tool.name")
	AttrToolCallID      = attribute.Key("gen_ai.tool.call.id")
	AttrToolType        = attribute.Key("gen_ai.tool.type")
	AttrToolArguments   = attribute.Key("gen_ai.tool.call.arguments")
	AttrToolResult      = attribute.Key("gen_ai.tool.call.result")
	AttrPromptName      = attribute.Key("gen_ai.prompt.name")
	AttrErrorType       = attribute.Key("error.type")
	AttrMCPMethod       = attribute.Key("mcp.method.name")
	AttrMCPSession      = attribute.Key("mcp.session.id")
	AttrMCPProtocol     = attribute.Key("mcp.protocol.version")
	AttrJSONRPCID       = attribute.Key("jsonrpc.request.id")
	AttrRPCResponseCode = attribute.Key("rpc.response.status_code")
)

// The registry's own attributes, in its namespace.
const (
	// AttrActionID is the id of the action run ("supply/create_actor"),
	// where gen_ai.tool.name is its tool name ("supply-create_actor").
	AttrActionID = attribute.Key("actions.action.id")
	// AttrBatchStep is the index of a batch's step (Batch.Steps).
	AttrBatchStep = attribute.Key("actions.batch.step")
	// AttrBatchSteps is the number of steps of a batch.
	AttrBatchSteps = attribute.Key("actions.batch.steps")
	// AttrPendingChange is the id of the pending change a call was held
	// as, or a decision decides.
	AttrPendingChange = attribute.Key("actions.pending_change.id")
	// AttrCommitted says whether a unit of work kept its changes.
	AttrCommitted = attribute.Key("actions.unit.committed")
	// AttrAsHost marks a nested call made as the host.
	AttrAsHost = attribute.Key("actions.as_host")
)

// Metric names and their unit (seconds), from the conventions.
const (
	MetricExecuteToolDuration = "gen_ai.execute_tool.duration"
	MetricMCPServerDuration   = "mcp.server.operation.duration"
	unitSeconds               = "s"
)

// The bounds on what this package takes from a client (a tool's name, a
// protocol version: text a client chooses) before it reaches a span or a
// metric.
const (
	// MaxAttributeLength bounds, in bytes, each span name and each
	// string attribute taken from a call or request (tool, prompt and
	// action names, ids, the protocol version): a longer one is cut at a
	// UTF-8 boundary and ends with "…".
	MaxAttributeLength = 256
	// MaxValueLength bounds, in bytes, gen_ai.tool.call.arguments and
	// gen_ai.tool.call.result (Options.Values): a longer text is cut the
	// same way, and is then no longer JSON.
	MaxValueLength = 4096
	// OtherValue stands, in a metric attribute, for a value no server
	// serves: the name of an unknown tool, an unknown method, a protocol
	// version this package does not know. A metric's series are thus
	// bounded by the registry and the server, not by what clients send.
	OtherValue = "_OTHER"
	// maxLearned bounds the MCP tool names and methods the middleware
	// keeps as metric values once the server has answered them; past it,
	// new ones are OtherValue.
	maxLearned = 1024
)

// cut returns s cut to at most n bytes, at a UTF-8 boundary, marked with
// "…" when cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	end := n - len(mark)
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + mark
}

// EventHeld is the span event of a call (or batch) held as a pending
// change; its attribute actions.pending_change.id names the change, which
// a later "confirm" or "reject" span decides.
const EventHeld = "actions.held"

// The conventions' advised bucket boundaries, in seconds.
var (
	toolBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	mcpBuckets  = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}
)

// Options configures an [Observer]. The zero value (or nil) means the
// global providers and no values on spans.
type Options struct {
	// TracerProvider makes the spans; nil: otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// MeterProvider makes the histograms; nil: otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// Values puts each call's parameters (gen_ai.tool.call.arguments)
	// and result (gen_ai.tool.call.result), as canonical JSON text, on
	// its execute_tool span: the conventions' opt-in attributes. Off by
	// default: they may be personal data.
	Values bool
	// ToolType is gen_ai.tool.type; empty means "function" (the
	// conventions' name for a predefined function the application runs
	// with the parameters a model chose).
	ToolType string
}

// Observer traces a registry's operations (it implements
// actions.Observer) and MCP requests ([Observer.Middleware]). It is safe
// for concurrent use.
type Observer struct {
	tracer   trace.Tracer
	toolDur  metric.Float64Histogram
	mcpDur   metric.Float64Histogram
	values   bool
	toolType string
	// learned holds the tool names and methods (keys "tool:" and
	// "method:" + name) the server answered, at most maxLearned.
	mu      sync.Mutex
	learned map[string]bool
}

// New returns an observer on the providers of opts (nil for the
// defaults). Its error is the meter's, making a histogram.
func New(opts *Options) (*Observer, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.TracerProvider == nil {
		o.TracerProvider = otel.GetTracerProvider()
	}
	if o.MeterProvider == nil {
		o.MeterProvider = otel.GetMeterProvider()
	}
	if o.ToolType == "" {
		o.ToolType = "function"
	}
	meter := o.MeterProvider.Meter(ScopeName)
	toolDur, err := meter.Float64Histogram(MetricExecuteToolDuration, metric.WithUnit(unitSeconds),
		metric.WithDescription("The duration of a single tool execution."), metric.WithExplicitBucketBoundaries(toolBuckets...))
	if err != nil {
		return nil, err
	}
	mcpDur, err := meter.Float64Histogram(MetricMCPServerDuration, metric.WithUnit(unitSeconds),
		metric.WithDescription("MCP request or notification duration as observed on the receiver from the time it was received until the result or ack is sent."),
		metric.WithExplicitBucketBoundaries(mcpBuckets...))
	if err != nil {
		return nil, err
	}
	return &Observer{tracer: o.TracerProvider.Tracer(ScopeName), toolDur: toolDur, mcpDur: mcpDur, values: o.Values, toolType: o.ToolType}, nil
}

// Start starts the span of op (actions.Observer):
//   - OpCall, OpNested: "execute_tool {gen_ai.tool.name}", kind INTERNAL,
//     with gen_ai.operation.name execute_tool, gen_ai.tool.name (the
//     action's tool name), gen_ai.tool.type, gen_ai.tool.call.id when the
//     call has one, actions.action.id, actions.batch.step for a step;
//     error.type (the host's refusal code) and status Error on failure;
//     the event actions.held for a held call; recorded in
//     gen_ai.execute_tool.duration;
//   - OpBatch: "batch", with actions.batch.steps;
//   - OpDecide: "confirm" or "reject", with actions.pending_change.id;
//   - OpUnit: "transaction" (the store's unit, a database transaction
//     with sqlstore), with actions.unit.committed;
//   - OpReplay: "replay {gen_ai.tool.name}".
//
// The Observation's ids are the span's (W3C hex), which the registry
// keeps in the records' Audit (TraceID, SpanID).
func (o *Observer) Start(ctx context.Context, op actions.Operation) (context.Context, actions.Observation) {
	name, attrs := o.describe(op)
	ctx, span := o.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	start := time.Now()
	kind := op.Kind
	ob := actions.Observation{End: func(res actions.Result, err error) { o.end(span, kind, start, res, err) }}
	if sc := span.SpanContext(); sc.IsValid() {
		ob.TraceID, ob.SpanID = sc.TraceID().String(), sc.SpanID().String()
	}
	return ctx, ob
}

// describe returns the span name and start attributes of op.
func (o *Observer) describe(op actions.Operation) (string, []attribute.KeyValue) {
	switch op.Kind {
	case actions.OpCall, actions.OpNested:
		tool := cut(actions.ToolName(op.Call.Action), MaxAttributeLength)
		attrs := []attribute.KeyValue{AttrOperationName.String("execute_tool"), AttrToolName.String(tool), AttrToolType.String(o.toolType)}
		if op.Call.ToolCallID != "" {
			attrs = append(attrs, AttrToolCallID.String(cut(op.Call.ToolCallID, MaxAttributeLength)))
		}
		if op.Step >= 0 {
			attrs = append(attrs, AttrBatchStep.Int(op.Step))
		}
		if op.Decision.Change != "" {
			attrs = append(attrs, AttrPendingChange.String(op.Decision.Change))
		}
		if op.AsHost {
			attrs = append(attrs, AttrAsHost.Bool(true))
		}
		if o.values {
			if text, err := actions.CanonicalJSON(paramsValue(op.Call.Params)); err == nil {
				attrs = append(attrs, AttrToolArguments.String(cut(string(text), MaxValueLength)))
			}
		}
		return "execute_tool " + tool, attrs
	case actions.OpBatch:
		attrs := []attribute.KeyValue{AttrBatchSteps.Int(len(op.Call.Batch.Steps))}
		if op.Call.ToolCallID != "" {
			attrs = append(attrs, AttrToolCallID.String(cut(op.Call.ToolCallID, MaxAttributeLength)))
		}
		return "batch", attrs
	case actions.OpDecide:
		name := "reject"
		if op.Decision.Confirm {
			name = "confirm"
		}
		return name, []attribute.KeyValue{AttrPendingChange.String(cut(op.Decision.Change, MaxAttributeLength))}
	case actions.OpUnit:
		return "transaction", nil
	case actions.OpReplay:
		tool := cut(actions.ToolName(op.Call.Action), MaxAttributeLength)
		return "replay " + tool, []attribute.KeyValue{AttrToolName.String(tool)}
	}
	return string(op.Kind), nil
}

// end ends span, of an operation of that kind, with what it gave, and
// records a tool execution's duration.
func (o *Observer) end(span trace.Span, kind actions.OpKind, start time.Time, res actions.Result, err error) {
	code := cut(errorType(res, err), MaxAttributeLength)
	var rec store.Record
	if len(res.Records) > 0 {
		rec = res.Records[len(res.Records)-1]
	}
	switch kind {
	case actions.OpCall, actions.OpNested:
		if rec.Entry.Action != "" {
			span.SetAttributes(AttrActionID.String(cut(rec.Entry.Action, MaxAttributeLength)))
		}
		if o.values && err == nil && rec.Entry.Result != "" {
			span.SetAttributes(AttrToolResult.String(cut(rec.Entry.Result, MaxValueLength)))
		}
	case actions.OpUnit:
		span.SetAttributes(AttrCommitted.Bool(committed(res, err)))
	}
	if rec.Audit.Stage == store.StageHeld && rec.Audit.PendingChange != "" && kind != actions.OpDecide {
		span.AddEvent(EventHeld, trace.WithAttributes(AttrPendingChange.String(cut(rec.Audit.PendingChange, MaxAttributeLength))))
	}
	if code != "" {
		span.SetAttributes(AttrErrorType.String(code))
		span.SetStatus(otelcodes.Error, code)
	}
	span.End()
	if kind == actions.OpCall || kind == actions.OpNested {
		// The metric names a registered action only: the one the record
		// names (an alias is recorded under its id), OtherValue for an
		// action no one registered, whatever name the call gave.
		tool := OtherValue
		if rec.Entry.Action != "" && rec.Entry.Error != codes.UnknownAction {
			tool = actions.ToolName(rec.Entry.Action)
		}
		attrs := []attribute.KeyValue{AttrToolName.String(tool), AttrToolType.String(o.toolType)}
		if code != "" {
			attrs = append(attrs, AttrErrorType.String(code))
		}
		o.toolDur.Record(context.Background(), time.Since(start).Seconds(), metric.WithAttributes(attrs...))
	}
}

// errorType is error.type of an operation that gave res and err: the
// host's code of its refusal (the record's, which names a forbidden call
// for what it was), or "" when it succeeded.
func errorType(res actions.Result, err error) string {
	if err == nil {
		return ""
	}
	if n := len(res.Records); n > 0 {
		if c := res.Records[n-1].Audit.Code; c != "" {
			return string(c)
		}
		if c := res.Records[n-1].Entry.Error; c != "" {
			return string(c)
		}
	}
	return string(actions.CodeOf(err))
}

// committed reports whether a unit that gave res and err kept its
// changes, as actions.Observation.End says to read it: its records say
// RolledBack where it did not; with none, its error says.
func committed(res actions.Result, err error) bool {
	if len(res.Records) > 0 {
		return !res.Records[0].RolledBack
	}
	return err == nil
}

// paramsValue is params as CanonicalJSON takes them: JSON text as raw
// JSON, nil as {}.
func paramsValue(p any) any {
	switch v := p.(type) {
	case nil:
		return map[string]any{}
	case []byte:
		return json.RawMessage(v)
	case string:
		return json.RawMessage(v)
	}
	return p
}
