package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseDefaultsAndOverrides(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte("server:\n  port: 7300\npermission:\n  mode: accept_edits\n  allow: [\"Bash(git status)\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.Port != 7300 || c.Server.UIPort != 8233 || c.Worker.TaskQueue != "warden" {
		t.Errorf("unexpected config %+v", c)
	}
	pc, err := c.Permission.Context()
	if err != nil {
		t.Fatal(err)
	}
	if pc.Mode != "accept_edits" || len(pc.Allow) != 1 || pc.Allow[0].Content != "git status" {
		t.Errorf("permission context %+v", pc)
	}
}

func TestParseToolSettings(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte("tools:\n  defaults: {timeout: 2m, approval_timeout: 1h}\n  per_tool:\n    Bash: {retry: {max_attempts: 3}, escalation: notify}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Tools.Defaults.Timeout != 2*time.Minute || c.Tools.Defaults.ApprovalTimeout != time.Hour ||
		c.Tools.PerTool["Bash"].Retry.MaxAttempts != 3 || c.Tools.PerTool["Bash"].Escalation != "notify" {
		t.Errorf("tools = %+v", c.Tools)
	}
	if _, err := Parse([]byte("tools:\n  per_tool:\n    Bash: {escalation: panic}\n")); err == nil || !strings.Contains(err.Error(), "tools.per_tool.Bash.escalation") {
		t.Errorf("bad escalation error = %v", err)
	}
}

func TestGrepTimeout(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte("tools:\n  grep_timeout: 5s\n"))
	if err != nil || c.Tools.GrepTimeout != 5*time.Second {
		t.Errorf("grep_timeout 5s: %v, %v", c.Tools.GrepTimeout, err)
	}
	if c, err := Parse(nil); err != nil || c.Tools.GrepTimeout != 0 {
		t.Errorf("no grep_timeout: %v, %v (want 0, the tool's default)", c.Tools.GrepTimeout, err)
	}
	if _, err := Parse([]byte("tools:\n  grep_timeout: -1s\n")); err == nil || !strings.Contains(err.Error(), "tools.grep_timeout: -1s is negative") {
		t.Errorf("grep_timeout -1s: %v", err)
	}
}

func TestParseErrorsNameTheKey(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"server:\n  prot: 1\n":                "prot",
		"server:\n  port: 70000\n":            "server.port",
		"server:\n  log_level: loud\n":        "server.log_level",
		"backend:\n  default: k8s\n":          "backend.default",
		"permission:\n  mode: yolo\n":         "yolo",
		"permission:\n  allow: [\"Bash(\"]\n": "allow rule 1",
		"temporal:\n  tls_cert: a.pem\n":      "tls_key",
		"worker:\n  task_queue: \"\"\n":       "worker.task_queue",
	}
	for in, want := range cases {
		_, err := Parse([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) error = %v, want mention of %q", in, err, want)
		}
	}
}

func TestLoadMissingDefaultFileIsDefaults(t *testing.T) {
	t.Chdir(t.TempDir())
	c, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.Port != 7233 {
		t.Errorf("port = %d", c.Server.Port)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "nope.yaml")); err == nil {
		t.Error("explicit missing file: want error")
	}
}

