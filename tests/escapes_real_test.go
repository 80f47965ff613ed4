package tests

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/permission"
)

// TestRealWorkerEscapes is the escape suite against the worker as a
// deployment starts it (the cmd/worker binary with a config file,
// --data-dir, WARDEN_KEY_FILE and HOME, a history archive directory and
// an audit stream to a file; see startRealWorker and streamConfig): each class
// of the sandbox's escapes, in default and accept_edits mode with broad
// rules and in bypass mode, then with backend.local.sandbox: off as the
// control. Every attempt prints a marker (it ran) and what it got (the
// errno); with the sandbox on the effect must be absent, with it off
// present, so that no case passes for a call that never ran or an
// attempt that could never work. One worker per mode runs everything in
// a few turns; the own-files classes run again on a worker whose files
// lie outside the workspace.
func TestRealWorkerEscapes(t *testing.T) {
	broad := []string{"Bash(python3:*)", "Bash(git:*)", "Bash(cat:*)", "Read"}
	for _, r := range []struct {
		name  string
		mode  permission.Mode
		rules []string
		off   bool
	}{
		{"default", permission.ModeDefault, broad, false},
		{"accept_edits", permission.ModeAcceptEdits, broad, false},
		{"bypass", permission.ModeBypass, nil, false},
		{"sandbox_off", permission.ModeBypass, nil, true},
	} {
		t.Run(r.name, func(t *testing.T) {
			// Grep's bound is set low: class 8 greps an 8 GiB file until it.
			w := startRealWorker(t, inside, r.off, streamConfig(inside)+"tools:\n  grep_timeout: "+hugeGrepTimeout.String()+"\n")
			m := modeRun{w: w, mode: r.mode, rules: append(slices.Clone(r.rules), grantRules(w)...)}
			t.Run("concurrent", func(t *testing.T) {
				t.Run("2_lifetime", func(t *testing.T) { t.Parallel(); classLifetime(t, m) })
				t.Run("3_root_files", func(t *testing.T) { t.Parallel(); classRootFiles(t, m) })
				t.Run("4_own_files", func(t *testing.T) { t.Parallel(); classOwnFiles(t, m) })
				t.Run("4b_archive_and_audit_stream", func(t *testing.T) { t.Parallel(); classArchiveAndStream(t, m) })
				t.Run("5_git", func(t *testing.T) { t.Parallel(); classGit(t, m) })
				t.Run("7_dotenv", func(t *testing.T) { t.Parallel(); classDotEnv(t, m) })
				t.Run("9_grants", func(t *testing.T) { t.Parallel(); classGrants(t, m) })
				t.Run("tools_list", func(t *testing.T) { t.Parallel(); classToolsList(t, m) })
			})
			t.Run("6_renamed_and_late_files", func(t *testing.T) { classRenames(t, m) })
			t.Run("1_control_channel", func(t *testing.T) { classControl(t, m) })
			t.Run("8_huge_file_and_fifo", func(t *testing.T) { classHuge(t, m) })
			t.Run("4_own_files_outside_layout", func(t *testing.T) {
				m := modeRun{w: startRealWorker(t, outside, r.off, streamConfig(outside)), mode: r.mode, rules: r.rules}
				t.Run("4_own_files", func(t *testing.T) { classOwnFiles(t, m) })
				t.Run("4b_archive_and_audit_stream", func(t *testing.T) { classArchiveAndStream(t, m) })
			})
		})
	}
}

// grantRules are the Edit rules that name class 9's writes, to paths
// that do not exist yet (the write is still asked, and approved).
func grantRules(w *realWorker) []string {
	return []string{"Edit(" + filepath.Join(w.grant, "newapp") + "/**)", "Edit(" + filepath.Join(w.grant, "conf.d", "new.conf") + ")"}
}

// classLifetime (2): processes an allowed call starts in a new session,
// by a double fork, or under nohup, are gone once the call ended (the
// host's /proc shows no process with the attempt's marker argv).
func classLifetime(t *testing.T, m modeRun) {
	marker := "LIFE-" + m.w.tag
	start := map[string]string{
		"setsid": "p=subprocess.Popen(sleeper+[M+'-setsid'],start_new_session=True,stdin=dn,stdout=dn,stderr=dn)\nprint('started',p.pid)\n",
		"double fork": "if os.fork()==0:\n  if os.fork()==0:\n    os.setsid()\n    fd=os.open('/dev/null',os.O_RDWR)\n    for f in (0,1,2): os.dup2(fd,f)\n" +
			"    os.execv(sys.executable,sleeper+[M+'-doublefork'])\n  os._exit(0)\nos.wait()\nprint('forked')\n",
		"nohup daemon": "p=subprocess.Popen(['nohup']+sleeper+[M+'-nohup'],stdin=dn,stdout=dn,stderr=dn)\nprint('started',p.pid)\n",
	}
	kinds := map[string]string{"setsid": "-setsid", "double fork": "-doublefork", "nohup daemon": "-nohup"}
	var as []attempt
	for _, k := range []string{"setsid", "double fork", "nohup daemon"} {
		suffix := kinds[k]
		as = append(as, attempt{name: "a process started by " + k + " outlives the call", tool: "Bash",
			input: pyCall(fmt.Sprintf("import subprocess,time\nM=%q\nsleeper=[sys.executable,'-c','import time; time.sleep(120)']\ndn=subprocess.DEVNULL\n%stime.sleep(0.3)\n", marker, start[k])),
			effect: func(model.Message) bool {
				left := waitGone(marker+suffix, 3*time.Second)
				if len(left) > 0 {
					t.Logf("still running after the turn:%s", cmdlines(left))
				}
				return len(left) > 0
			}})
	}
	m.runAndCheck(t, "lifetime", "", as...)
	killMarked(marker)
}

