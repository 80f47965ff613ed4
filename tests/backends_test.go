package tests

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/backend/docker"
	"github.com/wardenhq/warden/backend/e2b"
	"github.com/wardenhq/warden/backend/e2b/e2bfake"
	"github.com/wardenhq/warden/backend/local"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// fileToolsScript drives every file tool and Bash inside a workspace dir.
func fileToolsScript(dir string) string {
	return fmt.Sprintf(`
steps:
  - tool_calls:
      - {name: Write, input: {file_path: "%[1]s/notes.txt", content: "alpha\nbeta\ngamma\n"}}
  - tool_calls:
      - {name: Read, input: {file_path: "%[1]s/notes.txt"}}
  - tool_calls:
      - {name: Edit, input: {file_path: "%[1]s/notes.txt", old_string: "beta", new_string: "BETA"}}
  - tool_calls:
      - {name: Grep, input: {pattern: "BETA", path: "%[1]s", output_mode: content}}
      - {name: Glob, input: {pattern: "*.txt", path: "%[1]s"}}
      - {name: Bash, input: {command: "cat notes.txt; uname -s"}}
  - text: files done
`, dir)
}

// runFileTools runs the script on backend name and checks each result.
func runFileTools(t *testing.T, b backend.Backend, name, dir string, between func()) {
	t.Helper()
	cl := startWorker(t, warden.Options{Backends: map[string]backend.Backend{name: b}})
	ctx := ctxT(t, 120*time.Second)
	id := name + "-files-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: script(t, fileToolsScript(dir))},
		Backend: name, Workdir: dir, Permission: permission.Context{Mode: permission.ModeBypass}}); err != nil {
		t.Fatal(err)
	}
	if between != nil {
		waitFor(t, ctx, func() bool {
			page, err := cl.Events(ctx, id, 0)
			if err != nil {
				return false
			}
			for _, e := range page.Events {
				if e.Type == workflows.EventResult && e.Tool == "Edit" {
					return true
				}
			}
			return false
		})
		between()
	}
	res, err := cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	rs := toolResults(res)
	if len(rs) != 6 {
		t.Fatalf("results = %+v", rs)
	}
	for _, r := range rs {
		if r.IsError {
			t.Errorf("%s failed: %s", r.ToolName, r.Content)
		}
	}
	want := map[string]string{"Read": "beta", "Grep": "BETA", "Glob": "notes.txt", "Bash": "alpha\nBETA\ngamma\nLinux"}
	for _, r := range rs {
		if w, ok := want[r.ToolName]; ok && !strings.Contains(r.Content, w) {
			t.Errorf("%s result %q does not contain %q", r.ToolName, r.Content, w)
		}
	}
}

func dockerAvailable(t *testing.T) {
	t.Helper()
	if err := exec.Command("docker", "info").Run(); err != nil {
		if os.Getenv("WARDEN_REQUIRE_DOCKER") != "" {
			t.Fatalf("docker is required (WARDEN_REQUIRE_DOCKER set) but not reachable: %v", err)
		}
		t.Skip("no Docker daemon reachable and WARDEN_REQUIRE_DOCKER unset")
	}
}

func dockerImage() string {
	if img := os.Getenv("WARDEN_DOCKER_IMAGE"); img != "" {
		return img
	}
	return "warden-workspace:latest"
}

