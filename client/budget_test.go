package client

import (
	"testing"
	"time"
)

func TestParseBudget(t *testing.T) {
	b, err := ParseBudget("tokens=2M, cost=5, tool_calls=500, time=8h, Bash=200, warn=80%", false)
	if err != nil {
		t.Fatal(err)
	}
	if b.Tokens != 2_000_000 || b.Cost != 5 || b.ToolCalls != 500 || b.Time != 8*time.Hour || b.PerTool["Bash"] != 200 || b.Warn != 0.8 {
		t.Errorf("parsed %+v", b)
	}
	r, err := ParseBudget("cost=+2,time=+1d,Bash=+50", true)
	if err != nil {
		t.Fatal(err)
	}
	if r.Cost != 2 || r.Time != 24*time.Hour || r.PerTool["Bash"] != 50 {
		t.Errorf("raise %+v", r)
	}
	for _, bad := range []string{"", "tokens", "tokens=-5", "cost=0", "time=soon", "warn=150%", "tool_calls=+3"} {
		if _, err := ParseBudget(bad, false); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	if _, err := ParseBudget("warn=0.5", true); err == nil {
		t.Error("a raise set a warning")
	}
}
