package client

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/wardenhq/warden/tools"
)

const oneQuestion = `{"questions": [{"question": "Which env?", "header": "Env", "options": [
  {"label": "staging", "description": "safe"}, {"label": "production", "description": "careful"}]}]}`

const twoQuestions = `{"questions": [
  {"question": "Which env?", "header": "Env", "options": [{"label": "staging", "description": ""}, {"label": "production", "description": ""}]},
  {"question": "Which a=b checks?", "header": "Checks", "multi_select": true, "options": [{"label": "lint", "description": ""}, {"label": "test", "description": ""}]}]}`

func strp(s string) *string { return &s }

func TestAskUserAnswerFrom(t *testing.T) {
	cases := []struct {
		name          string
		input         string
		selects, othr []string
		want          []tools.AskUserQuestionAnswer
		err           string // substring of the build error
		invalid       string // substring of the validation error
	}{
		{name: "one question label", input: oneQuestion, selects: []string{"staging"},
			want: []tools.AskUserQuestionAnswer{{Question: "Which env?", Selected: []string{"staging"}}}},
		{name: "one question other only", input: oneQuestion, othr: []string{"after 5pm"},
			want: []tools.AskUserQuestionAnswer{{Question: "Which env?", Selected: []string{}, Other: strp("after 5pm")}}},
		{name: "unknown label builds but is invalid", input: oneQuestion, selects: []string{"prod"},
			want:    []tools.AskUserQuestionAnswer{{Question: "Which env?", Selected: []string{"prod"}}},
			invalid: `has no option "prod"`},
		{name: "single-select takes one label", input: oneQuestion, selects: []string{"staging", "production"},
			want:    []tools.AskUserQuestionAnswer{{Question: "Which env?", Selected: []string{"staging", "production"}}},
			invalid: "single-select"},
		{name: "two questions by text and header", input: twoQuestions,
			selects: []string{"Which env?=production", "Checks=lint", "Which a=b checks?=test"}, othr: []string{"Env=only EU"},
			want: []tools.AskUserQuestionAnswer{
				{Question: "Which env?", Selected: []string{"production"}, Other: strp("only EU")},
				{Question: "Which a=b checks?", Selected: []string{"lint", "test"}}}},
		{name: "two questions one unanswered", input: twoQuestions, selects: []string{"Env=staging"},
			want: []tools.AskUserQuestionAnswer{
				{Question: "Which env?", Selected: []string{"staging"}},
				{Question: "Which a=b checks?", Selected: []string{}}},
			invalid: "neither a selected option nor free text"},
		{name: "two questions bare label", input: twoQuestions, selects: []string{"staging"}, err: "QUESTION=VALUE"},
		{name: "two questions two others", input: twoQuestions, othr: []string{"Env=a", "Which env?=b"}, err: "two free-text answers"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := AskUserAnswerFrom(json.RawMessage(c.input), c.selects, c.othr)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Answers, c.want) {
				t.Fatalf("answers = %+v, want %+v", got.Answers, c.want)
			}
			err = tools.ValidateAskUserAnswer(json.RawMessage(c.input), got)
			if c.invalid == "" && err != nil || c.invalid != "" && (err == nil || !strings.Contains(err.Error(), c.invalid)) {
				t.Fatalf("validation error = %v, want %q", err, c.invalid)
			}
		})
	}
}

func TestAskUserResult(t *testing.T) {
	a := tools.AskUserAnswer{Answers: []tools.AskUserQuestionAnswer{
		{Question: "Which env?", Selected: []string{"staging"}, Other: strp("after 5pm")},
		{Question: "Which checks?", Selected: []string{"lint", "test"}},
	}}
	r, err := AskUserResult("c1", a, "alice")
	if err != nil {
		t.Fatal(err)
	}
	want := "The user answered:\n- Which env? → staging; other: after 5pm\n- Which checks? → lint, test"
	if r.CallID != "c1" || r.By != "alice" || r.IsError || r.Content != want {
		t.Fatalf("result = %+v", r)
	}
	// The metadata decodes back to the same answer.
	b, err := json.Marshal(r.Metadata)
	if err != nil {
		t.Fatal(err)
	}
	var back tools.AskUserAnswer
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, a) {
		t.Fatalf("metadata = %s", b)
	}
}