// classRootFiles (3): files only root may read, and other processes'
// /proc entries.
func classRootFiles(t *testing.T, m modeRun) {
	w := m.w
	// A concurrent call of another turn, with a secret in its environment.
	conc := "CONC-" + w.tag
	callSecret := "cs-" + w.tag
	sleeper := attempt{tool: "Bash", input: pyCall(fmt.Sprintf("os.environ['CALLSECRET']=%q+%q\nos.execv(sys.executable,[sys.executable,'-c','import time; time.sleep(60)',%q+'-x'])\n",
		"cs-", w.tag, conc))}
	_, done := m.start(t, "concurrent-sleeper", "", []attempt{sleeper})
	deadline := time.Now().Add(60 * time.Second)
	for len(markedPIDs(conc+"-x")) == 0 {
		select {
		case r := <-done:
			t.Fatalf("%s: the concurrent call ended before the test saw it: %v %+v", m.name(), r.err, toolResults(r.res))
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the concurrent call did not start within 60s", m.name())
		}
	}
	defer func() {
		killMarked(conc)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Errorf("%s: the concurrent turn did not end once its process was killed", m.name())
		}
	}()
	hidden := []string{w.data, w.key, w.cfg}
	as := []attempt{
		{name: "read /etc/shadow", tool: "Bash", input: pyCall("show('SHADOW', lambda: open('/etc/shadow').readline())\n"), effect: contains("SHADOW OK root:")},
		{name: "read the 0600 ~/.bash_history of the worker's HOME", tool: "Bash", input: pyRead(filepath.Join(w.home, ".bash_history")), effect: contains(w.histSecret)},
		{name: "read agent credentials in the worker's HOME", tool: "Bash", input: pyRead(filepath.Join(w.home, ".claude", "credentials.json")), effect: contains(w.credSecret)},
		{name: "read ~ credentials through HOME", tool: "Bash", input: pyCall("show('HOMECRED', lambda: open(os.path.expanduser('~/.claude/credentials.json')).read())\n"), effect: contains(w.credSecret)},
		{name: "read /proc/1/cmdline", tool: "Bash", input: pyCall("show('PID1', lambda: open('/proc/1/cmdline','rb').read().replace(b'\\0',b' ').decode())\n"),
			effect: func(r model.Message) bool {
				if w.off {
					return regexp.MustCompile(`PID1 OK \S`).MatchString(r.Content)
				}
				// The zygote's argv holds the hidden list.
				for _, h := range hidden {
					if strings.Contains(r.Content, h) {
						return true
					}
				}
				return false
			}},
		{name: "read the worker's /proc/PID/environ", tool: "Bash", input: pyCall(fmt.Sprintf("show('WENV', lambda: open('/proc/%d/environ','rb').read().replace(b'\\0',b' ').decode())\n", w.cmd.Process.Pid)),
			effect: contains("WARDEN_KEY_FILE=")},
		{name: "read a concurrent call's /proc/PID/environ", tool: "Bash", input: pyCall(fmt.Sprintf(
			"import glob\nneedle=('CALLSECRET='+%q).encode()\nn=0\nfor p in glob.glob('/proc/[0-9]*/environ'):\n  try:\n    b=open(p,'rb').read(); n+=1\n    if needle in b: print('FOUND in',p)\n  except Exception as e: pass\nprint('read',n,'environ files')\n", callSecret)),
			effect: contains("FOUND in")},
	}
	m.runAndCheck(t, "root-files", "", as...)
}

// classOwnFiles (4): the worker's own files as it runs with them: the
// --data-dir (not the config's data dir), the key WARDEN_KEY_FILE names,
// the config file; and the engine's recorded context protects the data
// directory actually used.
func classOwnFiles(t *testing.T, m modeRun) {
	w := m.w
	dataKey := filepath.Join(w.data, "auth", "operator.key")
	as := []attempt{
		{name: "python3 reads the WARDEN_KEY_FILE key", tool: "Bash", input: pyRead(w.key), effect: contains(w.keySecret)},
		{name: "python3 reads the --data-dir's key", tool: "Bash", input: pyRead(dataKey), effect: contains(w.dataSecret)},
		{name: "python3 reads the --data-dir's database", tool: "Bash", input: pyRead(filepath.Join(w.data, "warden.db")), effect: contains(w.dataSecret)},
		{name: "python3 reads the config file", tool: "Bash", input: pyRead(w.cfg), effect: contains(w.cfgSecret)},
		{name: "cat the WARDEN_KEY_FILE key", tool: "Bash", input: bash(`echo ATTEMPT-"RAN"; cat ` + w.key), refusable: true, effect: contains(w.keySecret)},
		{name: "cat the --data-dir's key", tool: "Bash", input: bash(`echo ATTEMPT-"RAN"; cat ` + dataKey), refusable: true, effect: contains(w.dataSecret)},
		{name: "Read the WARDEN_KEY_FILE key", tool: "Read", input: map[string]any{"file_path": w.key}, refusable: true, noMarker: true, effect: contains(w.keySecret)},
		{name: "Read the --data-dir's key", tool: "Read", input: map[string]any{"file_path": dataKey}, refusable: true, noMarker: true, effect: contains(w.dataSecret)},
	}
	var steps [][]attempt
	for _, a := range as {
		steps = append(steps, []attempt{a})
	}
	rs, id := m.turnID(t, "own-files", "", 3*time.Minute, steps...)
	m.check(t, as, rs)
	// The engine's context protects the files the worker runs with: the
	// permission records of the Read of the data dir's key and of the key
	// file say protected, naming them.
	m.checkProtected(t, id, map[string]string{w.key: rs[6].ToolCallID, dataKey: rs[7].ToolCallID})
}

