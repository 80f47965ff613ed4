// Package backendtest is the conformance suite of backend.Backend
// implementations: process execution, files, and every built-in tool end
// to end through its Call.
package backendtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/tools"
)

// Run runs the suite. newBackend returns a fresh backend and an empty,
// writable workspace directory inside it (an absolute backend path).
func Run(t *testing.T, newBackend func(t *testing.T) (b backend.Backend, workdir string)) {
	t.Run("Exec", func(t *testing.T) { testExec(t, newBackend) })
	t.Run("ExecTimeoutKillsGroup", func(t *testing.T) { testTimeout(t, newBackend) })
	t.Run("ExecDirEnvStdin", func(t *testing.T) { testDirEnv(t, newBackend) })
	t.Run("ExecMissingProgram", func(t *testing.T) { testMissingProgram(t, newBackend) })
	t.Run("Files", func(t *testing.T) { testFiles(t, newBackend) })
	t.Run("LargeFile", func(t *testing.T) { testLargeFile(t, newBackend) })
	t.Run("Missing", func(t *testing.T) { testMissing(t, newBackend) })
	t.Run("PermissionDenied", func(t *testing.T) { testPermission(t, newBackend) })
	t.Run("Tools", func(t *testing.T) { testTools(t, newBackend) })
	t.Run("NoWorkerSecrets", func(t *testing.T) { testNoWorkerSecrets(t, newBackend) })
}

// SecretVar is the variable testNoWorkerSecrets sets in the worker's
// environment; its value must never appear in a tool's output.
const SecretVar = "WARDEN_TEST_SECRET_API_KEY"

// testNoWorkerSecrets puts a secret into the worker's environment (as a
// model API key would be) and runs the commands a model would use to
// read it, through the Bash tool and through a plain Exec: none may print
// it.
func testNoWorkerSecrets(t *testing.T, nb func(t *testing.T) (backend.Backend, string)) {
	secret := "sk-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-do-not-leak"
	t.Setenv(SecretVar, secret)
	t.Setenv("OPENAI_API_KEY", secret)
	b, wd := nb(t)
	env := &tools.Env{Backend: b, Workdir: wd, State: &tools.State{}}
	var bash tools.Tool
	for _, tl := range tools.Builtins() {
		if tl.Info().Name == "Bash" {
			bash = tl
		}
	}
	for _, cmd := range []string{
		"env", "printenv", "set", "export -p", "echo $" + SecretVar, "echo $OPENAI_API_KEY",
		"cat /proc/self/environ | tr '\\0' '\\n'", "cat /proc/$$/environ", "cat /proc/$PPID/environ",
		"sh -c 'env'", "bash -c 'declare -x'",
	} {
		r := call(t, bash, env, js(map[string]string{"command": cmd}))
		if strings.Contains(r.Content, secret) {
			t.Errorf("Bash %q printed the worker's secret: %q", cmd, r.Content)
		}
	}
	res := sh(t.Context(), t, b, wd, "env; cat /proc/self/environ")
	if bytes.Contains(res.Stdout, []byte(secret)) || bytes.Contains(res.Stderr, []byte(secret)) {
		t.Errorf("Exec printed the worker's secret: %q", res.Stdout)
	}
	// The environment still has what programs need.
	res = sh(t.Context(), t, b, wd, `test -n "$PATH" && test -n "$HOME" && echo ok`)
	if strings.TrimSpace(string(res.Stdout)) != "ok" {
		t.Errorf("PATH or HOME missing from a tool's environment: %q %q", res.Stdout, res.Stderr)
	}
}

