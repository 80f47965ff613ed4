// Package config is temporal-dev.yaml, the one config file: its format
// (every section, sections.go holds those one part of warden reads),
// defaults, the environment's and the command line's overrides, and the
// checks that need nothing but the file. It is data only: it imports no
// package of warden's but permission's types. Package node builds the
// worker from it, and package client the connection, approvers and
// content store a client needs.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	units "github.com/docker/go-units"
	"gopkg.in/yaml.v3"

	"github.com/wardenhq/warden/permission"
)

// DefaultFile is the config file read when present and none is named.
const DefaultFile = "temporal-dev.yaml"

// DefaultInboxListen is inbox.listen's default: the inbox on loopback.
const DefaultInboxListen = "127.0.0.1:8234"

// Config is the whole file.
type Config struct {
	// file is the config file Load read, absolute ("" for none): one of
	// the worker's own paths (OwnPaths).
	file string

	Server     Server            `yaml:"server"`
	Temporal   Temporal          `yaml:"temporal"`
	Worker     Worker            `yaml:"worker"`
	Backend    Backend           `yaml:"backend"`
	Metrics    Metrics           `yaml:"metrics"`
	Permission permission.Policy `yaml:"permission"`
	Tools      Tools             `yaml:"tools"`
	Inbox      Inbox             `yaml:"inbox"`
	Notify     Notify            `yaml:"notify"`
	// Chat posts waiting calls to Slack.
	Chat Chat `yaml:"chat"`
	// Middleware configures the standard tool middlewares (logging,
	// metrics, per-tool concurrency limits, output reduction).
	Middleware Middleware `yaml:"middleware"`
	// Models configures real model providers by name (the scripted model
	// is always there). API keys come from the environment only.
	Models map[string]Model `yaml:"models"`
	// Prices price model calls per million tokens, by model name (the
	// turn's model) or provider name; a model without one gets no cost
	// figure (never a guess).
	Prices map[string]Price `yaml:"prices"`
	// Budgets declares agent budgets across turns, applied to the
	// agents' budget stores when the worker starts.
	Budgets Budgets `yaml:"budgets"`
	// MCP lists MCP servers whose tools the worker offers
	// (mcp__SERVER__TOOL; non-read-only ones ask by default).
	MCP  MCP  `yaml:"mcp"`
	Demo Demo `yaml:"demo"`
	// Content keeps conversations out of workflow history; Turn sets
	// defaults of the turns starter starts.
	Content Content `yaml:"content"`
	Turn    Turn    `yaml:"turn"`
	// Telemetry exports OpenTelemetry traces (off by default).
	Telemetry Telemetry `yaml:"telemetry"`
	// Audit configures the live audit stream (off by default).
	Audit Audit `yaml:"audit"`
}

// Audit configures the audit beyond `starter audit`.
type Audit struct {
	Stream AuditStream `yaml:"stream"`
}

// AuditStream is the live audit stream: every audit record, as `starter
// audit --jsonl` prints it, sent to a sink as the turns record it.
type AuditStream struct {
	// Sink is "stdout", an http:// or https:// URL (batches POSTed as
	// application/x-ndjson), an OpenTelemetry collector's OTLP/HTTP
	// endpoint as otlp+http:// or otlp+https:// (each record a log
	// record), or a file path (rotated); empty: off.
	Sink string `yaml:"sink"`
	// MaxSizeMB rotates a file sink past this size (default 100); Keep
	// is how many rotated files stay (default 5).
	MaxSizeMB int `yaml:"max_size_mb"`
	Keep      int `yaml:"keep"`
	// TokenEnv names the environment variable whose value an HTTP or
	// OTLP sink gets as a bearer token.
	TokenEnv string `yaml:"token_env"`
	// State keeps what was sent across restarts (default
	// server.data_dir/audit-stream.json; none without a data directory),
	// with a copy beside it (State plus ".copy").
	State string `yaml:"state"`
	// Sweep is how often closed turns are looked for (default 2s).
	Sweep time.Duration `yaml:"sweep"`
	// Interval is the least time between two reads of one turn's
	// history (default 1s): the stream's lag against its load on the
	// server.
	Interval time.Duration `yaml:"interval"`
}

// KeepOr5 is Keep, 5 when unset.
func (a AuditStream) KeepOr5() int {
	if a.Keep > 0 {
		return a.Keep
	}
	return 5
}