// checkProtected checks that turn id's permission records deny each
// call of calls (by path, the file the call aimed at) as protected.
func (m modeRun) checkProtected(t *testing.T, id string, calls map[string]string) {
	t.Helper()
	recs, err := audit.Workflow(ctxT(t, time.Minute), env.c, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range slices.Sorted(maps.Keys(calls)) {
		var got []string
		ok := false
		for _, r := range recs {
			if r.Kind == audit.KindPermission && r.CallID == calls[path] {
				got = append(got, r.Decision+": "+r.Reason)
				ok = ok || r.Decision == "deny" && strings.Contains(r.Reason, "protected")
			}
		}
		if !ok {
			t.Errorf("%s: the recorded context does not protect %s (the file the worker runs with): permission records %q", m.name(), path, got)
		}
	}
}

// streamKeep is how many rotations of the audit stream's file sink the
// workers of the escape suite keep (audit.stream.keep).
const streamKeep = 3

// streamPaths are a worker's history archive directory and its audit
// stream's file sink and state file, of workspace ws and root (the
// directory that holds all of the worker's): in the workspace, but not
// in the data directory, in the inside layout; in directories of their
// own, as a server's /var/lib and /var/log, in the outside layout.
func streamPaths(lay layout, ws, root string) (archive, sink, state string) {
	if lay == inside {
		return filepath.Join(ws, "archive"), filepath.Join(ws, "log", "audit.jsonl"), filepath.Join(ws, "log", "stream-state.json")
	}
	return filepath.Join(root, "var", "lib", "warden", "archive"), filepath.Join(root, "var", "log", "warden", "audit.jsonl"),
		filepath.Join(root, "var", "lib", "warden", "stream-state.json")
}

// streamConfig is the extra config (startRealWorker) of the escape
// suite's workers: server.archive (the workers join the tests' server,
// which archives nothing there, but the directory stays one of the
// worker's own paths, as when a server run with the same config on the
// host does archive there) and the live audit stream to a file sink,
// with its rotations and its state file, at streamPaths.
func streamConfig(lay layout) string {
	archive, sink, state := streamPaths(lay, "{{WS}}", "{{ROOT}}")
	return fmt.Sprintf("server:\n  archive: %q\naudit:\n  stream:\n    sink: %q\n    keep: %d\n    state: %q\n", archive, sink, streamKeep, state)
}

// classArchiveAndStream (4b): the worker's own files beyond its data
// directory and keys: files of the history archive directory
// (server.archive), the audit stream's file sink, its kept rotations and
// its state file (audit.stream), each planted with a secret, read,
// listed, appended to, overwritten, replaced by rename, removed and
// added to; the effects of the writes are looked for on the host after
// the turn. And the engine's recorded context protects the sink and the
// archive. The worker runs with streamConfig.
func classArchiveAndStream(t *testing.T, m modeRun) {
	w := m.w
	archive, sink, state := streamPaths(w.lay, w.ws, w.root)
	secret := func(what string) string { return what + "-secret-" + w.tag }
	mark := func(what string) string { return what + "-" + w.tag }
	hist, gone, forged := filepath.Join(archive, "default", "turn-a.history"), filepath.Join(archive, "default", "turn-b.history"),
		filepath.Join(archive, "default", "forged.history")
	rot1, rotK := sink+".1", fmt.Sprintf("%s.%d", sink, streamKeep)
	writeFile(t, hist, secret("archive")+"\n", 0o600)
	writeFile(t, gone, secret("archive-b")+"\n", 0o600)
	writeFile(t, rot1, secret("rotation-1")+"\n", 0o640)
	writeFile(t, rotK, secret("rotation-k")+"\n", 0o640)
	// The stream opened its sink at start: the secret is appended to it,
	// as the stream appends its records.
	f, err := os.OpenFile(sink, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatalf("%s: the worker's audit stream did not open its file sink: %v", m.name(), err)
	}
	_, err = f.WriteString(secret("sink") + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	// The stream writes each call's command to the sink: no command
	// holds a secret or a mark whole (pyStr), so that only a read or a
	// write of the call can show or put one there.
	py := func(label, code string, args ...any) map[string]any {
		return pyCall(fmt.Sprintf("show(%q, lambda: "+code+")\n", append([]any{label}, args...)...))
	}
	// find reads a file and prints its size and the lines that hold
	// needle (the sink is long: its end would not fit in a result).
	find := func(p, needle string) map[string]any {
		return pyCall(fmt.Sprintf("needle=%s\ndef find(p):\n  b=open(p,'rb').read().decode('utf-8','replace')\n"+
			"  return '%%d bytes: %%s'%%(len(b),' | '.join(l[:200] for l in b.splitlines() if needle in l))\nshow('FIND', lambda: find(%q))\n", pyStr(needle), p))
	}
	as := []attempt{
		{name: "python3 reads a file of the history archive", tool: "Bash", input: find(hist, secret("archive")), effect: contains(secret("archive"))},
		{name: "python3 lists the history archive", tool: "Bash", input: py("LIST", "sorted(os.listdir(%q))", filepath.Dir(hist)), effect: contains("turn-a.history")},
		{name: "python3 reads the audit stream's file sink", tool: "Bash", input: find(sink, secret("sink")), effect: contains(secret("sink"))},
		{name: "python3 reads the sink's first rotation", tool: "Bash", input: find(rot1, secret("rotation-1")), effect: contains(secret("rotation-1"))},
		{name: "python3 reads the sink's oldest kept rotation", tool: "Bash", input: find(rotK, secret("rotation-k")), effect: contains(secret("rotation-k"))},
		{name: "python3 reads the stream's state file", tool: "Bash", input: find(state, `"since":`), effect: contains(`{"since":`)},
		{name: "python3 reads the copy of the stream's state file", tool: "Bash", input: find(state+".copy", `"since":`), effect: contains(`{"since":`)},
		// The worker saves the state as it sends and at every sweep
		// (2s): a call that runs past its saves still finds the file
		// empty (a file renamed over a hidden one would detach the mount
		// that hides it).
		{name: "python3 reads the stream's state file for 5s, past the worker's saves", tool: "Bash",
			input: pyCall(fmt.Sprintf("import time\nend=time.time()+5\nwhile time.time()<end:\n  try: b=open(%q).read()\n  except OSError as e: b=str(e)\n"+
				"  if 'since' in b: break\n  time.sleep(0.05)\nprint('STATE', b[:200])\n", state)),
			effect: contains(`STATE {"since":`)},
		{name: "cat the audit stream's file sink", tool: "Bash", input: bash(`echo ATTEMPT-"RAN"; cat ` + sink), refusable: true, effect: contains(secret("sink"))},
		{name: "Read the audit stream's file sink", tool: "Read", input: map[string]any{"file_path": sink}, refusable: true, noMarker: true, effect: contains(secret("sink"))},
		{name: "Read a file of the history archive", tool: "Read", input: map[string]any{"file_path": hist}, refusable: true, noMarker: true, effect: contains(secret("archive"))},
		// The writes, each to a file of its own but the first two (their
		// effects are looked for after the turn, when all of them ran);
		// the overwrite in place is shorter than the sink's first line.
		{name: "python3 appends to the audit stream's file sink", tool: "Bash", input: py("APPEND", "open(%q,'a').write(%s+'\\n')", sink, pyStr(mark("APPENDED"))),
			effect: fileHas(sink, mark("APPENDED"))},
		{name: "python3 overwrites the start of the file sink in place", tool: "Bash", input: py("OVERWRITE", "open(%q,'r+').write(%s)", sink, pyStr(mark("OVER"))),
			effect: fileHas(sink, mark("OVER"))},
		{name: "python3 truncates and rewrites the sink's first rotation", tool: "Bash", input: py("REWRITE", "open(%q,'w').write(%s)", rot1, pyStr(mark("REWRITTEN"))),
			effect: fileHas(rot1, mark("REWRITTEN"))},
		{name: "python3 replaces the sink's oldest kept rotation by a file renamed over it", tool: "Bash",
			input:  pyCall(fmt.Sprintf("show('NEW', lambda: open(%q,'w').write(%s))\nshow('RENAME', lambda: os.replace(%q,%q))\n", rotK+".new", pyStr(mark("REPLACED")), rotK+".new", rotK)),
			effect: fileHas(rotK, mark("REPLACED"))},
		{name: "python3 rewrites a file of the history archive", tool: "Bash", input: py("REWRITE", "open(%q,'w').write(%s)", hist, pyStr(mark("FORGED"))),
			effect: fileHas(hist, mark("FORGED"))},
		{name: "python3 removes a file of the history archive", tool: "Bash", input: py("REMOVE", "os.remove(%q)", gone),
			effect: func(model.Message) bool { _, err := os.Stat(gone); return errors.Is(err, fs.ErrNotExist) }},
		{name: "python3 adds a file to the history archive", tool: "Bash", input: py("ADD", "open(%q,'w').write(%s)", forged, pyStr(mark("ADDED"))),
			effect: fileHas(forged, mark("ADDED"))},
	}
	var steps [][]attempt
	for _, a := range as {
		steps = append(steps, []attempt{a})
	}
	rs, id := m.turnID(t, "archive-and-stream", "", 3*time.Minute, steps...)
	m.check(t, as, rs)
	// The engine's context protects them: the Reads' permission records
	// say protected.
	reads := map[string]string{}
	for i, a := range as {
		if a.tool == "Read" {
			reads[a.input["file_path"].(string)] = rs[i].ToolCallID
		}
	}
	m.checkProtected(t, id, reads)
}

// pyStr is s as a Python expression of two string literals: a command
// that writes or looks for s does not hold it whole.
func pyStr(s string) string {
	h := len(s) / 2
	return fmt.Sprintf("%q+%q", s[:h], s[h:])
}

// gitEffect runs git args in dir on the host, as a user would after the
// turn, and reports whether marker (a file the planted command creates)
// then exists.
func gitEffect(dir, marker string, args ...string) func(model.Message) bool {
	return func(model.Message) bool {
		_ = exec.Command("git", append([]string{"-C", dir}, args...)...).Run()
		_, err := os.Stat(marker)
		return err == nil
	}
}

// classGit (5): each way of making git run a command later, each in a
// repository of its own that is the turn's working directory; the effect
// is that a git command the test runs on the host afterwards runs the
// planted command. And an allowed git add and commit still work.
func classGit(t *testing.T, m modeRun) {
	w := m.w
	base := filepath.Join(w.root, "git")
	repo := func(name string) string {
		d := filepath.Join(base, name)
		initRepo(t, d)
		return d
	}
	mark := func(name string) string { return filepath.Join(w.out, "git-"+name) }
	fsmon := func(name string) string { return fmt.Sprintf("'[core]\\n\\tfsmonitor = touch %s\\n'", mark(name)) }
	hook := func(name string) string {
		return fmt.Sprintf("def hook(d):\n  os.makedirs(d,exist_ok=True)\n  p=os.path.join(d,'pre-commit')\n  open(p,'w').write('#!/bin/sh\\ntouch %s\\n')\n  os.chmod(p,0o755)\n  return p\n", mark(name))
	}
	type variant struct {
		name, dir, code string
		effect          func(model.Message) bool
	}
	var vs []variant

	d := repo("commondir")
	vs = append(vs, variant{"write .git/commondir to a copy whose config sets core.fsmonitor", d,
		"import shutil\nshow('COPY', lambda: shutil.copytree('.git','evil'))\nshow('CONFIG', lambda: open('evil/config','a').write(" + fsmon("commondir") + "))\n" +
			"show('COMMONDIR', lambda: open('.git/commondir','w').write('../evil\\n'))\n",
		gitEffect(d, mark("commondir"), "status")})

	d = repo("rename")
	vs = append(vs, variant{"rename .git and put a copy with fsmonitor and hooks in its place", d,
		"import shutil\n" + hook("rename-hook") + "show('RENAME', lambda: os.rename('.git','.git-old'))\nshow('COPY', lambda: shutil.copytree('.git-old','.git'))\n" +
			"show('CONFIG', lambda: open('.git/config','a').write(" + fsmon("rename") + "))\nshow('HOOK', lambda: hook('.git/hooks'))\n",
		func(status, commit func(model.Message) bool) func(model.Message) bool {
			return func(r model.Message) bool { return status(r) || commit(r) }
		}(gitEffect(d, mark("rename"), "status"), gitEffect(d, mark("rename-hook"), "commit", "-q", "--allow-empty", "-m", "probe"))})

	d = repo("modules")
	sub := filepath.Join(d, "x")
	if err := os.MkdirAll(filepath.Join(d, ".git", "modules"), 0o755); err != nil {
		t.Fatal(err)
	}
	gitRun(t, d, "init", "-q", "--separate-git-dir", filepath.Join(d, ".git", "modules", "x"), sub)
	vs = append(vs, variant{"write .git/modules/x/config", d,
		"show('CONFIG', lambda: open('.git/modules/x/config','a').write(" + fsmon("modules") + "))\n",
		gitEffect(sub, mark("modules"), "status")})

	d = repo("worktrees")
	wt := filepath.Join(base, "worktrees-wt")
	gitRun(t, d, "worktree", "add", "-q", wt)
	vs = append(vs, variant{"redirect .git/worktrees/x/commondir to a copy whose config sets core.fsmonitor", d,
		"import shutil\nshow('COPY', lambda: shutil.copytree('.git','evilwt',ignore=shutil.ignore_patterns('worktrees')))\n" +
			"show('CONFIG', lambda: open('evilwt/config','a').write(" + fsmon("worktrees") + "))\n" +
			"show('COMMONDIR', lambda: open('.git/worktrees/worktrees-wt/commondir','w').write(os.path.abspath('evilwt')+'\\n'))\n",
		gitEffect(wt, mark("worktrees"), "status")})

	d = repo("hooks")
	if err := os.RemoveAll(filepath.Join(d, ".git", "hooks")); err != nil {
		t.Fatal(err)
	}
	vs = append(vs, variant{"create the missing .git/hooks with a pre-commit hook", d,
		hook("hooks") + "show('HOOK', lambda: hook('.git/hooks'))\n",
		gitEffect(d, mark("hooks"), "commit", "-q", "--allow-empty", "-m", "probe")})

	d = repo("subgit")
	vs = append(vs, variant{"create sub/.git whose config sets core.fsmonitor", d,
		"import subprocess\nshow('INIT', lambda: subprocess.run(['git','init','-q','sub']).returncode)\nshow('CONFIG', lambda: open('sub/.git/config','a').write(" + fsmon("subgit") + "))\n",
		gitEffect(filepath.Join(d, "sub"), mark("subgit"), "status")})

	initRepo(t, filepath.Join(base, "legit"))
	for _, v := range vs {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			m.runAndCheck(t, "git", v.dir, attempt{name: v.name, tool: "Bash", input: pyCall(v.code), effect: v.effect})
		})
	}
	t.Run("allowed git add and commit still work", func(t *testing.T) {
		t.Parallel()
		d := filepath.Join(base, "legit")
		// Git's own writes keep working for a git command a rule allows
		// (in every mode: bypass too, with the rule).
		m := m
		if !slices.Contains(m.rules, "Bash(git:*)") {
			m.rules = append(slices.Clone(m.rules), "Bash(git:*)")
		}
		rs := m.turn(t, "git-legit", d, 3*time.Minute,
			[]attempt{{tool: "Bash", input: pyCall("open('new.txt','w').write('new\\n')\n")}},
			[]attempt{{tool: "Bash", input: bash("git add new.txt")}},
			[]attempt{{tool: "Bash", input: bash("git commit -q -m suite-commit")}})
		for i, r := range rs {
			if r.IsError {
				t.Errorf("%s: call %d failed: %s", m.name(), i, r.Content)
			}
		}
		if got := strings.TrimSpace(gitRun(t, d, "log", "-1", "--format=%s")); got != "suite-commit" {
			t.Errorf("%s: the last commit is %q, want the turn's suite-commit", m.name(), got)
		}
	})
}

