package config

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// This file holds the sections of the file that configure one part of
// warden each. The packages that run those parts take these types as
// they are (tools/mcp, content/s3store, middleware/std, activities,
// inbox), so the file format is written down once, here.

// ToolSettings tune how calls of a tool run (tools.defaults and
// tools.per_tool.NAME). Zero fields inherit the defaults described on
// each field. They are read by the Prepare activity and recorded in
// history with the call's verdict.
type ToolSettings struct {
	// Retry maps onto the tool activity's RetryPolicy.
	Retry Retry `yaml:"retry" json:"retry,omitempty"`
	// Timeout is the activity's start-to-close timeout (default 11m: the
	// longest Bash timeout plus a margin).
	Timeout time.Duration `yaml:"timeout" json:"timeout,omitempty"`
	// FastPath runs eligible calls as local activities: default true for
	// read-only and state-only (Task) calls on the local backend.
	FastPath *bool `yaml:"fast_path" json:"fast_path,omitempty"`
	// FastPathTimeout bounds a local-activity run before the call is
	// rescheduled as a regular activity (default 10s).
	FastPathTimeout time.Duration `yaml:"fast_path_timeout" json:"fast_path_timeout,omitempty"`
	// ApprovalTimeout bounds an ASK's wait (default 7 days; negative: none).
	ApprovalTimeout time.Duration `yaml:"approval_timeout" json:"approval_timeout,omitempty"`
	// Escalation at the deadline: deny (default), allow or notify (the
	// workflow's workflows.Escalation values).
	Escalation string `yaml:"escalation" json:"escalation,omitempty"`
	// Network gives the tool's processes the network in the local
	// sandbox, through the egress proxy (default off): to the hosts of
	// NetworkHosts, else to any public host. The profile records it.
	Network bool `yaml:"network" json:"network,omitempty"`
	// NetworkHosts are the hosts the tool's calls may reach (a name,
	// *.suffix, an address or a range, with an optional :port); naming
	// hosts turns the network on for the tool's calls.
	NetworkHosts []string `yaml:"network_hosts" json:"network_hosts,omitempty"`
}

// Retry configures retries of a tool's activity. Without MaxAttempts,
// read-only calls retry up to 3 times and side-effecting calls run at
// most once (no automatic retry once the activity may have started).
type Retry struct {
	MaxAttempts        int32         `yaml:"max_attempts" json:"max_attempts,omitempty"`
	InitialInterval    time.Duration `yaml:"initial_interval" json:"initial_interval,omitempty"`
	BackoffCoefficient float64       `yaml:"backoff_coefficient" json:"backoff_coefficient,omitempty"`
	MaxInterval        time.Duration `yaml:"max_interval" json:"max_interval,omitempty"`
	NonRetryable       []string      `yaml:"non_retryable" json:"non_retryable,omitempty"`
}

// MCPServer configures one MCP server (mcp.servers[]).
type MCPServer struct {
	// Name names the server in tool names (mcp__<name>__<tool>).
	Name string `yaml:"name" json:"name"`
	// Command, Args and Env run a stdio server. Like a tool process, the
	// server starts from the allowlist of backend.BaseEnvNames (PATH,
	// HOME, LANG, ...); Env entries (KEY=VALUE) are added to it. Nothing
	// else of the worker's environment (model keys, Temporal credentials,
	// the inbox token) reaches the server.
	Command string   `yaml:"command,omitempty" json:"command,omitempty"`
	Args    []string `yaml:"args,omitempty" json:"args,omitempty"`
	Env     []string `yaml:"env,omitempty" json:"env,omitempty"`
	// URL and Headers reach a streamable HTTP server; the headers (e.g.
	// Authorization) are sent with every request.
	URL     string            `yaml:"url,omitempty" json:"url,omitempty"`
	Headers map[string]string `yaml:"headers,omitempty" json:"headers,omitempty"`
	// Write and Network shape the sandbox a stdio server runs in when
	// the worker sandboxes local processes: it may write the worker's
	// workdir, a private temporary directory and these paths, and has no
	// network unless Network is set.
	Write   []string `yaml:"write,omitempty" json:"write,omitempty"`
	Network bool     `yaml:"network,omitempty" json:"network,omitempty"`
}

