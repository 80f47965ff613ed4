package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/backend/local/sandbox"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/tools"
	"github.com/wardenhq/warden/workflows"
)

const toolsListLong = `List the tools a worker of the task queue (--task-queue, default from
the config) has registered: the built-ins, its function tools and the
tools of its MCP servers (mcp.servers), with where each comes from
(builtin, function, mcp:SERVER, custom), its flags and its description:
what the model sees.

The worker answers through a one-activity workflow, ` + workflows.ToolsWorkflow + `, whose id is
` + workflows.ToolsIDPrefix + `<UTC time>-<random>. The namespace keeps each closed run for its
retention period; list them with WorkflowType = '` + workflows.ToolsWorkflow + `'. Starting it
needs a key that may start workflows (a reader key may use --builtin).

When several workers poll the queue, Temporal gives the listing to one
of them: the output names it and the others. Workers of one queue should
register the same tools; run it again to reach another.

--builtin lists the built-in tools of this starter's build, offline.`

func newToolsCmd(cn *conn) *cobra.Command {
	root := &cobra.Command{Use: "tools", Short: "Inspect the tools a worker registers"}
	var asJSON, builtin bool
	var wait time.Duration
	list := &cobra.Command{
		Use:   "list",
		Short: "List a worker's tools with their source, flags and description",
		Long:  toolsListLong,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if builtin {
				return listBuiltins(cmd.OutOrStdout(), cn, asJSON)
			}
			return listWorkerTools(cmd, cn, wait, asJSON)
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print the tools as JSON, with their input schemas (the answering worker goes to stderr)")
	list.Flags().BoolVar(&builtin, "builtin", false, "list the built-in tools without asking a worker (no server needed)")
	list.Flags().DurationVar(&wait, "wait", workflows.DefaultToolsWait, "how long a worker may take to answer")
	root.AddCommand(list)
	return root
}

// listWorkerTools prints the registry of a worker of the task queue,
// after a line naming it and the queue's other workers.
func listWorkerTools(cmd *cobra.Command, cn *conn, wait time.Duration, asJSON bool) error {
	c, cl, _, err := cn.dial(cmd.Context())
	if err != nil {
		return err
	}
	defer c.Close()
	wt, err := cl.Tools(cmd.Context(), wait)
	if err != nil {
		return err
	}
	head := fmt.Sprintf("task queue %s: worker %s answered", wt.TaskQueue, wt.Worker)
	var others []string
	for _, p := range wt.Pollers {
		if p != wt.Worker {
			others = append(others, p)
		}
	}
	if len(others) > 0 {
		head += fmt.Sprintf("; %s poll it too and may register other tools", strings.Join(others, ", "))
	}
	head += "\n" + backendLines(wt.Backends, wt.Protected)
	if asJSON {
		fmt.Fprint(cmd.ErrOrStderr(), head)
		return printEntries(cmd.OutOrStdout(), wt.Tools, true, nil)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s\n", head)
	net := map[string]string{}
	for _, n := range wt.Network {
		net[n.Tool] = networkLine(n.Hosts, n.By)
	}
	return printEntries(cmd.OutOrStdout(), wt.Tools, false, net)
}

// networkLine says which hosts a tool's calls reach and what setting
// grants them: "registry.npmjs.org (tools.Bash.network_hosts)".
func networkLine(hosts []string, by string) string {
	h := strings.Join(hosts, ", ")
	if len(hosts) == 0 || len(hosts) == 1 && hosts[0] == "*" {
		h = "any public host"
	}
	return h + " (" + by + ")"
}

// backendLines says, a line each, what confines the answering worker's
// backends' tool processes (the local sandbox, OFF included) and which
// of its own paths no tool may touch.
func backendLines(bs []workflows.BackendState, protected []string) string {
	if len(bs) == 0 {
		return "backends: this worker does not say what confines its tools (an older version)\n"
	}
	var b strings.Builder
	for _, s := range bs {
		name := s.Name
		if s.Default {
			name += " (default)"
		}
		state := s.Sandbox
		if state == "" {
			state = "its own isolation"
		}
		if s.Name == "local" && state != "its own isolation" {
			state = "sandbox " + state
		}
		fmt.Fprintf(&b, "backend %s: %s\n", name, state)
	}
	if len(protected) > 0 {
		fmt.Fprintf(&b, "protected: %s\n", strings.Join(protected, ", "))
	}
	return b.String()
}

// listBuiltins prints the built-in tools and what protects their
// processes on the local backend here.
func listBuiltins(out io.Writer, cn *conn, asJSON bool) error {
	reg, err := tools.NewRegistry(tools.Builtins()...)
	if err != nil {
		return err
	}
	if asJSON {
		return printEntries(out, reg.Entries(), true, nil)
	}
	cfg, err := cn.settings()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "local backend: %s\n\n", localSandbox(cfg))
	net := map[string]string{}
	settings := toolNetwork(cfg)
	for _, e := range reg.Entries() {
		if g := settings(e.Name); g != nil {
			net[e.Name] = networkLine(g.Hosts, g.By)
		}
	}
	return printEntries(out, reg.Entries(), false, net)
}

// printEntries prints tools as an indented JSON array or as a table,
// with the network the settings give each tool's calls (net, by tool;
// "policy" for the others: only a turn's policy or an approval gives
// them the network).
func printEntries(out io.Writer, es []tools.Entry, asJSON bool, net map[string]string) error {
	if asJSON {
		return jsonEncoder(out).Encode(es)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSOURCE\tREAD-ONLY\tCONCURRENT\tEXTERNAL\tSTATE\tNETWORK\tDESCRIPTION")
	for _, e := range es {
		desc, _, _ := strings.Cut(e.Description, "\n")
		if len(desc) > 60 {
			desc = desc[:57] + "..."
		}
		n := net[e.Name]
		if n == "" {
			n = "policy"
		}
		fmt.Fprintf(tw, "%s\t%s\t%v\t%v\t%v\t%v\t%s\t%s\n", e.Name, e.Source, e.ReadOnly, e.ConcurrencySafe, e.External, e.StateInjected, n, desc)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(out, "\nNETWORK \"policy\": a call gets the network only from the turn's permission.sandbox (network, network_for) or a person's approval of the hosts it asks for.")
	return nil
}

// localSandbox says what protects tool processes on the local backend
// of cfg, as the worker would at start.
func localSandbox(cfg config.Config) string {
	if cfg.Backend.Local.SandboxOff() {
		return "sandbox OFF (backend.local.sandbox: off): tools run as the worker's user, with its files and network"
	}
	abi, err := sandbox.Check()
	if err != nil {
		return "sandbox unavailable here (" + err.Error() + "): a worker refuses to run local tools"
	}
	return "sandbox " + sandbox.Describe(abi)
}
