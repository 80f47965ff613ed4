// Package telemetry builds warden's OpenTelemetry tracing from the
// config's telemetry section and the standard OTEL_EXPORTER_OTLP_*
// variables: an OTLP exporter (gRPC or HTTP), the tracer provider, and
// the Temporal SDK's tracing interceptor that carries a trace from the
// client that starts a turn through the workflow, its activities and
// its continue-as-new runs. Tracing is off unless configured; off, none
// of this is built and nothing is recorded.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"

	"github.com/wardenhq/warden/config"
)

// TracerName names the tracer of warden's own spans.
const TracerName = "github.com/wardenhq/warden"

// Provider is a running tracer provider with its exporter.
type Provider struct {
	sdk *sdktrace.TracerProvider
}

// TracerProvider is the provider to hand to the interceptor and to
// warden.Options.
func (p *Provider) TracerProvider() trace.TracerProvider { return p.sdk }

// Shutdown flushes the spans not yet exported and stops the exporter,
// waiting at most until ctx is done.
func (p *Provider) Shutdown(ctx context.Context) error {
	if err := p.sdk.Shutdown(ctx); err != nil {
		return fmt.Errorf("telemetry: shutdown: %w", err)
	}
	return nil
}

// ShutdownWithin is Shutdown bounded by d, for deferred calls.
func (p *Provider) ShutdownWithin(d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return p.Shutdown(ctx)
}

// Enabled reports whether t or the environment (getenv) turns traces
// on: telemetry.otlp is set, or OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is. OTEL_SDK_DISABLED=true turns
// them off whatever else says.
func Enabled(t config.Telemetry, getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	return t.OTLP != nil || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Setup builds the provider for service (the service.name of its spans,
// unless OTEL_SERVICE_NAME says otherwise), or returns nil when tracing
// is off (Enabled). The exporter takes what telemetry.otlp leaves empty
// from the OTEL_EXPORTER_OTLP_* variables; the protocol, when the file
// names none, from OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or
// OTEL_EXPORTER_OTLP_PROTOCOL (grpc, http/protobuf). Setup does not
// reach the endpoint: export errors come later, from the exporter.
func Setup(ctx context.Context, t config.Telemetry, service string, getenv func(string) string) (*Provider, error) {
	if !Enabled(t, getenv) {
		return nil, nil
	}
	exp, err := exporter(ctx, t.OTLP, getenv)
	if err != nil {
		return nil, err
	}
	if s := getenv("OTEL_SERVICE_NAME"); s != "" {
		service = s
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attribute.String("service.name", service)))
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	return &Provider{sdk: sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))}, nil
}

// exporter is the OTLP span exporter of o (nil: the environment's alone).
func exporter(ctx context.Context, o *config.OTLP, getenv func(string) string) (sdktrace.SpanExporter, error) {
	var c config.OTLP
	if o != nil {
		c = *o
	}
	protocol, err := protocolOf(c.Protocol, getenv)
	if err != nil {
		return nil, err
	}
	if protocol == "http" {
		var opts []otlptracehttp.Option
		if strings.Contains(c.Endpoint, "://") {
			opts = append(opts, otlptracehttp.WithEndpointURL(c.Endpoint))
		} else if c.Endpoint != "" {
			opts = append(opts, otlptracehttp.WithEndpoint(c.Endpoint))
		}
		if len(c.Headers) > 0 {
			opts = append(opts, otlptracehttp.WithHeaders(c.Headers))
		}
		if c.Insecure {
			opts = append(opts, otlptracehttp.WithInsecure())
		}
		exp, err := otlptracehttp.New(ctx, opts...)
		if err != nil {
			return nil, fmt.Errorf("telemetry: otlp http exporter: %w", err)
		}
		return exp, nil
	}
	var opts []otlptracegrpc.Option
	if strings.Contains(c.Endpoint, "://") {
		opts = append(opts, otlptracegrpc.WithEndpointURL(c.Endpoint))
	} else if c.Endpoint != "" {
		opts = append(opts, otlptracegrpc.WithEndpoint(c.Endpoint))
	}
	if len(c.Headers) > 0 {
		opts = append(opts, otlptracegrpc.WithHeaders(c.Headers))
	}
	if c.Insecure {
		opts = append(opts, otlptracegrpc.WithInsecure())
	}
	exp, err := otlptracegrpc.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("telemetry: otlp grpc exporter: %w", err)
	}
	return exp, nil
}

// protocolOf is grpc or http: the file's protocol, else the
// environment's.
func protocolOf(p string, getenv func(string) string) (string, error) {
	if p != "" {
		return p, nil
	}
	env := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if env == "" {
		env = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch env {
	case "", "grpc":
		return "grpc", nil
	case "http/protobuf", "http":
		return "http", nil
	}
	return "", fmt.Errorf("telemetry: OTEL_EXPORTER_OTLP_PROTOCOL %q is not grpc or http/protobuf", env)
}

// Interceptor is the Temporal SDK's OpenTelemetry interceptor over tp.
// Put it in client.Options.Interceptors: the client's calls (starting a
// turn, signals, updates, queries) and every worker built on that
// client (workflows, activities, continue-as-new) then trace with it.
func Interceptor(tp trace.TracerProvider) (interceptor.Interceptor, error) {
	if tp == nil {
		return nil, errors.New("telemetry: no tracer provider")
	}
	i, err := temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{Tracer: tp.Tracer("temporal-sdk-go")})
	if err != nil {
		return nil, fmt.Errorf("telemetry: interceptor: %w", err)
	}
	return i, nil
}