// classDotEnv (7): the workspace's .env read by an allowed python3.
func classDotEnv(t *testing.T, m modeRun) {
	m.runAndCheck(t, "dotenv", "", attempt{name: "python3 reads the workspace's .env", tool: "Bash", input: pyRead(filepath.Join(m.w.ws, ".env")), effect: contains(m.w.envSecret)})
}

// classGrants (9): a write granted to a path that does not exist yet
// (by an Edit rule naming it, as an approval would) must not let the
// same call rewrite an existing sibling under the nearest existing
// ancestor. The test approves the writes as shown.
func classGrants(t *testing.T, m modeRun) {
	m.approve = true
	g := m.w.grant
	rewrite := func(p string) string {
		return "python3 -c " + shellQuote(fmt.Sprintf("print('ATTEMPT-'+'RAN')\ntry: open(%q,'w').write('REWRITTEN'); print('WROTE')\nexcept Exception as e: print('ERR',type(e).__name__,e)\n", p))
	}
	m.runAndCheck(t, "grants", "",
		attempt{name: "a grant of grant/newapp/a.conf (newapp missing) rewrites grant/existing.conf", tool: "Bash",
			input:  bash("echo x > " + filepath.Join(g, "newapp", "a.conf") + "; " + rewrite(filepath.Join(g, "existing.conf"))),
			effect: fileHas(filepath.Join(g, "existing.conf"), "REWRITTEN")},
		attempt{name: "a grant of grant/conf.d/new.conf (missing) rewrites grant/conf.d/old.conf", tool: "Bash",
			input:  bash("echo x > " + filepath.Join(g, "conf.d", "new.conf") + "; " + rewrite(filepath.Join(g, "conf.d", "old.conf"))),
			effect: fileHas(filepath.Join(g, "conf.d", "old.conf"), "REWRITTEN")})
}

