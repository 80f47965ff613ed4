package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/cmd/starter/internal/cli"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/permission"
)

const whatIfLong = `what-if reads the same turn histories as "starter audit" and re-decides
every call the engine decided there (the calls it allowed, denied or
asked, those approvers answered, and the inputs approvers edited) with
the worker's decision function under the policy in --rules (a policy,
or a config file whose permission section it reads; its rule examples
must pass).

The proposed policy's rules replace each turn's; the settings it sets
(mode, working_dirs, sensitive_paths, dangerous_files/dirs, sandbox)
replace the turn's, and those it leaves unset keep the turn's. Rules a
turn's approvers added with always allow stay, as they do when the live
policy changes. A call a remembered approval allowed stays allowed where
the proposal would merely ask.

It prints each change of decision (allow→ask, ask→allow, allow→deny,
...) with counts per change, per rule and per tool, and the calls; a
change that would newly allow a call a human once denied is marked
DENIED-BY-HUMAN. Without --since and --workflow it reads the last 7 days.`

// whatIfFlags are the flags of `starter policy what-if`.
type whatIfFlags struct {
	rules, since, prefix, home, workdir string
	asJSON                              bool
	parallel, workers                   int
}

func newPolicyWhatIfCmd(cn *conn) *cobra.Command {
	var f whatIfFlags
	cmd := &cobra.Command{
		Use:   "what-if --rules NEW.yaml [--since 7d] [--workflow PREFIX] [--json]",
		Short: "Re-decide every recorded call under a proposed policy and show what would change",
		Long:  whatIfLong,
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return f.run(cmd, cn) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.rules, "rules", "", "the proposed policy (YAML or JSON; a config file's permission section)")
	fl.StringVar(&f.since, "since", "", "turns since a duration ago (24h, 7d) or a time (RFC 3339); default 7d without --workflow")
	fl.StringVar(&f.prefix, "workflow", "", "only turns whose workflow id starts with this prefix")
	fl.BoolVar(&f.asJSON, "json", false, "print the report as JSON")
	fl.StringVar(&f.home, "home", "", "the backend home ~ resolves to (default the current user's)")
	fl.StringVar(&f.workdir, "workdir", "", "the workdir of turns that recorded none (default the config's worker.workdir)")
	fl.IntVar(&f.parallel, "parallel", 8, "histories read at once")
	fl.IntVar(&f.workers, "workers", 0, "calls decided at once (default the number of CPUs)")
	return cmd
}

// run loads the proposed policy, reads and re-decides the recorded calls
// and prints the report.
func (f whatIfFlags) run(cmd *cobra.Command, cn *conn) error {
	if f.rules == "" {
		return errors.New("--rules NEW.yaml is required")
	}
	ctx := cmd.Context()
	p, err := cli.LoadPolicy(ctx, f.rules)
	if err != nil {
		return err
	}
	q, err := f.query(time.Now())
	if err != nil {
		return err
	}
	c, _, cfg, err := cn.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	o, err := f.options(p, cfg)
	if err != nil {
		return err
	}
	w, read, err := audit.WhatIfOf(ctx, c, q, o)
	if err != nil {
		return err
	}
	return f.write(cmd.OutOrStdout(), w, read)
}

// query selects the turns of --workflow and --since (the last 7 days
// without either).
func (f whatIfFlags) query(now time.Time) (audit.Query, error) {
	q := audit.Query{Prefix: f.prefix, Parallel: f.parallel}
	since := f.since
	if since == "" && f.prefix == "" {
		since = "7d"
	}
	if since != "" {
		var err error
		if q.Since, err = parseSince(since, now); err != nil {
			return q, err
		}
	}
	return q, nil
}

// options re-decide under p with --workdir (default the config's,
// absolute), --home (default the user's) and the worker's protected
// paths.
func (f whatIfFlags) options(p permission.Policy, cfg config.Config) (audit.WhatIfOptions, error) {
	workdir, home := f.workdir, f.home
	if workdir == "" {
		workdir = cfg.Worker.Workdir
	}
	workdir, err := filepath.Abs(workdir)
	if err != nil {
		return audit.WhatIfOptions{}, fmt.Errorf("workdir: %w", err)
	}
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return audit.WhatIfOptions{Policy: p, Workdir: workdir, Home: home, Protected: cfg.OwnPatterns(), Workers: f.workers,
		ToolNetwork: toolNetwork(cfg)}, nil
}

// write prints the report as JSON (--json) or as text.
func (f whatIfFlags) write(out io.Writer, w audit.WhatIf, read time.Duration) error {
	if f.asJSON {
		if err := newEncoder(out).Encode(w); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
		return nil
	}
	return w.WriteReport(out, filepath.Base(f.rules), read)
}

// toolNetwork gives the network grant of the config's settings for a
// tool (tools.defaults, then tools.per_tool.NAME: network and
// network_hosts), as the worker's Prepare applies them.
func toolNetwork(cfg config.Config) func(string) *permission.NetworkGrant {
	return func(name string) *permission.NetworkGrant {
		net, hosts := cfg.Tools.Defaults.Network, cfg.Tools.Defaults.NetworkHosts
		if t, ok := cfg.Tools.PerTool[name]; ok {
			net = net || t.Network
			if t.NetworkHosts != nil {
				hosts = t.NetworkHosts
			}
		}
		return permission.SettingsNetwork(name, net, hosts)
	}
}
