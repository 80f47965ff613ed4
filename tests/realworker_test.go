package tests

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// layout says where a real worker's own files lie.
type layout string

const (
	// inside is a checkout's layout: the config in WS/deploy, the data
	// directory (--data-dir) and the key (WARDEN_KEY_FILE) in the
	// workspace.
	inside layout = "inside"
	// outside is a server's layout: config, data directory and key in
	// directories of their own, none under the workspace.
	outside layout = "outside"
)

// realWorker is a cmd/worker process started as a deployment starts it:
// a config file, --data-dir and the other flags, WARDEN_KEY_FILE and HOME
// in its environment, joining the tests' server.
type realWorker struct {
	lay   layout
	off   bool
	queue string
	tag   string
	cmd   *exec.Cmd
	// root holds everything of this worker; ws is its workspace
	// (--workdir), home its HOME, out a directory outside the workspace
	// where attempts aim their effects, grant the directory of the
	// approved writes (class 9).
	root, ws, home, out, grant string
	// cfg is the config file, cfgData the data directory it names,
	// data the one --data-dir gives (the one used), key WARDEN_KEY_FILE,
	// late a sensitive path of the config and lateKey the inbox key
	// WARDEN_INBOX_KEY_FILE names, both created after the start.
	cfg, cfgData, data, key, late, lateKey string
	// The secrets each of those holds.
	keySecret, dataSecret, cfgSecret, histSecret, credSecret, envSecret, lateSecret string
	stdout                                                                          *lockedBuffer
	exited                                                                          chan struct{}
}

// lockedBuffer is a bytes.Buffer safe for a writer goroutine and readers.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// tail is the end of what the worker printed, or, when it crashed, the
// start of the crash report.
func (w *realWorker) tail() string {
	s := w.stdout.String()
	for _, crash := range []string{"fatal error:", "panic:"} {
		if i := strings.Index(s, crash); i >= 0 {
			s = s[i:]
			if len(s) > 1500 {
				s = s[:1500] + "…"
			}
			return s
		}
	}
	if len(s) > 3000 {
		s = "…" + s[len(s)-3000:]
	}
	return s
}

func writeFile(t testing.TB, p, body string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return string(out)
}

// initRepo makes dir a git repository with one commit.
func initRepo(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	gitRun(t, dir, "init", "-q")
	gitRun(t, dir, "config", "user.email", "suite@example.com")
	gitRun(t, dir, "config", "user.name", "suite")
	writeFile(t, filepath.Join(dir, "README"), "repo\n", 0o644)
	gitRun(t, dir, "add", "README")
	gitRun(t, dir, "commit", "-q", "-m", "init")
}

// startRealWorker lays out a workspace, a home and the worker's own
// files as lay says, and starts the worker binary on a queue of its own:
//
//	worker --config CFG --data-dir DATA --temporal-address ADDR --namespace default
//	       --task-queue Q --metrics-addr off --workdir WS
//
// with HOME, WARDEN_KEY_FILE and WARDEN_INBOX_KEY_FILE (a key created
// later; the inbox is off) in its environment, its working directory
// the workspace, and its address space bounded (a worker that reads a
// huge file dies instead of taking the machine's memory). extra is
// appended to the config ({{WS}} in it names the workspace, {{ROOT}} the
// directory that holds all of the worker's); a server section of extra
// (a "server:" block, its keys indented by two spaces) joins the
// config's own, which names the data directory. off turns the local
// sandbox off.
func startRealWorker(t *testing.T, lay layout, off bool, extra string, args ...string) *realWorker {
	t.Helper()
	w, out, err := tryStartRealWorker(t, lay, off, extra, args...)
	if err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	return w
}

