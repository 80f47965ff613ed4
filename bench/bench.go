package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"

	"go.temporal.io/api/serviceerror"
	tclient "go.temporal.io/sdk/client"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/model"
	"github.com/wardenhq/warden/permission"
	"github.com/wardenhq/warden/workflows"
)

// Runner runs scenarios against one worker. Temporal and Client are
// required; the rest is optional.
type Runner struct {
	// Temporal is the Temporal client (used to terminate and count turns).
	Temporal tclient.Client
	// Client starts and answers turns on the worker's task queue.
	Client *client.Client
	// Workdir is the workspace the turns run in and the direct commands
	// run in; empty means the worker's default for turns and the current
	// directory for direct runs. It must exist on the worker's machine.
	Workdir string
	// Backend names the worker backend turns run on ("" means default).
	Backend string
	// RegularModel makes the throughput scenario's model steps regular
	// activities instead of local ones (ModelConfig.Local).
	RegularModel bool
	// WorkerPID is the worker process whose RSS is reported (0: none).
	// With the embedded server it covers the server as well.
	WorkerPID int
	// ServerPID is an external Temporal server process (0: none).
	ServerPID int
	// By names who answers the approvals of the waiting scenario
	// (default "bench"). A server that requires keys accepts only the
	// name of the key the client uses, or any name from a delegate's key.
	By string
	// Prefix starts every workflow id the bench creates (default
	// "bench-<unix nanos>").
	Prefix string
	// Progress receives progress lines; nil discards them.
	Progress io.Writer
}

func (r *Runner) logf(format string, args ...any) {
	if r.Progress != nil {
		fmt.Fprintf(r.Progress, format+"\n", args...)
	}
}

func (r *Runner) prefix() string {
	if r.Prefix == "" {
		r.Prefix = fmt.Sprintf("bench-%d", time.Now().UnixNano())
	}
	return r.Prefix
}

// bashScript is a scripted model that makes n sequential Bash calls of
// command, one per model step, then answers "done".
func bashScript(command string, n int) *model.Script {
	s := &model.Script{}
	for i := range n {
		s.Steps = append(s.Steps, model.Step{ToolCalls: []model.ScriptedCall{{
			ID: fmt.Sprintf("c%d", i+1), Name: "Bash", Input: map[string]any{"command": command},
		}}})
	}
	s.Steps = append(s.Steps, model.Step{Text: "done"})
	return s
}

// turnInput is a turn running the given script under mode.
func (r *Runner) turnInput(s *model.Script, mode permission.Mode) workflows.TurnInput {
	return workflows.TurnInput{
		Prompt:        "bench",
		Model:         workflows.ModelConfig{Provider: "scripted", Script: s},
		Permission:    permission.Context{Mode: mode},
		Backend:       r.Backend,
		Workdir:       r.Workdir,
		MaxIterations: len(s.Steps) + 1,
	}
}

// ErrAsked is returned when a turn the bench expected to run unattended
// parked a call for approval.
var ErrAsked = errors.New("a call asked for approval")

// runTurn starts a turn and waits for its result. It fails (within about
// two seconds) with ErrAsked when the turn parks a call, so a policy that
// asks cannot hang the bench.
func (r *Runner) runTurn(ctx context.Context, id string, in workflows.TurnInput) (workflows.TurnResult, error) {
	if _, err := r.Client.Start(ctx, id, in); err != nil {
		return workflows.TurnResult{}, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(2 * time.Second):
			}
			// Describe is answered by the server alone, so the check adds
			// no work on the worker being measured.
			d, err := r.Temporal.DescribeWorkflowExecution(ctx, id, "")
			if err != nil || d.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()[workflows.SAWaitingSince] == nil {
				continue
			}
			_ = r.Temporal.TerminateWorkflow(context.WithoutCancel(ctx), id, "", "bench: unexpected approval")
			cancel(fmt.Errorf("turn %s: %w", id, ErrAsked))
			return
		}
	}()
	res, err := r.Client.Result(ctx, id)
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return res, cause
	}
	if err != nil {
		return res, fmt.Errorf("turn %s: %w", id, err)
	}
	return res, nil
}

// events returns all events of a (finished) turn.
func (r *Runner) events(ctx context.Context, id string) ([]workflows.Event, error) {
	var out []workflows.Event
	cursor := 0
	for {
		page, err := r.Client.Events(ctx, id, cursor)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Events...)
		if len(page.Events) == 0 || page.Next == cursor {
			return out, nil
		}
		cursor = page.Next
	}
}

