package inbox

import (
	"encoding/json"
	"fmt"
)

// CheckAnswer is Allows as an error, the check client.Client.AnswerAll
// takes: nil when user may answer a call of tool with input, else an
// error naming the user and the tool.
func (p *Policy) CheckAnswer(user, tool string, input json.RawMessage) error {
	if !p.Allows(user, tool, input) {
		if !p.Known(user) {
			return fmt.Errorf("%q is not an approver: answers to turns with inbox users come from an inbox user (inbox.users in the config) or the operator key, and the answer names %q (--by, or the key's name)", user, user)
		}
		return fmt.Errorf("%q may not answer %s calls like this one: the roles of inbox user %q (inbox.users.%s.roles) do not cover it", user, tool, user, user)
	}
	return nil
}

// Known reports whether user is one of the inbox's users.
func (p *Policy) Known(user string) bool {
	for _, u := range p.users {
		if u.name == user {
			return true
		}
	}
	return false
}
