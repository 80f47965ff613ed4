package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/auth"
)

// newKeysCmd manages the embedded server's keys: who may call its
// frontend and in which role. The worker reads the keyring again when it
// changes, so no restart is needed.
func newKeysCmd(cn *conn) *cobra.Command {
	var dir string
	var initRing bool
	root := &cobra.Command{Use: "keys", Short: "Create, list and revoke the keys of the embedded server's clients"}
	root.PersistentFlags().StringVar(&dir, "dir", "", "key directory (default server.data_dir/auth)")
	open := func() (*auth.Keyring, error) {
		if dir == "" {
			cfg, err := cn.settings()
			if err != nil {
				return nil, err
			}
			dir = cfg.KeyDir()
		}
		if dir == "" {
			return nil, errors.New("no key directory: set server.data_dir or --dir")
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, err
		}
		dir = abs
		// A directory without a keyring is one no server reads: creating
		// one there would print "created" for a key nothing accepts.
		if _, err := os.Stat(filepath.Join(dir, auth.FileName)); errors.Is(err, os.ErrNotExist) && !initRing {
			return nil, fmt.Errorf("no keyring in %s (no %s): a server using it would have made one; point --dir or --config at the data directory of the server you mean, or pass --init to start a new keyring there", dir, auth.FileName)
		}
		return auth.Open(dir)
	}
	var role string
	create := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a key for NAME (replacing an existing one) and write it to DIR/NAME.key, mode 0600",
		Long: "Roles: approver (reads, answers as NAME), delegate (reads, answers for users it signs in itself),\n" +
			"reader (reads only), worker (runs turns, never answers), admin (everything, answers as NAME).\n" +
			"NAME should match an approver in the config's inbox users when approvers are configured.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := open()
			if err != nil {
				return err
			}
			_, path, err := k.Create(args[0], auth.Role(role))
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "created %s key for %s in %s (keyring %s)\nuse it with: starter --key-file %s ...\n",
				role, args[0], path, filepath.Join(dir, auth.FileName), path)
			return nil
		},
	}
	create.Flags().StringVar(&role, "role", string(auth.RoleApprover), "approver, delegate, reader, worker or admin")
	create.Flags().BoolVar(&initRing, "init", false, "start a new keyring when the directory has none")
	list := &cobra.Command{
		Use:   "list",
		Short: "List the keys (names, roles, creation times; the keyring holds digests only)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, err := open()
			if err != nil {
				return err
			}
			es, err := k.List()
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tROLE\tCREATED")
			for _, e := range es {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Name, e.Role, e.Created.Format("2006-01-02 15:04:05Z"))
			}
			return tw.Flush()
		},
	}
	revoke := &cobra.Command{
		Use:   "revoke NAME",
		Short: "Revoke NAME's key: the server refuses it within a second",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := open()
			if err != nil {
				return err
			}
			if err := k.Revoke(args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "revoked %s (keyring %s)\n", args[0], filepath.Join(dir, auth.FileName))
			return nil
		},
	}
	root.AddCommand(create, list, revoke)
	return root
}
