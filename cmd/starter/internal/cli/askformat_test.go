package cli

import (
	"encoding/json"
	"testing"
)

// twoQuestions is an AskUser input of two questions, the second multi-select.
const twoQuestions = `{"questions": [
  {"question": "Which env?", "header": "Env", "options": [{"label": "staging", "description": ""}, {"label": "production", "description": ""}]},
  {"question": "Which a=b checks?", "header": "Checks", "multi_select": true, "options": [{"label": "lint", "description": ""}, {"label": "test", "description": ""}]}]}`

func TestFormatAskUserQuestions(t *testing.T) {
	t.Parallel()
	got, err := FormatAskUserQuestions(json.RawMessage(twoQuestions))
	if err != nil {
		t.Fatal(err)
	}
	want := "1. [Env] Which env?\n   - staging: \n   - production: \n" +
		"2. [Checks] Which a=b checks? (several allowed)\n   - lint: \n   - test: \n"
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if _, err := FormatAskUserQuestions(json.RawMessage(`[`)); err == nil {
		t.Error("bad input accepted")
	}
}
