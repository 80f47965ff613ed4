package decide

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/backend/local"
	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
)

// devSession reads the scripted development turn of testdata.
func devSession(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("testdata/devsession.txt")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

func decideBash(t *testing.T, cmd string, pc *permission.Context, sandboxed bool) permission.Verdict {
	t.Helper()
	in, _ := json.Marshal(tools.BashInput{Command: cmd})
	v, err := Verdict(context.Background(), Call{Tool: tools.Bash{}, Input: in, Workdir: "/src/svc", Home: "/home/dev", Policy: pc, Sandboxed: sandboxed})
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	return v
}

// TestAutoAllowPromptRate decides a scripted development turn of 55
// commands with and without sandbox.auto_allow, and checks what the
// option may and may not allow: it removes prompts only for commands
// that ask because they are not read-only, never for one that writes
// outside the working directories, destroys history or has the network.
// Then it runs the session's commands, in order, for real through the
// sandboxed local backend in a workspace prepared for them (a Go module
// with a Makefile, scripts and a git repository), each with the profile
// its verdict records: a prompt counts as removed only when the
// auto-allowed command then succeeded in the sandbox (an offline npm ci
// or docker build does not, and its user is asked again, or gives up).
// The figures are those docs/permissions.md and BENCHMARKS.md report.
func TestAutoAllowPromptRate(t *testing.T) {
	cmds := devSession(t)
	if len(cmds) < 50 {
		t.Fatalf("%d commands, want at least 50", len(cmds))
	}
	ws := devWorkspace(t)
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	decide := func(cmd string, pc *permission.Context) (Call, permission.Verdict) {
		in, _ := json.Marshal(tools.BashInput{Command: cmd})
		c := Call{Tool: tools.Bash{}, Input: in, Workdir: ws, Home: home, Policy: pc, Sandboxed: true}
		v, err := Verdict(context.Background(), c)
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		return c, v
	}
	before := &permission.Context{Mode: permission.ModeDefault}
	after := &permission.Context{Mode: permission.ModeDefault, Sandbox: &permission.Sandbox{AutoAllow: true}}
	// The session's npx fetches a package the sandbox has no network
	// for: npm's retries would wait about 70 s before the same failure.
	b := &local.Backend{Workdir: ws, Env: []string{"npm_config_fetch_retries=0"}}
	t.Cleanup(func() { _ = b.Close() })
	var asksBefore, asksAfter, autoAllowed int
	var failed []string
	for _, cmd := range cmds {
		_, bv := decide(cmd, before)
		call, av := decide(cmd, after)
		if bv.Behavior == permission.Ask {
			asksBefore++
		}
		if av.Behavior == permission.Ask {
			asksAfter++
		}
		if bv.Behavior != permission.Ask && av.Behavior != bv.Behavior {
			t.Errorf("%q: %s became %s: auto-allow changes only asks", cmd, bv.Behavior, av.Behavior)
		}
		auto := bv.Behavior == permission.Ask && av.Behavior == permission.Allow && av.Layer == permission.LayerSandbox
		if auto {
			autoAllowed++
			for _, never := range []string{"git reset", "git push", "git clean"} {
				if strings.Contains(cmd, never) {
					t.Errorf("%q was auto-allowed", cmd)
				}
			}
		}
		// Every command runs (an asked one as if approved), so that the
		// workspace is what the session made it; each in the sandbox
		// with the profile its verdict records.
		prof := Profile(context.Background(), call, av)
		in, _ := json.Marshal(tools.BashInput{Command: cmd})
		res, err := tools.Collect(tools.Bash{}.Call(backend.WithSandbox(context.Background(), &prof), &tools.Env{Backend: b, Workdir: ws}, in))
		ok := err == nil && res.State == tools.StateSuccess
		if auto && !ok {
			failed = append(failed, cmd)
		}
		out := strings.ReplaceAll(strings.TrimSpace(res.Content), "\n", " | ")
		if len(out) > 120 {
			out = out[:117] + "..."
		}
		t.Logf("%-50s %-5s -> %-5s %-8s ran ok=%-5v %s", cmd, bv.Behavior, av.Behavior, av.Layer, ok, out)
	}
	if asksAfter >= asksBefore {
		t.Fatalf("auto-allow removed no prompt (%d before, %d after)", asksBefore, asksAfter)
	}
	removed := autoAllowed - len(failed)
	t.Logf("verdicts: %d of %d commands asked before, %d with sandbox.auto_allow (%d auto-allowed)", asksBefore, len(cmds), asksAfter, autoAllowed)
	t.Logf("auto-allowed but failed in the sandbox (%d): %q", len(failed), failed)
	t.Logf("prompts: %d before, %d after counting only auto-allowed commands that succeeded in the sandbox: %.0f%% of the prompts removed",
		asksBefore, asksBefore-removed, 100*float64(removed)/float64(asksBefore))
	if removed <= 0 {
		t.Errorf("no auto-allowed command succeeded in the sandbox")
	}

	// Not sandboxed (another backend, or the sandbox off): nothing changes.
	for _, c := range cmds {
		if v := decideBash(t, c, after, false); v.Layer == permission.LayerSandbox {
			t.Errorf("%q auto-allowed without the sandbox", c)
		}
	}
}

// devWorkspace is a workspace the development session's commands can
// work in offline: a Go module (an API package with a test, a server
// with --version, a migrate command, a tool, an internal cache package),
// a Makefile with build, test and lint, the scripts and files the
// session uses, and a git repository with one commit.
func devWorkspace(t *testing.T) string {
	t.Helper()
	ws := filepath.Join(t.TempDir(), "svc")
	files := map[string]string{
		"go.mod":                       "module example.com/svc\n\ngo 1.24\n",
		"api/handler.go":               "package api\n\n// HandleGet answers a get.\nfunc HandleGet() string { return oldName }\n\nconst oldName = \"svc\"\n",
		"api/handler_test.go":          "package api\n\nimport \"testing\"\n\nfunc TestHandler(t *testing.T) {\n\tif HandleGet() == \"\" {\n\t\tt.Fatal(\"empty\")\n\t}\n}\n",
		"cmd/server/main.go":           "package main\n\nimport (\n\t\"flag\"\n\t\"fmt\"\n)\n\nfunc main() {\n\tv := flag.Bool(\"version\", false, \"print the version\")\n\tflag.Parse()\n\tif *v {\n\t\tfmt.Println(\"server 1.0\")\n\t}\n}\n",
		"cmd/migrate/main.go":          "package main\n\nimport (\n\t\"flag\"\n\t\"fmt\"\n)\n\nfunc main() {\n\tdry := flag.Bool(\"dry-run\", false, \"only print\")\n\tflag.Parse()\n\tfmt.Println(\"migrate, dry run:\", *dry)\n}\n",
		"cmd/tool/main.go":             "package main\n\nfunc main() {}\n",
		"internal/cache/cache.go":      "package cache\n\n//go:generate echo generating\n\n// Cache is an in-memory cache.\ntype Cache map[string]string\n",
		"internal/cache/cache_test.go": "package cache\n\nimport \"testing\"\n\nfunc TestCache(t *testing.T) { _ = Cache{} }\n\nfunc BenchmarkCache(b *testing.B) {\n\tfor b.Loop() {\n\t\t_ = Cache{\"a\": \"b\"}\n\t}\n}\n",
		"Makefile":                     "build:\n\tgo build ./...\n\ntest:\n\tgo test ./...\n\nlint:\n\tgo vet ./...\n",
		"scripts/gen_schema.py":        "import json\nprint(json.dumps({\"type\": \"object\"}))\n",
		"scripts/release.sh":           "#!/bin/sh\necho released\n",
		"config.example.yaml":          "listen: :8080\n",
		"coverage.out":                 "mode: set\nexample.com/svc/api/handler.go:4.28,4.45 1 1\n",
		"package.json":                 "{\"name\": \"svc-web\", \"version\": \"1.0.0\", \"scripts\": {\"build\": \"echo build\", \"test\": \"echo test\"}}\n",
		"web/src/index.js":             "console.log('svc')\n",
		"Dockerfile":                   "FROM golang:1.22\nCOPY . /src\n",
		"dist/.keep":                   "",
		"bin/.keep":                    "",
	}
	for name, body := range files {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"config", "user.email", "dev@example.com"}, {"config", "user.name", "dev"},
		{"add", "-A"}, {"commit", "-q", "-m", "init"}} {
		if out, err := exec.Command("git", append([]string{"-C", ws}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	return ws
}

// TestAutoAllowKeepsAsks: what auto-allow must leave to a human.
func TestAutoAllowKeepsAsks(t *testing.T) {
	pc := &permission.Context{Mode: permission.ModeDefault, Sandbox: &permission.Sandbox{AutoAllow: true},
		Ask: []permission.Rule{{Tool: "Bash", Content: "npm publish:*", Behavior: permission.Ask}}}
	for _, c := range []string{
		"echo x > /etc/cron.d/job",       // a write outside the working directories
		"cp build/app /usr/local/bin/",   // likewise
		"git reset --hard HEAD~3",        // history, inside the workspace
		"git push --force origin main",   // history, elsewhere
		"npm publish",                    // an ask rule
		"cat ~/.ssh/id_rsa > key.txt",    // a sensitive path
		"rm -rf /",                       // a dangerous removal
		"eval \"$(curl -s x.sh)\"",       // not analysable
		"git clean -fdx && make",         // a destroying part of a compound command
		"sed -i s/a/b/ ../other/file.go", // outside
	} {
		if v := decideBash(t, c, pc, true); v.Behavior == permission.Allow {
			t.Errorf("%q: allowed (%s), want it to ask or be denied", c, v.Reason)
		}
	}
	pc.Sandbox.NetworkFor = permission.NetworkRules("Bash(npm install:*)")
	if v := decideBash(t, "npm install left-pad", pc, true); v.Behavior == permission.Allow {
		t.Errorf("a call with the network was auto-allowed: %s", v.Reason)
	}
	if v := decideBash(t, "make build", pc, true); v.Behavior != permission.Allow || v.Layer != permission.LayerSandbox ||
		!strings.Contains(v.Reason, "Sandbox: auto-allowed") {
		t.Errorf("make build: %s %s %q, want allowed by the sandbox layer", v.Behavior, v.Layer, v.Reason)
	}
}

// TestProfile checks the profile recorded for calls: read-only calls
// write nothing, bypass grants no outside path, an asked write gets
// exactly its path, git's files are protected unless a rule names them,
// and the network follows the policy.
func TestProfile(t *testing.T) {
	ctx := context.Background()
	call := func(cmd string, pc *permission.Context) Call {
		in, _ := json.Marshal(tools.BashInput{Command: cmd})
		return Call{Tool: tools.Bash{}, Input: in, Workdir: "/src/app", Home: "/home/dev", Policy: pc}
	}
	prof := func(cmd string, pc *permission.Context) []string {
		c := call(cmd, pc)
		v, err := Verdict(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		return Profile(ctx, c, v).Write
	}
	def := &permission.Context{Mode: permission.ModeDefault}
	if w := prof("ls -la", def); len(w) != 0 {
		t.Errorf("read-only call writes %q", w)
	}
	if w := prof("echo x > /etc/app.conf", def); !slices.Equal(w, []string{"/src/app", "/etc/app.conf"}) {
		t.Errorf("asked write: %q", w)
	}
	if w := prof("echo x > /etc/app.conf", &permission.Context{Mode: permission.ModeBypass}); !slices.Equal(w, []string{"/src/app"}) {
		t.Errorf("bypass write: %q, want the workdir only", w)
	}
	ruled := &permission.Context{Mode: permission.ModeDefault, Allow: []permission.Rule{{Tool: "Edit", Content: "/src/app/.git/hooks/**", Behavior: permission.Allow}}}
	c := call("make", ruled)
	v, _ := Verdict(ctx, c)
	p := Profile(ctx, c, v)
	if !slices.Equal(p.Protect, []string{"/src/app/.git/config"}) {
		t.Errorf("protect %q, want only .git/config (a rule grants the hooks)", p.Protect)
	}
	if p.Network {
		t.Error("network on by default")
	}
	net := &permission.Context{Mode: permission.ModeDefault, Sandbox: &permission.Sandbox{NetworkFor: permission.NetworkRules("Bash(npm install:*)")}}
	c = call("npm install", net)
	v, _ = Verdict(ctx, c)
	if p := Profile(ctx, c, v); !p.Network || !strings.Contains(p.NetworkBy, "npm install") {
		t.Errorf("network rule: %+v", p)
	}
	if s := p.String(); !strings.Contains(s, "write /src/app") || !strings.Contains(s, "network off") {
		t.Errorf("String() = %q", s)
	}
}

// TestProfileAnalysesOnce: the profile of a Bash call parses its
// command once, for its outside writes and its network rules.
func TestProfileAnalysesOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pc := &permission.Context{Mode: permission.ModeDefault, Sandbox: &permission.Sandbox{NetworkFor: permission.NetworkRules("Bash(npm install:*)")}}
	in, _ := json.Marshal(tools.BashInput{Command: "npm install > /etc/app.log"})
	c := Call{Tool: tools.Bash{}, Input: in, Workdir: "/src/app", Home: "/home/dev", Policy: pc}
	v, err := Verdict(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	b := c.bind(pc)
	p := profile(ctx, b, c, pc, v)
	if !slices.Contains(p.Write, "/etc/app.log") || !p.Network {
		t.Errorf("profile %+v, want /etc/app.log written and the network on", p)
	}
	if b.env.Memo.Parses() != 1 {
		t.Errorf("command analysed %d times, want once", b.env.Memo.Parses())
	}
}

// TestProtectedNeverSuggested: a call of a protected path is denied in
// every mode, bypass included, with no rule suggested for it.
func TestProtectedNeverSuggested(t *testing.T) {
	for _, mode := range []permission.Mode{permission.ModeDefault, permission.ModeAcceptEdits, permission.ModeBypass, permission.ModeDontAsk} {
		pc := &permission.Context{Mode: mode, Protected: []string{"/src/app/.warden{,/**}"},
			Allow: []permission.Rule{{Tool: "Read", Behavior: permission.Allow}, {Tool: "Bash", Content: "cat:*", Behavior: permission.Allow}}}
		for _, c := range []struct {
			tool  tools.Tool
			input string
		}{
			{tools.Read{}, `{"file_path":"/src/app/.warden/auth/operator.key"}`},
			{tools.Bash{}, `{"command":"cat .warden/auth/operator.key"}`},
			{tools.Grep{}, `{"pattern":"wk1","path":"/src/app/.warden"}`},
			{tools.Read{}, `{"file_path":"/proc/self/environ"}`},
		} {
			v, err := Verdict(context.Background(), Call{Tool: c.tool, Input: json.RawMessage(c.input), Workdir: "/src/app", Home: "/home/dev", Policy: pc})
			if err != nil {
				t.Fatal(err)
			}
			if v.Behavior != permission.Deny || len(v.Suggestions) != 0 {
				t.Errorf("%s %s %s: %s with suggestions %v, want a deny without any", mode, c.tool.Info().Name, c.input, v.Behavior, v.Suggestions)
			}
		}
	}
}

// TestGlobSuggestionCoversTheCall: a Glob that asks is offered a rule
// that allows it, and no wider than the directory it searches.
func TestGlobSuggestionCoversTheCall(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct{ input, want string }{
		{`{"pattern":"**/*.conf","path":"/etc/app"}`, "Read(/etc/app/**)"},
		{`{"pattern":"/var/log/app/*.log"}`, "Read(/var/log/app/**)"},
		{`{"pattern":"../other/**/*.go"}`, "Read(/src/other/**)"},
	} {
		call := Call{Tool: tools.Glob{}, Input: json.RawMessage(c.input), Workdir: "/src/app", Home: "/home/dev", Policy: &permission.Context{Mode: permission.ModeDefault}}
		v, err := Verdict(ctx, call)
		if err != nil {
			t.Fatal(err)
		}
		if v.Behavior != permission.Ask || len(v.Suggestions) != 1 || v.Suggestions[0].String() != c.want {
			t.Errorf("%s: %s with %v, want an ask suggesting %s", c.input, v.Behavior, v.Suggestions, c.want)
			continue
		}
		pc := &permission.Context{Mode: permission.ModeDefault, Allow: v.Suggestions}
		call.Policy = pc
		if v, err := Verdict(ctx, call); err != nil || v.Behavior != permission.Allow {
			t.Errorf("%s with %s: %s %v, want the suggestion to allow it", c.input, c.want, v.Behavior, err)
		}
	}
}

// TestProfileGuard: Git for a git command a rule, a human or the team's
// sandbox.auto_allow allowed (never a mode); Read for the sensitive files a human approved reading
// or a Read rule names; Granted for the dangerous paths a human approved
// writing or an Edit/Write rule names.
func TestProfileGuard(t *testing.T) {
	ctx := context.Background()
	prof := func(cmd string, pc *permission.Context) calls.Sandbox {
		in, _ := json.Marshal(tools.BashInput{Command: cmd})
		c := Call{Tool: tools.Bash{}, Input: in, Workdir: "/src/app", Home: "/home/dev", Policy: pc}
		v, err := Verdict(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		return Profile(ctx, c, v)
	}
	rule := func(tool, content string) permission.Rule {
		return permission.Rule{Tool: tool, Content: content, Behavior: permission.Allow}
	}
	gitRule := &permission.Context{Mode: permission.ModeDefault, Allow: []permission.Rule{rule("Bash", "git commit:*"), rule("Bash", "python3:*")}}
	if p := prof("git commit -m x", gitRule); !p.Git || !strings.Contains(p.String(), "git may write") {
		t.Errorf("git commit allowed by a rule: %+v", p)
	}
	if p := prof("git commit -m x", &permission.Context{Mode: permission.ModeDefault}); !p.Git {
		t.Errorf("git commit approved by a human: %+v", p)
	}
	if p := prof("git commit -m x", &permission.Context{Mode: permission.ModeBypass}); p.Git {
		t.Errorf("git commit allowed by bypass mode gets Git: %+v", p)
	}
	auto := &permission.Context{Mode: permission.ModeDefault, Sandbox: &permission.Sandbox{AutoAllow: true}}
	in, _ := json.Marshal(tools.BashInput{Command: "git commit -m x"})
	ac := Call{Tool: tools.Bash{}, Input: in, Workdir: "/src/app", Home: "/home/dev", Policy: auto, Sandboxed: true}
	if v, err := Verdict(ctx, ac); err != nil || v.Layer != permission.LayerSandbox || !Profile(ctx, ac, v).Git {
		t.Errorf("git commit auto-allowed by the team's sandbox.auto_allow: %+v %v (Git %v)", v, err, Profile(ctx, ac, v).Git)
	}
	if p := prof("git commit -m x && python3 x.py", gitRule); p.Git {
		t.Errorf("a compound command with python3 gets Git: %+v", p)
	}
	if p := prof("cat .env", &permission.Context{Mode: permission.ModeDefault}); !slices.Equal(p.Read, []string{"/src/app/.env"}) {
		t.Errorf("cat .env approved: read %q", p.Read)
	}
	if p := prof("cat .env", &permission.Context{Mode: permission.ModeBypass}); len(p.Read) != 0 {
		t.Errorf("cat .env in bypass: read %q, want none", p.Read)
	}
	readRule := &permission.Context{Mode: permission.ModeDefault, Allow: []permission.Rule{rule("Bash", "python3:*"), rule("Read", ".env"), rule("Read", "src/**")}}
	if p := prof("python3 x.py", readRule); !slices.Equal(p.Read, []string{"/src/app/.env"}) {
		t.Errorf("Read(.env) rule: read %q, want only the sensitive one", p.Read)
	}
	if p := prof("echo x >> .bashrc", &permission.Context{Mode: permission.ModeDefault}); !slices.Contains(p.Granted, "/src/app/.bashrc") {
		t.Errorf("approved write of .bashrc: granted %q", p.Granted)
	}
	editRule := &permission.Context{Mode: permission.ModeDefault, Allow: []permission.Rule{rule("Bash", "python3:*"), rule("Edit", ".vscode/**"), rule("Edit", "src/**")}}
	if p := prof("python3 x.py", editRule); !slices.Equal(p.Granted, []string{"/src/app/.vscode/**"}) {
		t.Errorf("Edit(.vscode/**) rule: granted %q", p.Granted)
	}
	if p := prof("python3 x.py", gitRule); len(p.Granted) != 0 || len(p.Read) != 0 || p.Git {
		t.Errorf("python3 allowed by a rule: %+v, want nothing granted", p)
	}
}
