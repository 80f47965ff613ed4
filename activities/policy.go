package activities

import (
	"time"

	"github.com/wardenhq/warden/tools"
	"github.com/wardenhq/warden/workflows"
)

// ToolSettings tune how calls of a tool run. Zero fields inherit the
// defaults described on each field. They are read by Prepare and
// recorded in history with the call's verdict.
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
	// Escalation at the deadline: deny (default), allow or notify.
	Escalation workflows.Escalation `yaml:"escalation" json:"escalation,omitempty"`
	// Network gives the tool's processes the host's network in the local
	// sandbox (default off); the profile records it.
	Network bool `yaml:"network" json:"network,omitempty"`
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

// Defaults of a call's policy.
const (
	DefaultToolTimeout     = 11 * time.Minute
	DefaultFastPathTimeout = 10 * time.Second
	defaultReadAttempts    = 3
)

// policy resolves the settings for one call: per-tool settings over the
// defaults over built-in behaviour.
// settings are the tool's settings laid over the defaults.
func (a *Activities) settings(tool string) ToolSettings {
	s := a.ToolDefaults
	if t, ok := a.ToolSettings[tool]; ok {
		s = merge(s, t)
	}
	return s
}

func (a *Activities) policy(info tools.Info, readOnly bool, backendName string) workflows.CallPolicy {
	s := a.settings(info.Name)
	p := workflows.CallPolicy{
		MaxAttempts:        s.Retry.MaxAttempts,
		InitialInterval:    s.Retry.InitialInterval,
		BackoffCoefficient: s.Retry.BackoffCoefficient,
		MaxInterval:        s.Retry.MaxInterval,
		NonRetryable:       s.Retry.NonRetryable,
		Timeout:            s.Timeout,
		LocalTimeout:       s.FastPathTimeout,
		ApprovalTimeout:    s.ApprovalTimeout,
		Escalation:         s.Escalation,
	}
	if p.MaxAttempts == 0 {
		p.MaxAttempts = 1
		if readOnly {
			p.MaxAttempts = defaultReadAttempts
		}
	}
	if p.InitialInterval == 0 {
		p.InitialInterval = time.Second
	}
	if p.BackoffCoefficient == 0 {
		p.BackoffCoefficient = 2
	}
	if p.MaxInterval == 0 {
		p.MaxInterval = 30 * time.Second
	}
	if p.Timeout == 0 {
		p.Timeout = DefaultToolTimeout
	}
	if p.LocalTimeout == 0 {
		p.LocalTimeout = DefaultFastPathTimeout
	}
	if s.FastPath != nil {
		p.Local = *s.FastPath
	} else {
		p.Local = backendName == "local" && !info.External && (readOnly || stateOnly(info))
	}
	return p
}

// merge lays t over s field by field.
func merge(s, t ToolSettings) ToolSettings {
	if t.Retry.MaxAttempts != 0 {
		s.Retry.MaxAttempts = t.Retry.MaxAttempts
	}
	if t.Retry.InitialInterval != 0 {
		s.Retry.InitialInterval = t.Retry.InitialInterval
	}
	if t.Retry.BackoffCoefficient != 0 {
		s.Retry.BackoffCoefficient = t.Retry.BackoffCoefficient
	}
	if t.Retry.MaxInterval != 0 {
		s.Retry.MaxInterval = t.Retry.MaxInterval
	}
	if t.Retry.NonRetryable != nil {
		s.Retry.NonRetryable = t.Retry.NonRetryable
	}
	if t.Timeout != 0 {
		s.Timeout = t.Timeout
	}
	if t.FastPath != nil {
		s.FastPath = t.FastPath
	}
	if t.FastPathTimeout != 0 {
		s.FastPathTimeout = t.FastPathTimeout
	}
	if t.ApprovalTimeout != 0 {
		s.ApprovalTimeout = t.ApprovalTimeout
	}
	if t.Network {
		s.Network = true
	}
	if t.Escalation != "" {
		s.Escalation = t.Escalation
	}
	return s
}

// stateOnly reports tools whose only effect is on the turn state they
// return (the Task tools): running one again after a crash is harmless.
// Write and Edit are state-injected too (they consult the read state)
// but change files, so they are not state-only.
func stateOnly(info tools.Info) bool { return info.StateInjected && info.ConcurrencySafe }
