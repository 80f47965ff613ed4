package audit

import (
	"testing"
	"time"
)

// TestChannel: the channel of each kind of answer, and which records are
// answers at all.
func TestChannel(t *testing.T) {
	tests := []struct {
		name   string
		r      Record
		answer bool
		want   string
	}{
		{"inbox", Record{Kind: KindApproval, Decision: "allow", By: "alice", Identity: "inbox", Path: PathUpdate}, true, ChannelInbox},
		{"slack", Record{Kind: KindApproval, Decision: "deny", By: "bob", Identity: "inbox", Reason: "from Slack: no"}, true, ChannelSlack},
		{"slack budget raise", Record{Kind: KindBudget, Decision: "raise", By: "bob", Identity: "inbox", Reason: "budget cost reached (2 of 2); raised by cost 2: from Slack"}, true, ChannelSlack},
		{"own key says slack", Record{Kind: KindApproval, Decision: "allow", By: "carol", Identity: "carol", Reason: "from Slack"}, true, ChannelKey},
		{"own key", Record{Kind: KindApproval, Decision: "allow", By: "carol", Identity: "carol"}, true, ChannelKey},
		{"no keys", Record{Kind: KindApproval, Decision: "allow", By: "carol"}, true, ChannelUnsigned},
		{"budget raise", Record{Kind: KindBudget, Decision: "raise", By: "alice", Identity: "alice"}, true, ChannelKey},
		{"budget at the deadline", Record{Kind: KindBudget, Decision: "deny", By: "deadline", Path: PathEscalation}, true, ChannelDeadline},
		{"external", Record{Kind: KindExternal, Decision: "completed", By: "dan", Identity: "inbox"}, true, ChannelInbox},
		{"escalation deny", Record{Kind: KindEscalation, Decision: "deny", By: "deadline", Path: PathEscalation}, true, ChannelDeadline},
		{"escalation notify", Record{Kind: KindEscalation, Decision: "notify", By: "deadline", Path: PathEscalation}, false, ChannelDeadline},
		{"policy allow", Record{Kind: KindLivePolicy, Decision: "allow", By: "policy v3"}, true, ChannelPolicy},
		{"policy still asks", Record{Kind: KindLivePolicy, Decision: "ask", By: "policy v3"}, false, ChannelPolicy},
		{"verdict", Record{Kind: KindPermission, Decision: "ask", By: "policy"}, false, ChannelUnsigned},
		{"execution", Record{Kind: KindExecution, Decision: "ran", By: "worker"}, false, ChannelUnsigned},
	}
	for _, tt := range tests {
		if got := IsAnswer(tt.r); got != tt.answer {
			t.Errorf("%s: IsAnswer = %v, want %v", tt.name, got, tt.answer)
		}
		if got := Channel(tt.r); got != tt.want {
			t.Errorf("%s: Channel = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestAnswersOf keeps the answers not older than since, in order.
func TestAnswersOf(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	recs := []Record{
		{Time: t0, CallID: "a", Kind: KindApproval, Decision: "allow"},
		{Time: t0.Add(time.Minute), CallID: "b", Kind: KindPermission, Decision: "ask"},
		{Time: t0.Add(2 * time.Minute), CallID: "b", Kind: KindApproval, Decision: "deny"},
		{Time: t0.Add(3 * time.Minute), CallID: "b", Kind: KindExecution, Decision: "ran"},
	}
	got := AnswersOf(recs, Query{Since: t0.Add(time.Second)})
	if len(got) != 1 || got[0].CallID != "b" || got[0].Decision != "deny" {
		t.Errorf("AnswersOf = %+v", got)
	}
	if got := AnswersOf(recs, Query{}); len(got) != 2 {
		t.Errorf("AnswersOf without since = %d records", len(got))
	}
}
