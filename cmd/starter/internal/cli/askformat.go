package cli

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/wardenhq/warden/tools"
)

// FormatAskUserQuestions renders the questions of an AskUser call's
// input for a person: one numbered line per question with its header,
// then its context and its options, indented.
func FormatAskUserQuestions(input json.RawMessage) (string, error) {
	var in tools.AskUserInput
	if err := json.Unmarshal(input, &in); err != nil {
		return "", fmt.Errorf("AskUser input: %w", err)
	}
	var b strings.Builder
	for i, q := range in.Questions {
		multi := ""
		if q.MultiSelect {
			multi = " (several allowed)"
		}
		fmt.Fprintf(&b, "%d. [%s] %s%s\n", i+1, q.Header, q.Question, multi)
		if q.Context != "" {
			fmt.Fprintf(&b, "   %s\n", q.Context)
		}
		for _, o := range q.Options {
			fmt.Fprintf(&b, "   - %s: %s\n", o.Label, o.Description)
		}
	}
	return b.String(), nil
}
