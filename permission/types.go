// Package permission decides whether a tool call may run.
//
// It follows AgentScope 2.x's permission model: modes, allow/ask/deny
// rules matched per tool, a tool's own check, and bypass-immune safety
// checks. The package is pure Go and does no I/O, so it can run inside a
// Temporal local activity whose decision is recorded in history.
package permission

import (
	"context"
	"encoding/json"
)

// Mode selects how the engine evaluates a call.
type Mode string

// The permission modes.
const (
	ModeDefault     Mode = "default"
	ModeExplore     Mode = "explore"
	ModeAcceptEdits Mode = "accept_edits"
	ModeBypass      Mode = "bypass"
	ModeDontAsk     Mode = "dont_ask"
)

// Behavior is the outcome of a rule or a decision.
type Behavior string

// The behaviours. Passthrough is only returned by a tool's own check and
// means "no opinion, keep evaluating".
const (
	Allow       Behavior = "allow"
	Ask         Behavior = "ask"
	Deny        Behavior = "deny"
	Passthrough Behavior = "passthrough"
)

// Rule allows, asks for or denies calls of one tool. An empty Content
// matches every call of the tool. Users write rules as "Tool" or
// "Tool(content)", e.g. "Bash(npm run:*)" or "Edit(src/**)".
type Rule struct {
	Tool     string   `json:"tool"`
	Content  string   `json:"content,omitempty"`
	Behavior Behavior `json:"behavior"`
	Source   string   `json:"source,omitempty"`
}

// Decision is the engine's (or a tool's) verdict on one call.
type Decision struct {
	Behavior Behavior `json:"behavior"`
	Message  string   `json:"message,omitempty"`
	// Reason names the layer that decided, e.g. "Rule: Bash(rm:*)".
	Reason string `json:"reason,omitempty"`
	// UpdatedInput, when set, replaces the call's input.
	UpdatedInput json.RawMessage `json:"updated_input,omitempty"`
	// Suggestions are rules that would allow this call if added.
	Suggestions []Rule `json:"suggestions,omitempty"`
	// BypassImmune marks a safety ASK that allow rules cannot override.
	BypassImmune bool `json:"bypass_immune,omitempty"`
}

// Context is the policy one agent turn runs under. Rules keep their order:
// inside each list the first rule that matches wins.
type Context struct {
	Mode        Mode     `json:"mode,omitempty"`
	WorkingDirs []string `json:"working_dirs,omitempty"`
	Allow       []Rule   `json:"allow,omitempty"`
	Ask         []Rule   `json:"ask,omitempty"`
	Deny        []Rule   `json:"deny,omitempty"`
	// DangerousFiles and DangerousDirs replace the default lists of
	// sensitive file names and directory names when non-nil; an empty,
	// non-nil list turns that check off.
	DangerousFiles *[]string `json:"dangerous_files,omitempty"`
	DangerousDirs  *[]string `json:"dangerous_dirs,omitempty"`
	// SensitivePaths extend DefaultSensitivePaths: doublestar patterns
	// over absolute paths (a leading ~/ is the backend user's home) whose
	// reads and writes ask even inside the working directories.
	SensitivePaths []string `json:"sensitive_paths,omitempty"`
	// DangerousCommands extend the built-in dangerous-command checks
	// (privilege changes, system state, raw devices, history-destroying
	// git) with Bash rule contents ("terraform destroy:*", "kubectl
	// delete:*"): a command that matches one, as a deny rule would match
	// it, gets a bypass-immune ASK that no allow rule silences (a DENY in
	// dont_ask and explore; bypass skips it).
	DangerousCommands []string `json:"dangerous_commands,omitempty"`
	// Protected are doublestar patterns of paths no tool may read or
	// write, in any mode and under any rule (bypass included): the
	// worker's data directory (keys, content store, database) and config
	// file, which the worker adds at every decision, and the process
	// environments of DefaultProtectedPaths.
	Protected []string `json:"protected,omitempty"`
	// Sandbox shapes the kernel sandbox the turn's calls run in on the
	// local backend (nil: writes confined to the working directories,
	// no network, nothing auto-allowed).
	Sandbox *Sandbox `json:"sandbox,omitempty"`
	// Quorum are the policy's two-person rules (Policy.Quorum), and
	// RequireReason its demand for a reason on every answer: the worker
	// resolves both for a call that asks (workflows.CallPolicy).
	Quorum        []QuorumRule `json:"quorum,omitempty"`
	RequireReason bool         `json:"require_reason,omitempty"`
	// Session are the session rules (SessionPolicy), Limits the window
	// limits, and LogOnly the rules tried without being applied (their
	// Behavior says which list they came from).
	Session *SessionPolicy `json:"session,omitempty"`
	Limits  []WindowLimit  `json:"limits,omitempty"`
	LogOnly []Rule         `json:"log_only,omitempty"`
	// RulesOnly makes the allow rules the only way to ALLOW: the
	// read-only and tool-allow layers are skipped. It is the question a
	// role check asks ("do this approver's rules cover the call?") and
	// is never part of a turn's policy.
	RulesOnly bool `json:"-"`
}

