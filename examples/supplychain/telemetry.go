package main

import (
	"context"
	"errors"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	"go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"

	"github.com/actionreg/actions"
	"github.com/actionreg/actions/otelactions"
)

// telemetry is the observer of the host's registries and MCP servers,
// set once by main before anything runs; nil (the default, and in tests)
// traces nothing.
var telemetry *otelactions.Observer

// startTelemetry exports traces and metrics over OTLP/HTTP when the
// standard OTEL_EXPORTER_OTLP_ENDPOINT is set (the exporters read it and
// the other OTEL_EXPORTER_OTLP_* variables themselves), and does nothing
// otherwise. It prints nothing. shutdown flushes and stops the exporters.
func startTelemetry(ctx context.Context) (shutdown func(context.Context) error, err error) {
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" {
		return func(context.Context) error { return nil }, nil
	}
	spans, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, err
	}
	metrics, err := otlpmetrichttp.New(ctx)
	if err != nil {
		return nil, err
	}
	res := resource.NewSchemaless(semconv.ServiceName("supplychain"))
	tp := trace.NewTracerProvider(trace.WithBatcher(spans), trace.WithResource(res))
	mp := metric.NewMeterProvider(metric.WithReader(metric.NewPeriodicReader(metrics)), metric.WithResource(res))
	obs, err := otelactions.New(&otelactions.Options{TracerProvider: tp, MeterProvider: mp})
	if err != nil {
		return nil, err
	}
	telemetry = obs
	return func(ctx context.Context) error { return errors.Join(tp.Shutdown(ctx), mp.Shutdown(ctx)) }, nil
}

// observer is the registry's Options.Observer: nil without telemetry.
func observer() actions.Observer {
	if telemetry == nil {
		return nil
	}
	return telemetry
}

// observeServer adds the MCP server spans to server, with telemetry.
func observeServer(server *mcp.Server) {
	if telemetry != nil {
		server.AddReceivingMiddleware(telemetry.Middleware)
	}
}
