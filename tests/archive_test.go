package tests

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	tclient "go.temporal.io/sdk/client"

	"github.com/wardenhq/warden/client"
)

// archivedWorker is a worker binary on its own embedded server whose
// namespace keeps closed turns for one minute (server.retention, a test
// setting), with the server's history archive at its default place
// (data_dir/archive) or turned off (server.archive: off).
type archivedWorker struct {
	dir, cfg, data, ws string
	cl                 *client.Client
	tc                 tclient.Client
}

func startArchivedWorker(t *testing.T, wbin string, archive bool) archivedWorker {
	t.Helper()
	dir := t.TempDir()
	w := archivedWorker{dir: dir, cfg: filepath.Join(dir, "config.yaml"), data: filepath.Join(dir, "data"), ws: filepath.Join(dir, "ws")}
	if err := os.MkdirAll(w.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	off := ""
	if !archive {
		off = "\n  archive: \"off\""
	}
	conf := fmt.Sprintf(`server:
  data_dir: %q
  port: %d
  ui_port: 0
  retention: 1m%s
  dynamic_config: {history.retentionTimerJitterDuration: 1s}
worker: {workdir: %q, task_queue: archive}
metrics: {addr: "off"}
middleware: {logging: {level: error}}
tools:
  per_tool:
    Write: {approval_timeout: 3s, escalation: notify}
`, w.data, freePort(t), off, w.ws)
	if err := os.WriteFile(w.cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	proc, addr := startEmbedded(t, wbin, dir, "--config", w.cfg)
	t.Cleanup(func() { killProcess(t, proc) })
	w.tc = dialAt(t, addr, filepath.Join(w.data, "auth", "operator.key"))
	t.Cleanup(w.tc.Close)
	w.cl = client.New(w.tc, "archive")
	w.cl.PollInterval = 100 * time.Millisecond
	return w
}

// starter runs the starter against w's server (the operator key found
// from the config) and returns its stdout and stderr.
func (w archivedWorker) starter(t *testing.T, sbin string, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(sbin, append([]string{"--config", w.cfg}, args...)...)
	cmd.Dir = w.dir
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// waitDeleted waits until the server no longer has the turn (its
// retention ended and its history was deleted).
func (w archivedWorker) waitDeleted(t *testing.T, ctx context.Context, id string) time.Duration {
	t.Helper()
	start := time.Now()
	waitFor(t, ctx, func() bool {
		_, err := w.tc.DescribeWorkflowExecution(ctx, id, "")
		var nf *serviceerror.NotFound
		return errors.As(err, &nf)
	})
	return time.Since(start)
}

// TestAuditPastRetention: a turn with an approval, an escalation and a
// budget raise closes on a worker whose embedded server keeps closed
// turns for a minute and archives them (the default). `starter audit`
// reads it from the server; once retention deleted it there, the same
// command prints the same report, byte for byte (table and JSON lines),
// read from the archive, and says so; `audit --since` finds it in the
// archive too. Control: the same on a worker with server.archive off
// says the turn is past the namespace's retention.
func TestAuditPastRetention(t *testing.T) {
	wbin, sbin := buildWorker(t), buildStarter(t)
	ctx := ctxT(t, 6*time.Minute)
	arch, ctl := startArchivedWorker(t, wbin, true), startArchivedWorker(t, wbin, false)

	scriptFile := filepath.Join(arch.dir, "turn.yaml")
	writeFile(t, scriptFile, fmt.Sprintf(`prompt: archive
steps:
  - tool_calls:
      - {id: c1, name: Bash, input: {command: "touch approved"}}
      - {id: c2, name: Write, input: {file_path: %q, content: "x"}}
  - tool_calls:
      - {id: c3, name: Bash, input: {command: "ls"}}
  - text: done
`, filepath.Join(arch.ws, "escalated.txt")), 0o644)
	id := "archived-" + tag()
	if out, errOut, err := arch.starter(t, sbin, "run", "--script", scriptFile, "--workflow-id", id, "--detach", "--budget", "tool_calls=2"); err != nil {
		t.Fatalf("starter run: %v\n%s%s", err, out, errOut)
	}
	answer := func(args ...string) {
		t.Helper()
		if out, errOut, err := arch.starter(t, sbin, args...); err != nil {
			t.Fatalf("starter %v: %v\n%s%s", args, err, out, errOut)
		}
	}
	waitPendingCall(t, arch.cl, id, "c1")
	answer("approvals", "approve", id, "c1")
	waitFor(t, ctx, func() bool {
		ps, err := arch.cl.Pending(ctx, id)
		return err == nil && len(ps) == 1 && ps[0].CallID == "c2" && ps[0].Escalated
	})
	answer("approvals", "approve", id, "c2")
	waitPendingCall(t, arch.cl, id, "budget_1")
	answer("approvals", "approve", id, "budget_1", "--raise", "tool_calls=+5")
	if res, err := arch.cl.Result(ctx, id); err != nil || res.Answer != "done" {
		t.Fatalf("the turn: %+v, %v", res, err)
	}

	// The control's turn: one allowed call, on a server without an archive.
	ctlID := "unarchived-" + tag()
	ctlScript := filepath.Join(ctl.dir, "turn.yaml")
	writeFile(t, ctlScript, "prompt: control\nsteps:\n  - tool_calls: [{id: c1, name: Bash, input: {command: \"true\"}}]\n  - text: done\n", 0o644)
	if out, errOut, err := ctl.starter(t, sbin, "run", "--script", ctlScript, "--workflow-id", ctlID); err != nil {
		t.Fatalf("control run: %v\n%s%s", err, out, errOut)
	}

	audit := func(w archivedWorker, args ...string) (string, string) {
		t.Helper()
		out, errOut, err := w.starter(t, sbin, append([]string{"audit"}, args...)...)
		if err != nil {
			t.Fatalf("starter audit %v: %v\n%s", args, err, errOut)
		}
		return out, errOut
	}
	table, how := audit(arch, "--workflow", id)
	jsonl, _ := audit(arch, "--workflow", id, "--jsonl")
	t.Logf("read before retention: %s%s", how, table)
	if !strings.Contains(how, "from the server") {
		t.Errorf("before retention the audit says %q, want it read from the server", how)
	}
	for _, want := range []string{"c1", "c2", "budget_1", "escalation", "tool_calls"} {
		if !strings.Contains(table, want) {
			t.Errorf("the report has no %q", want)
		}
	}
	if out, _ := audit(ctl, "--workflow", ctlID); !strings.Contains(out, "c1") {
		t.Errorf("control report before retention:\n%s", out)
	}

	t.Logf("history deleted %s after the turn closed", arch.waitDeleted(t, ctx, id).Round(time.Second))
	ctl.waitDeleted(t, ctx, ctlID)

	table2, how2 := audit(arch, "--workflow", id)
	jsonl2, _ := audit(arch, "--workflow", id, "--jsonl")
	t.Logf("read after retention: %s", how2)
	if !strings.Contains(how2, "from the archive") {
		t.Errorf("after retention the audit says %q, want it read from the archive", how2)
	}
	if table2 != table {
		t.Errorf("the report read from the archive differs:\nbefore:\n%s\nafter:\n%s", table, table2)
	}
	if jsonl2 != jsonl {
		t.Errorf("the JSON lines read from the archive differ:\nbefore:\n%s\nafter:\n%s", jsonl, jsonl2)
	}
	since, sinceHow := audit(arch, "--since", "1h", "--jsonl")
	if since != jsonl || !strings.Contains(sinceHow, "1 from the archive") {
		t.Errorf("audit --since 1h (%s):\n%s\nwant:\n%s", sinceHow, since, jsonl)
	}
	var size int64
	_ = filepath.WalkDir(filepath.Join(arch.data, "archive"), func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				size += fi.Size()
			}
		}
		return nil
	})
	t.Logf("archive: %d bytes for the turn (%d records)", size, strings.Count(jsonl, "\n"))

	// audit verify: the export made before retention verifies against
	// the archive; an edited, a removed and a reordered record are each
	// named by their line.
	lines := strings.SplitAfter(strings.TrimSuffix(jsonl, "\n"), "\n")
	if len(lines) < 8 {
		t.Fatalf("%d records", len(lines))
	}
	verify := func(name string, ls []string) (string, error) {
		t.Helper()
		f := filepath.Join(arch.dir, name+".jsonl")
		writeFile(t, f, strings.Join(ls, ""), 0o644)
		out, errOut, err := arch.starter(t, sbin, "audit", "verify", f)
		t.Logf("verify %s: %s%s", name, out, errOut)
		if err != nil {
			return errOut, err
		}
		return out, nil
	}
	if out, err := verify("untouched", lines); err != nil || !strings.Contains(out, fmt.Sprintf("verified %d records of 1 turn(s) (read 1 from the archive)", len(lines))) {
		t.Errorf("the untouched export: %v: %s", err, out)
	}
	edited := slices.Clone(lines)
	edited[3] = strings.Replace(edited[3], `"decision":"`, `"decision":"x`, 1)
	removed := slices.Delete(slices.Clone(lines), 4, 5)
	reordered := slices.Clone(lines)
	reordered[5], reordered[6] = reordered[6], reordered[5]
	for _, c := range []struct {
		name string
		ls   []string
		want string
	}{
		{"edited", edited, "line 4 (turn " + id + ", record 4"},
		{"removed", removed, "line 5 (turn " + id + ", record 6"},
		{"reordered", reordered, "line 6 (turn " + id + ", record 7"},
	} {
		out, err := verify(c.name, c.ls)
		if err == nil || !strings.Contains(out, c.want) {
			t.Errorf("%s export: %v: %s, want %q", c.name, err, out, c.want)
		}
	}

	// The archive edited: the approver of c1 renamed in the archived
	// history. The turn recorded its chain head as it ended, so the audit
	// read from that archive refuses it, and so does verify of the
	// export. Control: the same edit with the head note blanked too is
	// read without a word (the head is what sees it).
	archDir := filepath.Join(arch.data, "archive")
	pristine := snapshotDir(t, archDir)
	renamed := editArchive(t, archDir, func(p map[string]any) bool {
		if p["call_id"] != "c1" || p["by"] == nil || p["by"] == "mallory" {
			return false
		}
		p["by"] = "mallory"
		return true
	})
	if renamed == 0 {
		t.Fatal("no answer of c1 with an approver in the archived history")
	}
	out, errOut, err := arch.starter(t, sbin, "audit", "--workflow", id)
	if err == nil || !strings.Contains(errOut, "does not give the audit chain head it recorded") {
		t.Errorf("the audit of an edited archive (%d payloads renamed): %v\n%s%s", renamed, err, out, errOut)
	}
	t.Logf("edited archive: %s", strings.TrimSpace(errOut))
	if out, err := verify("against-edited-archive", lines); err == nil {
		t.Errorf("verify against an edited archive passed: %s", out)
	}
	blanked := editArchive(t, archDir, func(p map[string]any) bool {
		if p["head"] == nil {
			return false
		}
		delete(p, "head")
		return true
	})
	out, errOut, err = arch.starter(t, sbin, "audit", "--workflow", id)
	if blanked == 0 || err != nil || !strings.Contains(out, "mallory") {
		t.Errorf("control, the edit without the head note (%d blanked): %v\n%s%s", blanked, err, out, errOut)
	}
	restoreDir(t, archDir, pristine)

	// Control: no archive, and the audit says why it has nothing.
	out, errOut, err = ctl.starter(t, sbin, "audit", "--workflow", ctlID)
	if err == nil || !strings.Contains(errOut, "past the namespace's retention") || !strings.Contains(errOut, "keeps no archive") {
		t.Errorf("control audit after retention: %v\n%s%s", err, out, errOut)
	}
	t.Logf("control after retention: %s", strings.TrimSpace(errOut))
}