func TestOwnFilesSensitive(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "warden.yaml")
	if err := os.WriteFile(file, []byte("server:\n  data_dir: "+filepath.Join(dir, "data")+"\npermission:\n  sensitive_paths: [\"**/secrets/**\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"**/secrets/**", filepath.Join(dir, "data") + "{,/**}", filepath.Join(dir, "data", "content") + "{,/**}", filepath.Join(dir, "data", "archive") + "{,/**}", file}
	if got := c.Policy().SensitivePaths; !slices.Equal(got, want) {
		t.Errorf("sensitive paths %q, want %q", got, want)
	}
	if got := c.Permission.SensitivePaths; !slices.Equal(got, want[:1]) {
		t.Errorf("Policy changed the config's own section: %q", got)
	}
	pc, err := c.Policy().Context()
	if err != nil || !slices.Contains(pc.Sensitive(), file) || !slices.Contains(pc.Sensitive(), "/etc/shadow") {
		t.Errorf("context sensitive paths %q, %v", pc.Sensitive(), err)
	}
}

// TestShippedConfigLoads loads the repository's temporal-dev.yaml, the
// file the worker reads by default: a key it does not know or a value it
// cannot decode would stop the one-command start.
func TestShippedConfigLoads(t *testing.T) {
	if _, err := Load("../temporal-dev.yaml"); err != nil {
		t.Fatal(err)
	}
}

// TestSandboxSettings: backend.local.sandbox is on or off, the worker's
// own paths are protected, and a bad sandbox rule is refused by name.
func TestSandboxSettings(t *testing.T) {
	t.Parallel()
	if _, err := Parse([]byte("backend:\n  local:\n    sandbox: maybe\n")); err == nil || !strings.Contains(err.Error(), "backend.local.sandbox") {
		t.Errorf("sandbox: maybe: %v", err)
	}
	c, err := Parse([]byte("backend:\n  local:\n    sandbox: \"off\"\n"))
	if err != nil || !c.Backend.Local.SandboxOff() {
		t.Errorf("sandbox off: %v %+v", err, c.Backend.Local)
	}
	if _, err := Parse([]byte("backend:\n  local:\n    sandbox_off: [git_gaurd]\n")); err == nil || !strings.Contains(err.Error(), `backend.local.sandbox_off: "git_gaurd" is not a layer (file_tools, git_guard`) {
		t.Errorf("sandbox_off: [git_gaurd]: %v", err)
	}
	if c, err := Parse([]byte("backend:\n  local:\n    sandbox_off: [git_guard]\n")); err != nil || !c.Backend.Local.LayerOff("git_guard") || c.Backend.Local.SandboxOff() {
		t.Errorf("sandbox_off: [git_guard]: %v %+v", err, c.Backend.Local)
	}
	if _, err := Parse([]byte("permission:\n  sandbox:\n    network_for: [\"Bash(\"]\n")); err == nil || !strings.Contains(err.Error(), "network_for") {
		t.Errorf("bad network_for rule: %v", err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "w.yaml")
	if err := os.WriteFile(file, []byte("server:\n  data_dir: "+filepath.Join(dir, "data")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err = Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if own := c.OwnPaths(); !slices.Contains(own, filepath.Join(dir, "data")) || !slices.Contains(own, file) {
		t.Errorf("own paths %q", own)
	}
	pc, err := c.Policy().Context()
	if err != nil || !slices.Contains(pc.Protected, filepath.Join(dir, "data")+"{,/**}") || !slices.Contains(pc.Protected, file) {
		t.Errorf("protected %q %v", pc.Protected, err)
	}
}

// TestParseNetworkHosts: tools.NAME.network_hosts and the object form of
// permission.sandbox.network_for are read from the file; a bad host
// names its key.
func TestParseNetworkHosts(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte(`tools:
  per_tool:
    Bash: {network_hosts: [registry.npmjs.org, "10.0.0.5:4873"]}
permission:
  sandbox:
    network_for:
      - "Bash(make:*)"
      - {rule: "Bash(npm install:*)", hosts: [npm.example.internal, "*.example.org"]}
`))
	if err != nil {
		t.Fatal(err)
	}
	if h := c.Tools.PerTool["Bash"].NetworkHosts; len(h) != 2 || h[1] != "10.0.0.5:4873" {
		t.Errorf("network_hosts = %q", h)
	}
	nf := c.Permission.Sandbox.NetworkFor
	if len(nf) != 2 || nf[0].Rule != "Bash(make:*)" || len(nf[0].Hosts) != 0 || nf[1].Rule != "Bash(npm install:*)" || len(nf[1].Hosts) != 2 {
		t.Errorf("network_for = %+v", nf)
	}
	for in, key := range map[string]string{
		"tools:\n  per_tool:\n    Bash: {network_hosts: [\"a b\"]}\n":                                   "tools.per_tool.Bash.network_hosts",
		"permission:\n  sandbox:\n    network_for: [{rule: \"Bash(x:*)\", hosts: [\"x:0\"]}]\n":         "sandbox.network_for rule 1",
		"permission:\n  sandbox:\n    network_for: [{rule: \"Bash(x:*)\", hosts: [a.b], match: [x]}]\n": "match",
	} {
		if _, err := Parse([]byte(in)); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%q: error %v, want one naming %s", in, err, key)
		}
	}
}

// TestLocalLimits: backend.local.limits parses sizes, durations and
// counts, keeps the defaults of what it leaves out, turns off what is 0,
// off or none, and refuses a bad value by its key.
func TestLocalLimits(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte("backend:\n  local:\n    limits:\n      processes: 512\n      memory: 512MiB\n      cpu_time: 10m\n      cpus: 1.5\n      tmp: \"off\"\n      write: 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.Backend.Local.Limits.Values()
	if err != nil {
		t.Fatal(err)
	}
	if *v.Processes != 512 || *v.Memory != 512<<20 || *v.CPUTime != 10*time.Minute || *v.CPUs != 1.5 || *v.Tmp != 0 || *v.Write != 0 {
		t.Errorf("values: %d %d %v %v %d %d", *v.Processes, *v.Memory, *v.CPUTime, *v.CPUs, *v.Tmp, *v.Write)
	}
	c, err = Parse([]byte("backend:\n  local:\n    limits:\n      memory: 4GiB\n"))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := c.Backend.Local.Limits.Values(); *v.Memory != 4<<30 || v.Processes != nil || v.Write != nil || v.CPUTime != nil {
		t.Errorf("defaults kept: %+v", v)
	}
	for key, bad := range map[string]string{"memory": "lots", "processes": "-3", "cpu_time": "soon", "cpus": "0.001", "write": "-1"} {
		if _, err := Parse([]byte("backend:\n  local:\n    limits:\n      " + key + ": " + bad + "\n")); err == nil || !strings.Contains(err.Error(), "backend.local.limits."+key) {
			t.Errorf("%s: %s: %v", key, bad, err)
		}
	}
}

// TestSandboxLayersOff: backend.local.sandbox_off takes the known layer
// names, each with a warning, and refuses an unknown one by name.
func TestSandboxLayersOff(t *testing.T) {
	c, err := Parse([]byte("backend:\n  local:\n    sandbox_off: [unix_sockets, keyring]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if w := c.Backend.Local.LayerWarnings(); len(w) != 2 || !strings.Contains(w[0], "unix_sockets") || !strings.Contains(w[1], "keyring") {
		t.Errorf("warnings %q", w)
	}
	if _, err := Parse([]byte("backend:\n  local:\n    sandbox_off: [seccomp]\n")); err == nil || !strings.Contains(err.Error(), `"seccomp" is not a layer`) {
		t.Errorf("unknown layer: %v", err)
	}
}

// backend.local.guard_max_dirs: a number of directories, read as given;
// a negative one is refused by its name.
func TestGuardMaxDirs(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte("backend:\n  local:\n    guard_max_dirs: 20000\n"))
	if err != nil || c.Backend.Local.GuardMaxDirs != 20000 {
		t.Errorf("guard_max_dirs 20000: %+v, %v", c.Backend.Local.GuardMaxDirs, err)
	}
	if _, err := Parse([]byte("backend:\n  local:\n    guard_max_dirs: -1\n")); err == nil || !strings.Contains(err.Error(), "backend.local.guard_max_dirs: negative") {
		t.Errorf("guard_max_dirs -1: %v", err)
	}
}

func TestArchiveDir(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		s    Server
		want string
	}{
		{Server{DataDir: "/d"}, "/d/archive"},
		{Server{DataDir: "/d", Archive: "/a"}, "/a"},
		{Server{DataDir: "/d", Archive: "off"}, ""},
		{Server{}, ""},
		{Server{Archive: "/a"}, "/a"},
	} {

		if got := c.s.ArchiveDir(); got != c.want {
			t.Errorf("%+v: ArchiveDir = %q, want %q", c.s, got, c.want)
		}
	}
}

// An archive outside the data directory is one of the worker's own
// directories: sensitive and protected like the data directory.
func TestArchiveIsOwn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := Config{Server: Server{DataDir: filepath.Join(dir, "data"), Archive: filepath.Join(dir, "records")}}
	want := filepath.Join(dir, "records") + "{,/**}"
	if got := c.Policy().SensitivePaths; !slices.Contains(got, want) {
		t.Errorf("sensitive paths %q lack the archive %q", got, want)
	}
	if got := c.OwnPatterns(); !slices.Contains(got, want) {
		t.Errorf("own patterns %q lack the archive %q", got, want)
	}
}

// The audit stream's files outside the data directory are the worker's
// own: the file sink, each rotation it keeps, the state file and the
// state's copy (which the stream writes first).
func TestAuditStreamFilesAreOwn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sink, state := filepath.Join(dir, "log", "audit.jsonl"), filepath.Join(dir, "lib", "stream.json")
	c := Config{Server: Server{DataDir: filepath.Join(dir, "data")}, Audit: Audit{Stream: AuditStream{Sink: sink, Keep: 2, State: state}}}
	own := c.OwnPatterns()
	for _, want := range []string{sink, sink + ".1", sink + ".2", state, state + ".copy"} {
		if !slices.Contains(own, want) {
			t.Errorf("own patterns %q lack %s", own, want)
		}
	}
	if slices.Contains(own, sink+".3") {
		t.Errorf("own patterns %q hold %s, past the 2 rotations kept", own, sink+".3")
	}
}

// TestParseSecrets: backend.secrets parses, and is refused with the
// sandbox off, with docker enabled, without from_env or hosts, and when
// backend.env names the same variable.
func TestParseSecrets(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte("backend:\n  secrets:\n    GH_TOKEN: {from_env: GH_TOKEN, hosts: [api.github.com], header: Authorization, format: \"Bearer %s\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s := c.Backend.Secrets["GH_TOKEN"]; s.FromEnv != "GH_TOKEN" || len(s.Hosts) != 1 || s.Format != "Bearer %s" {
		t.Errorf("secrets = %+v", c.Backend.Secrets)
	}
	for in, want := range map[string]string{
		"backend:\n  local: {sandbox: off}\n  secrets:\n    T: {from_env: T, hosts: [h]}\n":             "sandbox is off",
		"backend:\n  docker: {enabled: true, image: x}\n  secrets:\n    T: {from_env: T, hosts: [h]}\n": "only by the local backend",
		"backend:\n  secrets:\n    T: {hosts: [h]}\n":                                                   "backend.secrets.T.from_env",
		"backend:\n  secrets:\n    T: {from_env: T}\n":                                                  "backend.secrets.T.hosts",
		"backend:\n  env: [T]\n  secrets:\n    T: {from_env: T, hosts: [h]}\n":                          "also in backend.env",
		"backend:\n  secrets:\n    T: {from_env: T, hosts: [h], format: \"Bearer %s\"}\n":               "needs header",
	} {
		if _, err := Parse([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) error = %v, want mention of %q", in, err, want)
		}
	}
}
