package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/backend/docker"
)

// DockerConfig sizes the docker scenario.
type DockerConfig struct {
	// Image is the workspace image (default warden-workspace:latest).
	Image string
	// Calls is the number of `true` runs per mode (default 50).
	Calls int
}

// DockerReport compares the Docker backend's plain exec with its
// persistent shell session. Unavailable, when set, says why nothing was
// measured.
type DockerReport struct {
	Unavailable string `json:"unavailable,omitempty"`
	Image       string `json:"image,omitempty"`
	Calls       int    `json:"calls,omitempty"`
	// Plain is a fresh API exec per command.
	Plain Stats `json:"plain"`
	// Session feeds the command to one persistent shell.
	Session Stats `json:"session"`
	// Direct runs the command on the host, for scale.
	Direct Stats `json:"direct"`
	// Ratio is Plain.MedianMS / Session.MedianMS.
	Ratio float64 `json:"ratio"`
}

// dockerReachable reports why no Docker daemon can be tried, or nil.
func dockerReachable() error {
	if os.Getenv("DOCKER_HOST") != "" {
		return nil
	}
	if _, err := os.Stat("/var/run/docker.sock"); err != nil {
		return fmt.Errorf("no DOCKER_HOST and %w", err)
	}
	return nil
}

// Docker measures `/bin/sh -c true` through the Docker backend, plain
// exec against session, each in its own workspace container that is
// removed afterwards. Without a reachable daemon (or image) it returns a
// report with Unavailable set and a nil error.
func (r *Runner) Docker(ctx context.Context, cfg DockerConfig) (DockerReport, error) {
	rep := DockerReport{Image: cfg.Image, Calls: cfg.Calls}
	if rep.Image == "" {
		rep.Image = "warden-workspace:latest"
	}
	if rep.Calls <= 0 {
		rep.Calls = 50
	}
	if err := dockerReachable(); err != nil {
		rep.Unavailable = err.Error()
		return rep, nil
	}
	for _, session := range []bool{false, true} {
		r.logf("docker: session=%v, %d calls", session, rep.Calls)
		ds, err := dockerRuns(ctx, rep.Image, session, rep.Calls)
		if err != nil {
			var unavailable *unavailableError
			if errors.As(err, &unavailable) {
				rep.Unavailable = unavailable.Error()
				return rep, nil
			}
			return rep, fmt.Errorf("docker: %w", err)
		}
		if session {
			rep.Session = Summarize(ds)
		} else {
			rep.Plain = Summarize(ds)
		}
	}
	ds, err := direct(ctx, "", "true", rep.Calls)
	if err != nil {
		return rep, fmt.Errorf("docker: %w", err)
	}
	rep.Direct = Summarize(ds)
	rep.Ratio = ratio(rep.Plain.MedianMS, rep.Session.MedianMS)
	return rep, nil
}

// unavailableError is a backend that could not be set up at all.
type unavailableError struct{ err error }

func (e *unavailableError) Error() string { return e.err.Error() }
func (e *unavailableError) Unwrap() error { return e.err }

// dockerRuns starts a workspace, runs `true` once to warm it up (and
// start the session), then n timed times.
func dockerRuns(ctx context.Context, image string, session bool, n int) (ds []time.Duration, err error) {
	b, err := docker.New(ctx, docker.Config{Image: image, Session: session,
		Labels: map[string]string{"warden.bench": "1"}})
	if err != nil {
		return nil, &unavailableError{err}
	}
	defer func() {
		if cerr := b.Close(context.WithoutCancel(ctx)); err == nil && cerr != nil {
			err = fmt.Errorf("close workspace: %w", cerr)
		}
	}()
	req := backend.ExecRequest{Argv: []string{"/bin/sh", "-c", "true"}}
	for i := range n + 1 {
		t0 := time.Now()
		res, err := b.Exec(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("exec: %w", err)
		}
		if res.ExitCode != 0 {
			return nil, fmt.Errorf("exec: exit %d: %s", res.ExitCode, res.Stderr)
		}
		if i > 0 {
			ds = append(ds, time.Since(t0))
		}
	}
	return ds, nil
}
