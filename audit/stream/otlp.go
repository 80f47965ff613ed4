package stream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	otellog "go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
)

// OTLPScheme prefixes a sink that sends OpenTelemetry logs over
// OTLP/HTTP: "otlp+http://collector:4318" or "otlp+https://…" (the path
// defaults to /v1/logs).
const OTLPScheme = "otlp+"

// otlpSink sends each record as one OpenTelemetry log record: its body
// the record's JSON line as `starter audit --jsonl` prints it (so an
// export from the log store verifies with `starter audit verify`), its
// time the record's, and the fields a query filters on as attributes
// (warden.workflow_id, warden.kind, warden.decision, warden.call_id,
// warden.seq, warden.hash). A batch is one export; the exporter does not
// retry on its own (the Streamer holds and offers the batch again), so a
// collector that is down is counted and logged like any sink.
type otlpSink struct {
	mu       sync.Mutex
	endpoint string
	exp      *otlploghttp.Exporter
	lp       *sdklog.LoggerProvider
	logger   otellog.Logger
	col      *collect
}

// collect is the provider's processor: it keeps what the logger emits
// for the batch being written, which Write then exports itself, so that
// the export's error is the sink's.
type collect struct{ recs []sdklog.Record }

func (c *collect) OnEmit(_ context.Context, r *sdklog.Record) error {
	c.recs = append(c.recs, r.Clone())
	return nil
}
func (*collect) Enabled(context.Context, sdklog.EnabledParameters) bool { return true }
func (*collect) Shutdown(context.Context) error                         { return nil }
func (*collect) ForceFlush(context.Context) error                       { return nil }

func openOTLP(spec string, o SinkOptions) (*otlpSink, error) {
	u, err := url.Parse(strings.TrimPrefix(spec, OTLPScheme))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("audit stream: %q: want otlp+http://host:port or otlp+https://host:port", spec)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/logs"
	}
	t := o.Timeout
	if t <= 0 {
		t = 10 * time.Second
	}
	opts := []otlploghttp.Option{otlploghttp.WithEndpointURL(u.String()), otlploghttp.WithTimeout(t),
		otlploghttp.WithRetry(otlploghttp.RetryConfig{Enabled: false})}
	if o.Token != "" {
		opts = append(opts, otlploghttp.WithHeaders(map[string]string{"Authorization": "Bearer " + o.Token}))
	}
	exp, err := otlploghttp.New(context.Background(), opts...)
	if err != nil {
		return nil, fmt.Errorf("audit stream: %w", err)
	}
	col := &collect{}
	res := resource.NewSchemaless(attribute.String("service.name", "warden-worker"))
	lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(col), sdklog.WithResource(res))
	u.RawQuery, u.User = "", nil
	return &otlpSink{endpoint: OTLPScheme + u.String(), exp: exp, lp: lp, logger: lp.Logger("warden/audit"), col: col}, nil
}

// fields are the parts of a record that become attributes.
type fields struct {
	Time       time.Time `json:"time"`
	WorkflowID string    `json:"workflow_id"`
	CallID     string    `json:"call_id"`
	Kind       string    `json:"kind"`
	Decision   string    `json:"decision"`
	Seq        int       `json:"seq"`
	Hash       string    `json:"hash"`
}

func (s *otlpSink) Write(ctx context.Context, lines []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.col.recs = s.col.recs[:0]
	for line := range bytes.Lines(lines) {
		line = bytes.TrimRight(line, "\n")
		if len(line) == 0 {
			continue
		}
		var f fields
		if err := json.Unmarshal(line, &f); err != nil {
			return fmt.Errorf("audit stream: a record that is not JSON: %w", err)
		}
		var r otellog.Record
		r.SetTimestamp(f.Time)
		r.SetObservedTimestamp(time.Now())
		r.SetSeverity(otellog.SeverityInfo)
		r.SetEventName("warden.audit")
		r.SetBody(otellog.StringValue(string(line)))
		r.AddAttributes(
			otellog.String("warden.workflow_id", f.WorkflowID),
			otellog.String("warden.kind", f.Kind),
			otellog.String("warden.decision", f.Decision),
			otellog.String("warden.call_id", f.CallID),
			otellog.Int("warden.seq", f.Seq),
			otellog.String("warden.hash", f.Hash))
		s.logger.Emit(ctx, r)
	}
	if len(s.col.recs) == 0 {
		return nil
	}
	if err := s.exp.Export(ctx, s.col.recs); err != nil {
		return fmt.Errorf("%s: %w", s, err)
	}
	return nil
}

func (s *otlpSink) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.exp.Shutdown(ctx)
	if lerr := s.lp.Shutdown(ctx); err == nil {
		err = lerr
	}
	return err
}

func (s *otlpSink) String() string { return s.endpoint }
