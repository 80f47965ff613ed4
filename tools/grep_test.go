package tools

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/backend/local"
)

// grepTree writes a tree exercising ripgrep's filtering and formatting.
func grepTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"a.go":                 "package a\n\nfunc Foo() {}\n\n// foo bar\nvar x = 1\n\nfunc Bar() { Foo() }\n",
		"b.txt":                "one\ntwo foo\nthree\nfour\nfive\nsix\nseven foo\neight\nnine\nten\nFOO eleven\n",
		"crlf.txt":             "alpha foo\r\nbeta\r\n",
		"long.txt":             "short foo\n" + strings.Repeat("y", 600) + " foo\n" + strings.Repeat("z", 600) + "\nend\n",
		"sub/c.go":             "package sub\n// Foo is here\nfunc Foo() {}\n",
		"sub/deeper/d.md":      "# foo\ntext\n",
		"sub/deeper/e.py":      "def foo():\n    return 1\n",
		".hidden/h.txt":        "hidden foo\n",
		".dotfile":             "foo in dotfile\n",
		".git/config":          "foo in git dir\n",
		"ignored/x.txt":        "foo ignored\n",
		"keep.log":             "foo log\n",
		"drop.log":             "foo drop\n",
		".gitignore":           "ignored/\n*.log\n!keep.log\n",
		"sub/.ignore":          "e.py\n",
		"bin.dat":              "foo\x00binary\n",
		"multi.txt":            "start\nfoo\nbar\nend\nfoo bar\n",
		"sp ace/na:me.txt":     "foo with colon name\n",
		"nonl.txt":             "last foo",
		"empty.txt":            "",
		"sub/deeper/Makefile":  "all:\n\techo foo\n",
		"unicode/ünï.txt":      "héllo foo wörld\n",
		"ctx.txt":              "1\n2\nfoo\n4\n5\n6\n7\nfoo\n9\nfoo\n11\n12\n13\n14\n15\n16\n17\nfoo\n",
		"sub/deeper/f.test.js": "const foo = 1\n",
		// An Arabic-Indic digit and a no-break space: \d and \s are
		// Unicode classes in ripgrep.
		"unicode/digits.txt": "\u0663 foo\u00a0bar\n",
		"lines.txt":          "foo\n\n\nfoo\n",
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func runGrep(t *testing.T, g Grep, env *Env, input string) Result {
	t.Helper()
	r, err := Collect(g.Call(context.Background(), env, json.RawMessage(input)))
	if err != nil {
		t.Fatalf("grep %s: %v", input, err)
	}
	return r
}

// haveRipgrep reports whether rg is on PATH. Where WARDEN_REQUIRE_RG is
// set (scripts/test.sh installs ripgrep and sets it) a missing rg fails
// the test instead, so the engines are compared wherever CI runs.
func haveRipgrep(t *testing.T) bool {
	t.Helper()
	if _, err := exec.LookPath("rg"); err != nil {
		if os.Getenv("WARDEN_REQUIRE_RG") != "" {
			t.Fatalf("WARDEN_REQUIRE_RG is set but rg is not on PATH: %v", err)
		}
		return false
	}
	return true
}

