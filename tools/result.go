package tools

import (
	"maps"
	"strings"
)

// ResultState is the final state of a tool call.
type ResultState string

// The result states.
const (
	StateSuccess     ResultState = "success"
	StateError       ResultState = "error"
	StateDenied      ResultState = "denied"
	StateInterrupted ResultState = "interrupted"
)

// Result is the accumulated outcome of one tool call, as the model sees it.
type Result struct {
	CallID   string         `json:"call_id"`
	Name     string         `json:"name"`
	Content  string         `json:"content"`
	IsError  bool           `json:"is_error,omitempty"`
	State    ResultState    `json:"state"`
	Data     []DataBlock    `json:"data,omitempty"`
	Metadata map[string]any `json:"metadata,omitempty"`
	// Ref, when set, names the full content in the turn's content store;
	// Content is then a preview and Size the full length in bytes.
	Ref  string `json:"ref,omitempty"`
	Size int    `json:"size,omitempty"`
}

// Append folds a chunk into the result: text concatenates, an error
// sticks once set, data blocks accumulate and metadata merges.
func (r *Result) Append(c Chunk) {
	r.Content += c.Text
	if c.IsError {
		r.IsError = true
		r.State = StateError
	}
	r.Data = append(r.Data, c.Data...)
	if len(c.Metadata) > 0 {
		if r.Metadata == nil {
			r.Metadata = map[string]any{}
		}
		maps.Copy(r.Metadata, c.Metadata)
	}
	if r.State == "" {
		r.State = StateSuccess
	}
}

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
