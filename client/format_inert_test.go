package client

import (
	"strings"
	"testing"

	"github.com/wardenhq/warden/workflows"
)

// TestInert: what a tool printed reaches the terminal with its control
// characters shown, not sent (an OSC 52 clipboard write, a CSI cursor
// move, a C1 CSI, a byte that is not UTF-8); lines, tabs and other text
// stay as they are.
func TestInert(t *testing.T) {
	raw := "ok\tline\n\x1b]52;c;ZXZpbA==\x07 \x1b[2A \u009b31m caf\u00e9 \xff"
	got := FormatEvent(workflows.Event{Type: workflows.EventResult, CallID: "c1", Tool: "Bash", Text: raw})
	for _, bad := range []string{"\x1b", "\x07", "\u009b", "\xff"} {
		if strings.Contains(got, bad) {
			t.Errorf("%q reached the terminal: %q", bad, got)
		}
	}
	for _, shown := range []string{`\x1b]52;c;ZXZpbA==\x07`, `\x1b[2A`, `\u009b31m`, `\xff`, "café", "ok\tline\n"} {
		if !strings.Contains(got, shown) {
			t.Errorf("%q not shown: %q", shown, got)
		}
	}
	if s := "plain text\n"; Inert(s) != s {
		t.Errorf("plain text changed: %q", Inert(s))
	}
}
