package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/auth"
)

// keysFlags are the flags of `starter keys`: the key directory and
// whether create may start a keyring there.
type keysFlags struct {
	dir      string
	initRing bool
}

// newKeysCmd manages the embedded server's keys: who may call its
// frontend and in which role. The worker reads the keyring again when it
// changes, so no restart is needed.
func newKeysCmd(cn *conn) *cobra.Command {
	f := &keysFlags{}
	root := &cobra.Command{Use: "keys", Short: "Create, list and revoke the keys of the embedded server's clients"}
	root.PersistentFlags().StringVar(&f.dir, "dir", "", "key directory (default server.data_dir/auth)")
	root.AddCommand(newKeysCreateCmd(cn, f), newKeysListCmd(cn, f), newKeysRevokeCmd(cn, f))
	return root
}

// open opens the keyring of --dir, else of the config's data directory.
func (f *keysFlags) open(cn *conn) (*auth.Keyring, error) {
	dir := f.dir
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
	k, err := auth.OpenDir(dir, f.initRing)
	var nk *auth.NoKeyringError
	if errors.As(err, &nk) {
		return nil, fmt.Errorf("%w; point --dir or --config at the data directory of the server you mean, or pass --init to start a new keyring there", err)
	}
	return k, err
}

func newKeysCreateCmd(cn *conn, f *keysFlags) *cobra.Command {
	var role string
	create := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a key for NAME (replacing an existing one) and write it to DIR/NAME.key, mode 0600",
		Long: "Roles: approver (reads, answers as NAME), delegate (reads, answers for users it signs in itself),\n" +
			"reader (reads only), worker (runs turns, never answers), admin (everything, answers as NAME).\n" +
			"NAME should match an approver in the config's inbox users when approvers are configured.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := f.open(cn)
			if err != nil {
				return err
			}
			_, path, err := k.Create(args[0], auth.Role(role))
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "created %s key for %s in %s (keyring %s)\nuse it with: starter --key-file %s ...\n",
				role, args[0], path, k.File(), path)
			return nil
		},
	}
	create.Flags().StringVar(&role, "role", string(auth.RoleApprover), "approver, delegate, reader, worker or admin")
	create.Flags().BoolVar(&f.initRing, "init", false, "start a new keyring when the directory has none")
	return create
}

func newKeysListCmd(cn *conn, f *keysFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the keys (names, roles, creation times; the keyring holds digests only)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, err := f.open(cn)
			if err != nil {
				return err
			}
			es, err := k.List()
			if err != nil {
				return err
			}
			return auth.WriteKeys(cmd.OutOrStdout(), es)
		},
	}
}

func newKeysRevokeCmd(cn *conn, f *keysFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "revoke NAME",
		Short: "Revoke NAME's key: the server refuses it within a second",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, err := f.open(cn)
			if err != nil {
				return err
			}
			if err := k.Revoke(args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "revoked %s (keyring %s)\n", args[0], k.File())
			return nil
		},
	}
}
