package decide

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite testdata/corpus-verdicts.jsonl.gz from the code as it is")

// corpusPolicies are the policies every corpus call is decided under: each
// mode with a rule set that exercises every layer, and the sandbox's
// auto-allow with network rules.
func corpusPolicies(t *testing.T) []struct {
	name      string
	pc        permission.Context
	sandboxed bool
} {
	rules := permission.Policy{
		Allow: []string{"Bash(go test:*)", "Bash(npm run:*)", "Bash(make:*)", "Read(/etc/hosts)", "Edit(/w/notes/**)"},
		Ask:   []string{"Bash(git push:*)", "Bash(curl:*)", "Write(/w/proj/deploy/**)"},
		Deny:  []string{"Bash(rm -rf:*)", "Bash(dd:*)", "Read(/w/proj/secrets/**)"},
	}
	var out []struct {
		name      string
		pc        permission.Context
		sandboxed bool
	}
	for _, m := range []permission.Mode{permission.ModeDefault, permission.ModeExplore, permission.ModeAcceptEdits, permission.ModeBypass, permission.ModeDontAsk} {
		p := rules
		p.Mode = m
		pc, err := p.Context()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, struct {
			name      string
			pc        permission.Context
			sandboxed bool
		}{string(m), pc, false})
	}
	p := rules
	p.Sandbox = &permission.Sandbox{AutoAllow: true, NetworkFor: []permission.NetworkRule{{Rule: "Bash(npm install:*)", Hosts: []string{"registry.npmjs.org"}}}}
	pc, err := p.Context()
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, struct {
		name      string
		pc        permission.Context
		sandboxed bool
	}{"auto_allow", pc, true})
	return out
}

// corpusCalls are the calls of the corpus: every command of the shell
// analyser's corpus and of the scripted development session as Bash, and
// the file tools on paths inside, outside and at the sensitive and
// dangerous places.
func corpusCalls(t *testing.T) [][2]string {
	var calls [][2]string
	for _, f := range []string{"../permission/shell/testdata/commands.txt", "testdata/devsession.txt"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			line := sc.Text()
			if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
				continue
			}
			in, _ := json.Marshal(map[string]string{"command": line})
			calls = append(calls, [2]string{"Bash", string(in)})
		}
	}
	paths := []string{"/w/proj/a.go", "a.go", "/w/proj/.env", "/w/proj/.git/hooks/pre-commit", "/w/proj/.git/config",
		"/w/proj/.bashrc", "/w/proj/.vscode/settings.json", "/w/proj/secrets/k", "/w/proj/deploy/x.yaml", "/w/notes/n.md",
		"/etc/passwd", "/etc/hosts", "/etc/shadow", "~/.ssh/id_rsa", "/home/u/.bashrc", "/w/proj/../other/x", "/proc/self/environ", "/tmp/x"}
	for _, p := range paths {
		r, _ := json.Marshal(map[string]string{"file_path": p})
		w, _ := json.Marshal(map[string]string{"file_path": p, "content": "x"})
		e, _ := json.Marshal(map[string]string{"file_path": p, "old_string": "a", "new_string": "b"})
		g, _ := json.Marshal(map[string]string{"pattern": "x", "path": p})
		calls = append(calls, [2]string{"Read", string(r)}, [2]string{"Write", string(w)}, [2]string{"Edit", string(e)}, [2]string{"Grep", string(g)})
	}
	for _, pat := range []string{"**/*.go", "/etc/*", "~/.ssh/*", ".e*"} {
		in, _ := json.Marshal(map[string]string{"pattern": pat})
		calls = append(calls, [2]string{"Glob", string(in)})
	}
	for _, cmd := range []string{"Get-ChildItem", "Remove-Item -Recurse C:\\x"} {
		in, _ := json.Marshal(map[string]string{"command": cmd})
		calls = append(calls, [2]string{"PowerShell", string(in)})
	}
	return calls
}

// TestCorpusVerdicts is the differential test of the decision: every
// call of the corpus, under every policy of corpusPolicies, gets the
// verdict (behaviour, layer, rule, reason, message), the sandbox profile
// and the network grants recorded in testdata/corpus-verdicts.jsonl.gz (one JSON line a call), which
// the code before the decision moved to its own package wrote.
func TestCorpusVerdicts(t *testing.T) {
	ctx := context.Background()
	byName := map[string]tools.Tool{}
	for _, tl := range tools.Builtins() {
		byName[tl.Info().Name] = tl
	}
	var got bytes.Buffer
	for _, p := range corpusPolicies(t) {
		for _, c := range corpusCalls(t) {
			tl, ok := byName[c[0]]
			if !ok {
				t.Fatalf("no tool %s", c[0])
			}
			pc := p.pc
			call := Call{Tool: tl, Input: json.RawMessage(c[1]), Workdir: "/w/proj", Home: "/home/u", Policy: &pc, Sandboxed: p.sandboxed}
			v, invalid := VerdictOrAsk(ctx, call)
			line := map[string]any{"policy": p.name, "tool": c[0], "input": json.RawMessage(c[1])}
			if invalid != "" {
				line["invalid"] = invalid
			} else {
				line["verdict"] = v
				line["profile"] = Profile(ctx, call, v)
				line["network"] = Network(ctx, call, v)
			}
			b, err := json.Marshal(line)
			if err != nil {
				t.Fatal(err)
			}
			got.Write(b)
			got.WriteByte('\n')
		}
	}
	const golden = "testdata/corpus-verdicts.jsonl.gz"
	if *updateCorpus {
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		zw.Write(got.Bytes())
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, z.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := readGzip(t, golden)
	gl, wl := strings.Split(got.String(), "\n"), strings.Split(string(want), "\n")
	if len(gl) != len(wl) {
		t.Fatalf("%d verdicts, the recorded corpus has %d", len(gl), len(wl))
	}
	diffs := 0
	for i := range gl {
		if gl[i] != wl[i] {
			diffs++
			if diffs <= 5 {
				t.Errorf("line %d differs:\n got  %s\n want %s", i+1, gl[i], wl[i])
			}
		}
	}
	if diffs > 0 {
		t.Fatalf("%d of %d verdicts differ from the recorded corpus", diffs, len(gl))
	}
	t.Logf("%d verdicts as recorded", len(gl)-1)
}

func readGzip(t *testing.T, name string) []byte {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
