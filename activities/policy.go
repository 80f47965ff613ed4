package activities

import (
	"time"

	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/tools"
	"github.com/wardenhq/warden/workflows"
)

// Defaults of a call's policy.
const (
	DefaultToolTimeout     = 11 * time.Minute
	DefaultFastPathTimeout = 10 * time.Second
	defaultReadAttempts    = 3
)

// policy resolves the settings for one call: per-tool settings over the
// defaults over built-in behaviour.
// settings are the tool's settings laid over the defaults.
func (a *Activities) settings(tool string) config.ToolSettings {
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
		Escalation:         workflows.Escalation(s.Escalation),
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
func merge(s, t config.ToolSettings) config.ToolSettings {
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
	if t.NetworkHosts != nil {
		s.NetworkHosts = t.NetworkHosts
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