// editArchive rewrites every history file of a filestore archive (JSON),
// decoding each JSON payload and handing it to edit; payloads edit
// changes are encoded again. It returns how many changed.
func editArchive(t *testing.T, dir string, edit func(map[string]any) bool) int {
	t.Helper()
	n := 0
	var walk func(v any) bool
	walk = func(v any) bool {
		changed := false
		switch x := v.(type) {
		case map[string]any:
			if d, ok := x["data"].(string); ok {
				if raw, err := base64.StdEncoding.DecodeString(d); err == nil {
					var p map[string]any
					if json.Unmarshal(raw, &p) == nil && edit(p) {
						b, err := json.Marshal(p)
						if err != nil {
							t.Fatal(err)
						}
						x["data"] = base64.StdEncoding.EncodeToString(b)
						n++
						changed = true
					}
				}
			}
			for _, c := range x {
				changed = walk(c) || changed
			}
		case []any:
			for _, c := range x {
				changed = walk(c) || changed
			}
		}
		return changed
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".history") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var doc any
		if err := json.Unmarshal(b, &doc); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if walk(doc) {
			out, err := json.Marshal(doc)
			if err != nil {
				return err
			}
			return os.WriteFile(p, out, 0o600)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// snapshotDir reads every file under dir; restoreDir writes them back.
func snapshotDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		files[p] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func restoreDir(t *testing.T, _ string, files map[string][]byte) {
	t.Helper()
	for p, b := range files {
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
