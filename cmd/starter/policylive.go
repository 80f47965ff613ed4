package main

import (
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/workflows"
)

// addLivePolicyCmds adds the live-policy subcommands to `starter policy`:
// apply and show (the namespace's policy store) and remembered list|revoke.
func addLivePolicyCmds(policy *cobra.Command, cn *conn) {
	var store string
	policy.PersistentFlags().StringVar(&store, "store", workflows.DefaultPolicyStore, "the policy store (its workflow id) turns follow")
	apply := &cobra.Command{
		Use:   "apply FILE",
		Short: "Set the live rules of the policy store from FILE (allow/ask/deny, or a config's permission section); waiting calls are decided again",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rules, err := readLiveRules(args[0])
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			c, cl, _, err := cn.dial(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			v, err := cl.SetPolicy(ctx, store, rules, cn.by(""))
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "policy store %s is at version %d: %d allow, %d ask, %d deny rules; waiting turns that follow it are deciding their calls again\n",
				store, v, len(rules.Allow), len(rules.Ask), len(rules.Deny))
			return nil
		},
	}
	show := &cobra.Command{
		Use:   "show",
		Short: "Print the policy store's version and live rules",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			c, cl, _, err := cn.dial(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			st, err := cl.PolicyState(ctx, store)
			if err != nil {
				return err
			}
			return newEncoder(cmd.OutOrStdout()).Encode(struct {
				Version int                  `json:"version"`
				Rules   *workflows.LiveRules `json:"rules"`
				SetBy   string               `json:"set_by,omitempty"`
				SetAt   time.Time            `json:"set_at,omitzero"`
			}{st.Version, st.Rules, st.SetBy, st.SetAt})
		},
	}
	remembered := &cobra.Command{Use: "remembered", Short: "List and revoke remembered approvals"}
	var all, asJSON bool
	list := &cobra.Command{
		Use:   "list [--all] [--json]",
		Short: "List the remembered approvals (active ones; --all for expired, used and revoked too)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			c, cl, _, err := cn.dial(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			st, err := cl.PolicyState(ctx, store)
			if err != nil {
				return err
			}
			now := time.Now()
			w := cmd.OutOrStdout()
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			if !asJSON {
				fmt.Fprintln(tw, "ID\tSTATUS\tSCOPE\tWHERE\tTOOL\tRULE\tBY\tFROM\tEXPIRES\tSINGLE-USE")
			}
			for _, r := range st.Remembered {
				status := r.Status(now)
				if !all && status != "active" {
					continue
				}
				if asJSON {
					if err := newEncoder(w).Encode(r); err != nil {
						return fmt.Errorf("write: %w", err)
					}
					continue
				}
				rule, where, exp := r.Rule, "-", "-"
				if rule == "" {
					rule = "exact " + string(r.Input)
				}
				switch r.Scope {
				case workflows.ScopeTurn:
					where = r.WorkflowID
				case workflows.ScopeAgent:
					where = r.Agent
				}
				if !r.ExpiresAt.IsZero() {
					exp = r.ExpiresAt.Local().Format(time.RFC3339)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s/%s\t%s\t%v\n", r.ID, status, r.Scope, where, r.Tool, rule, r.By, r.FromWorkflow, r.CallID, exp, r.SingleUse)
			}
			if err := tw.Flush(); err != nil {
				return fmt.Errorf("write table: %w", err)
			}
			return nil
		},
	}
	list.Flags().BoolVar(&all, "all", false, "include expired, used and revoked approvals")
	list.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per line")
	revoke := &cobra.Command{
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
			r, err := cl.Revoke(ctx, store, args[0], cn.by(""))
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "revoked %s (%s scope, %s) by %s\n", r.ID, r.Scope, r.Rule, r.RevokedBy)
			return nil
		},
	}
	remembered.AddCommand(list, revoke)
	policy.AddCommand(apply, show, remembered)
}

// readLiveRules reads allow, ask and deny rules from a policy file: at
// its top level, or under permission: (a config file). Rules in their
// long form ({rule: ..., match: ...}) are read as their rule.
func readLiveRules(file string) (workflows.LiveRules, error) {
	// The same reader as the worker's and `starter policy test`'s: a
	// policy or a config file, long-form rules, and examples that must
	// hold for the file to load.
	p, err := loadPolicy(file)
	if err != nil {
		return workflows.LiveRules{}, err
	}
	r := workflows.LiveRules{Allow: p.Allow, Ask: p.Ask, Deny: p.Deny}
	if _, _, _, err := r.Parse(); err != nil {
		return r, fmt.Errorf("%s: %w", file, err)
	}
	if len(r.Allow)+len(r.Ask)+len(r.Deny) == 0 {
		return r, errors.New(file + ": no allow, ask or deny rules")
	}
	return r, nil
}
