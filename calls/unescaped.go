package calls

import (
	"encoding/json"
	"strings"
)

// Unescaped returns the JSON text s as a person reads it: the same value
// with <, > and & written as themselves, not as the \u003c escapes Go's
// encoder puts in (objects' keys come out sorted). Text that is not JSON
// is returned unchanged. Every place that shows a call's input to a
// person (approvals list, Slack, the audit, what-if) shows it so.
func Unescaped(s string) string {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return s
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return s
	}
	return strings.TrimSuffix(b.String(), "\n")
}