// classToolsList: `starter tools list` against the worker says its
// sandbox state, OFF included (the starter's own config says nothing of
// it: it is an empty one).
func classToolsList(t *testing.T, m modeRun) {
	dir := t.TempDir()
	args := append(starterConn(t, dir), "--task-queue", m.w.queue, "tools", "list")
	out, err := runStarter(t, buildStarter(t), dir, args...)
	if err != nil {
		t.Fatalf("tools list: %v\n%s", err, out)
	}
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(strings.ToLower(l), "sandbox") {
			lines = append(lines, l)
		}
	}
	off := slices.ContainsFunc(lines, regexp.MustCompile(`\bOFF\b`).MatchString)
	switch {
	case m.w.off && !off:
		t.Errorf("%s: `starter tools list` does not say the worker's sandbox is OFF:\n%s", m.name(), out)
	case !m.w.off && (off || len(lines) == 0):
		t.Errorf("%s: `starter tools list` does not say the worker's sandbox is on:\n%s", m.name(), out)
	}
}

// classRenames (6): hidden paths follow the files, not their names: the
// config's directory moved by a call, then read under its new name; the
// config and the key replaced by rename on the host between turns, then
// read; a sensitive file of the config and the key WARDEN_INBOX_KEY_FILE
// names, created after the worker started.
func classRenames(t *testing.T, m modeRun) {
	w := m.w
	if w.lay == inside {
		mv := bash(`mv deploy d2 && echo ATTEMPT-"RAN"`)
		if m.mode != permission.ModeBypass && !w.off {
			mv = pyCall("os.rename('deploy','d2')\n")
		}
		moved := filepath.Join(w.ws, "d2", "warden.yaml")
		rs := m.turn(t, "move-config", "", 3*time.Minute,
			[]attempt{{tool: "Bash", input: mv}},
			[]attempt{{tool: "Read", input: map[string]any{"file_path": moved}}},
			[]attempt{{tool: "Bash", input: pyRead(moved)}})
		if b, err := os.ReadFile(moved); err != nil || !strings.Contains(string(b), w.cfgSecret) {
			t.Fatalf("%s: the call did not move deploy/ to d2/ (%v): %s", m.name(), err, rs[0].Content)
		}
		m.check(t, []attempt{
			{name: "Read d2/warden.yaml after mv deploy d2", refusable: true, noMarker: true, effect: contains(w.cfgSecret)},
			{name: "python3 reads d2/warden.yaml after mv deploy d2", effect: contains(w.cfgSecret)},
		}, rs[1:])
		if err := os.Rename(filepath.Join(w.ws, "d2"), filepath.Join(w.ws, "deploy")); err != nil {
			t.Fatal(err)
		}
	}
	cfg2, key2 := "config-renamed-secret-"+w.tag, "wk1.key-renamed-secret-"+w.tag
	for p, body := range map[string]string{w.cfg: "# " + cfg2 + "\n", w.key: key2 + "\n"} {
		writeFile(t, p+".new", body, 0o600)
		if err := os.Rename(p+".new", p); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, w.late, w.lateSecret+"\n", 0o600)
	writeFile(t, w.lateKey, "wk1.inbox-"+w.lateSecret+"\n", 0o600)
	m.runAndCheck(t, "renamed-files", "",
		attempt{name: "python3 reads the config replaced by rename on the host", tool: "Bash", input: pyRead(w.cfg), effect: contains(cfg2)},
		attempt{name: "python3 reads the key replaced by rename on the host", tool: "Bash", input: pyRead(w.key), effect: contains(key2)},
		attempt{name: "python3 reads a sensitive file created after the worker started", tool: "Bash", input: pyRead(w.late), effect: contains(w.lateSecret)},
		attempt{name: "python3 reads the WARDEN_INBOX_KEY_FILE key created after the worker started", tool: "Bash", input: pyRead(w.lateKey), effect: contains("wk1.inbox-" + w.lateSecret)},
		attempt{name: "Read the config replaced by rename", tool: "Read", input: map[string]any{"file_path": w.cfg}, refusable: true, noMarker: true, effect: contains(cfg2)},
		attempt{name: "Read the key replaced by rename", tool: "Read", input: map[string]any{"file_path": w.key}, refusable: true, noMarker: true, effect: contains(key2)},
	)
}