// FileSink is the stream's sink file ("" for stdout, a URL or none).
func (a AuditStream) FileSink() string {
	if a.Sink == "" || a.Sink == "stdout" || strings.Contains(a.Sink, "://") {
		return ""
	}
	return a.Sink
}

// StateFile is where the stream keeps what it sent ("" in memory).
func (c Config) StateFile() string {
	switch {
	case c.Audit.Stream.State != "":
		return c.Audit.Stream.State
	case c.Server.DataDir != "":
		return filepath.Join(c.Server.DataDir, "audit-stream.json")
	}
	return ""
}

// InboxMarksFile is where the inbox keeps its users' claims and snoozes:
// server.data_dir/inbox-marks.json ("": in memory, without a data
// directory).
func (c Config) InboxMarksFile() string {
	if c.Server.DataDir == "" {
		return ""
	}
	return filepath.Join(c.Server.DataDir, "inbox-marks.json")
}

// Server configures the embedded Temporal server.
type Server struct {
	DataDir   string `yaml:"data_dir"`
	Port      int    `yaml:"port"`
	UIPort    int    `yaml:"ui_port"`
	Namespace string `yaml:"namespace"`
	LogLevel  string `yaml:"log_level"`
	// NoAuth turns off key authentication on the embedded frontend:
	// every process that reaches the port may then call every API,
	// answers included. Keys are required by default.
	NoAuth bool `yaml:"no_auth"`
	// DynamicConfig overrides server dynamic config keys.
	DynamicConfig map[string]any `yaml:"dynamic_config"`
	// Retention of closed turns in the embedded server's database
	// (0: 72h). Past it, a turn's history is read from the archive.
	Retention time.Duration `yaml:"retention"`
	// Archive is the directory of the embedded server's history archive
	// (Temporal's History Archival, filestore): every closed turn's
	// history is written there and stays readable after retention.
	// Empty means data_dir/archive (no archive for an in-memory
	// server); "off" turns archival off.
	Archive string `yaml:"archive"`
}

// ArchiveDir is the embedded server's archive directory, "" when
// archival is off (server.archive "off", or an in-memory server with
// no archive set).
func (s Server) ArchiveDir() string {
	switch {
	case s.Archive == "off":
		return ""
	case s.Archive != "":
		return s.Archive
	case s.DataDir != "":
		return filepath.Join(s.DataDir, "archive")
	}
	return ""
}

// Temporal configures joining an existing cluster instead of embedding one.
type Temporal struct {
	// Address of the frontend; empty runs the embedded server.
	Address   string `yaml:"address"`
	Namespace string `yaml:"namespace"`
	TLSCert   string `yaml:"tls_cert"`
	TLSKey    string `yaml:"tls_key"`
	TLSCA     string `yaml:"tls_ca"`
	// APIKey for a hosted cluster; prefer the TEMPORAL_API_KEY variable.
	APIKey string `yaml:"api_key"`
	// KeyFile holds the warden key (see `starter keys`) a client or a
	// joining worker authenticates to a warden server with. Empty means
	// WARDEN_KEY_FILE, else, for the embedded server, the operator key
	// the worker created under server.data_dir/auth.
	KeyFile string `yaml:"key_file"`
}

// Worker configures the worker.
type Worker struct {
	TaskQueue                  string `yaml:"task_queue"`
	MaxConcurrentActivities    int    `yaml:"max_concurrent_activities"`
	MaxConcurrentWorkflowTasks int    `yaml:"max_concurrent_workflow_tasks"`
	// StickyCacheSize bounds how many turns the worker keeps in memory
	// (0: DefaultStickyCacheSize); a turn evicted from it is replayed from
	// its history when it is answered or queried. The SDK's cache is
	// shared by the whole process, the embedded server's own workers
	// included, so the worker sets it once, before the server starts.
	StickyCacheSize int `yaml:"sticky_cache_size"`
	// WorkflowTaskPollers and ActivityTaskPollers set how many
	// goroutines poll the server for each kind of task (0: the SDK's
	// default of 2). PollerAutoscaling lets the SDK scale both between 1
	// and 100 pollers instead; it cannot be combined with fixed counts.
	WorkflowTaskPollers int  `yaml:"workflow_task_pollers"`
	ActivityTaskPollers int  `yaml:"activity_task_pollers"`
	PollerAutoscaling   bool `yaml:"poller_autoscaling"`
	// DisableEagerActivities stops the worker from asking the server to
	// hand it the activities its own workflow tasks schedule (eager
	// dispatch, on by default: it saves a matching round trip per model
	// call when the server allows it).
	DisableEagerActivities bool `yaml:"disable_eager_activities"`
	// GRPCCompression is "gzip" or "none" for requests to the Temporal
	// server; empty means none for the embedded server (loopback, where
	// compressing costs CPU and saves nothing) and gzip for a cluster.
	GRPCCompression string `yaml:"grpc_compression"`
	// Workdir is the default workspace directory for tools.
	Workdir string `yaml:"workdir"`
}