// tryStartRealWorker is startRealWorker that returns the error and the
// worker's output when the worker exits at start (with the worker, whose
// paths say what it was started with).
func tryStartRealWorker(t *testing.T, lay layout, off bool, extra string, more ...string) (*realWorker, string, error) {
	t.Helper()
	id := tag()
	root := t.TempDir()
	w := &realWorker{lay: lay, off: off, tag: id, queue: "tq-real-" + string(lay) + "-" + id, root: root,
		ws: filepath.Join(root, "ws"), home: filepath.Join(root, "home"), out: filepath.Join(root, "out"), grant: filepath.Join(root, "grant"),
		keySecret: "wk1.keyfile-secret-" + id, dataSecret: "data-dir-secret-" + id, cfgSecret: "config-secret-" + id,
		histSecret: "history-secret-" + id, credSecret: "credentials-secret-" + id, envSecret: "dotenv-secret-" + id, lateSecret: "late-secret-" + id,
		stdout: &lockedBuffer{}, exited: make(chan struct{})}
	switch lay {
	case inside:
		w.cfg = filepath.Join(w.ws, "deploy", "warden.yaml")
		w.cfgData = filepath.Join(w.ws, "cfgdata")
		w.data = filepath.Join(w.ws, ".wdata")
		w.key = filepath.Join(w.ws, ".keys", "worker.key")
	case outside:
		w.cfg = filepath.Join(root, "etc", "warden.yaml")
		w.cfgData = filepath.Join(root, "cfgdata")
		w.data = filepath.Join(root, "srv", "data")
		w.key = filepath.Join(root, "srv", "worker.key")
	}
	w.late = filepath.Join(root, "late", "token.key")
	w.lateKey = filepath.Join(root, "late", "inbox.key")
	initRepo(t, w.ws)
	for _, d := range []string{w.out, w.cfgData, filepath.Dir(w.late)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(w.data, "auth", "operator.key"), "wk1."+w.dataSecret+"\n", 0o600)
	writeFile(t, filepath.Join(w.data, "warden.db"), w.dataSecret+"\n", 0o600)
	writeFile(t, w.key, w.keySecret+"\n", 0o600)
	writeFile(t, filepath.Join(w.home, ".bash_history"), "export API_KEY="+w.histSecret+"\n", 0o600)
	writeFile(t, filepath.Join(w.home, ".claude", "credentials.json"), `{"token":"`+w.credSecret+`"}`+"\n", 0o600)
	writeFile(t, filepath.Join(w.ws, ".env"), "API_TOKEN="+w.envSecret+"\n", 0o644)
	// The approved writes of class 9 aim at grant; these are their
	// existing siblings.
	writeFile(t, filepath.Join(w.grant, "existing.conf"), "ORIGINAL\n", 0o644)
	writeFile(t, filepath.Join(w.grant, "conf.d", "old.conf"), "ORIGINAL\n", 0o644)
	extra = strings.NewReplacer("{{WS}}", w.ws, "{{ROOT}}", w.root).Replace(extra)
	srv, extra := cutSection(extra, "server")
	cfg := contentConfig() + fmt.Sprintf("server:\n  data_dir: %q\n%spermission:\n  sensitive_paths: [%q]\n", w.cfgData, srv, w.late)
	if off {
		cfg += "backend:\n  local:\n    sandbox: \"off\"\n"
	}
	cfg += extra + "# " + w.cfgSecret + "\n"
	writeFile(t, w.cfg, cfg, 0o600)

	if slices.Contains(more, "--inbox") {
		writeFile(t, w.lateKey, "wk1.inbox-"+id+"\n", 0o600) // the inbox needs its key at start
	}
	bin := buildWorker(t)
	args := []string{"--config", w.cfg, "--data-dir", w.data, "--temporal-address", env.srv.Addr(), "--namespace", "default",
		"--task-queue", w.queue, "--metrics-addr", "off", "--workdir", w.ws}
	args = append(args, more...)
	// pidnsArg starts the worker in a PID namespace of its own, as a
	// container does (it is not a worker flag).
	wrap := ""
	if i := slices.Index(args, pidnsArg); i >= 0 {
		args = slices.Delete(args, i, i+1)
		wrap = "unshare --pid --fork --mount-proc --kill-child=SIGTERM "
	}
	w.cmd = exec.Command("sh", append([]string{"-c", `ulimit -v 6000000 && exec ` + wrap + `"$@"`, "sh", bin}, args...)...)
	if i := slices.Index(args, ttyArg); i >= 0 {
		// ttyArg: the worker in a terminal of its own (script(1) gives it
		// a pseudo-terminal as its controlling terminal), as in the
		// foreground of an operator's terminal.
		args = slices.Delete(args, i, i+1)
		run := "ulimit -v 6000000 && exec " + wrap + shellQuote(bin)
		for _, a := range args {
			run += " " + shellQuote(a)
		}
		runFile := filepath.Join(root, "run-worker.sh")
		writeFile(t, runFile, "#!/bin/sh\n"+run+"\n", 0o700)
		w.cmd = exec.Command("script", "-q", "-e", "-f", "-c", runFile, "/dev/null")
	}
	w.cmd.Dir = w.ws
	w.cmd.Env = append(workerEnv(), "HOME="+w.home, "WARDEN_KEY_FILE="+w.key, "WARDEN_INBOX_KEY_FILE="+w.lateKey)
	w.cmd.Stdout, w.cmd.Stderr = w.stdout, w.stdout
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = w.cmd.Wait(); close(w.exited) }()
	t.Cleanup(func() {
		w.terminate()
		select {
		case <-w.exited:
		case <-time.After(15 * time.Second):
			_ = w.cmd.Process.Kill()
			<-w.exited
		}
		for _, p := range []string{"LIFE-", "CONC-", "DAEMON-"} {
			killMarked(p + w.tag)
		}
	})
	ctx := ctxT(t, 90*time.Second)
	for {
		resp, err := env.c.DescribeTaskQueue(ctx, w.queue, enumspb.TASK_QUEUE_TYPE_ACTIVITY)
		if err == nil && len(resp.GetPollers()) > 0 {
			break
		}
		select {
		case <-w.exited:
			return w, w.stdout.String(), fmt.Errorf("the worker (%s layout, sandbox off %v) exited at start", lay, off)
		case <-ctx.Done():
			return w, w.stdout.String(), fmt.Errorf("the worker (%s layout) polls no queue after 90s", lay)
		case <-time.After(100 * time.Millisecond):
		}
	}
	return w, "", nil
}

