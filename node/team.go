package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	tclient "go.temporal.io/sdk/client"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/workflows"
)

// applyTeam makes the config's approvers (inbox.users and inbox.roles)
// the team of the default policy store, so turns that wait already check
// their answers against the team in force: a user removed from the config
// no longer answers them, a role granted reaches them. Turns that follow
// no store keep the approvers they started with. A config without
// approvers leaves a store that never had a team alone (anyone may
// answer either way).
//
// The store runs on the task queue of the worker that made it; when no
// worker of that queue answers within its time, the team stays as it was
// and the worker says so loudly (a namespace's workers should share one
// inbox config and one queue for the store).
func (n *node) applyTeam(ctx context.Context, c tclient.Client, cfg config.Config) error {
	team, err := client.Approvers(cfg.Inbox)
	if err != nil {
		return fmt.Errorf("inbox.users: %w", err)
	}
	cl := client.New(c, cfg.Worker.TaskQueue)
	if !team.Enabled() {
		st, err := cl.PolicyState(ctx, workflows.DefaultPolicyStore)
		if errors.Is(err, client.ErrNoPolicyStore) || (err == nil && st.TeamVersion == 0) {
			return nil
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	v, err := cl.SetTeam(ctx, workflows.DefaultPolicyStore, team, "worker")
	if err != nil {
		msg := fmt.Sprintf("WARNING: approvers: the team of %s was not set (%v); waiting turns check answers against the team it had", workflows.DefaultPolicyStore, err)
		fmt.Println(msg)
		n.logger.Warn(msg)
		return nil
	}
	fmt.Printf("approvers        team v%d of %s: %s\n", v, workflows.DefaultPolicyStore, workflows.TeamText(team))
	return nil
}
