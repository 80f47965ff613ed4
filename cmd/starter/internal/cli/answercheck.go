package cli

import (
	"fmt"

	"github.com/wardenhq/warden/workflows"
)

// AnswerCheck is the check of a CLI answer (client.Client.AnswerAll's)
// under the approvers the turns record (client.Approvers): --by must name
// one of them (an inbox user, or the operator) whose roles, checked by
// rc as the turn checks them, cover the call. Nil without approvers: the
// workflow's approvers decide alone.
func AnswerCheck(a *workflows.Approvers, rc workflows.RoleChecker) func(by string, p workflows.Pending) error {
	if !a.Enabled() {
		return nil
	}
	return func(by string, p workflows.Pending) error {
		if _, ok := a.Users[by]; !ok {
			return fmt.Errorf("%q is not an approver: answers to turns with inbox users come from an inbox user (inbox.users in the config) or the operator key, and the answer names %q (--by, or the key's name)", by, by)
		}
		if a.MayAnswer(workflows.WithLinks(rc, p.Links), by, p.Tool, p.Input, nil, p.Workdir) != nil {
			return fmt.Errorf("%q may not answer %s calls like this one: the roles of inbox user %q (inbox.users.%s.roles) do not cover it", by, p.Tool, by, by)
		}
		return nil
	}
}