// TestGrepEnginesAgree runs each input through ripgrep and the Go engine
// on the same tree: the outputs must be identical, and for patterns
// ripgrep refuses both must be tool errors (their messages differ).
func TestGrepEnginesAgree(t *testing.T) {
	t.Parallel()
	if !haveRipgrep(t) {
		t.Skip("rg is not installed (apt-get install -y ripgrep; WARDEN_REQUIRE_RG=1 fails instead)")
	}
	dir := grepTree(t)
	env := &Env{Backend: local.New(dir), Workdir: dir}
	inputs := []string{
		`{"pattern":"foo"}`,
		`{"pattern":"foo","output_mode":"content"}`,
		`{"pattern":"foo","output_mode":"count"}`,
		`{"pattern":"foo","-i":true,"output_mode":"content"}`,
		`{"pattern":"foo","output_mode":"content","-n":false}`,
		`{"pattern":"foo","output_mode":"content","-C":2}`,
		`{"pattern":"foo","output_mode":"content","-A":1}`,
		`{"pattern":"foo","output_mode":"content","-B":3,"path":"ctx.txt"}`,
		`{"pattern":"foo","output_mode":"content","context":1,"path":"ctx.txt"}`,
		`{"pattern":"foo","output_mode":"count","path":"b.txt"}`,
		`{"pattern":"foo","path":"b.txt"}`,
		`{"pattern":"foo","glob":"*.go"}`,
		`{"pattern":"foo","glob":"*.{go,md}","output_mode":"content"}`,
		`{"pattern":"foo","glob":"*.txt,*.md"}`,
		`{"pattern":"foo","glob":"!*.txt"}`,
		`{"pattern":"foo","glob":"sub/**"}`,
		`{"pattern":"foo","type":"go","-i":true}`,
		`{"pattern":"foo","type":"py"}`,
		`{"pattern":"foo","type":"make"}`,
		`{"pattern":"foo","type":"js"}`,
		`{"pattern":"^func \\w+","output_mode":"content"}`,
		`{"pattern":"foo$","output_mode":"content"}`,
		`{"pattern":"foo\\nbar","multiline":true,"output_mode":"content"}`,
		`{"pattern":"start.*end","multiline":true,"output_mode":"count"}`,
		`{"pattern":"foo.bar","multiline":true,"output_mode":"content","-A":1}`,
		`{"pattern":"foo","path":"sub"}`,
		`{"pattern":"foo","output_mode":"content","head_limit":3}`,
		`{"pattern":"foo","output_mode":"content","head_limit":3,"offset":2}`,
		`{"pattern":"foo","head_limit":0}`,
		`{"pattern":"nothing-matches-this"}`,
		`{"pattern":"-foo"}`,
		`{"pattern":"y+ foo","output_mode":"content"}`,
		`{"pattern":"end","output_mode":"content","-B":1,"path":"long.txt"}`,
		// Perl classes are Unicode in ripgrep, ASCII in Go's regexp.
		`{"pattern":"w\\w+d","output_mode":"content"}`,
		`{"pattern":"[^\\w ]","output_mode":"content","path":"unicode"}`,
		`{"pattern":"\\d foo","output_mode":"content"}`,
		`{"pattern":"foo\\sbar","output_mode":"content"}`,
		`{"pattern":"foo\\Sbar","output_mode":"content"}`,
		`{"pattern":"\\W{2}","output_mode":"count","path":"unicode"}`,
		// Outside multiline mode each line is searched on its own.
		`{"pattern":"foo\\z","output_mode":"content"}`,
		`{"pattern":"\\Afoo","output_mode":"count"}`,
		`{"pattern":"\\Aone\\ntwo","output_mode":"content","multiline":true}`,
		// An empty file has no lines; nor is there one after the last
		// line terminator.
		`{"pattern":"^$","output_mode":"count"}`,
		`{"pattern":"^$","multiline":true,"output_mode":"count"}`,
	}
	rg := Grep{Engine: GrepRipgrep}
	gp := Grep{Engine: GrepGo}
	for _, in := range inputs {
		t.Run(in, func(t *testing.T) {
			a, b := runGrep(t, rg, env, in), runGrep(t, gp, env, in)
			if a.Content != b.Content || a.IsError != b.IsError {
				t.Errorf("rg:\n%s\n\ngo:\n%s", a.Content, b.Content)
			}
		})
	}
	for _, in := range []string{`{"pattern":"(?=foo)"}`, `{"pattern":"\\Qfoo\\E"}`, `{"pattern":"(foo"}`} {
		t.Run(in, func(t *testing.T) {
			a, b := runGrep(t, rg, env, in), runGrep(t, gp, env, in)
			if !a.IsError || !b.IsError || !strings.Contains(a.Content, "regex parse error") || !strings.Contains(b.Content, "regex parse error") {
				t.Errorf("want a regex parse error from both engines\nrg:\n%s\n\ngo:\n%s", a.Content, b.Content)
			}
		})
	}
}