func sh(ctx context.Context, t *testing.T, b backend.Backend, dir, script string) backend.ExecResult {
	t.Helper()
	res, err := b.Exec(ctx, backend.ExecRequest{Argv: []string{"/bin/sh", "-c", script}, Dir: dir, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatalf("exec %q: %v", script, err)
	}
	return res
}

func testExec(t *testing.T, nb func(t *testing.T) (backend.Backend, string)) {
	b, wd := nb(t)
	ctx := t.Context()
	cases := []struct {
		script       string
		code         int
		stdout, errs string
	}{
		{"echo out; echo err >&2", 0, "out\n", "err\n"},
		{"exit 3", 3, "", ""},
		{"printf 'a\\0b'; exit 1", 1, "a\x00b", ""},
		{"echo só >&2; exit 255", 255, "", "só\n"},
	}
	for _, c := range cases {
		res := sh(ctx, t, b, wd, c.script)
		if res.ExitCode != c.code || string(res.Stdout) != c.stdout || string(res.Stderr) != c.errs || res.TimedOut {
			t.Errorf("%q: got code %d stdout %q stderr %q timedout %v; want %d %q %q",
				c.script, res.ExitCode, res.Stdout, res.Stderr, res.TimedOut, c.code, c.stdout, c.errs)
		}
	}
	// MaxOutput caps each stream and reports it.
	res, err := b.Exec(ctx, backend.ExecRequest{Argv: []string{"/bin/sh", "-c", "head -c 10000 /dev/zero"}, Dir: wd, MaxOutput: 100})
	if err != nil || len(res.Stdout) != 100 || !res.Truncated {
		t.Errorf("MaxOutput: got %d bytes truncated=%v err=%v; want 100 true nil", len(res.Stdout), res.Truncated, err)
	}
}

func testTimeout(t *testing.T, nb func(t *testing.T) (backend.Backend, string)) {
	b, wd := nb(t)
	ctx := t.Context()
	pidFile := path.Join(wd, "child.pid")
	// A loaded machine may take longer than the timeout to start the
	// shell at all (a sandboxed process starts in namespaces of its
	// own): then no child exists to check, and a longer timeout is tried.
	var raw []byte
	for _, timeout := range []time.Duration{500 * time.Millisecond, 2 * time.Second, 8 * time.Second} {
		start := time.Now()
		res, err := b.Exec(ctx, backend.ExecRequest{
			Argv:    []string{"/bin/sh", "-c", "sleep 30 & echo $! > " + pidFile + "; wait"},
			Dir:     wd,
			Timeout: timeout,
		})
		if err != nil {
			t.Fatalf("exec: %v", err)
		}
		if !res.TimedOut {
			t.Fatalf("TimedOut = false (exit %d)", res.ExitCode)
		}
		if d := time.Since(start); d > timeout+10*time.Second {
			t.Errorf("a timeout of %v took %v to return", timeout, d)
		}
		if raw, err = b.ReadFile(ctx, pidFile); err == nil {
			break
		}
		t.Logf("the shell wrote no pid within a timeout of %v: %v", timeout, err)
	}
	if raw == nil {
		t.Fatal("the shell never started its child before the timeout")
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatalf("pid %q: %v", raw, err)
	}
	// Alive means kill -0 works and the process is not a zombie.
	alive := fmt.Sprintf(`p=%d; if [ -r /proc/$p/stat ]; then s=$(cut -d' ' -f3 /proc/$p/stat); [ "$s" = Z ] && exit 1; exit 0; fi; kill -0 $p 2>/dev/null`, pid)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if sh(ctx, t, b, wd, alive).ExitCode != 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("child sleep (pid %d) survived the timeout", pid)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func testDirEnv(t *testing.T, nb func(t *testing.T) (backend.Backend, string)) {
	b, wd := nb(t)
	ctx := t.Context()
	sub := path.Join(wd, "sub dir")
	if err := b.WriteFile(ctx, path.Join(sub, "f"), nil); err != nil {
		t.Fatal(err)
	}
	res, err := b.Exec(ctx, backend.ExecRequest{
		Argv:  []string{"/bin/sh", "-c", `pwd; echo "$WARDEN_X"; cat`},
		Dir:   sub,
		Env:   []string{"WARDEN_X=héllo wörld"},
		Stdin: []byte("from stdin"),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := sub + "\nhéllo wörld\nfrom stdin"
	if got := string(res.Stdout); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func testMissingProgram(t *testing.T, nb func(t *testing.T) (backend.Backend, string)) {
	b, wd := nb(t)
	res, err := b.Exec(t.Context(), backend.ExecRequest{Argv: []string{"warden-no-such-program-xyz"}, Dir: wd})
	if err == nil && res.ExitCode == 0 {
		t.Errorf("running a missing program succeeded")
	}
}

func testFiles(t *testing.T, nb func(t *testing.T) (backend.Backend, string)) {
	b, wd := nb(t)
	ctx := t.Context()
	binary := make([]byte, 256)
	for i := range binary {
		binary[i] = byte(i)
	}
	cases := []struct {
		name string
		data []byte
	}{
		{"empty.txt", nil},
		{"unicode ünï 文件.txt", []byte("héllo 世界 🎉\r\nline2\n")},
		{"binary.bin", binary},
		{"deep/er/nested/file", []byte("x")},
	}
	for _, c := range cases {
		p := path.Join(wd, c.name)
		if err := b.WriteFile(ctx, p, c.data); err != nil {
			t.Fatalf("write %s: %v", c.name, err)
		}
		got, err := b.ReadFile(ctx, p)
		if err != nil || !bytes.Equal(got, c.data) {
			t.Errorf("%s: round trip got %q, %v", c.name, got, err)
		}
		fi, err := b.Stat(ctx, p)
		if err != nil || fi.Size != int64(len(c.data)) || fi.IsDir || fi.Name != path.Base(c.name) {
			t.Errorf("%s: stat %+v, %v", c.name, fi, err)
		}
	}
	// Overwrite changes size and is visible to Exec.
	p := path.Join(wd, "empty.txt")
	if err := b.WriteFile(ctx, p, []byte("now full")); err != nil {
		t.Fatal(err)
	}
	if res := sh(ctx, t, b, wd, "cat empty.txt"); string(res.Stdout) != "now full" {
		t.Errorf("exec sees %q", res.Stdout)
	}
	entries, err := b.ListDir(ctx, wd)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name)
		if e.Name == "deep" && !e.IsDir {
			t.Errorf("deep is not a directory")
		}
	}
	want := []string{"binary.bin", "deep", "empty.txt", "unicode ünï 文件.txt"}
	if strings.Join(names, "|") != strings.Join(want, "|") {
		t.Errorf("ListDir = %q, want %q (sorted by name)", names, want)
	}
	if fi, err := b.Stat(ctx, path.Join(wd, "deep")); err != nil || !fi.IsDir {
		t.Errorf("stat dir: %+v %v", fi, err)
	}
	if h, err := b.Home(ctx); err != nil || !path.IsAbs(h) {
		t.Errorf("Home = %q, %v", h, err)
	}
}

func testLargeFile(t *testing.T, nb func(t *testing.T) (backend.Backend, string)) {
	b, wd := nb(t)
	ctx := t.Context()
	data := make([]byte, 5<<20)
	for i := range data {
		data[i] = byte(i*7 + i>>13)
	}
	p := path.Join(wd, "large.bin")
	if err := b.WriteFile(ctx, p, data); err != nil {
		t.Fatal(err)
	}
	got, err := b.ReadFile(ctx, p)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("large round trip: %d bytes, %v", len(got), err)
	}
	if res := sh(ctx, t, b, wd, "wc -c < large.bin"); strings.TrimSpace(string(res.Stdout)) != strconv.Itoa(len(data)) {
		t.Errorf("exec sees size %q", res.Stdout)
	}
}

func testMissing(t *testing.T, nb func(t *testing.T) (backend.Backend, string)) {
	b, wd := nb(t)
	ctx := t.Context()
	p := path.Join(wd, "nope", "missing.txt")
	if _, err := b.ReadFile(ctx, p); !errors.Is(err, backend.ErrNotExist) {
		t.Errorf("ReadFile missing: %v, want ErrNotExist", err)
	}
	if _, err := b.Stat(ctx, p); !errors.Is(err, backend.ErrNotExist) {
		t.Errorf("Stat missing: %v, want ErrNotExist", err)
	}
	if _, err := b.ListDir(ctx, path.Join(wd, "nope")); !errors.Is(err, backend.ErrNotExist) {
		t.Errorf("ListDir missing: %v, want ErrNotExist", err)
	}
}

func testPermission(t *testing.T, nb func(t *testing.T) (backend.Backend, string)) {
	b, wd := nb(t)
	ctx := t.Context()
	if res := sh(ctx, t, b, wd, "id -u"); strings.TrimSpace(string(res.Stdout)) == "0" {
		t.Skip("tools run as root on this backend: root bypasses file permission bits, so permission errors cannot be provoked")
	}
	sh(ctx, t, b, wd, "mkdir locked && echo secret > locked/f && echo hidden > unreadable && chmod 000 unreadable && chmod 555 locked")
	t.Cleanup(func() { sh(context.Background(), t, b, wd, "chmod 755 locked; chmod 644 unreadable") })
	if _, err := b.ReadFile(ctx, path.Join(wd, "unreadable")); err == nil || errors.Is(err, backend.ErrNotExist) {
		t.Errorf("ReadFile unreadable: %v, want a permission error", err)
	}
	if err := b.WriteFile(ctx, path.Join(wd, "locked", "new"), []byte("x")); err == nil || errors.Is(err, backend.ErrNotExist) {
		t.Errorf("WriteFile into read-only dir: %v, want a permission error", err)
	}
}

// call runs a tool and returns its collected result.
func call(t *testing.T, tool tools.Tool, env *tools.Env, input string) tools.Result {
	t.Helper()
	if err := tools.Validate(tool.Info(), json.RawMessage(input)); err != nil {
		t.Fatalf("%s input %s: %v", tool.Info().Name, input, err)
	}
	r, err := tools.Collect(tool.Call(t.Context(), env, json.RawMessage(input)))
	if err != nil {
		t.Fatalf("%s: infrastructure error: %v", tool.Info().Name, err)
	}
	return r
}

func mustOK(t *testing.T, r tools.Result, contains string) {
	t.Helper()
	if r.IsError || !strings.Contains(r.Content, contains) {
		t.Errorf("got error=%v %q; want success containing %q", r.IsError, r.Content, contains)
	}
}

func mustFail(t *testing.T, r tools.Result, contains string) {
	t.Helper()
	if !r.IsError || !strings.Contains(r.Content, contains) {
		t.Errorf("got error=%v %q; want an error containing %q", r.IsError, r.Content, contains)
	}
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// toolSuite is the state the Tools subtests share: one backend and
// workspace, the tools' Env (so their read state carries over between
// calls), and the built-in tools by name. The subtests run in order;
// Grep searches the files Glob wrote.
type toolSuite struct {
	b      backend.Backend
	wd     string
	env    *tools.Env
	byName map[string]tools.Tool
	file   string // the file WriteReadEdit works on
}

func testTools(t *testing.T, nb func(t *testing.T) (backend.Backend, string)) {
	b, wd := nb(t)
	ts := &toolSuite{
		b: b, wd: wd, env: &tools.Env{Backend: b, Workdir: wd, State: &tools.State{}},
		byName: map[string]tools.Tool{}, file: path.Join(wd, "src", "main.go"),
	}
	for _, tl := range tools.Builtins() {
		ts.byName[tl.Info().Name] = tl
	}
	t.Run("Bash", ts.testBash)
	t.Run("WriteReadEdit", ts.testWriteReadEdit)
	t.Run("Glob", ts.testGlob)
	t.Run("Grep", ts.testGrep)
	t.Run("Tasks", ts.testTasks)
	t.Run("PowerShell", ts.testPowerShell)
}

// call runs the built-in tool name with input.
func (ts *toolSuite) call(t *testing.T, name, input string) tools.Result {
	t.Helper()
	return call(t, ts.byName[name], ts.env, input)
}

func (ts *toolSuite) testBash(t *testing.T) {
	mustOK(t, ts.call(t, "Bash", `{"command":"pwd; echo hi >&2"}`), ts.wd+"\n\nhi")
	mustFail(t, ts.call(t, "Bash", `{"command":"exit 4"}`), "Exit code: 4")
	mustFail(t, ts.call(t, "Bash", `{"command":"sleep 5","timeout":200}`), "Command timed out after 200ms")
}

func (ts *toolSuite) testWriteReadEdit(t *testing.T) {
	b, wd, file := ts.b, ts.wd, ts.file
	r := ts.call(t, "Write", js(map[string]string{"file_path": file, "content": "package main\n\nfunc main() {}\n"}))
	mustOK(t, r, "has been written successfully (4 lines)")
	if d, _ := r.Metadata["diff"].(string); !strings.Contains(d, "--- /dev/null") || !strings.Contains(d, "+package main") {
		t.Errorf("diff %q", d)
	}
	// Overwriting without a Read fails; so does Edit.
	mustFail(t, ts.call(t, "Write", js(map[string]string{"file_path": file, "content": "x"})), "has not been read yet")
	mustFail(t, ts.call(t, "Edit", js(map[string]string{"file_path": file, "old_string": "main()", "new_string": "run()"})), "you must first read it")

	mustOK(t, ts.call(t, "Read", js(map[string]string{"file_path": file})), "     1\tpackage main\n     2\t\n     3\tfunc main() {}")
	r = ts.call(t, "Edit", js(map[string]string{"file_path": file, "old_string": "func main() {}", "new_string": "func main() { run() }"}))
	mustOK(t, r, "Successfully replaced 1 occurrence in "+file)
	if d, _ := r.Metadata["diff"].(string); !strings.Contains(d, "-func main() {}\n+func main() { run() }") {
		t.Errorf("edit diff %q", d)
	}
	// The edit changed the file: a second edit needs a fresh Read.
	mustFail(t, ts.call(t, "Edit", js(map[string]string{"file_path": file, "old_string": "run()", "new_string": "go()"})), "you must first read it")
	ts.call(t, "Read", js(map[string]string{"file_path": file}))
	// A change made behind the tools' back (through Exec) is noticed.
	sh(t.Context(), t, b, wd, "sleep 0.01; echo '// more' >> src/main.go")
	mustFail(t, ts.call(t, "Write", js(map[string]string{"file_path": file, "content": "x"})), "has not been read yet")
	mustOK(t, ts.call(t, "Read", js(map[string]any{"file_path": file, "offset": 4})), "     4\t// more")
	mustOK(t, ts.call(t, "Write", js(map[string]string{"file_path": file, "content": "package main\n"})), "(2 lines)")
	got, err := b.ReadFile(t.Context(), file)
	if err != nil || string(got) != "package main\n" {
		t.Errorf("file is %q, %v", got, err)
	}
	mustFail(t, ts.call(t, "Read", js(map[string]string{"file_path": path.Join(wd, "nope.txt")})), "File does not exist")
	// A relative path is refused by the schema (before any approval)
	// and, called anyway, by the tool itself.
	rel := js(map[string]string{"file_path": "relative.txt"})
	if err := tools.Validate(ts.byName["Read"].Info(), json.RawMessage(rel)); err == nil {
		t.Error("Read's schema accepted a relative path")
	}
	r, err = tools.Collect(ts.byName["Read"].Call(t.Context(), ts.env, json.RawMessage(rel)))
	if err != nil {
		t.Fatal(err)
	}
	mustFail(t, r, "must be an absolute path")
}

func (ts *toolSuite) testGlob(t *testing.T) {
	b, wd := ts.b, ts.wd
	for i, name := range []string{"a/x.txt", "a/b/y.txt", "c/z.md"} {
		if err := b.WriteFile(t.Context(), path.Join(wd, "g", name), []byte("hello "+name)); err != nil {
			t.Fatal(err)
		}
		// Distinct mtimes: newest last.
		sh(t.Context(), t, b, wd, fmt.Sprintf("touch -d '2020-01-0%d 00:00:00' %q", i+1, path.Join(wd, "g", name)))
	}
	r := ts.call(t, "Glob", `{"pattern":"**/*.txt","path":"g"}`)
	mustOK(t, r, path.Join(wd, "g/a/b/y.txt")+"\n"+path.Join(wd, "g/a/x.txt"))
	mustOK(t, ts.call(t, "Glob", `{"pattern":"*.nothing","path":"g"}`), "No files found matching pattern: *.nothing")
	mustFail(t, ts.call(t, "Glob", `{"pattern":"*","path":"no-such-dir"}`), "Directory not found")
}

func (ts *toolSuite) testGrep(t *testing.T) {
	wd, env := ts.wd, ts.env
	r := ts.call(t, "Grep", `{"pattern":"hello","path":"g","glob":"*.txt"}`)
	mustOK(t, r, path.Join(wd, "g/a/b/y.txt")+"\n"+path.Join(wd, "g/a/x.txt"))
	go_ := tools.Grep{Engine: tools.GrepGo}
	r2 := call(t, go_, env, `{"pattern":"hello","path":"g","glob":"*.txt"}`)
	if r.Content != r2.Content {
		t.Errorf("engines differ: %q vs %q", r.Content, r2.Content)
	}
	mustOK(t, call(t, go_, env, `{"pattern":"HELLO","-i":true,"path":"g","output_mode":"content"}`), path.Join(wd, "g/c/z.md")+":1:hello c/z.md")
	mustOK(t, ts.call(t, "Grep", `{"pattern":"zzz-not-there","path":"g"}`), "No matches found for pattern: zzz-not-there")
}

func (ts *toolSuite) testTasks(t *testing.T) {
	mustOK(t, ts.call(t, "TaskCreate", `{"subject":"Write tests","description":"all of them"}`), "Task (id=1) created successfully: Write tests")
	mustOK(t, ts.call(t, "TaskCreate", `{"subject":"Ship","description":"release"}`), "Task (id=2)")
	mustOK(t, ts.call(t, "TaskUpdate", `{"task_id":"2","add_blocked_by":["1"],"status":"in_progress"}`), "Update task (id=2) blocked_by, status.")
	mustOK(t, ts.call(t, "TaskList", `{}`), "1 [pending] Write tests\n2 [in_progress] Ship [blocked by 1]")
	mustOK(t, ts.call(t, "TaskGet", `{"task_id":"1"}`), "Blocks: #2")
	mustOK(t, ts.call(t, "TaskUpdate", `{"task_id":"1","status":"deleted"}`), "Task (id=1) has been deleted.")
	mustOK(t, ts.call(t, "TaskList", `{}`), "2 [in_progress] Ship")
	mustFail(t, ts.call(t, "TaskGet", `{"task_id":"1"}`), "Task not found")
}

func (ts *toolSuite) testPowerShell(t *testing.T) {
	r := ts.call(t, "PowerShell", `{"command":"Write-Output hi"}`)
	if r.IsError && !strings.Contains(r.Content, "PowerShell is not available") {
		t.Errorf("PowerShell: %q", r.Content)
	}
	if !r.IsError && !strings.Contains(r.Content, "hi") {
		t.Errorf("PowerShell output %q", r.Content)
	}
}
