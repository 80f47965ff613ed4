package telemetry

import (
	"fmt"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/wardenhq/warden/middleware/logging"
)

// Span names of warden's own spans (the workflow's are in package
// workflows: warden.turn's approval waits and continue-as-new).
const (
	SpanModelCall = "warden.model_call"
	SpanDecision  = "warden.decision"
	SpanToolCall  = "warden.tool_call"
)

// Attribute keys of warden's spans: what an ops team filters on. None
// carries an input, an output or a secret; the *.input/*.output/*.text
// keys appear only with telemetry.include_inputs.
const (
	AttrTurn         = attribute.Key("warden.turn")
	AttrCallID       = attribute.Key("warden.call_id")
	AttrTool         = attribute.Key("warden.tool")
	AttrProvider     = attribute.Key("warden.model.provider")
	AttrModel        = attribute.Key("warden.model.name")
	AttrInputTokens  = attribute.Key("warden.model.input_tokens")
	AttrOutputTokens = attribute.Key("warden.model.output_tokens")
	AttrCachedTokens = attribute.Key("warden.model.cache_read_tokens")
	AttrCacheWrite   = attribute.Key("warden.model.cache_write_tokens")
	AttrFinish       = attribute.Key("warden.model.finish_reason")
	AttrToolCalls    = attribute.Key("warden.model.tool_calls")
	AttrCost         = attribute.Key("warden.model.cost")
	AttrVerdict      = attribute.Key("warden.decision.verdict")
	AttrLayer        = attribute.Key("warden.decision.layer")
	AttrRule         = attribute.Key("warden.decision.rule")
	AttrMode         = attribute.Key("warden.decision.mode")
	AttrReadOnly     = attribute.Key("warden.decision.read_only")
	AttrBackend      = attribute.Key("warden.tool.backend")
	AttrSandbox      = attribute.Key("warden.tool.sandbox")
	AttrState        = attribute.Key("warden.tool.state")
	AttrExitCode     = attribute.Key("warden.tool.exit_code")
	AttrBytes        = attribute.Key("warden.tool.output_bytes")
	AttrAttempt      = attribute.Key("warden.tool.attempt")
	AttrInput        = attribute.Key("warden.input")
	AttrOutput       = attribute.Key("warden.output")
)

// DefaultInputChars caps an input or output recorded with
// include_inputs, as the logging middleware caps logged inputs.
const DefaultInputChars = 500

// Tracing is what warden's activities need to record their spans: the
// tracer and, with include_inputs, how inputs are recorded. A nil
// *Tracing records nothing.
type Tracing struct {
	Tracer trace.Tracer
	// Inputs redacts inputs and outputs recorded in spans; nil records
	// none (the default).
	Inputs *logging.Redactor
	// InputChars caps each recorded text (0: DefaultInputChars).
	InputChars int
}

// NewTracing is the tracing of warden's spans over tp; with
// includeInputs, inputs are recorded, redacted of the built-in secret
// patterns and of secrets (literals) and the values of secretEnv.
func NewTracing(tp trace.TracerProvider, includeInputs bool, secrets, secretEnv []string) *Tracing {
	if tp == nil {
		return nil
	}
	t := &Tracing{Tracer: tp.Tracer(TracerName)}
	if includeInputs {
		t.Inputs = logging.NewRedactor(secrets, secretEnv)
	}
	return t
}

// Text is the attribute key=s, redacted and capped, or false when inputs
// are not recorded.
func (t *Tracing) Text(key attribute.Key, s string) (attribute.KeyValue, bool) {
	if t == nil || t.Inputs == nil {
		return attribute.KeyValue{}, false
	}
	n := t.InputChars
	if n <= 0 {
		n = DefaultInputChars
	}
	total := len(s)
	if lim := n*utf8.UTFMax + 1024; len(s) > lim {
		s = s[:lim]
	}
	s = t.Inputs.Redact(s)
	if utf8.RuneCountInString(s) > n {
		s = string([]rune(s)[:n]) + fmt.Sprintf("… (%d bytes in all)", total)
	}
	return key.String(s), true
}

// SetText sets the attribute key=s on span when inputs are recorded.
func (t *Tracing) SetText(span trace.Span, key attribute.Key, s string) {
	if kv, ok := t.Text(key, s); ok {
		span.SetAttributes(kv)
	}
}
