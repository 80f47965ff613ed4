package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/backend/local/sandbox"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/tools"
)

func newToolsCmd(cn *conn) *cobra.Command {
	root := &cobra.Command{Use: "tools", Short: "Inspect the built-in tools"}
	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List the built-in tools with their schemas and flags",
		RunE: func(cmd *cobra.Command, _ []string) error {
			reg, err := tools.NewRegistry(tools.Builtins()...)
			if err != nil {
				return err
			}
			infos := reg.Infos()
			out := cmd.OutOrStdout()
			if asJSON {
				enc := newEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(infos)
			}
			cfg, err := cn.settings()
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "local backend: %s\n\n", localSandbox(cfg))
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tREAD-ONLY\tCONCURRENT\tEXTERNAL\tSTATE\tDESCRIPTION")
			for _, i := range infos {
				desc := i.Description
				if len(desc) > 60 {
					desc = desc[:57] + "..."
				}
				fmt.Fprintf(tw, "%s\t%v\t%v\t%v\t%v\t%s\n", i.Name, i.ReadOnly, i.ConcurrencySafe, i.External, i.StateInjected, desc)
			}
			return tw.Flush()
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON with input schemas")
	root.AddCommand(list)
	return root
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