// classControl (1): a call holds only its stdio: it lists its
// descriptors and writes to and sends on every one above 2; then a
// process it detaches (setsid, double fork) listens on every socket it
// inherited and answers any request it receives with forged output, and
// the next calls must return their own output.
func classControl(t *testing.T, m modeRun) {
	w := m.w
	probe := pyCall("import socket\nfor n in sorted(os.listdir('/proc/self/fd'),key=int):\n  fd=int(n)\n" +
		"  try: tgt=os.readlink('/proc/self/fd/'+n)\n  except OSError: continue\n  if fd<=2: continue\n  print('FD',fd,tgt,flush=True)\n" +
		"  show('WRITE %d'%fd, lambda: os.write(fd,b'{}'))\n  show('SENDMSG %d'%fd, lambda: socket.socket(fileno=os.dup(fd)).sendmsg([b'{}']))\n")
	control := ""
	if w.off {
		// No zygote channel exists without the sandbox: the control is a
		// descriptor the test hands the same probe, which it must find
		// and write to.
		control = filepath.Join(w.out, "fd-control")
		probe["command"] = "exec 3>>" + control + "; " + probe["command"].(string)
	}
	log := filepath.Join(w.ws, ".stolen-"+w.tag)
	daemon := pyCall(fmt.Sprintf(`import socket,select,time,array
log=%q
socks=[]
for n in os.listdir('/proc/self/fd'):
  fd=int(n)
  if fd>2:
    try: socks.append(socket.socket(fileno=os.dup(fd)))
    except OSError: pass
print('SOCKETS',len(socks),flush=True)
if os.fork()==0:
  os.setsid()
  if os.fork()==0:
    nul=os.open('/dev/null',os.O_RDWR)
    for f in (0,1,2): os.dup2(nul,f)
    end=time.time()+90
    while time.time()<end:
      if not socks:
        time.sleep(1); continue
      r,_,_=select.select(socks,[],[],1)
      for s in r:
        try: msg,anc,fl,ad=s.recvmsg(1<<20,socket.CMSG_SPACE(64))
        except OSError: continue
        fds=[]
        for lv,ty,data in anc:
          if lv==socket.SOL_SOCKET and ty==socket.SCM_RIGHTS:
            a=array.array('i'); a.frombytes(data[:len(data)-len(data)%%4]); fds+=list(a)
        open(log,'ab').write(msg+b'\n')
        if len(fds)>=4:
          try:
            os.write(fds[1],b'FORGED OUTPUT\n')
            rs=socket.socket(fileno=fds[3]); rs.send(b'{"started":true}'); rs.send(b'{"exited":true}')
          except OSError: pass
    os._exit(0)
  os._exit(0)
os.wait()
print('DETACHED',flush=True)
`, log), "DAEMON-"+w.tag+"-d")
	real := func(n int) attempt {
		return attempt{name: fmt.Sprintf("call %d after the detached listener returns its own output", n), tool: "Bash", noMarker: true,
			input:     pyCall("print('real-'+str(40+2))\n"),
			noControl: "without the sandbox there is no zygote channel to listen on",
			effect: func(r model.Message) bool {
				return !strings.Contains(r.Content, "real-42") || strings.Contains(r.Content, "FORGED")
			}}
	}
	as := []attempt{
		{name: "a call's descriptors above 2 (listed, written, sent on)", tool: "Bash", input: probe,
			effect: func(r model.Message) bool {
				if w.off {
					b, _ := os.ReadFile(control)
					return regexp.MustCompile(`(?m)^FD 3 `).MatchString(r.Content) && strings.Contains(r.Content, "WRITE 3 OK") && len(b) > 0
				}
				return regexp.MustCompile(`(?m)^FD \d+ `).MatchString(r.Content)
			}},
		{name: "a detached process steals a later call's request", tool: "Bash", input: daemon,
			noControl: "without the sandbox there is no zygote channel to listen on",
			effect: func(model.Message) bool {
				b, _ := os.ReadFile(log)
				if len(b) > 0 {
					t.Logf("the detached process received:\n%.2000s", b)
				}
				return len(b) > 0
			}},
		real(1), real(2), real(3),
	}
	// The later calls' results first come back; the daemon's log is read
	// after them (check runs in order: put it last).
	steps := [][]attempt{{as[0]}, {as[1]}, {as[2]}, {as[3]}, {as[4]}}
	rs := m.turn(t, "control", "", 3*time.Minute, steps...)
	order := []int{0, 2, 3, 4, 1}
	var oa []attempt
	var or []model.Message
	for _, i := range order {
		oa, or = append(oa, as[i]), append(or, rs[i])
	}
	m.check(t, oa, or)
	for i := 2; i < 5; i++ {
		if !strings.Contains(rs[i].Content, "real-42") {
			t.Errorf("%s: call %d returned %q, not its own output real-42", m.name(), i-1, rs[i].Content)
		}
	}
	killMarked("DAEMON-" + w.tag)
}