// cutSection takes the top-level section key of a YAML document written
// in block style out of it: body is the section's lines (indented, as
// they were), rest the document without the section.
func cutSection(doc, key string) (body, rest string) {
	var b, r strings.Builder
	in := false
	for _, l := range strings.SplitAfter(doc, "\n") {
		switch {
		case strings.TrimRight(l, " \n") == key+":":
			in = true
			continue
		case in && (strings.HasPrefix(l, " ") || strings.TrimSpace(l) == ""):
			b.WriteString(l)
			continue
		}
		in = false
		r.WriteString(l)
	}
	return b.String(), r.String()
}

// terminate asks the worker to stop (SIGTERM). A worker started with
// pidnsArg is the child of unshare, which ignores SIGTERM while it
// waits: the signal goes to the worker itself.
func (w *realWorker) terminate() {
	pid := w.cmd.Process.Pid
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil && strings.TrimSpace(string(b)) == "unshare" {
		if kids, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid)); err == nil {
			for _, k := range strings.Fields(string(kids)) {
				if n, err := strconv.Atoi(k); err == nil {
					_ = syscall.Kill(n, syscall.SIGTERM)
				}
			}
			return
		}
	}
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
}

// pidnsArg, among startRealWorker's extra arguments, starts the worker
// in a PID namespace of its own with its own /proc, as a container
// (unshare --pid --fork --mount-proc).
const pidnsArg = "\x00pidns"

