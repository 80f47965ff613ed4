package client

import (
	"fmt"
	"strings"

	"github.com/wardenhq/warden/workflows"
)

// FormatEvent renders an event as human-readable lines for a terminal.
func FormatEvent(e workflows.Event) string {
	switch e.Type {
	case workflows.EventModel:
		if e.Text == "" {
			return ""
		}
		return "model:   " + indent(e.Text) + "\n"
	case workflows.EventToolCall:
		return fmt.Sprintf("call:    %s %s %s\n", e.CallID, e.Tool, e.Input)
	case workflows.EventDecision:
		return fmt.Sprintf("policy:  %s %s\n", e.CallID, e.Text)
	case workflows.EventWaiting:
		return fmt.Sprintf("waiting: %s %s %s\n", e.CallID, e.Tool, e.Text)
	case workflows.EventAnswered, workflows.EventRejected:
		return fmt.Sprintf("%-8s %s %s\n", e.Type+":", e.CallID, e.Text)
	case workflows.EventResult:
		status := "ok"
		if e.Error {
			status = "error"
		}
		return fmt.Sprintf("result:  %s %s [%s]\n         %s\n", e.CallID, e.Tool, status, indent(strings.TrimRight(e.Text, "\n")))
	case workflows.EventFinal:
		return ""
	case workflows.EventFailed:
		return "FAILED:  " + indent(e.Text) + "\n"
	case EventStuck:
		return "STUCK:   " + indent(e.Text) + "\n"
	case workflows.EventCompacted:
		return "context: " + e.Text + "\n"
	default:
		return fmt.Sprintf("%s: %s\n", e.Type, e.Text)
	}
}

func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n         ") }