// DefaultSensitivePaths are the paths whose reads and writes always ask
// (bypass mode excepted): private keys, cloud and registry credentials,
// .env files, shell rc and profile files, process environments and the
// password database. Patterns are doublestar globs over absolute paths.
func DefaultSensitivePaths() []string {
	return []string{
		// Private keys and key stores.
		"**/.ssh{,/**}", "**/id_rsa*", "**/id_dsa*", "**/id_ecdsa*", "**/id_ed25519*",
		"**/*.pem", "**/*.key", "**/*.p12", "**/*.pfx", "**/.gnupg{,/**}",
		// Cloud, cluster and registry credentials.
		"**/.aws{,/**}", "**/.azure{,/**}", "**/.config/gcloud{,/**}", "**/.kube{,/**}",
		"**/.docker/config.json", "**/.npmrc", "**/.pypirc", "**/.netrc", "**/.git-credentials",
		"**/.cargo/credentials*", "**/.config/gh{,/**}", "**/.terraform.d/credentials*",
		// Environment files.
		"**/.env", "**/.env.*", "**/.envrc",
		// Shell rc and profile files.
		"**/.bashrc", "**/.bash_profile", "**/.bash_login", "**/.bash_logout", "**/.profile",
		"**/.zshrc", "**/.zshenv", "**/.zprofile", "**/.zlogin", "**/.config/fish{,/**}", "/etc/profile", "/etc/profile.d{,/**}",
		"/etc/bash.bashrc", "/etc/environment",
		// The password databases (process environments are protected:
		// DefaultProtectedPaths).
		"/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/sudoers.d{,/**}",
	}
}

// Sandbox is the sandbox part of a policy (permission.sandbox in the
// config, or a turn's policy).
type Sandbox struct {
	// Network gives every call of the turn the network, through the
	// egress proxy: to the hosts of Hosts (none: any public host).
	Network bool `json:"network,omitempty" yaml:"network,omitempty"`
	// Hosts are the hosts Network lets every call reach (calls.Sandbox.Hosts
	// syntax); empty means any public host ("*").
	Hosts []string `json:"hosts,omitempty" yaml:"hosts,omitempty"`
	// NetworkFor are rules whose calls get the network, each with the
	// hosts they may reach: "Bash(npm install:*)" (any public host) or
	// {rule: "Bash(npm install:*)", hosts: ["npm.example.internal"]}.
	// The rule is recorded with the call's profile.
	NetworkFor []NetworkRule `json:"network_for,omitempty" yaml:"network_for,omitempty"`
	// UnixSocketsFor are rules whose calls may create unix sockets
	// ("Bash(docker:*)"): such a call reaches every pathname socket its
	// processes can resolve (the docker socket, an ssh-agent's), not only
	// the one it needs; other calls' socket(AF_UNIX) fails. The rule is
	// recorded with the call's profile.
	UnixSocketsFor []string `json:"unix_sockets_for,omitempty" yaml:"unix_sockets_for,omitempty"`
	// AutoAllow runs a Bash command that would ask only because it is
	// not read-only without asking, confined: when it names no path
	// outside the working directories, matches no ask or deny rule,
	// trips no safety check and has no network. It applies only where
	// the call runs in the local sandbox.
	AutoAllow bool `json:"auto_allow,omitempty" yaml:"auto_allow,omitempty"`
}

// DefaultProtectedPaths are the protected paths of every policy: process
// environments, where the worker's own (model API keys, tokens) would be.
func DefaultProtectedPaths() []string {
	return []string{"/proc/*/environ", "/proc/self/environ", "/proc/thread-self/environ", "/proc/*/task/*/environ"}
}

// ProtectedPaths returns the protected patterns of c: the defaults, then
// c.Protected.
func (c *Context) ProtectedPaths() []string {
	d := DefaultProtectedPaths()
	if c == nil {
		return d
	}
	return append(d, c.Protected...)
}

// Sensitive returns the sensitive path patterns of c: the defaults, then
// c.SensitivePaths.
func (c *Context) Sensitive() []string {
	d := DefaultSensitivePaths()
	if c == nil {
		return d
	}
	return append(d, c.SensitivePaths...)
}

// Tool is what the engine needs from a tool. The tools package adapts
// its tools (bound to a backend and workspace) to this interface.
type Tool interface {
	// Name is the tool name rules are keyed by.
	Name() string
	// CheckPermissions is the tool's own check; it may return Passthrough.
	CheckPermissions(ctx context.Context, input json.RawMessage, pc *Context) (Decision, error)
	// CheckReadOnly reports whether this call only reads.
	CheckReadOnly(ctx context.Context, input json.RawMessage) (bool, error)
	// MatchRule reports whether a non-empty rule content matches the call.
	MatchRule(ctx context.Context, content string, input json.RawMessage) (bool, error)
	// GenerateSuggestions proposes allow rules for this call.
	GenerateSuggestions(ctx context.Context, input json.RawMessage) ([]Rule, error)
}
