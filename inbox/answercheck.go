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
		return fmt.Errorf("%q may not answer %s calls like this one (inbox users and roles in the config)", user, tool)
	}
	return nil
}