// TestDockerTurnSurvivesContainerKill runs Bash, Write, Read, Edit, Grep
// and Glob inside a container through the real server, and removes the
// container mid-turn: the backend recreates it (the workspace is a bind
// mount, so the files survive) and the turn completes.
func TestDockerTurnSurvivesContainerKill(t *testing.T) {
	dockerAvailable(t)
	host := t.TempDir()
	ctx := context.Background()
	b, err := docker.New(ctx, docker.Config{Image: dockerImage(), Mounts: []string{host + ":/workspace"}, Session: true,
		WorkspaceID: "tests-" + fmt.Sprint(time.Now().UnixNano())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	runFileTools(t, b, "docker", "/workspace", func() {
		if out, err := exec.Command("docker", "rm", "-f", b.ContainerID()).CombinedOutput(); err != nil {
			t.Fatalf("docker rm: %v %s", err, out)
		}
	})
	if data, err := os.ReadFile(filepath.Join(host, "notes.txt")); err != nil || string(data) != "alpha\nBETA\ngamma\n" {
		t.Errorf("notes.txt on the host = %q, %v", data, err)
	}
}

// TestE2BTurn runs the same turn on the E2B backend against the local
// fake that speaks E2B's wire protocol.
func TestE2BTurn(t *testing.T) {
	fake := e2bfake.New(t)
	dir := t.TempDir()
	b, err := e2b.New(context.Background(), e2b.Config{APIKey: fake.APIKey, APIURL: fake.APIURL(), SandboxURL: fake.SandboxURL(), Workdir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	runFileTools(t, b, "e2b", dir, nil)
}

// TestLocalTurnFileTools runs the file tools through the real server on
// the local backend.
func TestLocalTurnFileTools(t *testing.T) {
	dir := t.TempDir()
	runFileTools(t, local.New(dir), "local", dir, nil)
}

// TestToolQueueRouting: the turn runs on a worker without the E2B backend;
// its permission checks and tool calls are routed to another task queue
// whose worker has it.
func TestToolQueueRouting(t *testing.T) {
	fake := e2bfake.New(t)
	dir := t.TempDir()
	b, err := e2b.New(context.Background(), e2b.Config{APIKey: fake.APIKey, APIURL: fake.APIURL(), SandboxURL: fake.SandboxURL(), Workdir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	toolQueue := "tq-tools-" + fmt.Sprint(time.Now().UnixNano())
	tw := worker.New(env.c, toolQueue, worker.Options{})
	if _, err := warden.Register(tw, warden.Options{Backends: map[string]backend.Backend{"e2b": b}, DefaultBackend: "e2b"}); err != nil {
		t.Fatal(err)
	}
	if err := tw.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tw.Stop)
	cl := startWorker(t, warden.Options{}) // local only
	ctx := ctxT(t, 60*time.Second)
	s := script(t, fmt.Sprintf("steps:\n  - tool_calls: [{name: Write, input: {file_path: %q, content: \"routed\"}}, {name: Bash, input: {command: \"cat routed.txt\"}}]\n  - text: ok\n", dir+"/routed.txt"))
	id := "route-" + fmt.Sprint(time.Now().UnixNano())
	if _, err := cl.Start(ctx, id, workflows.TurnInput{Model: workflows.ModelConfig{Provider: "scripted", Script: s},
		Backend: "e2b", Workdir: dir, ToolQueue: toolQueue, Permission: permission.Context{Mode: permission.ModeBypass}}); err != nil {
		t.Fatal(err)
	}
	res, err := cl.Result(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	rs := toolResults(res)
	if len(rs) != 2 || rs[0].IsError || strings.TrimSpace(rs[1].Content) != "routed" {
		t.Fatalf("results = %+v", rs)
	}
	// The sandbox (the fake's) saw the commands, not the turn's worker.
	var starts int
	for _, r := range fake.Requests() {
		if strings.Contains(r.Path, "Process/Start") {
			starts++
		}
	}
	if starts == 0 {
		t.Error("no process started in the E2B sandbox")
	}
}

// TestDockerToolCannotReachKeysOrFrontend tries what docs/permissions.md says a
// Docker tool process cannot do: reach the Temporal frontend on the
// host's loopback, or read a key file in the worker's data directory.
// The same probe run on the local backend succeeds, so the test can fail.
func TestDockerToolCannotReachKeysOrFrontend(t *testing.T) {
	dockerAvailable(t)
	ctx := ctxT(t, 60*time.Second)
	dataDir := t.TempDir()
	key := filepath.Join(dataDir, "auth", "operator.key")
	if err := os.MkdirAll(filepath.Dir(key), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, []byte("wk1.secret.operator\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, port, _ := strings.Cut(env.srv.Addr(), ":")
	probe := []string{"/bin/bash", "-c", fmt.Sprintf(
		`if (exec 3<>/dev/tcp/127.0.0.1/%s) 2>/dev/null; then echo frontend-reached; fi; cat %q 2>/dev/null; true`, port, key)}

	work := t.TempDir()
	// The local backend without its sandbox, as before it had one: the
	// probe works there, so it can fail.
	res, err := (&local.Backend{Workdir: work, Unsandboxed: true}).Exec(ctx, backend.ExecRequest{Argv: probe})
	if err != nil || !strings.Contains(string(res.Stdout), "frontend-reached") || !strings.Contains(string(res.Stdout), "wk1.") {
		t.Fatalf("the probe does not work on the local backend (%v): %q", err, res.Stdout)
	}
	b, err := docker.New(ctx, docker.Config{Image: dockerImage(), Mounts: []string{work + ":/workspace"},
		WorkspaceID: "tests-iso-" + fmt.Sprint(time.Now().UnixNano())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	res, err = b.Exec(ctx, backend.ExecRequest{Argv: probe, Dir: "/workspace"})
	if err != nil {
		t.Fatal(err)
	}
	if out := string(res.Stdout); strings.Contains(out, "frontend-reached") || strings.Contains(out, "wk1.") {
		t.Errorf("a Docker tool reached the frontend or read the key file: %q", out)
	}
}
