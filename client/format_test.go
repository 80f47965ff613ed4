package client

import (
	"strings"
	"testing"

	"github.com/wardenhq/warden/workflows"
)

// TestFormatEventUnescapesInput: a tool call's input prints as the model
// wrote it, not with Go's HTML escapes.
func TestFormatEventUnescapesInput(t *testing.T) {
	got := FormatEvent(workflows.Event{Type: workflows.EventToolCall, CallID: "c1", Tool: "Bash",
		Input: `{"command":"echo ran \u003e\u003e /tmp/side-a.txt \u0026\u0026 cat \u003cin"}`})
	if want := `{"command":"echo ran >> /tmp/side-a.txt && cat <in"}`; !strings.Contains(got, want) {
		t.Errorf("got %q, want it to contain %q", got, want)
	}
	if got := Unescaped(`not json \u003e`); got != `not json \u003e` {
		t.Errorf("non-JSON text changed: %q", got)
	}
	if got := Unescaped(`{"a":"\\u003e"}`); got != `{"a":"\\u003e"}` {
		t.Errorf("an escaped backslash changed: %q", got)
	}
}