// Validate reports a server that has no name, both or neither
// transport, or environment entries without '='.
func (c MCPServer) Validate() error {
	if strings.TrimSpace(c.Name) == "" {
		return errors.New("mcp: server without a name")
	}
	if (c.Command == "") == (c.URL == "") {
		return fmt.Errorf("mcp: server %q: set exactly one of command and url", c.Name)
	}
	for _, e := range c.Env {
		if !strings.Contains(e, "=") {
			return fmt.Errorf("mcp: server %q: env entry %q is not KEY=VALUE", c.Name, e)
		}
	}
	if c.URL == "" && len(c.Headers) > 0 {
		return fmt.Errorf("mcp: server %q: headers need a url", c.Name)
	}
	if c.Command == "" && (len(c.Args) > 0 || len(c.Env) > 0) {
		return fmt.Errorf("mcp: server %q: args and env need a command", c.Name)
	}
	return nil
}

// S3 configures the S3 content store (content.s3).
type S3 struct {
	// Endpoint is the server's URL (empty: AWS S3 of Region).
	Endpoint string `yaml:"endpoint"`
	Region   string `yaml:"region"`
	Bucket   string `yaml:"bucket"`
	// Prefix is prepended to every key (e.g. "warden/prod").
	Prefix string `yaml:"prefix"`
	// PathStyle addresses the bucket in the path (most self-hosted
	// servers need it).
	PathStyle bool `yaml:"path_style"`
	// AccessKey and SecretKey are never read from the file: empty, the
	// store reads AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (set by
	// whoever opens it, from the environment).
	AccessKey string `yaml:"-"`
	SecretKey string `yaml:"-"`
}

// Compaction is one model's context-window compaction
// (content.compaction.NAME); package activities/compact runs it. Zero
// fields take the defaults described on each.
type Compaction struct {
	// ContextWindow is the model's window in tokens (required).
	ContextWindow int `yaml:"context_window" json:"context_window"`
	// Trigger is the share of the window at which compaction starts
	// (default 0.8); Target the share it compacts down to (default 0.5).
	Trigger float64 `yaml:"trigger" json:"trigger,omitempty"`
	Target  float64 `yaml:"target" json:"target,omitempty"`
	// Strategy is trim (default), drop or summarize.
	Strategy string `yaml:"strategy" json:"strategy,omitempty"`
	// KeepRecent messages at the end are never changed (default 6).
	KeepRecent int `yaml:"keep_recent" json:"keep_recent,omitempty"`
}

// Middleware configures the standard tool middlewares (middleware:),
// which middleware/std builds.
type Middleware struct {
	// Logging enables call logging when set.
	Logging *Logging `yaml:"logging"`
	// Limits caps in-flight calls per tool name ("*": every other tool).
	Limits map[string]int `yaml:"limits"`
	// Reduce shortens outputs per tool name ("*": every other tool).
	Reduce map[string]Reduce `yaml:"reduce"`
	// Metrics records warden_tool_output_bytes (call durations are
	// recorded by the tool activity, whatever this says).
	Metrics bool `yaml:"metrics"`
}

// Logging configures the call-logging middleware (middleware.logging).
type Logging struct {
	// Level of records of calls that ran (a tool error included): debug,
	// info (default), warn or error. Infrastructure failures are always
	// logged at error level.
	Level string `yaml:"level"`
	// PreviewChars bounds the output preview in characters (default 200;
	// negative: no preview).
	PreviewChars int `yaml:"preview_chars"`
	// InputChars bounds the logged input in characters (default 500;
	// negative: the input is not logged).
	InputChars int `yaml:"input_chars"`
	// Secrets are literal strings redacted wherever they appear.
	Secrets []string `yaml:"secrets"`
	// SecretEnv names environment variables whose values (read when the
	// middleware is built) are redacted.
	SecretEnv []string `yaml:"secret_env"`
	// Tools overrides settings per tool name.
	Tools map[string]LoggingTool `yaml:"tools"`
}

// LoggingTool overrides Logging for one tool; zero fields inherit.
type LoggingTool struct {
	// Off disables logging of the tool's calls.
	Off          bool   `yaml:"off"`
	Level        string `yaml:"level"`
	PreviewChars int    `yaml:"preview_chars"`
	InputChars   int    `yaml:"input_chars"`
}