// DefaultStickyCacheSize is the worker's sticky cache size when the
// config sets none. A cached turn costs ~60 KB (its coroutines' stacks
// and the SDK's state); the SDK's own default, 10,000, kept every waiting
// turn in memory. Waiting turns evicted from the cache cost nothing in
// the worker, and answering one replays its short history. 300 turns
// running at once made as many calls per second with 256 as with 500
// (BENCHMARKS.md); raise it when more turns run at once and their
// histories are long.
const DefaultStickyCacheSize = 256

// Tools tunes how tool calls run: retries (the activity RetryPolicy),
// timeouts, the local-activity fast path and approval deadlines.
type Tools struct {
	Defaults ToolSettings            `yaml:"defaults"`
	PerTool  map[string]ToolSettings `yaml:"per_tool"`
	// GrepEngine picks how Grep searches: "auto" (the default: ripgrep
	// where the backend has rg, the Go engine otherwise), "rg" or "go".
	// Both give the same output; rg runs as a process of the call (in its
	// sandbox), the Go engine in the worker (held to the call's profile by
	// the file_tools layer).
	GrepEngine string `yaml:"grep_engine"`
	// GrepTimeout bounds one Grep search (zero: tools.GrepTimeout, 30s).
	// A search it cuts ends with a result that says so, which the model
	// reads; the tool's activity timeout still bounds the whole call.
	GrepTimeout time.Duration `yaml:"grep_timeout"`
}

// Model configures one model provider: kind "openai" (any OpenAI-
// compatible server: vLLM, Ollama, LiteLLM, llama.cpp) or "anthropic".
type Model struct {
	Kind      string `yaml:"kind"`
	BaseURL   string `yaml:"base_url"`
	Model     string `yaml:"model"`
	MaxTokens int    `yaml:"max_tokens"`
	Stream    bool   `yaml:"stream"`
	// APIKeyEnv names the environment variable holding the key (default
	// OPENAI_API_KEY / ANTHROPIC_API_KEY).
	APIKeyEnv string `yaml:"api_key_env"`
}

// Price is a model's price per million tokens: input read at the full
// price, cached input (a cache read), input written to the cache, and
// output. CachedInput and CacheWrite are Input when zero.
type Price struct {
	Input       float64 `yaml:"input"`
	CachedInput float64 `yaml:"cached_input"`
	CacheWrite  float64 `yaml:"cache_write"`
	Output      float64 `yaml:"output"`
}

// MCP configures MCP servers (stdio command or streamable HTTP URL).
type MCP struct {
	Servers []MCPServer `yaml:"servers"`
}

// Inbox configures the approvals web page served by the worker.
type Inbox struct {
	Enabled bool   `yaml:"enabled"`
	Listen  string `yaml:"listen"`
	TLSCert string `yaml:"tls_cert"`
	TLSKey  string `yaml:"tls_key"`
	// URL is the inbox's public address, linked from notifications
	// (default http://LISTEN).
	URL string `yaml:"url"`
	// Users who may sign in; with none, the worker creates user "admin"
	// with the token from WARDEN_INBOX_TOKEN or a random one it prints.
	Users map[string]InboxUser `yaml:"users"`
	Roles map[string]InboxRole `yaml:"roles"`
	// KeyFile is the inbox's delegate key (`starter keys create inbox
	// --role delegate`) for a worker that joins a warden server with
	// --temporal-address. An embedded worker gives its inbox a key that
	// lives only in memory.
	KeyFile string `yaml:"key_file"`
}

