package client

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/wardenhq/warden/calls"
	"github.com/wardenhq/warden/workflows"
)

// FormatEvent renders an event as human-readable lines for a terminal,
// inert (Inert): what a model or a tool wrote is shown, never sent to
// the terminal as control sequences.
func FormatEvent(e workflows.Event) string { return Inert(formatEvent(e)) }

func formatEvent(e workflows.Event) string {
	switch e.Type {
	case workflows.EventModel:
		if e.Text == "" {
			return ""
		}
		return "model:   " + indent(e.Text) + "\n"
	case workflows.EventToolCall:
		return fmt.Sprintf("call:    %s %s %s\n", e.CallID, e.Tool, Unescaped(e.Input))
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
	case workflows.EventUsage:
		return "usage:   " + e.Text + "\n"
	default:
		return fmt.Sprintf("%s: %s\n", e.Type, e.Text)
	}
}

// Unescaped returns the JSON text s as a person reads it
// (calls.Unescaped).
func Unescaped(s string) string { return calls.Unescaped(s) }

func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n         ") }

// FormatConversation renders a conversation as plain text: a header, the
// compactions met (each naming the head whose messages it replaced) and
// every message with its role, tool, content and tool calls; inert
// (Inert).
func FormatConversation(conv Conversation) string { return Inert(formatConversation(conv)) }

func formatConversation(conv Conversation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "turn %s, conversation %s, %d messages\n", conv.WorkflowID, conv.Head, len(conv.Messages))
	for _, c := range conv.Compactions {
		fmt.Fprintf(&b, "compacted (%s): %d → %d messages, ~%d → ~%d tokens; the original is kept as %s\n",
			c.Strategy, c.MessagesBefore, c.MessagesAfter, c.TokensBefore, c.TokensAfter, c.From)
	}
	for i, m := range conv.Messages {
		fmt.Fprintf(&b, "── %d %s", i+1, m.Role)
		if m.ToolName != "" {
			fmt.Fprintf(&b, " %s %s", m.ToolName, m.ToolCallID)
		}
		if m.IsError {
			b.WriteString(" [error]")
		}
		b.WriteString("\n")
		if m.Content != "" {
			b.WriteString(strings.TrimRight(m.Content, "\n"))
			b.WriteString("\n")
		}
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, "→ %s %s %s\n", c.ID, c.Name, c.Input)
		}
	}
	return b.String()
}

// Inert returns s as text a terminal shows and never acts on: line
// breaks and tabs stay, every other control character (C0, DEL and the
// C1 range, which start escape sequences: a clipboard write, a cursor
// move, a title) and every byte that is not UTF-8 is written out as an
// escape (\x1b, \u009b). Everything the starter prints of what a model or
// a tool wrote goes through it.
func Inert(s string) string {
	clean := true
	for _, r := range s {
		if unsafeRune(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case unsafeRune(r) && r < 0x80:
			fmt.Fprintf(&b, "\\x%02x", r)
		case unsafeRune(r):
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// unsafeRune reports whether a terminal may act on r (or r stands for
// a byte that is not UTF-8).
func unsafeRune(r rune) bool {
	return r == utf8.RuneError || r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r <= 0x9f
}
