package audit

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// TestWriteReport: the report's text has the summary, the counts per
// change, rule and tool, and the calls, the one a human denied marked.
func TestWriteReport(t *testing.T) {
	w := WhatIf{Turns: 2, Calls: 5, Unchanged: map[string]int{"allow": 2, "deny": 1},
		ByChange: map[string]int{"ask→allow": 1, "allow→ask": 1}, ByTool: map[string]int{"Bash": 2},
		ByRule: []RuleChanges{{Rule: "Bash(curl:*)", Now: 1}, {Rule: "Bash(ls:*)", Was: 1}}, DeniedByHuman: 1,
		Skipped: map[string]int{SkipUnknownTool: 3},
		Changes: []Change{
			{WorkflowID: "t1", CallID: "c1", Tool: "Bash", Change: "ask→allow", NowReason: "Rule: Bash(curl:*)", Human: "denied by bob", DeniedByHuman: true, Input: []byte(`{"command":"curl x"}`)},
			{WorkflowID: "t2", CallID: "c2", Tool: "Bash", Change: "allow→ask", NowReason: "Mode: default", Input: []byte(`{"command":"` + strings.Repeat("x", 120) + `"}`)},
		}}
	var out bytes.Buffer
	if err := w.WriteReport(&out, "p.yaml", time.Second); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"what-if p.yaml: 5 calls of 2 turns re-decided", "histories read in 1s)\n",
		"2 would change, 3 would not (2 allow, 1 deny)\n", "skipped 3: tool not known here", "1 change(s) would newly allow a call a human once denied",
		"CHANGE     CALLS\nallow→ask  1\nask→allow  1\n", "Bash(curl:*)  1            0", "Bash(ls:*)    0            1", "TOOL  CHANGES\nBash  2\n",
		"denied by bob  DENIED-BY-HUMAN", "Mode: default       -", `{"command":"` + strings.Repeat("x", 88) + "…"} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q:\n%s", want, s)
		}
	}
	// Without changes the report is its summary alone.
	out.Reset()
	if err := (WhatIf{Calls: 1, Unchanged: map[string]int{"ask": 1}}).WriteReport(&out, "p.yaml", 0); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.HasSuffix(s, "0 would change, 1 would not (1 ask)\n") || strings.Contains(s, "CHANGE") {
		t.Errorf("report without changes:\n%s", s)
	}
}

// TestWriteTable: one line per record, the rules an answer added before
// its reason and "-" for no sandbox profile; an empty list says so.
func TestWriteTable(t *testing.T) {
	recs := []Record{
		{WorkflowID: "t1", CallID: "c1", Tool: "Bash", Kind: "permission", Decision: "ask", By: "policy", Layer: "mode", Reason: "Mode: default", Sandbox: "read-only, network off"},
		{WorkflowID: "t1", CallID: "c1", Tool: "Bash", Kind: "approval", Decision: "always_allow", By: "carol", Path: PathUpdate, Rules: []string{"Bash(ls:*)"}},
	}
	var out bytes.Buffer
	if err := WriteTable(&out, recs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "TIME ") {
		t.Fatalf("table:\n%s", out.String())
	}
	if !strings.Contains(lines[1], "read-only, network off  Mode: default") || !strings.HasSuffix(strings.Join(strings.Fields(lines[2]), " "), "carol update - rules Bash(ls:*)") {
		t.Errorf("rows:\n%s", out.String())
	}
	out.Reset()
	if err := WriteTable(&out, nil); err != nil || !strings.HasSuffix(out.String(), "no decisions found\n") {
		t.Errorf("empty table: %v\n%s", err, out.String())
	}
}

// TestCut: a long text is cut on a character boundary, never inside a
// multi-byte character.
func TestCut(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"abcdef", 3, "abc…"},
		{"héllo", 2, "h…"},  // é is two bytes: not split
		{"héllo", 3, "hé…"}, // exactly after é
		{"日本語です", 4, "日…"},  // three-byte characters
		{"a😀b", 4, "a…"},    // a four-byte character
		{"😀", 4, "😀"},
	} {
		got := cut(c.s, c.n)
		if got != c.want || !utf8.ValidString(got) {
			t.Errorf("cut(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

func TestDetails(t *testing.T) {
	cases := []struct {
		r    Record
		want string
	}{
		{Record{Kind: KindLivePolicy, Decision: "allow", PolicyVersion: 6, FromVersion: 5, Reason: "Rule: Bash(touch:*)"},
			"released by policy v6 (was v5); Rule: Bash(touch:*)"},
		{Record{Kind: KindLivePolicy, Decision: "deny", PolicyVersion: 7, FromVersion: 6, Reason: "Permission denied"},
			"denied by policy v7 (was v6); Permission denied"},
		{Record{Kind: KindLivePolicy, Decision: "ask", PolicyVersion: 8, FromVersion: 7}, "still waiting under policy v8 (was v7)"},
		{Record{Kind: KindApproval, Decision: "always_allow", Rules: []string{"Bash(npm run:*)"}, Scope: "namespace", TTL: time.Hour, SingleUse: true, Reason: "CHG-1"},
			"rules Bash(npm run:*); remembered, namespace scope, for 1h0m0s, once; CHG-1"},
		{Record{Kind: KindApproval, Decision: "always_allow", Scope: "agent"}, "remembered, agent scope, until revoked"},
		{Record{Kind: KindApproval, Decision: "allow", Edited: true, ApprovedInput: []byte(`{"command":"ls -l"}`)},
			`edited input {"command":"ls -l"}`},
		{Record{Kind: KindPermission, Decision: "allow", Remembered: "r3", RememberedBy: "alice", Reason: "Remembered"},
			"remembered approval r3 by alice; Remembered"},
	}
	for _, c := range cases {
		if got := Details(c.r); got != c.want {
			t.Errorf("Details(%+v) = %q, want %q", c.r, got, c.want)
		}
	}
}

func TestWriteTableTimeZone(t *testing.T) {
	var b strings.Builder
	at := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	if err := WriteTable(&b, []Record{{Time: at, WorkflowID: "w", CallID: "c", Kind: KindApproval, Decision: "allow"}}); err != nil {
		t.Fatal(err)
	}
	if want := at.Local().Format("2006-01-02 15:04:05 MST"); !strings.Contains(b.String(), want) || !strings.Contains(b.String(), "DETAILS") {
		t.Errorf("table without its zone (%s):\n%s", want, b.String())
	}
}