// Notify configures webhook notifications about waiting calls.
type Notify struct {
	Webhooks []string `yaml:"webhooks"`
	// Secret signs each POST (Standard Webhooks: "whsec_" + base64 of
	// the key, or the key itself); required when Webhooks is set. Prefer
	// the WARDEN_WEBHOOK_SECRET variable, which replaces it (FromEnv).
	Secret string `yaml:"secret"`
	// Routes send the events they match (namespace, agent label, tool,
	// approver role) to their webhooks instead of Webhooks.
	Routes []NotifyRoute `yaml:"routes"`
	// RemindBefore sends an approval_reminder this long before a waiting
	// call's deadline (0: none).
	RemindBefore time.Duration `yaml:"remind_before"`
}

// NotifyRoute sends the events it matches to its webhooks
// (notify.routes[]).
type NotifyRoute struct {
	Match    RouteMatch `yaml:"match"`
	Webhooks []string   `yaml:"webhooks"`
}

// RouteMatch selects events: each set field is a pattern (path.Match
// syntax) the event's namespace, agent label, tool or one of the
// approver roles that cover the call must match; empty fields match all.
type RouteMatch struct {
	Namespace string `yaml:"namespace"`
	Agent     string `yaml:"agent"`
	Tool      string `yaml:"tool"`
	Role      string `yaml:"role"`
}

// Chat configures chat messages about waiting calls.
type Chat struct {
	Slack Slack `yaml:"slack"`
}

// Slack posts each waiting call to a channel (chat.slack). The bot token
// and signing secret come from the environment only
// (WARDEN_SLACK_BOT_TOKEN, WARDEN_SLACK_SIGNING_SECRET); Slack is on when
// the token is set and a channel or route is configured.
type Slack struct {
	// Channel receives the calls no route matches (a channel id, C0123).
	Channel string `yaml:"channel"`
	// Routes send the calls they match to their channel instead.
	Routes []SlackRoute `yaml:"routes"`
	// StepUp lists tool patterns ("mcp__deploy__*") whose calls are never
	// allowed from Slack, like calls that trip a safety check, ask for
	// the network or write outside the working directories.
	StepUp []string `yaml:"step_up"`
	// APIURL points the Web API client elsewhere (a stand-in; default
	// Slack's).
	APIURL string `yaml:"api_url"`
}

// SlackRoute sends the calls it matches to Channel.
type SlackRoute struct {
	Match   RouteMatch `yaml:"match"`
	Channel string     `yaml:"channel"`
}

// Backend selects where tools run. Local is always available; Docker and
// E2B are set up when enabled. A turn names its backend (or gets Default).
type Backend struct {
	Default string `yaml:"default"`
	// Env is what tool processes get from the worker's environment on
	// every backend, beyond the allowlist of backend.BaseEnvNames (PATH,
	// HOME, LANG, ...): "NAME" passes the worker's value through,
	// "NAME=value" sets a value. Nothing else the worker holds (API keys,
	// tokens, secrets) reaches a tool.
	Env []string `yaml:"env"`
	// Secrets are brokered secrets, by the environment variable a tool
	// process finds a placeholder in (GH_TOKEN): the worker reads the
	// value from its own environment, and the local backend's egress
	// proxy puts it in the headers of the requests sent over TLS to the
	// secret's hosts, and nowhere else. Local backend only, sandboxed: a
	// worker with secrets refuses to start with the sandbox off or the
	// docker or e2b backend enabled.
	Secrets map[string]Secret `yaml:"secrets"`
	Local   Local             `yaml:"local"`
	Docker  Docker            `yaml:"docker"`
	E2B     E2B               `yaml:"e2b"`
}

// Secret is one brokered secret (backend.secrets).
type Secret struct {
	// FromEnv names the worker's environment variable holding the value
	// (the file never holds it).
	FromEnv string `yaml:"from_env"`
	// Hosts are the host names (an optional ":port") whose requests get
	// the value; no addresses, patterns or "*".
	Hosts []string `yaml:"hosts"`
	// Header, when set, is the only request header the placeholder is
	// replaced in; else any header holding it.
	Header string `yaml:"header"`
	// Format, with Header, is what that header becomes when it holds the
	// placeholder, %s standing for the value ("Bearer %s").
	Format string `yaml:"format"`
}