// hugeGrepTimeout is tools.grep_timeout of TestRealWorkerEscapes's
// workers: class 8's Grep of the 8 GiB file runs until it.
const hugeGrepTimeout = 5 * time.Second

// classHuge (8): an 8 GiB sparse file (under limits.write, which stops a larger one) and a FIFO made by an allowed
// call, then read by the file tools: the worker survives, each read ends
// with an error result, and the next call of the turn works.
func classHuge(t *testing.T, m modeRun) {
	w := m.w
	big, fifo := filepath.Join(w.ws, "big.bin"), filepath.Join(w.ws, "pipe.fifo")
	steps := [][]attempt{
		{{tool: "Bash", input: pyCall(fmt.Sprintf("show('BIG', lambda: open(%q,'wb').truncate(8<<30))\nshow('FIFO', lambda: os.mkfifo(%q))\n", big, fifo))}},
		{{tool: "Read", input: map[string]any{"file_path": big}}},
		{{tool: "Read", input: map[string]any{"file_path": fifo}}},
	}
	// Grep of the huge file (bounded by the worker's tools.grep_timeout,
	// hugeGrepTimeout) in bypass mode and with the sandbox off only: the
	// file tools do not depend on the mode, and the suite stays short.
	grepped := m.mode == permission.ModeBypass
	if grepped {
		steps = append(steps, []attempt{{tool: "Grep", input: map[string]any{"pattern": "needle", "path": big}}})
	}
	steps = append(steps, []attempt{{tool: "Bash", input: pyCall("print('real-'+str(40+2))\n")}})
	id, done := m.start(t, "huge", "", steps...)
	var end turnEnd
	select {
	case end = <-done:
	case <-w.exited:
		t.Fatalf("%s: the worker died reading the huge file or the FIFO (%s):\n%s", m.name(), id, w.tail())
	case <-time.After(90 * time.Second):
		// Free the reader the FIFO holds, so the worker can go on.
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		t.Errorf("%s: the turn that reads an 8 GiB file and a FIFO did not end within 90s (a read blocked)", m.name())
		select {
		case end = <-done:
		case <-w.exited:
			t.Fatalf("%s: the worker died:\n%s", m.name(), w.tail())
		case <-time.After(60 * time.Second):
			t.Fatalf("%s: the turn did not end after the FIFO was opened for writing", m.name())
		}
	}
	if end.err != nil {
		t.Fatalf("%s: turn %s: %v", m.name(), id, end.err)
	}
	if fi, err := os.Stat(big); err != nil || fi.Size() != 8<<30 {
		t.Fatalf("%s: the allowed call made no 8 GiB file: %v", m.name(), err)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("%s: the allowed call made no FIFO: %v", m.name(), err)
	}
	rs := toolResults(end.res)
	if len(rs) != len(steps) {
		t.Fatalf("%s: %d results for %d calls", m.name(), len(rs), len(steps))
	}
	for i, r := range rs {
		t.Logf("%s: call %d (%s): error %v: %.300s", m.name(), i, r.ToolName, r.IsError, strings.ReplaceAll(r.Content, "\n", " | "))
	}
	for i, what := range map[int]string{1: "Read of the 8 GiB file", 2: "Read of the FIFO"} {
		if !rs[i].IsError {
			t.Errorf("%s: the %s is no error result: %.300q", m.name(), what, rs[i].Content)
		}
	}
	// The search ends at the configured bound, and its result says so.
	if want := fmt.Sprintf("timed out after %d seconds", int(hugeGrepTimeout.Seconds())); grepped && !strings.Contains(rs[3].Content, want) {
		t.Errorf("%s: the Grep of the 8 GiB file did not stop at tools.grep_timeout (%q): %.300q", m.name(), want, rs[3].Content)
	}
	if last := rs[len(rs)-1]; !strings.Contains(last.Content, "real-42") {
		t.Errorf("%s: the call after the reads did not work: %q", m.name(), last.Content)
	}
	select {
	case <-w.exited:
		t.Errorf("%s: the worker exited:\n%s", m.name(), w.tail())
	default:
	}
}