func TestGrepGo(t *testing.T) {
	t.Parallel()
	dir := grepTree(t)
	env := &Env{Backend: local.New(dir), Workdir: dir}
	g := Grep{Engine: GrepGo}
	p := func(s string) string { return filepath.Join(dir, s) }
	cases := []struct {
		input string
		want  string
		isErr bool
	}{
		{`{"pattern":"foo","path":"sub","output_mode":"count"}`, p("sub/deeper/Makefile") + ":1\n" + p("sub/deeper/d.md") + ":1\n" + p("sub/deeper/f.test.js") + ":1", false},
		{`{"pattern":"foo","output_mode":"content","-B":1,"path":"ctx.txt","head_limit":4}`,
			"2-2\n3:foo\n--\n7-7\n\n[Showing results with pagination = limit: 4]", false},
		{`{"pattern":"Foo","path":"a.go","output_mode":"content"}`, "3:func Foo() {}\n8:func Bar() { Foo() }", false},
		{`{"pattern":"(","path":"a.go"}`, "regex parse error", true},
		{`{"pattern":"foo","type":"nosuchtype"}`, "unrecognized file type: nosuchtype", true},
		{`{"pattern":"foo","path":"missing"}`, "Path does not exist", true},
		{`{"pattern":"foo","output_mode":"lines"}`, "output_mode must be", true},
		{`{"pattern":"foo","path":"a\u0000b"}`, "NUL", true},
		{`{"pattern":"foo","head_limit":-1}`, "must not be negative", true},
		// ripgrep's \w and \d are Unicode classes; \A and \z are a line's
		// start and end outside multiline mode; an empty file has no line.
		{`{"pattern":"w\\w+d","path":"unicode","output_mode":"count"}`, p("unicode/ünï.txt") + ":1", false},
		{`{"pattern":"^\\d foo","path":"unicode","output_mode":"count"}`, p("unicode/digits.txt") + ":1", false},
		{`{"pattern":"foo\\z","path":"b.txt","output_mode":"count"}`, "2", false},
		{`{"pattern":"^$","path":"empty.txt"}`, "No matches found", false},
		{`{"pattern":"^$","path":"lines.txt","multiline":true,"output_mode":"count"}`, "2", false},
		{`{"pattern":"\\Qfoo\\E","path":"b.txt"}`, "unrecognized escape sequence", true},
	}
	for _, c := range cases {
		r := runGrep(t, g, env, c.input)
		if r.IsError != c.isErr || !strings.Contains(r.Content, c.want) {
			t.Errorf("%s: got error=%v\n%s\nwant error=%v containing\n%s", c.input, r.IsError, r.Content, c.isErr, c.want)
		}
	}
	// The ignored and binary files are never listed.
	r := runGrep(t, g, env, `{"pattern":"foo","head_limit":0}`)
	for _, bad := range []string{"ignored/x.txt", "drop.log", ".git/config", "bin.dat", "sub/deeper/e.py"} {
		if strings.Contains(r.Content, bad) {
			t.Errorf("listing contains %s:\n%s", bad, r.Content)
		}
	}
	for _, good := range []string{"keep.log", ".hidden/h.txt", ".dotfile", "nonl.txt"} {
		if !strings.Contains(r.Content, good) {
			t.Errorf("listing lacks %s:\n%s", good, r.Content)
		}
	}
}

func TestGrepEngineProbe(t *testing.T) {
	t.Parallel()
	dir := grepTree(t)
	env := &Env{Backend: local.New(dir), Workdir: dir}
	g := Grep{Probes: &ProbeCache{}}
	r := runGrep(t, g, env, `{"pattern":"foo"}`)
	want := "go"
	if _, err := exec.LookPath("rg"); err == nil {
		want = "rg"
	}
	if r.Metadata["engine"] != want {
		t.Errorf("engine %v, want %s", r.Metadata["engine"], want)
	}
}

// TestGrepTiming compares the engines on a large tree; run with
// WARDEN_GREP_BENCH=/some/dir.
func TestGrepTiming(t *testing.T) {
	t.Parallel()
	dir := os.Getenv("WARDEN_GREP_BENCH")
	if dir == "" {
		t.Skip("set WARDEN_GREP_BENCH to a directory to time the engines")
	}
	env := &Env{Backend: local.New(dir), Workdir: dir}
	for _, in := range []string{`{"pattern":"func [A-Z]\\w+Handler","head_limit":0}`, `{"pattern":"TODO","output_mode":"count","head_limit":0}`} {
		var out [2]string
		var took [2]time.Duration
		for i, g := range []Grep{{Engine: GrepRipgrep, Timeout: 5 * time.Minute}, {Engine: GrepGo, Timeout: 5 * time.Minute}} {
			start := time.Now()
			out[i] = runGrep(t, g, env, in).Content
			took[i] = time.Since(start)
		}
		t.Logf("%s: rg %v, go %v, ratio go/rg %.1f, same output %v (%d bytes)", in, took[0], took[1],
			float64(took[1])/float64(took[0]), out[0] == out[1], len(out[0]))
	}
}

// TestGrepSkipsSensitiveFiles: a search of the workspace does not read
// .env files, keys or credentials inside it (reading them asks; a search
// must not read them silently). Naming one as the path still searches it
// once approved: decide's TestApprovedGrepReadsSensitiveFile.
func TestGrepSkipsSensitiveFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, content := range map[string]string{
		"app.go":         "const token = \"TOKEN_MARKER public\"\n",
		".env":           "API_KEY=TOKEN_MARKER secret\n",
		"sub/.env.local": "DB=TOKEN_MARKER secret\n",
		"certs/tls.key":  "TOKEN_MARKER secret key\n",
		".aws/config":    "TOKEN_MARKER secret aws\n",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := &Env{Backend: local.New(dir), Workdir: dir}
	engines := []Grep{{Engine: GrepGo}}
	if haveRipgrep(t) {
		engines = append(engines, Grep{Engine: GrepRipgrep})
	}
	for _, g := range engines {
		for _, in := range []string{`{"pattern":"TOKEN_MARKER","output_mode":"content"}`, `{"pattern":"TOKEN_MARKER","glob":"*"}`} {
			r := runGrep(t, g, env, in)
			if strings.Contains(r.Content, "secret") || strings.Contains(r.Content, ".env") || !strings.Contains(r.Content, "app.go") {
				t.Errorf("%s %s:\n%s", g.Engine, in, r.Content)
			}
		}
	}
}