// Local configures the local backend.
type Local struct {
	// Sandbox is "on" (the default) or "off". On, every tool process
	// runs in a kernel sandbox shaped by its call's verdict, and a
	// machine without Landlock or user namespaces refuses to start the
	// worker. Off runs tools as the worker's user, which the worker, the
	// tool list and every audit record then say.
	Sandbox string `yaml:"sandbox"`
	// Read lists paths sandboxed tools may read beyond the system's
	// shared roots (/usr, /bin, /lib, /opt, the world-readable parts of
	// /etc and /var), their working directories and the toolchains on
	// their PATH under the home directory: say a directory of shared
	// data, or a file only root may read that a tool needs.
	Read []string `yaml:"read"`
	// Limits bound each sandboxed call whose permission profile names
	// none of its own; see LocalLimits.
	Limits LocalLimits `yaml:"limits"`
	// Off lists layers of the sandbox to turn off, one by one, while
	// the rest stays on (LocalLayers names them): a control for tests
	// that must see one layer alone, never a setting for use. The worker
	// warns loudly at start for each.
	Off []string `yaml:"sandbox_off"`
	// Network bounds what the egress proxy spends on the calls with the
	// network; see LocalNetwork.
	Network LocalNetwork `yaml:"network"`
	// GuardMaxDirs bounds the directories the repository guard indexes
	// in the calls' working directories (default 250000): a call that
	// makes them hold more is stopped and the trees it created moved
	// out. Raise it for a larger workspace (each directory holds one of
	// the user's inotify watches and some of the worker's memory); lower
	// it to hold a call to less.
	GuardMaxDirs int `yaml:"guard_max_dirs"`
}

// LocalNetwork is backend.local.network: what the egress proxy, through
// which a sandboxed call with the network reaches hosts, may spend on
// one call and on all of them. A call past a per-call bound is ended
// with a result naming the bound. Each field left out (or 0) keeps the
// default.
type LocalNetwork struct {
	// Connections bounds a call's connections to the proxy open at
	// once, idle ones included (default 128): each holds one of the
	// worker's descriptors, and a tunnel a second one.
	Connections int `yaml:"connections"`
	// ConnectionsTotal bounds them across the calls running at once
	// (default 1024); a connection past it is closed unanswered.
	ConnectionsTotal int `yaml:"connections_total"`
	// Refusals bounds the connections the proxy refuses one call
	// (default 10000).
	Refusals int `yaml:"refusals"`
	// HeaderTimeout is how long a connection may take to send a
	// request's header (default 5s); an idle new connection is closed
	// after it.
	HeaderTimeout time.Duration `yaml:"header_timeout"`
	// IdleTimeout is how long a kept-alive connection may wait for its
	// next request (default 15s).
	IdleTimeout time.Duration `yaml:"idle_timeout"`
}

// LocalLayers are the layers backend.local.sandbox_off may name, with
// what turning each off leaves undone.
func LocalLayers() map[string]string {
	return map[string]string{
		"host_addresses": "the refusal of the machine's own addresses: calls with the network reach a service bound to all interfaces through the machine's public address",
		"new_session":    "tool processes stay in the worker's session: /dev/tty opens the worker's terminal",
		"tty_ioctls":     "tool processes may push input into a terminal they hold (TIOCSTI, TIOCLINUX)",
		"unix_sockets":   "every call may create unix sockets and connect to any socket it can reach",
		"keyring":        "tool processes keep the worker's session keyring and the keyring system calls",
		"file_tools":     "the file tools (Read, Write, Edit, Glob, Grep) act on any path the worker may, outside the call's sandbox profile",
		"links":          "the decision resolves no symbolic link of the working directories: a call naming one is decided, and shown to its approver, as the link's own path, not where it leads",
		"git_guard":      "the repository guard: .git directories, bare repositories, hooks directories, included git configuration, the dangerous and sensitive files of the working directories are neither protected, hidden nor checked after a call",
	}
}

// LayerOff reports whether backend.local.sandbox_off names layer.
func (l Local) LayerOff(layer string) bool { return slices.Contains(l.Off, layer) }

