package workflows

import "testing"

// TestAnswerHow: how each kind of answer is named on the wait's span and
// in warden_approval_answers_total: a live-policy release is a
// policy_change, not remembered; only a remembered approval's release
// is remembered; a rule an approver added (no store) is rule.
func TestAnswerHow(t *testing.T) {
	tests := []struct {
		name          string
		a             AnswerState
		live          bool
		how, decision string
	}{
		{"inbox allow", AnswerState{Approval: &Approval{Decision: DecisionAllow, By: "alice", Via: "inbox"}}, true, "inbox", "allow"},
		{"key deny", AnswerState{Approval: &Approval{Decision: DecisionDeny, By: "carol", Via: "carol"}}, false, "carol", "deny"},
		{"unsigned", AnswerState{Approval: &Approval{Decision: DecisionAllow, By: "dan"}}, false, "answer", "allow"},
		{"deadline", AnswerState{Approval: &Approval{Decision: DecisionDeny, By: "deadline"}}, false, "escalation", "deny"},
		{"external", AnswerState{External: &ExternalResult{By: "alice"}}, false, "external", "result"},
		{"policy denies", AnswerState{Denied: "deny rule Bash(curl:*)"}, true, "policy_change", "deny"},
		{"remembered", AnswerState{Auto: "Remembered: r-1 (Bash(make:*), agent builder, by alice)"}, true, "remembered", "allow"},
		{"live policy releases", AnswerState{Auto: "allow rule Bash(make:*) (policy v4)"}, true, "policy_change", "allow"},
		{"a rule an approver added", AnswerState{Auto: "allow rule Bash(make:*)"}, false, "rule", "allow"},
	}
	for _, tt := range tests {
		if how, d := answerHow(tt.a, tt.live); how != tt.how || d != tt.decision {
			t.Errorf("%s: answerHow = %s, %s; want %s, %s", tt.name, how, d, tt.how, tt.decision)
		}
	}
}
