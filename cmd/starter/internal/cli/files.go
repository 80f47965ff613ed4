package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/tools"
	"github.com/wardenhq/warden/workflows"
)

// jobLine is one line of a jobs file.
type jobLine struct {
	ID           string          `json:"id"`
	Script       string          `json:"script,omitempty"`
	ScriptInline json.RawMessage `json:"script_inline,omitempty"`
	Prompt       string          `json:"prompt,omitempty"`
	Mode         string          `json:"mode,omitempty"`
	Workdir      string          `json:"workdir,omitempty"`
	Backend      string          `json:"backend,omitempty"`
	MaxIter      int             `json:"max_iterations,omitempty"`
}

// ReadJobs parses a jobs file of JSON lines, one scripted turn each:
//
//	{"id": "job-1", "script": "path.yaml" | "script_inline": {...},
//	 "prompt": "...", "mode": "...", "workdir": "...", "backend": "...",
//	 "max_iterations": N}
//
// Blank lines and lines starting with # are skipped; unknown fields are
// errors, which name the file and line. Script paths are relative to the
// file's directory. base is the permission policy a job's mode applies
// to.
func ReadJobs(path string, base permission.Policy) ([]client.Job, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	dir := filepath.Dir(path)
	var jobs []client.Job
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		var l jobLine
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		j, err := l.job(dir, base)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		jobs = append(jobs, j)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	if len(jobs) == 0 {
		return nil, fmt.Errorf("%s: no jobs", path)
	}
	return jobs, nil
}

// job turns a line into a job.
func (l jobLine) job(dir string, base permission.Policy) (client.Job, error) {
	if l.ID == "" {
		return client.Job{}, errors.New("missing id")
	}
	var s *model.Script
	var err error
	switch {
	case l.Script != "" && len(l.ScriptInline) > 0:
		return client.Job{}, errors.New("give script or script_inline, not both")
	case l.Script != "":
		p := l.Script
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		s, err = model.LoadScript(p)
	case len(l.ScriptInline) > 0:
		s, err = model.ParseScript(l.ScriptInline) // JSON is YAML
	default:
		return client.Job{}, errors.New("missing script or script_inline")
	}
	if err != nil {
		return client.Job{}, err
	}
	policy := base
	if l.Mode != "" {
		policy.Mode = permission.Mode(l.Mode)
	}
	pc, err := policy.Context()
	if err != nil {
		return client.Job{}, err
	}
	prompt := l.Prompt
	if prompt == "" {
		prompt = s.Prompt
	}
	return client.Job{ID: l.ID, Input: workflows.TurnInput{Prompt: prompt, Model: workflows.ModelConfig{Provider: "scripted", Script: s},
		Permission: pc, Workdir: l.Workdir, Backend: l.Backend, MaxIterations: l.MaxIter}}, nil
}

// WriteResults writes results as JSON lines (without HTML escaping) to
// out, or, when path is not empty, to the file at path, replaced
// atomically.
func WriteResults(out io.Writer, path string, results []client.JobResult) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for _, r := range results {
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("results: %w", err)
		}
	}
	if path == "" {
		_, err := out.Write(b.Bytes())
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	return nil
}

// ReadAskUserAnswer reads an AskUser answer from the JSON file at path
// ("-" reads stdin): the AskUserAnswer object or just its answers array.
func ReadAskUserAnswer(path string, stdin io.Reader) (tools.AskUserAnswer, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return tools.AskUserAnswer{}, fmt.Errorf("read answer: %w", err)
	}
	var ans tools.AskUserAnswer
	if t := strings.TrimSpace(string(data)); strings.HasPrefix(t, "[") {
		err = json.Unmarshal(data, &ans.Answers)
	} else {
		err = json.Unmarshal(data, &ans)
	}
	if err != nil {
		return ans, fmt.Errorf("answer %s: %w", path, err)
	}
	return ans, nil
}
