package main

import (
	"strings"
	"testing"
)

// TestAskAndExternalFlags: the answer's flags are checked before the
// command connects (it has no connection here).
func TestAskAndExternalFlags(t *testing.T) {
	for args, want := range map[string]string{
		"ask answer wf c1": "give --select, --other or --json-answer",
		"ask answer wf c1 --select A --json-answer a.json": "not both",
		"external complete wf c1":                          "exactly one of --output or --file",
		"external complete wf c1 --output x --file f":      "exactly one of --output or --file",
		"external complete wf c1 --file /nonexistent/out":  "read result: ",
	} {
		fields := strings.Fields(args)
		cmd := newAskCmd(&conn{})
		if fields[0] == "external" {
			cmd = newExternalCmd(&conn{})
		}
		if _, err := execute(t, cmd, "", fields[1:]...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", args, err, want)
		}
	}
}
