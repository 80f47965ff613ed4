package node

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/backend/local"
	"github.com/wardenhq/warden/config"
)

// TestWorkerHidesResolvedOwnPaths: a worker started as `worker --config
// cfg.yaml --data-dir DIR` with WARDEN_KEY_FILE set hides the data
// directory and the key file it runs with, not the config file's data
// directory: the local backend's file tools refuse them and a sandboxed
// `cat` finds them empty, while the same `cat` unsandboxed (the control)
// prints the key. The protected patterns hold them too.
func TestWorkerHidesResolvedOwnPaths(t *testing.T) {
	ws := t.TempDir()
	data := filepath.Join(ws, "srv", "data")
	keyFile := filepath.Join(ws, "keys", "worker.key")
	cfgFile := filepath.Join(ws, "cfg.yaml")
	if err := os.WriteFile(cfgFile, []byte("server:\n  data_dir: "+filepath.Join(ws, "elsewhere")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	operatorKey := filepath.Join(data, "auth", config.OperatorKeyFile)
	for p, secret := range map[string]string{operatorKey: "OPERATOR-SECRET", keyFile: "WORKER-SECRET"} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(secret+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"WARDEN_KEY_FILE": keyFile}
	cfg, err := config.Resolve(cfgFile, config.FromEnv(func(k string) string { return env[k] }), config.Overrides{DataDir: data, Workdir: ws})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{data + "{,/**}", keyFile, cfgFile} {
		if !slices.Contains(cfg.OwnPatterns(), want) {
			t.Errorf("protected patterns %q lack %s", cfg.OwnPatterns(), want)
		}
	}
	ctx := context.Background()
	out, closeAll, err := backends(ctx, cfg.Backend, ws, hiddenPaths(cfg), cfg.OwnPaths(), cfg.Permission.SensitivePaths)
	defer closeAll()
	if err != nil {
		t.Fatal(err)
	}
	lb := out["local"].(*local.Backend)
	for _, p := range []string{operatorKey, keyFile, cfgFile} {
		if _, err := lb.ReadFile(ctx, p); err == nil || !strings.Contains(err.Error(), "refused") {
			t.Errorf("Read %s: %v, want refused", p, err)
		}
	}
	cat := backend.ExecRequest{Argv: []string{"/bin/sh", "-c", "cat " + operatorKey + " " + keyFile + "; echo ran-$((40+2))"}}
	res, err := lb.Exec(ctx, cat)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(res.Stdout); !strings.Contains(got, "ran-42") || strings.Contains(got, "SECRET") {
		t.Errorf("sandboxed cat printed %q (stderr %q), want the marker and no key", got, res.Stderr)
	}
	off := &local.Backend{Workdir: ws, Unsandboxed: true}
	res, err = off.Exec(ctx, cat)
	if err != nil || !strings.Contains(string(res.Stdout), "OPERATOR-SECRET") || !strings.Contains(string(res.Stdout), "WORKER-SECRET") {
		t.Errorf("control (sandbox off): %v %q, want both keys printed", err, res.Stdout)
	}
}

// TestDockerMountOfOwnPathsRefused: a worker whose Docker backend mounts
// the project that holds its data directory (the one given by
// --data-dir) does not start, and says which mount and which path.
func TestDockerMountOfOwnPathsRefused(t *testing.T) {
	proj := t.TempDir()
	data := filepath.Join(proj, ".srv")
	cfg := config.Default()
	cfg.Apply(config.Overrides{DataDir: data, Workdir: proj})
	cfg.Backend.Docker.Enabled = true
	cfg.Backend.Docker.Mounts = []string{proj + ":/workspace"}
	_, closeAll, err := backends(context.Background(), cfg.Backend, proj, hiddenPaths(cfg), cfg.OwnPaths(), cfg.Permission.SensitivePaths)
	closeAll()
	if err == nil || !strings.Contains(err.Error(), proj+":/workspace") || !strings.Contains(err.Error(), data) {
		t.Errorf("backends: %v, want the mount refused naming %s", err, data)
	}
}