// Reduce configures the output-reducing middleware for one tool
// (middleware.reduce.NAME).
type Reduce struct {
	// MaxChars is the most characters (runes) of text a call's output
	// keeps, not counting the note; 0 keeps everything.
	MaxChars int `yaml:"max_chars"`
	// HeadFraction is the share of MaxChars taken from the head of the
	// output, the rest from its tail (default 0.5; 0 keeps only the
	// tail, 1 only the head).
	HeadFraction *float64 `yaml:"head_fraction"`
}

// InboxUser is one approver who may sign in to the inbox
// (inbox.users.NAME): with the bearer token (header, ?token= link or the
// cookie it sets) or with basic auth and the password. The inbox compares
// both in constant time.
type InboxUser struct {
	Token    string `json:"token,omitempty" yaml:"token"`
	Password string `json:"password,omitempty" yaml:"password"`
	// Roles restrict what the user may answer; none means everything.
	Roles []string `json:"roles,omitempty" yaml:"roles"`
	// Slack is the user's Slack member id (U0123): their clicks on a
	// Slack message answer as this user, under these roles.
	Slack string `json:"slack,omitempty" yaml:"slack"`
	// Accounts are the user's accounts on other chat channels, by the
	// channel's name (inbox.Channel): their answers from that channel
	// are this user's, under these roles.
	Accounts map[string]string `json:"accounts,omitempty" yaml:"accounts"`
}

// InboxRole lists allow-rule patterns ("Bash(kubectl:*)", "Write") of
// the calls a member may answer (inbox.roles.NAME).
// client.Approvers turns the users and roles into the approvers a turn
// records (workflows.Approvers), the one model every answer is checked
// against.
type InboxRole struct {
	Allow []string `json:"allow" yaml:"allow"`
}

// Telemetry configures tracing (telemetry:). Traces are off unless
// OTLP is set or the standard OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) variable is; package telemetry
// builds the exporter.
type Telemetry struct {
	// OTLP exports spans to an OpenTelemetry collector or a backend that
	// takes OTLP (Jaeger, Tempo, Honeycomb).
	OTLP *OTLP `yaml:"otlp"`
	// IncludeInputs records tool inputs, model replies' text and tool
	// outputs in spans, capped and with the logging middleware's secrets
	// redacted. Off by default: spans carry names, sizes, verdicts and
	// token counts only.
	IncludeInputs bool `yaml:"include_inputs"`
}

// OTLP is where spans go (telemetry.otlp). Fields left empty fall back
// to the standard OTEL_EXPORTER_OTLP_* variables, which the exporter
// reads itself.
type OTLP struct {
	// Endpoint is host:port (gRPC default 4317, HTTP 4318) or a URL
	// (http://host:4318/v1/traces for HTTP).
	Endpoint string `yaml:"endpoint"`
	// Protocol is grpc (default) or http (OTLP over HTTP with protobuf).
	Protocol string `yaml:"protocol"`
	// Headers are sent with every export (an API key header, say).
	Headers map[string]string `yaml:"headers"`
	// Insecure sends spans without TLS.
	Insecure bool `yaml:"insecure"`
}

// validate checks the telemetry section.
func (t Telemetry) validate() []error {
	if t.OTLP == nil {
		return nil
	}
	var errs []error
	switch t.OTLP.Protocol {
	case "", "grpc", "http":
	default:
		errs = append(errs, fmt.Errorf("telemetry.otlp.protocol: %q is not grpc or http", t.OTLP.Protocol))
	}
	if e := t.OTLP.Endpoint; strings.Contains(e, "://") {
		if !strings.HasPrefix(e, "http://") && !strings.HasPrefix(e, "https://") {
			errs = append(errs, fmt.Errorf("telemetry.otlp.endpoint: %q: a URL must be http:// or https://", e))
		}
	} else if e != "" && !strings.Contains(e, ":") {
		errs = append(errs, fmt.Errorf("telemetry.otlp.endpoint: %q is not host:port or a URL", e))
	}
	for k := range t.OTLP.Headers {
		if strings.TrimSpace(k) == "" {
			errs = append(errs, errors.New("telemetry.otlp.headers: empty header name"))
		}
	}
	return errs
}
