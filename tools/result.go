package tools

import (
	"strings"

	"github.com/wardenhq/warden/calls"
)

// ResultState is the final state of a tool call (calls.ResultState).
type ResultState = calls.ResultState

// The result states.
const (
	StateSuccess     = calls.StateSuccess
	StateError       = calls.StateError
	StateDenied      = calls.StateDenied
	StateInterrupted = calls.StateInterrupted
)

// Result is the accumulated outcome of one tool call (calls.Result).
type Result = calls.Result

// Collect drains a stream into a result. A Go error stops collection and
// is returned as is.
func Collect(s Stream) (Result, error) {
	var r Result
	for c, err := range s {
		if err != nil {
			return r, err
		}
		r.Append(c)
	}
	if r.State == "" {
		r.State = StateSuccess
	}
	return r, nil
}

// Truncate cuts s to max characters (runes) and appends a note.
func Truncate(s string, max int) string {
	if max <= 0 || len(s) <= max {
		return s
	}
	runes := []rune(s)
	if len(runes) <= max {
		return s
	}
	var b strings.Builder
	b.WriteString(string(runes[:max]))
	b.WriteString("\n... (output truncated)")
	return b.String()
}
