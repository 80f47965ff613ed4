package local_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/backend/backendtest"
	"github.com/wardenhq/warden/backend/local"
)

func TestConformance(t *testing.T) {
	// Not parallel: backendtest.Run sets environment variables.
	backendtest.Run(t, func(t *testing.T) (backend.Backend, string) {
		dir := t.TempDir()
		return local.New(dir), dir
	})
}

// TestEnvPassThrough: backend.env names pass the worker's value through,
// NAME=value sets a value, the request's entries come last, and nothing
// else of the worker's environment reaches the process.
func TestEnvPassThrough(t *testing.T) {
	t.Setenv("WARDEN_TEST_PASSED", "passed-value")
	t.Setenv("WARDEN_TEST_HIDDEN", "hidden-value")
	t.Setenv("LC_TIME", "C")
	spec := []string{"WARDEN_TEST_PASSED", "WARDEN_TEST_SET=literal", "WARDEN_TEST_ABSENT"}
	if err := backend.ParseEnvSpec(spec); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	b := &local.Backend{Workdir: dir, Env: backend.ResolveEnv(spec, os.Environ())}
	res, err := b.Exec(t.Context(), backend.ExecRequest{Argv: []string{"env"}, Env: []string{"WARDEN_TEST_SET=request"}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("env: %v %+v", err, res)
	}
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(res.Stdout)), "\n") {
		k, v, _ := strings.Cut(l, "=")
		got[k] = v
	}
	want := map[string]string{"WARDEN_TEST_PASSED": "passed-value", "WARDEN_TEST_SET": "request", "LC_TIME": "C", "PATH": os.Getenv("PATH")}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	for k := range got {
		if k == "WARDEN_TEST_HIDDEN" || k == "WARDEN_TEST_ABSENT" {
			t.Errorf("%s reached the process", k)
		}
		// The sandbox adds where its temporary files and caches go.
		sandbox := []string{"TMPDIR", "XDG_CACHE_HOME", "GOCACHE", "npm_config_cache", "PIP_CACHE_DIR"}
		if !slices.Contains(backend.BaseEnvNames(), k) && !slices.Contains(sandbox, k) && !strings.HasPrefix(k, "LC_") && !strings.HasPrefix(k, "WARDEN_TEST_") && k != "PWD" && k != "SHLVL" && k != "_" {
			t.Errorf("unexpected variable %s in a tool's environment", k)
		}
	}
}

func TestParseEnvSpecErrors(t *testing.T) {
	t.Parallel()
	for _, bad := range [][]string{{""}, {"1X"}, {"A-B=c"}, {"=v"}, {"OK", "BAD NAME"}} {
		if err := backend.ParseEnvSpec(bad); err == nil {
			t.Errorf("ParseEnvSpec(%q) accepted", bad)
		}
	}
}
