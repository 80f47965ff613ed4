package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/permission"
)

func TestReadJobs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "s.yaml"), []byte("prompt: from script\nsteps:\n  - text: done\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "jobs.jsonl")
	lines := "# a comment\n\n" +
		`{"id": "a", "script": "s.yaml", "mode": "bypass", "workdir": "/w", "backend": "local", "max_iterations": 3}` + "\n" +
		`{"id": "b", "prompt": "inline", "script_inline": {"steps": [{"text": "hi"}]}}` + "\n"
	if err := os.WriteFile(file, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	jobs, err := ReadJobs(file, permission.Policy{Mode: permission.ModeDefault})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 2 {
		t.Fatalf("%d jobs", len(jobs))
	}
	a, b := jobs[0], jobs[1]
	if a.ID != "a" || a.Input.Prompt != "from script" || a.Input.Permission.Mode != permission.ModeBypass ||
		a.Input.Workdir != "/w" || a.Input.Backend != "local" || a.Input.MaxIterations != 3 || a.Input.Model.Provider != "scripted" {
		t.Errorf("job a = %+v", a)
	}
	if b.ID != "b" || b.Input.Prompt != "inline" || b.Input.Permission.Mode != permission.ModeDefault || b.Input.Model.Script == nil {
		t.Errorf("job b = %+v", b)
	}
	for _, c := range []struct{ content, want string }{
		{`{"id": "x", "script": "s.yaml", "extra": 1}`, "jobs.jsonl:1: json: unknown field"},
		{"\n" + `{"script": "s.yaml"}`, "jobs.jsonl:2: missing id"},
		{`{"id": "x"}`, "missing script or script_inline"},
		{`{"id": "x", "script": "s.yaml", "script_inline": {}}`, "not both"},
		{`{"id": "x", "script": "s.yaml", "mode": "yolo"}`, "jobs.jsonl:1:"},
		{"# nothing\n", "no jobs"},
	} {
		if err := os.WriteFile(file, []byte(c.content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadJobs(file, permission.Policy{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.content, err, c.want)
		}
	}
}

func TestWriteResults(t *testing.T) {
	t.Parallel()
	res := []client.JobResult{{ID: "a", WorkflowID: "batch-a", Status: client.JobCompleted, Answer: "x && y > z"}, {ID: "b", Status: client.JobFailed, Error: "boom"}}
	var out bytes.Buffer
	if err := WriteResults(&out, "", res); err != nil {
		t.Fatal(err)
	}
	want := `{"id":"a","workflow_id":"batch-a","status":"completed","answer":"x && y > z","tool_calls":0,"tool_errors":0}` + "\n" +
		`{"id":"b","workflow_id":"","status":"failed","answer":"","error":"boom","tool_calls":0,"tool_errors":0}` + "\n"
	if out.String() != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", out.String(), want)
	}
	path := filepath.Join(t.TempDir(), "out.jsonl")
	if err := WriteResults(nil, path, res); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(path); err != nil || string(data) != want {
		t.Errorf("file: %q, %v", data, err)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temporary file left: %v", err)
	}
}

func TestReadAskUserAnswer(t *testing.T) {
	t.Parallel()
	obj := `{"answers": [{"question": "Which env?", "selected": ["staging"]}]}`
	arr := `[{"question": "Which env?", "selected": ["staging"]}]`
	path := filepath.Join(t.TempDir(), "a.json")
	if err := os.WriteFile(path, []byte(obj), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path  string
		stdin string
	}{{path, ""}, {"-", obj}, {"-", "  " + arr}} {
		ans, err := ReadAskUserAnswer(c.path, strings.NewReader(c.stdin))
		if err != nil || len(ans.Answers) != 1 || ans.Answers[0].Question != "Which env?" || ans.Answers[0].Selected[0] != "staging" {
			t.Errorf("%s %q: %+v, %v", c.path, c.stdin, ans, err)
		}
	}
	if _, err := ReadAskUserAnswer("-", strings.NewReader("{")); err == nil || !strings.Contains(err.Error(), "answer -:") {
		t.Errorf("bad JSON: %v", err)
	}
	if _, err := ReadAskUserAnswer(path+".missing", nil); err == nil || !strings.Contains(err.Error(), "read answer:") {
		t.Errorf("missing file: %v", err)
	}
}
