package bench

import (
	"context"
	"fmt"
	"net"
	"strconv"
)

// Plan sizes the scenarios of a Run.
type Plan struct {
	Overhead   OverheadConfig
	Throughput ThroughputConfig
	Waiting    WaitingConfig
	Long       LongConfig
	Docker     DockerConfig
}

// Run runs the scenario which (overhead, throughput, waiting, long or
// docker; all runs every one but long) sized by p, and sets the report
// of each in rep, in the order overhead, throughput, waiting, long,
// docker. It stops at the first scenario that fails.
func (r *Runner) Run(ctx context.Context, which string, p Plan, rep *Report) error {
	all := which == "all"
	switch which {
	case "all", "overhead", "throughput", "waiting", "long", "docker":
	default:
		return fmt.Errorf("bench: unknown scenario %q", which)
	}
	var err error
	if all || which == "overhead" {
		rep.Overhead, err = run(ctx, p.Overhead, r.Overhead)
	}
	if err == nil && (all || which == "throughput") {
		rep.Throughput, err = run(ctx, p.Throughput, r.Throughput)
	}
	if err == nil && (all || which == "waiting") {
		rep.Waiting, err = run(ctx, p.Waiting, r.Waiting)
	}
	if err == nil && which == "long" {
		rep.Long, err = run(ctx, p.Long, r.Long)
	}
	if err == nil && (all || which == "docker") {
		rep.Docker, err = run(ctx, p.Docker, r.Docker)
	}
	return err
}

// run runs one scenario and returns its report, nil when it fails.
func run[C, R any](ctx context.Context, cfg C, scenario func(context.Context, C) (R, error)) (*R, error) {
	rep, err := scenario(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &rep, nil
}

// ListenerPIDAt is ListenerPID of the port of addr (host:port): the
// local process serving addr, or 0 when there is none, addr has no
// port, or the process cannot be found.
func ListenerPIDAt(addr string) int {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return 0
	}
	pid, err := ListenerPID(port)
	if err != nil {
		return 0
	}
	return pid
}
