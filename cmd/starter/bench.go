package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/bench"
	"github.com/wardenhq/warden/config"
)

// benchFlags are the sizes and targets of `starter bench`.
type benchFlags struct {
	calls, turns, turnCalls, waiting, sample, concurrency, dockerCalls int
	workerPID, serverPID                                               int
	workdir, backend, image, command                                   string
	asJSON, regularModel                                               bool
	steps, outputKB, canAfter                                          int
	dataDir                                                            string
	waitTimeout                                                        time.Duration
}

const benchLong = `bench runs scenarios against a running worker and prints a table (or,
with --json, one JSON document). Run it on the worker's machine: memory
figures read /proc, the default workspace is a local temporary directory,
and direct runs of the same commands give the ratios.

  overhead    N sequential Bash calls in one turn (true; ls in default mode;
              touch f) against the same command run directly
  throughput  M concurrent turns of K Bash calls: calls/s and worker RSS
  waiting     W turns parked on an approval: RSS, ListPending time,
              approve → tool latency on a sample; then terminates the rest
  docker      the Docker backend's plain exec against its shell session
  long        one session of --steps steps, each reading --output-kb KB:
              history and data-directory bytes per step, step latency at
              the first and last tenth, worker RSS (not part of all)
  all         all of the above but long`

func newBenchCmd(cn *conn) *cobra.Command {
	var f benchFlags
	cmd := &cobra.Command{
		Use:       "bench overhead|throughput|waiting|docker|long|all",
		Short:     "Measure tool-call overhead, throughput and parked-turn cost on a running worker",
		Long:      benchLong,
		Args:      cobra.MatchAll(cobra.ExactArgs(1), cobra.OnlyValidArgs),
		ValidArgs: []string{"overhead", "throughput", "waiting", "docker", "long", "all"},
		RunE:      func(cmd *cobra.Command, args []string) error { return f.run(cmd, cn, args[0]) },
	}
	f.declare(cmd)
	return cmd
}

// declare declares the flags on cmd.
func (f *benchFlags) declare(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.IntVar(&f.calls, "calls", 50, "overhead: sequential calls per variant (N)")
	fl.IntVar(&f.turns, "turns", 20, "throughput: concurrent turns (M)")
	fl.IntVar(&f.turnCalls, "turn-calls", 10, "throughput: calls per turn (K)")
	fl.StringVar(&f.command, "command", "true", "throughput: Bash command each call runs (bypass mode)")
	fl.IntVar(&f.waiting, "waiting", 10000, "waiting: turns parked on an approval (W)")
	fl.IntVar(&f.sample, "sample", 50, "waiting: turns approved one at a time for latency (S)")
	fl.IntVar(&f.concurrency, "concurrency", 32, "waiting: parallel starts and terminations")
	fl.DurationVar(&f.waitTimeout, "wait-timeout", 30*time.Minute, "waiting: bound on the wait for all turns to be pending")
	fl.IntVar(&f.dockerCalls, "docker-calls", 50, "docker: runs per mode")
	fl.StringVar(&f.image, "image", "warden-workspace:latest", "docker: workspace image")
	fl.IntVar(&f.workerPID, "worker-pid", 0, "worker process for RSS (default: the process listening on the frontend port)")
	fl.IntVar(&f.serverPID, "server-pid", 0, "external Temporal server process for RSS")
	fl.StringVar(&f.workdir, "workdir", "", "workspace for the turns and direct runs (default a new temporary directory)")
	fl.StringVar(&f.backend, "backend", "", "worker backend the turns use (default the worker's)")
	fl.BoolVar(&f.regularModel, "regular-model", false, "throughput: model steps as regular activities (default: local activities, ModelConfig.Local)")
	fl.BoolVar(&f.asJSON, "json", false, "print one JSON document")
	fl.IntVar(&f.steps, "steps", 1000, "long: model steps")
	fl.IntVar(&f.outputKB, "output-kb", 60, "long: KB each step's tool reads")
	fl.IntVar(&f.canAfter, "continue-as-new-after", 0, "long: history events before the turn continues as new (0: the server's suggestion)")
	fl.StringVar(&f.dataDir, "data-dir", "", "long: the worker's data directory, measured for growth (default server.data_dir when the worker is local)")
}

// run connects (every scenario but docker needs the worker), runs the
// scenario which and prints the report.
func (f benchFlags) run(cmd *cobra.Command, cn *conn, which string) error {
	ctx := cmd.Context()
	rep := bench.Report{Machine: bench.ThisMachine(), Started: time.Now().UTC()}
	r := &bench.Runner{Workdir: f.workdir, Backend: f.backend, WorkerPID: f.workerPID, RegularModel: f.regularModel,
		ServerPID: f.serverPID, Progress: cmd.ErrOrStderr()}
	if which != "docker" {
		c, cl, cfg, err := cn.dial(ctx)
		if err != nil {
			return err
		}
		defer c.Close()
		r.Temporal, r.Client, r.By = c, cl, cn.by("")
		rep.Address = cfg.Frontend(cn.address)
		if r.WorkerPID == 0 {
			r.WorkerPID = bench.ListenerPIDAt(rep.Address)
		}
		if r.Workdir == "" {
			dir, err := os.MkdirTemp("", "warden-bench-")
			if err != nil {
				return fmt.Errorf("workdir: %w", err)
			}
			defer os.RemoveAll(dir)
			r.Workdir = dir
		}
	}
	if err := r.Run(ctx, which, f.plan(cn, which), &rep); err != nil {
		return err
	}
	if f.asJSON {
		return jsonEncoder(cmd.OutOrStdout()).Encode(rep)
	}
	return rep.WriteTable(cmd.OutOrStdout())
}

// plan sizes the scenarios; long measures the data directory of
// --data-dir, else that of the config when the worker is local.
func (f benchFlags) plan(cn *conn, which string) bench.Plan {
	dataDir := f.dataDir
	if which == "long" && dataDir == "" && cn.address == "" {
		dataDir = cfg0(cn).Server.DataDir
	}
	return bench.Plan{
		Overhead:   bench.OverheadConfig{Calls: f.calls},
		Throughput: bench.ThroughputConfig{Turns: f.turns, Calls: f.turnCalls, Command: f.command},
		Waiting:    bench.WaitingConfig{Turns: f.waiting, Sample: f.sample, Concurrency: f.concurrency, Timeout: f.waitTimeout},
		Long:       bench.LongConfig{Steps: f.steps, OutputKB: f.outputKB, DataDir: dataDir, ContinueAsNewAfter: f.canAfter},
		Docker:     bench.DockerConfig{Image: f.image, Calls: f.dockerCalls},
	}
}

// cfg0 reads the config for defaults, ignoring errors (dial reports them).
func cfg0(cn *conn) config.Config {
	cfg, _ := cn.settings()
	return cfg
}