// LocalLimits is backend.local.limits: what one sandboxed call's
// processes may use together. Each field left out keeps the default
// (local.DefaultLimits: processes 256 per CPU in [512, 4096], memory the
// smaller of 4GiB and half the RAM, tmp 1GiB, write 10GiB, cpu_time and
// cpus unbounded, disk_reserve 1GiB, cpu_share on); 0,
// "off" or "none" turns it off. Sizes are like "512MiB" or "4GiB".
type LocalLimits struct {
	// Processes bounds the processes and threads alive at once.
	Processes string `yaml:"processes"`
	// Memory bounds their memory, page cache and TMPDIR included.
	Memory string `yaml:"memory"`
	// CPUTime bounds the CPU time they use ("10m").
	CPUTime string `yaml:"cpu_time"`
	// CPUs bounds their share of the CPUs ("1.5").
	CPUs string `yaml:"cpus"`
	// Tmp is the size of the call's TMPDIR, a tmpfs.
	Tmp string `yaml:"tmp"`
	// Write bounds the bytes the call may add to the disks it writes,
	// and the size of any one file.
	Write string `yaml:"write"`
	// DiskReserve is the free space (a size, default 1GiB, or a twentieth
	// of a smaller disk) and inodes (65,536, or a twentieth) a call must
	// leave on each disk it writes, for the worker's data dir and the
	// calls beside it; a call that goes below is ended and what it
	// allocated past its files' ends is released. off turns it off.
	DiskReserve string `yaml:"disk_reserve"`
	// CPUShare, on by default, puts each call's processes in a CPU group
	// of their own, so that however many they are they compete for the
	// CPU as one against the worker's heartbeats and other calls. off
	// turns it off.
	CPUShare string `yaml:"cpu_share"`
}

// LimitValues are the parsed fields of LocalLimits: nil keeps the
// default, zero is off.
type LimitValues struct {
	Processes, Memory, Tmp, Write, DiskReserve *int64
	CPUTime                                    *time.Duration
	CPUs                                       *float64
	CPUShare                                   *bool
}

// Values parses l.
func (l LocalLimits) Values() (LimitValues, error) {
	var v LimitValues
	var errs []error
	off := func(s string) bool { return s == "0" || strings.EqualFold(s, "off") || strings.EqualFold(s, "none") }
	size := func(name, s string) *int64 {
		s = strings.TrimSpace(s)
		switch {
		case s == "":
			return nil
		case off(s):
			return new(int64)
		}
		n, err := units.RAMInBytes(s)
		if err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("backend.local.limits.%s: %q is not a size like 512MiB, or off", name, s))
			return nil
		}
		return &n
	}
	v.Memory, v.Tmp, v.Write = size("memory", l.Memory), size("tmp", l.Tmp), size("write", l.Write)
	v.DiskReserve = size("disk_reserve", l.DiskReserve)
	switch s := strings.TrimSpace(l.CPUShare); {
	case s == "":
	case off(s) || strings.EqualFold(s, "false"):
		v.CPUShare = new(bool)
	case strings.EqualFold(s, "on") || strings.EqualFold(s, "true"):
		on := true
		v.CPUShare = &on
	default:
		errs = append(errs, fmt.Errorf("backend.local.limits.cpu_share: %q is not on or off", s))
	}
	if s := strings.TrimSpace(l.Processes); s != "" {
		var n int64
		if !off(s) {
			if _, err := fmt.Sscan(s, &n); err != nil || n <= 0 {
				errs = append(errs, fmt.Errorf("backend.local.limits.processes: %q is not a number, or off", s))
			}
		}
		v.Processes = &n
	}
	if s := strings.TrimSpace(l.CPUTime); s != "" {
		var d time.Duration
		if !off(s) {
			var err error
			if d, err = time.ParseDuration(s); err != nil || d <= 0 {
				errs = append(errs, fmt.Errorf("backend.local.limits.cpu_time: %q is not a duration like 10m, or off", s))
			}
		}
		v.CPUTime = &d
	}
	if s := strings.TrimSpace(l.CPUs); s != "" {
		var f float64
		if !off(s) {
			if _, err := fmt.Sscan(s, &f); err != nil || f < 0.01 {
				errs = append(errs, fmt.Errorf("backend.local.limits.cpus: %q is not a number of CPUs (at least 0.01), or off", s))
			}
		}
		v.CPUs = &f
	}
	return v, errors.Join(errs...)
}

// SandboxOff reports whether backend.local.sandbox is off.
func (l Local) SandboxOff() bool { return l.Sandbox == "off" }