// callTimes pairs each call's tool_call and tool_result events and
// returns the time between them, in call order, plus the count of calls
// whose result was an error.
func callTimes(evs []workflows.Event) (ds []time.Duration, errs int) {
	started := map[string]time.Time{}
	for _, e := range evs {
		switch e.Type {
		case workflows.EventToolCall:
			started[e.CallID] = e.Time
		case workflows.EventResult:
			if t0, ok := started[e.CallID]; ok {
				ds = append(ds, e.Time.Sub(t0))
			}
			if e.Error {
				errs++
			}
		}
	}
	return ds, errs
}

// direct runs `/bin/sh -c command` n times in dir and returns each wall time.
func direct(ctx context.Context, dir, command string, n int) ([]time.Duration, error) {
	ds := make([]time.Duration, 0, n)
	for range n {
		cmd := exec.CommandContext(ctx, "/bin/sh", "-c", command)
		cmd.Dir = dir
		t0 := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("direct %q: %w: %s", command, err, out)
		}
		ds = append(ds, time.Since(t0))
	}
	return ds, nil
}

// pool runs fn(i) for i in [0,n) on at most workers goroutines and
// returns the first error.
func pool(ctx context.Context, n, workers int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(1, min(workers, n)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(ctx, i); err != nil {
					cancel(err)
				}
			}
		}()
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return ctx.Err()
}

// Memory is a process's resident memory at points of a scenario, in MB.
// Err explains why it is missing.
type Memory struct {
	PID    int     `json:"pid,omitempty"`
	Before float64 `json:"before_mb,omitempty"`
	Peak   float64 `json:"peak_mb,omitempty"`
	After  float64 `json:"after_mb,omitempty"`
	// AfterAnon and AfterFile split After into anonymous memory (heap,
	// stacks) and file-backed pages (the executable mapped from the page
	// cache: a fixed cost that depends on how the binary got into the
	// cache, e.g. ~120 MB for the worker here when it was read from disk
	// and ~165 MB right after go build).
	AfterAnon float64 `json:"after_anon_mb,omitempty"`
	AfterFile float64 `json:"after_file_mb,omitempty"`
	Err       string  `json:"error,omitempty"`
}

// sampler polls a process's RSS and keeps the peak.
type sampler struct {
	pid  int
	mem  Memory
	mu   sync.Mutex
	stop chan struct{}
	done chan struct{}
}

// sample starts sampling pid every 100 ms; a zero pid samples nothing.
func sample(pid int) *sampler {
	s := &sampler{pid: pid, mem: Memory{PID: pid}, stop: make(chan struct{}), done: make(chan struct{})}
	if pid == 0 {
		s.mem.Err = "no pid"
		close(s.done)
		return s
	}
	b, err := RSS(pid)
	if err != nil {
		s.mem.Err = err.Error()
		close(s.done)
		return s
	}
	s.mem.Before, s.mem.Peak = mb(b), mb(b)
	go func() {
		defer close(s.done)
		for {
			select {
			case <-s.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			s.poll()
		}
	}()
	return s
}

func (s *sampler) poll() float64 {
	if s.pid == 0 || s.mem.Err != "" {
		return 0
	}
	b, err := RSS(s.pid)
	if err != nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mem.Peak = max(s.mem.Peak, mb(b))
	return mb(b)
}

// finish stops sampling and returns the figures with After read now.
func (s *sampler) finish() Memory {
	select {
	case <-s.done:
	default:
		close(s.stop)
		<-s.done
	}
	after := s.poll()
	anon, file, err := RSSParts(s.pid)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mem.After = after
	if err == nil && s.pid != 0 {
		s.mem.AfterAnon, s.mem.AfterFile = mb(anon), mb(file)
	}
	return s.mem
}

func mb(b int64) float64 { return float64(b*10/(1<<20)) / 10 }

// Machine describes where the bench ran.
type Machine struct {
	CPUs      int     `json:"cpus"`
	MemoryMB  float64 `json:"memory_mb,omitempty"`
	GoVersion string  `json:"go_version"`
	OS        string  `json:"os"`
	Kernel    string  `json:"kernel,omitempty"`
	// LoadAvg is /proc/loadavg's 1, 5 and 15 minute load when the bench
	// started: other work on the machine skews the figures.
	LoadAvg string `json:"load_avg,omitempty"`
}

// ThisMachine describes the machine the bench runs on.
func ThisMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.Lines(string(data)) {
			var kb int64
			if _, err := fmt.Sscanf(line, "MemTotal: %d kB", &kb); err == nil {
				m.MemoryMB = mb(kb * 1024)
				break
			}
		}
	}
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(data))
	}
	if data, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(data)); len(f) >= 3 {
			m.LoadAvg = strings.Join(f[:3], " ")
		}
	}
	return m
}

// isNotFound reports a workflow that does not exist or already closed.
func isNotFound(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}
