package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden"
)

// TestStarterBulkApprove: `approvals approve --all --tool Bash` answers
// every waiting Bash call of the namespace with the hash it listed, and
// leaves the other tools' calls waiting.
func TestStarterBulkApprove(t *testing.T) {
	workdir := t.TempDir()
	cl := startWorker(t, warden.Options{Workdir: workdir})
	ctx := ctxT(t, 60*time.Second)
	prefix := "bulk-" + fmt.Sprint(time.Now().UnixNano())
	startAsk(t, ctx, cl, prefix+"-a", "Bash", `{command: "touch bulk-a"}`)
	startAsk(t, ctx, cl, prefix+"-b", "Bash", `{command: "touch bulk-b"}`)
	startAsk(t, ctx, cl, prefix+"-w", "Write", `{file_path: "`+filepath.Join(workdir, "w.txt")+`", content: "x"}`)
	waitListed(t, ctx, cl, prefix+"-a", prefix+"-b", prefix+"-w")

	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runStarter(t, buildStarter(t), dir, "--config", cfg, "--address", env.srv.Addr(), "--namespace", "default",
		"approvals", "approve", "--all", "--tool", "Bash", "--by", "ops")
	if err != nil {
		t.Fatalf("approve --all: %v\n%s", err, out)
	}
	for _, id := range []string{prefix + "-a", prefix + "-b"} {
		if !strings.Contains(out, id+" c1: allow") {
			t.Errorf("output does not say %s was allowed:\n%s", id, out)
		}
		if _, err := cl.Result(ctx, id); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	if ps := waitPending(t, cl, prefix+"-w", 1); ps[0].Tool != "Write" {
		t.Errorf("the Write call was answered too: %+v", ps)
	}
	for _, f := range []string{"bulk-a", "bulk-b"} {
		if _, err := os.Stat(filepath.Join(workdir, f)); err != nil {
			t.Errorf("%s did not run: %v", f, err)
		}
	}
}
