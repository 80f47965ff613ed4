package shell

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/wardenhq/warden/permission"
)

// bashTool adapts the analyser to permission.Tool for engine-level tests.
type bashTool struct{ cfg Config }

func (bashTool) Name() string { return "Bash" }

func cmdOf(input json.RawMessage) string {
	var in struct {
		Command string `json:"command"`
	}
	_ = json.Unmarshal(input, &in)
	return in.Command
}

func (b bashTool) CheckPermissions(_ context.Context, input json.RawMessage, pc *permission.Context) (permission.Decision, error) {
	return Analyze(cmdOf(input), b.cfg).Check(pc.Mode), nil
}

func (bashTool) CheckReadOnly(_ context.Context, input json.RawMessage) (bool, error) {
	return Analyze(cmdOf(input), Config{}).ReadOnly(), nil
}

func (bashTool) MatchRule(ctx context.Context, content string, input json.RawMessage) (bool, error) {
	b, _ := permission.RuleBehaviorFrom(ctx)
	return Analyze(cmdOf(input), Config{}).MatchRule(content, b), nil
}

func (bashTool) GenerateSuggestions(_ context.Context, input json.RawMessage) ([]permission.Rule, error) {
	return Analyze(cmdOf(input), Config{}).Suggestions(), nil
}

func evalCmd(t *testing.T, pc *permission.Context, cmd string) permission.Decision {
	t.Helper()
	in, _ := json.Marshal(map[string]string{"command": cmd})
	d, err := permission.Evaluate(context.Background(), pc, bashTool{cfg: testCfg}, in)
	if err != nil {
		t.Fatalf("Evaluate(%q): %v", cmd, err)
	}
	return d.Decision
}

// FuzzAnalyze checks the analyser's invariants: it never panics; a
// command it could not analyse is never read-only, never allowed by the
// tool check and never matches an allow rule; and prefixing "true && "
// to a command the engine denies never makes it allowed, in any mode
// (a blank command, which runs nothing, is exempt).
func FuzzAnalyze(f *testing.F) {
	for _, s := range []string{
		"ls -la", "rm -rf /", "sudo rm x", "echo $(id)", "npm run build && curl x | sh",
		"FOO=1 rm -rf ~", "bash -c 'rm x'", "find . -exec rm {} ;", "cat <<EOF\n$(x)\nEOF",
		"echo 'unterminated", "xargs rm", "sed -i 's/a/b/' f", "git branch -D x", "(cd / && rm -r tmp)",
		"eval rm", "env -i rm x", "timeout 5 rm x", "`rm x`", "${x:-$(rm y)}", "rm$IFS-rf /",
	} {
		f.Add(s)
	}
	if fh, err := os.Open("testdata/commands.txt"); err == nil {
		sc := bufio.NewScanner(fh)
		for i := 0; sc.Scan() && i < 100; i++ {
			f.Add(sc.Text())
		}
		fh.Close()
	}
	rules := []permission.Rule{
		{Tool: "Bash", Content: "rm:*", Behavior: permission.Deny},
		{Tool: "Bash", Content: "curl:*", Behavior: permission.Deny},
		{Tool: "Bash", Content: "sudo:*", Behavior: permission.Deny},
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		a := Analyze(cmd, testCfg)
		// Accesses and reasons never panic, and a read-only command
		// always has a reason otherwise.
		_ = a.Accesses()
		if (a.NotReadOnly() == "") != a.ReadOnly() {
			t.Fatalf("%q: ReadOnly and NotReadOnly disagree", cmd)
		}
		if a.Failure() != "" {
			if a.ReadOnly() {
				t.Fatalf("%q: failed analysis (%s) is read-only", cmd, a.Failure())
			}
			if d := a.Check(permission.ModeAcceptEdits); d.Behavior == permission.Allow {
				t.Fatalf("%q: failed analysis (%s) allowed", cmd, a.Failure())
			}
			if a.MatchRule("*", permission.Allow) {
				t.Fatalf("%q: failed analysis (%s) matches an allow rule", cmd, a.Failure())
			}
		}
		if len(a.units) == 0 {
			return // nothing runs: "true && " adds the only command
		}
		for _, mode := range []permission.Mode{permission.ModeDefault, permission.ModeAcceptEdits, permission.ModeBypass, permission.ModeDontAsk} {
			pc := &permission.Context{Mode: mode, Deny: rules, Allow: []permission.Rule{{Tool: "Bash", Content: "*", Behavior: permission.Allow}}}
			if evalCmd(t, pc, cmd).Behavior != permission.Deny {
				continue
			}
			for _, w := range []string{"true && " + cmd, "true; " + cmd} {
				if d := evalCmd(t, pc, w); d.Behavior == permission.Allow {
					t.Fatalf("mode %s: %q is denied but %q is allowed (%s)", mode, cmd, w, d.Reason)
				}
			}
		}
	})
}

func loadCorpus(b testing.TB) []string {
	fh, err := os.Open("testdata/commands.txt")
	if err != nil {
		b.Fatal(err)
	}
	defer fh.Close()
	var cmds []string
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		if sc.Text() != "" {
			cmds = append(cmds, sc.Text())
		}
	}
	if len(cmds) < 500 {
		b.Fatalf("corpus has %d commands, want at least 500", len(cmds))
	}
	return cmds
}

// BenchmarkAnalyze measures one full analysis and check per command over
// the corpus in testdata/commands.txt.
// BenchmarkAnalyze is the analyser's throughput on the corpus: parse,
// analyse and check each command with an Analyzer (parsers reused), as a
// long-running caller does.
func BenchmarkAnalyze(b *testing.B) {
	cmds := loadCorpus(b)
	var z Analyzer
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a := z.Analyze(cmds[i%len(cmds)], testCfg)
		_ = a.Check(permission.ModeAcceptEdits)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commands/s")
}

// BenchmarkAnalyzeFresh is BenchmarkAnalyze with a new parser per
// command (the package-level Analyze).
func BenchmarkAnalyzeFresh(b *testing.B) {
	cmds := loadCorpus(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a := Analyze(cmds[i%len(cmds)], testCfg)
		_ = a.Check(permission.ModeAcceptEdits)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commands/s")
}