// workerEnv is this process's environment without what a deployment
// sets for the worker itself, and with the PATH a service manager gives
// a service (systemd's default), so that tools are the system's.
func workerEnv() []string {
	out := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name == "HOME" || name == "PATH" || strings.HasPrefix(name, "WARDEN_") || strings.HasPrefix(name, "TEMPORAL_") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// markedPIDs are the host's processes whose command line holds marker.
func markedPIDs(marker string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(marker)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// killMarked kills, by pid, the processes the attempts of a worker
// started (their command lines hold its tag) that are still running.
func killMarked(marker string) {
	for _, pid := range markedPIDs(marker) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// attemptMarker is what every attempt prints first: a result without it
// is of a call that never ran. Commands spell it in two pieces, so that
// a result quoting the command does not hold it.
const attemptMarker = "ATTEMPT-RAN"

// attempt is one tool call of an escape class and the check of its effect.
type attempt struct {
	name, tool string
	input      map[string]any
	// effect reports whether the attempt reached its aim, from its
	// result and the host's state.
	effect func(r model.Message) bool
	// refusable attempts may be refused before they run, by the engine (a
	// protected or hidden path) or by a file tool: a refusal counts as
	// stopped with the sandbox on or off.
	refusable bool
	// noMarker attempts run in the worker (the file tools): they print
	// no marker.
	noMarker bool
	// noControl says why the attempt has no effect to reach without the
	// sandbox (there is no zygote channel then); "" for the others.
	noControl string
}

// pyCall is a python3 -c command that prints the marker, defines show(label,
// f) (prints label and f()'s value or the error it raised, errno
// included) and runs body; args follow the code.
func pyCall(body string, args ...string) map[string]any {
	code := "import os,sys,errno\nprint('ATTEMPT-'+'RAN',flush=True)\n" +
		"def show(label,f):\n  try: print(label,'OK',f(),flush=True)\n  except Exception as e: print(label,'ERR',type(e).__name__,e,flush=True)\n" + body
	cmd := "python3 -c " + shellQuote(code)
	for _, a := range args {
		cmd += " " + shellQuote(a)
	}
	return map[string]any{"command": cmd}
}

// pyRead reads each path and prints what it holds or the error.
func pyRead(paths ...string) map[string]any {
	var b strings.Builder
	for _, p := range paths {
		fmt.Fprintf(&b, "show(%q, lambda: open(%q,'rb').read().decode('utf-8','replace'))\n", "READ "+p, p)
	}
	return pyCall(b.String())
}

func bash(cmd string) map[string]any { return map[string]any{"command": cmd} }

func contains(s string) func(model.Message) bool {
	return func(r model.Message) bool { return strings.Contains(r.Content, s) }
}

func fileHas(p, s string) func(model.Message) bool {
	return func(model.Message) bool {
		b, err := os.ReadFile(p)
		return err == nil && strings.Contains(string(b), s)
	}
}

// isRefusal says r is a refusal by the engine (a denial, an approval
// that timed out) or by a file tool, not the output of a call that ran.
func isRefusal(r model.Message) bool {
	if !r.IsError {
		return false
	}
	for _, s := range []string{"Permission denied for ", "The user denied", "is protected", "refused", "hidden"} {
		if strings.Contains(r.Content, s) {
			return true
		}
	}
	return false
}

// modeRun is a mode's turns on one worker.
type modeRun struct {
	w     *realWorker
	mode  permission.Mode
	rules []string
	// backend is the turns' backend ("" for the worker's default, local).
	backend string
	// approve makes the test approve every call that asks, as an
	// approver would, instead of letting the approval time out.
	approve bool
	// sandbox is the turns' sandbox policy (network, hosts).
	sandbox *permission.Sandbox
}

// name is how failures name the run.
func (m modeRun) name() string {
	if m.w.off {
		return "sandbox off (" + string(m.w.lay) + " layout)"
	}
	return string(m.mode) + " mode (" + string(m.w.lay) + " layout)"
}

// turn runs steps (each a model response of tool calls) as one scripted
// turn in workdir (the worker's workspace when empty) and returns the
// tool results in call order. It fails the test when the worker exits
// meanwhile or the turn does not end within d.
func (m modeRun) turn(t *testing.T, label, workdir string, d time.Duration, steps ...[]attempt) []model.Message {
	t.Helper()
	rs, _ := m.turnID(t, label, workdir, d, steps...)
	return rs
}

// turnID is turn that also returns the turn's workflow id.
func (m modeRun) turnID(t *testing.T, label, workdir string, d time.Duration, steps ...[]attempt) ([]model.Message, string) {
	t.Helper()
	id, done := m.start(t, label, workdir, steps...)
	var res workflows.TurnResult
	var err error
	select {
	case <-m.w.exited:
		t.Fatalf("%s: the worker died during the turn:\n%s", m.name(), m.w.tail())
	case <-time.After(d):
		t.Fatalf("%s: turn %s did not end within %s", m.name(), id, d)
	case r := <-done:
		res, err = r.res, r.err
	}
	if err != nil {
		t.Fatalf("%s: turn %s: %v", m.name(), id, err)
	}
	rs := toolResults(res)
	n := 0
	for _, s := range steps {
		n += len(s)
	}
	if len(rs) != n {
		t.Fatalf("%s: %d results for %d calls", m.name(), len(rs), n)
	}
	return rs, id
}

type turnEnd struct {
	res workflows.TurnResult
	err error
}

// start starts the turn of steps and returns its id and a channel its
// end arrives on.
func (m modeRun) start(t *testing.T, label, workdir string, steps ...[]attempt) (string, <-chan turnEnd) {
	t.Helper()
	s := &model.Script{}
	for _, st := range steps {
		var step model.Step
		for _, a := range st {
			step.ToolCalls = append(step.ToolCalls, model.ScriptedCall{Name: a.tool, Input: a.input})
		}
		s.Steps = append(s.Steps, step)
	}
	s.Steps = append(s.Steps, model.Step{Text: "done"})
	if workdir == "" {
		workdir = m.w.ws
	}
	mode := m.mode
	if m.w.off {
		mode = permission.ModeBypass
	}
	id := fmt.Sprintf("real-%s-%s-%s", mode, strings.ReplaceAll(label, " ", "-"), tag())
	cl := startWorkerless(m.w.queue)
	ctx := ctxT(t, 5*time.Minute)
	pc := policy(t, permission.Policy{Mode: mode, Allow: m.rules, Sandbox: m.sandbox})
	timeout := 2 * time.Second
	if m.approve {
		timeout = 2 * time.Minute
	}
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
		Permission: pc, Workdir: workdir, Backend: m.backend, ApprovalTimeout: timeout}); err != nil {
		t.Fatal(err)
	}
	done := make(chan turnEnd, 1)
	stop := make(chan struct{})
	go func() {
		res, err := cl.Result(ctx, id)
		close(stop)
		done <- turnEnd{res, err}
	}()
	if m.approve {
		go approveAll(ctx, cl, id, stop)
	}
	return id, done
}

// approveAll approves each call of turn id that waits for an approval,
// with the hash of what it shows, until stop is closed.
func approveAll(ctx context.Context, cl *client.Client, id string, stop <-chan struct{}) {
	approved := map[string]bool{}
	for {
		select {
		case <-stop:
			return
		case <-time.After(100 * time.Millisecond):
		}
		ps, err := cl.Pending(ctx, id)
		if err != nil {
			continue
		}
		for _, p := range ps {
			if p.Kind != workflows.PendingApproval || approved[p.CallID] {
				continue
			}
			if _, err := cl.Approve(ctx, id, workflows.Approval{CallID: p.CallID, Decision: workflows.DecisionAllow, Hash: p.Hash, By: "suite"}); err == nil {
				approved[p.CallID] = true
			}
		}
	}
}

// check checks each attempt's result: with the sandbox on the attempt
// ran (its marker) and did not reach its effect, or was refused; with it
// off it reached its effect, or was refused by what refuses it in every
// mode.
func (m modeRun) check(t *testing.T, as []attempt, rs []model.Message) {
	t.Helper()
	for i, a := range as {
		r := rs[i]
		if a.refusable && isRefusal(r) {
			t.Logf("%s: %s: refused before it ran: %.300s", m.name(), a.name, r.Content)
			continue
		}
		if m.w.off {
			if a.noControl != "" {
				continue
			}
			if !a.effect(r) {
				t.Errorf("%s: %s: the attempt did not reach its effect with the sandbox off, so it proves nothing:\n%.1500s", m.name(), a.name, r.Content)
				continue
			}
			t.Logf("%s: %s: reached its effect: %.300s", m.name(), a.name, strings.ReplaceAll(r.Content, "\n", " | "))
			continue
		}
		if !a.noMarker && !strings.Contains(r.Content, attemptMarker) {
			t.Errorf("%s: %s: the attempt never ran (no %s in its result), so it proves nothing:\n%.1500s", m.name(), a.name, attemptMarker, r.Content)
			continue
		}
		if a.effect(r) {
			t.Errorf("%s: %s: ESCAPED with the sandbox on:\n%.1500s", m.name(), a.name, r.Content)
			continue
		}
		t.Logf("%s: %s: stopped: %.400s", m.name(), a.name, strings.ReplaceAll(r.Content, "\n", " | "))
	}
}

// runAndCheck is one turn of the attempts (one call per step, in order)
// and its check.
func (m modeRun) runAndCheck(t *testing.T, label, workdir string, as ...attempt) []model.Message {
	t.Helper()
	var steps [][]attempt
	for _, a := range as {
		steps = append(steps, []attempt{a})
	}
	rs := m.turn(t, label, workdir, 3*time.Minute, steps...)
	m.check(t, as, rs)
	return rs
}

// waitGone waits up to d for no host process to hold marker in its
// command line and returns those still running.
func waitGone(marker string, d time.Duration) []int {
	deadline := time.Now().Add(d)
	for {
		pids := markedPIDs(marker)
		if len(pids) == 0 || time.Now().After(deadline) {
			return pids
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// cmdlines describes pids for a failure message.
func cmdlines(pids []int) string {
	var b strings.Builder
	for _, p := range pids {
		c, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		fmt.Fprintf(&b, "\n  %d: %s", p, bytes.ReplaceAll(c, []byte{0}, []byte{' '}))
	}
	return b.String()
}
