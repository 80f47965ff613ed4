package config

import (
	"fmt"
	"slices"

	"github.com/wardenhq/warden/workflows"
)

// Approvers is the approval policy recorded with the turns a client of
// this configuration starts: the inbox users, their roles and what each
// role may answer. Nil when no inbox users are configured (anyone may
// answer, the one-command demo's behaviour). Credentials are not part of
// it: only names and roles go into the turn's history.
func (i Inbox) Approvers() (*workflows.Approvers, error) {
	if len(i.Users) == 0 {
		return nil, nil
	}
	a := &workflows.Approvers{Users: map[string][]string{}}
	for name, u := range i.Users {
		a.Users[name] = slices.Clone(u.Roles)
		for _, rn := range u.Roles {
			r, ok := i.Roles[rn]
			if !ok {
				return nil, fmt.Errorf("inbox.users.%s: unknown role %q", name, rn)
			}
			if a.Roles == nil {
				a.Roles = map[string][]string{}
			}
			a.Roles[rn] = slices.Clone(r.Allow)
		}
	}
	if err := a.Validate(); err != nil {
		return nil, fmt.Errorf("inbox: %w", err)
	}
	return a, nil
}
