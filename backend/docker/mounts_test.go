package docker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMountsExposingOwnPathsRefused: New refuses, before it reaches a
// daemon, a configured mount whose host path holds the worker's data
// directory (the project with its ./.warden), is it, lies inside it, or
// reaches it through a link, naming the mount and the own path; other
// mounts and named volumes pass the check.
func TestMountsExposingOwnPathsRefused(t *testing.T) {
	proj := t.TempDir()
	data := filepath.Join(proj, ".warden")
	if err := os.MkdirAll(filepath.Join(data, "auth"), 0o700); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	link := filepath.Join(other, "proj-link")
	if err := os.Symlink(proj, link); err != nil {
		t.Fatal(err)
	}
	own := []string{data, filepath.Join(other, "cfg.yaml")}
	for _, m := range []string{
		proj + ":/workspace",
		data + ":/data:ro",
		filepath.Join(data, "auth") + ":/keys",
		link + ":/workspace",
		other + ":/other", // holds the config file
	} {
		_, err := New(context.Background(), Config{Image: "img", Mounts: []string{m}, Own: own})
		if err == nil || !strings.Contains(err.Error(), m) || !strings.Contains(err.Error(), "worker's own") {
			t.Errorf("mount %s: %v, want refused naming it", m, err)
		}
	}
	ok := []string{filepath.Join(proj, "src") + ":/workspace/src", "cache-volume:/cache", t.TempDir() + ":/tmp/x"}
	if err := CheckMounts(ok, own); err != nil {
		t.Errorf("mounts that expose nothing: %v", err)
	}
	// The control: without own paths the same project mount passes.
	if err := CheckMounts([]string{proj + ":/workspace"}, nil); err != nil {
		t.Errorf("control: %v", err)
	}
}