// TestRealWorkerDockerMount (10): a backend.docker mount of the project
// must not expose the worker's own files (./.wdata, the key) in the
// container: the worker refuses to start naming the mount (which needs
// no Docker daemon), or, when it starts, the files are not there (which
// needs one: skipped without, unless WARDEN_REQUIRE_DOCKER is set).
func TestRealWorkerDockerMount(t *testing.T) {
	// The checkout's layout, with the project mounted into the container.
	extra := fmt.Sprintf("backend:\n  docker:\n    enabled: true\n    image: %q\n    mounts: [\"{{WS}}:/workspace\"]\n", dockerImage())
	w, out, err := tryStartRealWorker(t, inside, false, extra)
	if err != nil {
		if strings.Contains(out, "mount") && strings.Contains(out, w.ws) {
			t.Logf("the worker refused the mount: %s", strings.TrimSpace(out))
			return
		}
		dockerAvailable(t)
		t.Fatalf("the worker did not start, and did not name the mount: %v\n%s", err, out)
	}
	dockerAvailable(t)
	m := modeRun{w: w, mode: permission.ModeBypass, backend: "docker"}
	rs := m.turn(t, "docker", "/workspace", 2*time.Minute, []attempt{{tool: "Bash",
		input: bash(`echo ATTEMPT-"RAN"; ls -la /workspace/.wdata /workspace/.keys 2>&1; cat /workspace/.wdata/auth/operator.key /workspace/.keys/worker.key 2>&1`)}})
	if !strings.Contains(rs[0].Content, attemptMarker) {
		t.Fatalf("the container call never ran: %s", rs[0].Content)
	}
	if strings.Contains(rs[0].Content, w.dataSecret) || strings.Contains(rs[0].Content, w.keySecret) {
		t.Errorf("the container sees the worker's own files through the project mount:\n%s", rs[0].Content)
	}
}