// LayerWarnings are the worker's start-up warnings for the layers
// backend.local.sandbox_off turns off, one line each (none when the
// whole sandbox is off: it says so itself).
func (l Local) LayerWarnings() []string {
	if l.SandboxOff() {
		return nil
	}
	var out []string
	layers := LocalLayers()
	for _, n := range l.Off {
		out = append(out, fmt.Sprintf("WARNING: sandbox layer %s is OFF (backend.local.sandbox_off): %s", n, layers[n]))
	}
	return out
}

// Docker configures the Docker backend's workspace container.
type Docker struct {
	Enabled     bool     `yaml:"enabled"`
	Image       string   `yaml:"image"`
	Workdir     string   `yaml:"workdir"`
	Mounts      []string `yaml:"mounts"`
	Env         []string `yaml:"env"`
	User        string   `yaml:"user"`
	Network     string   `yaml:"network"`
	CPUs        float64  `yaml:"cpus"`
	MemoryMB    int64    `yaml:"memory_mb"`
	PidsLimit   int64    `yaml:"pids_limit"`
	WorkspaceID string   `yaml:"workspace_id"`
	// Session feeds Bash commands to one long-lived shell (fast); false
	// runs a fresh exec per command (isolated).
	Session bool `yaml:"session"`
}

// E2B configures the E2B backend (API key from E2B_API_KEY).
type E2B struct {
	Enabled     bool          `yaml:"enabled"`
	APIURL      string        `yaml:"api_url"`
	SandboxURL  string        `yaml:"sandbox_url"`
	Domain      string        `yaml:"domain"`
	Template    string        `yaml:"template"`
	Workdir     string        `yaml:"workdir"`
	Timeout     time.Duration `yaml:"timeout"`
	WorkspaceID string        `yaml:"workspace_id"`
}

// Metrics configures the Prometheus endpoint.
type Metrics struct {
	Addr string `yaml:"addr"`
}

// Demo configures the demo turn the worker can start.
type Demo struct {
	Script string `yaml:"script"`
}

// Default returns the configuration used when no file sets a value.
func Default() Config {
	return Config{
		Server:   Server{DataDir: "./.warden", Port: 7233, UIPort: 8233, Namespace: "default", LogLevel: "error"},
		Temporal: Temporal{Namespace: "default"},
		Worker:   Worker{TaskQueue: "warden", Workdir: "."},
		Backend:  Backend{Default: "local", Docker: Docker{Image: "warden-workspace:latest", Network: "none", Session: true}},
		Metrics:  Metrics{Addr: "127.0.0.1:9464"},
		Inbox:    Inbox{Listen: DefaultInboxListen},
	}
}

// Load reads a config file over the defaults. An empty path reads
// DefaultFile when it exists and returns the defaults otherwise.
func Load(path string) (Config, error) {
	explicit := path != ""
	if !explicit {
		path = DefaultFile
	}
	data, err := os.ReadFile(path)
	if err != nil {
		if !explicit && errors.Is(err, os.ErrNotExist) {
			return Default(), nil
		}
		return Config{}, fmt.Errorf("config: %w", err)
	}
	c, err := Parse(data)
	if err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	c.file = mustAbs(path)
	return c, nil
}

// File is the config file c was read from (absolute), "" when it was
// not read from a file.
func (c Config) File() string { return c.file }

// OwnPaths are the worker's own files and directories, absolute, as c
// names them now (after the environment's and the command line's
// overrides, or however a caller built c): the data directory (its
// keyring, operator key and database inside), the content store's
// directory, the history archive directory, the audit stream's file sink
// with its kept rotations and its state file with the state's copy, the
// warden key files (temporal.key_file, inbox.key_file and
// the WARDEN_KEY_FILE and WARDEN_INBOX_KEY_FILE variables, which the
// worker and its clients read too), the Temporal and inbox TLS private
// keys and the config file. No tool may read or write them in any mode
// (OwnPatterns, permission.Context.Protected) and tool processes on the
// local backend find them empty. Computed on each call, so it never
// lags behind a field set after Load.
func (c Config) OwnPaths() []string {
	var own []string
	add := func(p string) {
		if a := mustAbs(p); a != "" && !slices.Contains(own, a) {
			own = append(own, a)
		}
	}
	add(c.Server.DataDir)
	add(c.contentDir())
	add(c.Server.ArchiveDir())
	if f := c.Audit.Stream.FileSink(); f != "" {
		add(f)
		for i := 1; i <= c.Audit.Stream.KeepOr5(); i++ {
			add(fmt.Sprintf("%s.%d", f, i)) // its rotations
		}
	}
	if st := c.Audit.Stream.State; st != "" {
		add(st)
		add(st + ".copy") // the copy the stream writes first (stream.CopySuffix)
	}
	add(c.Temporal.KeyFile)
	add(os.Getenv("WARDEN_KEY_FILE"))
	add(c.InboxKeyFile())
	add(os.Getenv("WARDEN_INBOX_KEY_FILE"))
	add(c.Temporal.TLSKey)
	add(c.Inbox.TLSKey)
	add(c.file)
	return own
}

