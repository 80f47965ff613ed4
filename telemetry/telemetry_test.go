package telemetry

import (
	"context"
	"strings"
	"testing"

	"github.com/wardenhq/warden/config"
)

func env(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

// TestSetupOffByDefault: no section and no variable build nothing; the
// section, or either standard endpoint variable, builds a provider;
// OTEL_SDK_DISABLED wins.
func TestSetupOffByDefault(t *testing.T) {
	ctx := context.Background()
	on := config.Telemetry{OTLP: &config.OTLP{Endpoint: "127.0.0.1:4317", Insecure: true}}
	cases := []struct {
		name string
		t    config.Telemetry
		env  map[string]string
		want bool
	}{
		{"nothing", config.Telemetry{}, nil, false},
		{"include_inputs alone", config.Telemetry{IncludeInputs: true}, nil, false},
		{"section", on, nil, true},
		{"http section", config.Telemetry{OTLP: &config.OTLP{Endpoint: "http://127.0.0.1:4318/v1/traces", Protocol: "http"}}, nil, true},
		{"env endpoint", config.Telemetry{}, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317"}, true},
		{"env traces endpoint, http", config.Telemetry{}, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, true},
		{"disabled", on, map[string]string{"OTEL_SDK_DISABLED": "true"}, false},
	}
	for _, c := range cases {
		p, err := Setup(ctx, c.t, "test", env(c.env))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if (p != nil) != c.want {
			t.Errorf("%s: provider %v, want on=%v", c.name, p, c.want)
		}
		if p != nil {
			_ = p.Shutdown(ctx)
		}
	}
	if _, err := Setup(ctx, config.Telemetry{}, "test", env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "x:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "thrift"})); err == nil || !strings.Contains(err.Error(), "thrift") {
		t.Errorf("unknown protocol: %v", err)
	}
}

// TestValidateTelemetry: a bad protocol or endpoint is refused with its
// key; a good section passes.
func TestValidateTelemetry(t *testing.T) {
	for _, c := range []struct {
		otlp config.OTLP
		err  string
	}{
		{config.OTLP{Endpoint: "127.0.0.1:4317"}, ""},
		{config.OTLP{Endpoint: "https://otlp.example.com/v1/traces", Protocol: "http", Headers: map[string]string{"x-api-key": "k"}}, ""},
		{config.OTLP{Protocol: "thrift"}, "telemetry.otlp.protocol"},
		{config.OTLP{Endpoint: "collector"}, "telemetry.otlp.endpoint"},
		{config.OTLP{Endpoint: "ftp://x:1"}, "telemetry.otlp.endpoint"},
	} {
		cfg := config.Default()
		o := c.otlp
		cfg.Telemetry.OTLP = &o
		err := cfg.Validate()
		if (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%+v: %v, want %q", c.otlp, err, c.err)
		}
	}
}
