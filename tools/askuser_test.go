package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/wardenhq/warden/permission"
)

func strp(s string) *string { return &s }

func TestAskUser(t *testing.T) {
	t.Parallel()
	info := AskUser{}.Info()
	if !info.External || !info.ReadOnly || !info.ConcurrencySafe || info.StateInjected {
		t.Errorf("flags %+v", info)
	}
	d, _ := AskUser{}.CheckPermissions(context.Background(), nil, nil, nil)
	if d.Behavior != permission.Allow || d.Message != "The AskUser tool is always permitted." {
		t.Errorf("decision %+v", d)
	}
	if r, _ := Collect(AskUser{}.Call(context.Background(), nil, nil)); !r.IsError || !strings.Contains(r.Content, "external") {
		t.Errorf("Call: %+v", r)
	}
	input := json.RawMessage(`{"questions":[
	  {"question":"Which DB?","header":"Database","options":[{"label":"Postgres","description":"d"},{"label":"SQLite","description":"d"}]},
	  {"question":"Which features?","header":"Features","multi_select":true,"options":[{"label":"Auth","description":"d"},{"label":"Search","description":"d"},{"label":"Billing","description":"d"}]}]}`)
	cases := []struct {
		name   string
		answer AskUserAnswer
		want   string
	}{
		{"ok", AskUserAnswer{[]AskUserQuestionAnswer{{Question: "Which DB?", Selected: []string{"SQLite"}}, {Question: "Which features?", Selected: []string{"Auth", "Search"}}}}, ""},
		{"other text", AskUserAnswer{[]AskUserQuestionAnswer{{Question: "Which DB?", Other: strp("MySQL")}, {Question: "Which features?", Selected: []string{}, Other: strp("none")}}}, ""},
		{"missing", AskUserAnswer{[]AskUserQuestionAnswer{{Question: "Which DB?", Selected: []string{"SQLite"}}}}, `unanswered questions: "Which features?"`},
		{"unknown question", AskUserAnswer{[]AskUserQuestionAnswer{{Question: "which db?", Selected: []string{"SQLite"}}}}, `unknown question "which db?"`},
		{"unknown label", AskUserAnswer{[]AskUserQuestionAnswer{{Question: "Which DB?", Selected: []string{"Oracle"}}}}, `has no option "Oracle"`},
		{"single select", AskUserAnswer{[]AskUserQuestionAnswer{{Question: "Which DB?", Selected: []string{"SQLite", "Postgres"}}}}, "single-select but 2 options"},
		{"twice", AskUserAnswer{[]AskUserQuestionAnswer{{Question: "Which DB?", Selected: []string{"SQLite"}}, {Question: "Which DB?", Selected: []string{"SQLite"}}}}, "answered twice"},
		{"empty", AskUserAnswer{[]AskUserQuestionAnswer{{Question: "Which DB?"}}}, "neither a selected option nor free text"},
	}
	for _, c := range cases {
		err := ValidateAskUserAnswer(input, c.answer)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	bad := []struct{ input, want string }{
		{`{"questions":[]}`, "want 1 to 4 questions"},
		{`{"questions":[{"question":"q","header":"h","options":[{"label":"a"},{"label":"b"}]},{"question":"q","header":"h","options":[{"label":"a"},{"label":"b"}]}]}`, "question texts must be unique"},
		{`{"questions":[{"question":"q","header":"h","options":[{"label":"a"},{"label":"a"}]}]}`, "option labels must be unique"},
		{`{"questions":[{"question":"q","header":"thirteen chrs","options":[{"label":"a"},{"label":"b"}]}]}`, "header must be 1 to 12"},
		{`{"questions":[{"question":"q","header":"h","options":[{"label":"a"}]}]}`, "want 2 to 4 options"},
	}
	for _, b := range bad {
		if _, err := ValidateAskUserInput(json.RawMessage(b.input)); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s: %v, want %q", b.input, err, b.want)
		}
	}
}
