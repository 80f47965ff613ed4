package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/wardenhq/warden/bench"
)

// TestBenchDockerNeedsNoWorker: `bench docker` runs without a Temporal
// connection and prints its report on stdout, progress on stderr; with
// no daemon the report says why nothing was measured.
func TestBenchDockerNeedsNoWorker(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+t.TempDir()+"/no-docker.sock")
	var out, progress bytes.Buffer
	cmd := newBenchCmd(&conn{})
	cmd.SetOut(&out)
	cmd.SetErr(&progress)
	cmd.SetArgs([]string{"docker", "--json", "--docker-calls", "2"})
	var rep bench.Report
	if err := cmd.Execute(); err != nil || json.Unmarshal(out.Bytes(), &rep) != nil {
		t.Fatalf("bench docker: %v\n%s", err, out.String())
	}
	if rep.Docker == nil || rep.Docker.Calls != 2 || rep.Docker.Unavailable == "" || rep.Overhead != nil || rep.Address != "" {
		t.Errorf("report = %+v", rep)
	}
	if !strings.Contains(progress.String(), "docker: session=false, 2 calls") {
		t.Errorf("progress = %q", progress.String())
	}
	if _, err := execute(t, newBenchCmd(&conn{}), "", "everything"); err == nil {
		t.Error("an unknown scenario was accepted")
	}
}
