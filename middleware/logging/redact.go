package logging

import (
	"os"
	"regexp"
	"strings"
)

// Redacted replaces every secret in logged text.
const Redacted = "[REDACTED]"

// minSecretLen is the shortest literal secret redacted: shorter values
// (an env var set to "1") would blank out ordinary text.
const minSecretLen = 4

// pattern is a secret pattern; with keep, its first submatch (the key of
// a key=value pair) is kept verbatim.
type pattern struct {
	re   *regexp.Regexp
	keep bool
}

// patterns returns the built-in secret patterns. Compiled once per
// Redactor, not at package level.
func patterns() []pattern {
	return []pattern{
		// PEM private keys, whole or cut before their END line.
		{re: regexp.MustCompile(`(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)`)},
		// AWS access key ids.
		{re: regexp.MustCompile(`\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA|ABIA|ACCA)[0-9A-Z]{16}\b`)},
		// GitHub tokens: classic (ghp_, gho_, ghu_, ghs_, ghr_) and fine-grained.
		{re: regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{20,}`)},
		{re: regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{20,}`)},
		// OpenAI / Anthropic style keys (sk-..., sk-proj-..., sk-ant-...).
		{re: regexp.MustCompile(`\bsk-[A-Za-z0-9_\-]{16,}`)},
		// Slack tokens.
		{re: regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9\-]{10,}`)},
		// Authorization: Bearer <token>.
		{re: regexp.MustCompile(`(?i)(\bbearer\s+)[A-Za-z0-9\-._~+/]+=*`), keep: true},
		// key=value and "key": "value" pairs with a secret-looking key,
		// including aws_secret_access_key.
		{re: regexp.MustCompile(`(?i)((?:password|passwd|pwd|secret|secret[_-]?key|secret[_-]?access[_-]?key|api[_-]?key|access[_-]?token|auth[_-]?token|client[_-]?secret|token)\\?["']?\s*[=:]\s*\\?["']?)[^\s"'\\&,;}]+`), keep: true},
	}
}

// Redactor removes secrets from text: the built-in patterns, literal
// secrets and the values of named environment variables.
type Redactor struct {
	patterns []pattern
	literals []string
}

// NewRedactor returns a redactor for the built-in patterns plus the
// given literal secrets and the current values of the environment
// variables named in env. Secrets shorter than 4 bytes are ignored.
func NewRedactor(secrets, env []string) *Redactor {
	r := &Redactor{patterns: patterns()}
	add := func(s string) {
		if len(s) >= minSecretLen {
			r.literals = append(r.literals, s)
		}
	}
	for _, s := range secrets {
		add(s)
	}
	for _, name := range env {
		add(os.Getenv(name))
	}
	return r
}

// Redact returns s with every secret replaced by [Redacted].
func (r *Redactor) Redact(s string) string {
	for _, lit := range r.literals {
		s = strings.ReplaceAll(s, lit, Redacted)
	}
	for _, p := range r.patterns {
		if p.keep {
			s = p.re.ReplaceAllString(s, "${1}"+Redacted)
		} else {
			s = p.re.ReplaceAllLiteralString(s, Redacted)
		}
	}
	return s
}
