package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/cmd/starter/internal/cli"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/workflows"
)

// addLivePolicyCmds adds the live-policy subcommands to `starter policy`:
// apply and show (the namespace's policy store) and remembered list|revoke.
func addLivePolicyCmds(policy *cobra.Command, cn *conn) {
	store := new(string)
	policy.PersistentFlags().StringVar(store, "store", workflows.DefaultPolicyStore, "the policy store (its workflow id) turns follow")
	remembered := &cobra.Command{Use: "remembered", Short: "List and revoke remembered approvals"}
	remembered.AddCommand(newRememberedListCmd(cn, store), newRememberedRevokeCmd(cn, store))
	policy.AddCommand(newPolicyApplyCmd(cn, store), newPolicyShowCmd(cn, store), remembered)
}

const policyApplyLong = `apply sets the live rules of the policy store from FILE (a policy, or a
config file whose permission section it reads): its allow, ask and deny
rules replace those of every turn that follows the store, and waiting
calls are decided again.

FILE is checked first, as the worker checks its own policy: rule
examples must hold, and a quorum rule FILE names must be one the
approvers of the config (inbox.users and inbox.roles, and the operator)
can meet. A rule needing more distinct approvers than could ever allow
its calls is refused, naming the rule, the number and who could answer;
one only part of whose calls they can meet is a warning on stderr.
Quorum rules themselves are not live: turns keep those they started
with.`

// checkQuorum refuses a policy file whose quorum rules the config's
// approvers (client.Approvers) can never meet, and writes to w a warning
// for each rule they can meet for only part of its calls
// (client.CheckQuorum; no turn, so no requester, is known).
func (cn *conn) checkQuorum(w io.Writer, file string) error {
	cfg, err := cn.settings()
	if err != nil {
		return err
	}
	a, err := client.Approvers(cfg.Inbox)
	if err != nil {
		return err
	}
	p, err := config.ReadPolicy(file)
	if err != nil {
		return err
	}
	warnings, err := client.CheckQuorum(a, p.Quorum, "")
	if err != nil {
		return fmt.Errorf("policy %s: %w", file, err)
	}
	for _, msg := range warnings {
		fmt.Fprintf(w, "warning: policy %s: %s\n", file, msg)
	}
	return nil
}

func newPolicyApplyCmd(cn *conn, store *string) *cobra.Command {
	return &cobra.Command{
		Use:   "apply FILE",
		Short: "Set the live rules of the policy store from FILE (allow/ask/deny, or a config's permission section); waiting calls are decided again",
		Long:  policyApplyLong,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			rules, err := cli.ReadLiveRules(ctx, args[0])
			if err != nil {
				return err
			}
			if err := cn.checkQuorum(cmd.ErrOrStderr(), args[0]); err != nil {
				return err
			}
			c, cl, _, err := cn.dial(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			v, err := cl.SetPolicy(ctx, *store, rules, cn.by(""))
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "policy store %s is at version %d: %d allow, %d ask, %d deny rules; waiting turns that follow it are deciding their calls again\n",
				*store, v, len(rules.Allow), len(rules.Ask), len(rules.Deny))
			return nil
		},
	}
}

func newPolicyShowCmd(cn *conn, store *string) *cobra.Command {
	var asJSON bool
	show := &cobra.Command{
		Use:   "show [--json]",
		Short: "Print the policy store's version, live rules and remembered approvals (--json: as JSON)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := cn.policyState(cmd.Context(), *store)
			if err != nil {
				return err
			}
			if !asJSON {
				return writePolicyState(cmd.OutOrStdout(), *store, st, time.Now())
			}
			return newEncoder(cmd.OutOrStdout()).Encode(struct {
				Version int                  `json:"version"`
				Rules   *workflows.LiveRules `json:"rules"`
				SetBy   string               `json:"set_by,omitempty"`
				SetAt   time.Time            `json:"set_at,omitzero"`
			}{st.Version, st.Rules, st.SetBy, st.SetAt})
		},
	}
	show.Flags().BoolVar(&asJSON, "json", false, "print the version and rules as JSON")
	return show
}

// writePolicyState prints a store's state for people: its version (and
// what it counts), who set the rules and when, the rules as YAML-like
// lists, and how many remembered approvals are active.
func writePolicyState(w io.Writer, store string, st workflows.PolicyState, now time.Time) error {
	var b strings.Builder
	fmt.Fprintf(&b, "policy store %s: version %d (counts every change: rules set, approvals remembered, spent or revoked)\n", store, st.Version)
	if st.Rules == nil {
		b.WriteString("live rules: none set (turns keep their own rules)\n")
	} else {
		fmt.Fprintf(&b, "live rules, set by %s at %s:\n", orDash(st.SetBy), st.SetAt.Local().Format("2006-01-02 15:04:05 MST"))
		for _, l := range []struct {
			name  string
			rules []string
		}{{"allow", st.Rules.Allow}, {"ask", st.Rules.Ask}, {"deny", st.Rules.Deny}} {
			if len(l.rules) == 0 {
				fmt.Fprintf(&b, "  %s: []\n", l.name)
				continue
			}
			fmt.Fprintf(&b, "  %s:\n", l.name)
			for _, r := range l.rules {
				fmt.Fprintf(&b, "    - %q\n", r)
			}
		}
	}
	active := len(cli.FilterRemembered(st.Remembered, now, false))
	fmt.Fprintf(&b, "remembered approvals: %d active, %d in all (starter policy remembered list)\n", active, len(st.Remembered))
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newRememberedListCmd(cn *conn, store *string) *cobra.Command {
	var all, asJSON bool
	list := &cobra.Command{
		Use:   "list [--all] [--json]",
		Short: "List the remembered approvals (active ones; --all for expired, used and revoked too)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := cn.policyState(cmd.Context(), *store)
			if err != nil {
				return err
			}
			now := time.Now()
			rs := cli.FilterRemembered(st.Remembered, now, all)
			if !asJSON {
				return cli.WriteRememberedTable(cmd.OutOrStdout(), rs, now)
			}
			enc := newEncoder(cmd.OutOrStdout())
			for _, r := range rs {
				if err := enc.Encode(r); err != nil {
					return fmt.Errorf("write: %w", err)
				}
			}
			return nil
		},
	}
	list.Flags().BoolVar(&all, "all", false, "include expired, used and revoked approvals")
	list.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per line")
	return list
}

func newRememberedRevokeCmd(cn *conn, store *string) *cobra.Command {
	return &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a remembered approval: no call is allowed by it from now on",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, cl, _, err := cn.dial(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			r, err := cl.Revoke(ctx, *store, args[0], cn.by(""))
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "revoked %s (%s scope, %s) by %s\n", r.ID, r.Scope, r.What(), r.RevokedBy)
			return nil
		},
	}
}

// policyState reads the state of the policy store store.
func (cn *conn) policyState(ctx context.Context, store string) (workflows.PolicyState, error) {
	c, cl, _, err := cn.dial(ctx)
	if err != nil {
		return workflows.PolicyState{}, err
	}
	defer c.Close()
	st, err := cl.PolicyState(ctx, store)
	if errors.Is(err, client.ErrNoPolicyStore) {
		// As the turns take it: version 0, nothing live, nothing
		// remembered; said on stderr so that the output stays data.
		fmt.Fprintf(os.Stderr, "%v (starter policy apply creates it)\n", err)
		return st, nil
	}
	return st, err
}