// contentDir is the fs content store's directory ("" for an S3 store).
func (c Config) contentDir() string {
	if c.Content.Store == "s3" {
		return ""
	}
	if c.Content.Dir != "" {
		return c.Content.Dir
	}
	if c.Server.DataDir == "" {
		return ""
	}
	return filepath.Join(c.Server.DataDir, "content")
}

// OwnPatterns are OwnPaths as doublestar patterns: a directory (the data
// and content directories always, another path when it is one) stands
// for itself and everything below it.
func (c Config) OwnPatterns() []string {
	dirs := []string{mustAbs(c.Server.DataDir), mustAbs(c.contentDir()), mustAbs(c.Server.ArchiveDir())}
	var out []string
	for _, p := range c.OwnPaths() {
		if fi, err := os.Stat(p); slices.Contains(dirs, p) || (err == nil && fi.IsDir()) {
			p += "{,/**}"
		}
		out = append(out, p)
	}
	return out
}

// Policy is the permission section with the worker's own files added to
// its sensitive and protected paths (OwnPatterns): the policy the
// worker's clients base turns and checks on.
func (c Config) Policy() permission.Policy {
	p := c.Permission
	own := c.OwnPatterns()
	p.SensitivePaths = slices.Concat(p.SensitivePaths, own)
	p.Protected = slices.Concat(p.Protected, own)
	return p
}

// ConcretePaths are the patterns of ps that name one absolute path (no
// glob; a trailing "{,/**}" names a directory): what a sandbox can hide.
func ConcretePaths(ps []string) []string {
	var out []string
	for _, p := range ps {
		p = strings.TrimSuffix(p, "{,/**}")
		if filepath.IsAbs(p) && !strings.ContainsAny(p, "*?[{") {
			out = append(out, filepath.Clean(p))
		}
	}
	return out
}

// mustAbs is filepath.Abs, "" when p is empty or cannot be made absolute.
func mustAbs(p string) string {
	if p == "" {
		return ""
	}
	a, err := filepath.Abs(p)
	if err != nil {
		return ""
	}
	return a
}

// Parse reads YAML over the defaults. Unknown keys are errors.
func Parse(data []byte) (Config, error) {
	c := Default()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return Config{}, err
	}
	return c, c.Validate()
}

// Namespace is the namespace workers and clients use.
func (c Config) Namespace() string {
	if c.Temporal.Address != "" {
		return c.Temporal.Namespace
	}
	return c.Server.Namespace
}

// ReadPolicy reads a permission policy file (YAML or JSON), the format
// of temporal-dev.yaml's permission section: a policy, or a config file
// whose permission section is read. Unknown keys are errors. It does not
// check the rules' examples: they need the tools (decide.CheckExamples,
// which the worker runs at start and `starter policy test` reports one
// by one).
func ReadPolicy(path string) (permission.Policy, error) {
	var p permission.Policy
	data, err := os.ReadFile(path)
	if err != nil {
		return p, fmt.Errorf("policy: %w", err)
	}
	var top map[string]yaml.Node
	if yaml.Unmarshal(data, &top) == nil {
		if sec, ok := top["permission"]; ok { // a config file
			if err := sec.Decode(&p); err != nil {
				return p, fmt.Errorf("policy %s: permission: %w", path, err)
			}
			if _, err := p.Context(); err != nil {
				return p, fmt.Errorf("policy %s: permission: %w", path, err)
			}
			return p, nil
		}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&p); err != nil && !errors.Is(err, io.EOF) {
		return p, fmt.Errorf("policy %s: %w", path, err)
	}
	if _, err := p.Context(); err != nil {
		return p, fmt.Errorf("policy %s: %w", path, err)
	}
	return p, nil
}
