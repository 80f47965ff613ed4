package tools

import (
	"encoding/json"
	"testing"
)

// TestAnticipateDecodesAsReadInput checks that State.Anticipate (in
// package calls, which cannot import ReadInput) reads a Read input
// exactly when the Read tool's input decoder does.
func TestAnticipateDecodesAsReadInput(t *testing.T) {
	for _, in := range []string{
		`{"file_path":"/a"}`, `{"file_path":"/a","offset":2,"limit":3,"pages":"1-2"}`,
		`{"file_path":"/a","offset":"x"}`, `{"file_path":"/a","limit":1.5}`, `{"file_path":"/a","pages":3}`,
		`{"file_path":7}`, `[]`, `{"file_path":"/a","offset":null}`, `{`, `{"file_path":"/a","extra":true}`,
	} {
		_, err := decodeInput[ReadInput]("Read", json.RawMessage(in))
		_, read := State{}.Anticipate("Read", json.RawMessage(in)).Reads["/a"]
		if (err == nil) != read {
			t.Errorf("%s: ReadInput decodes: %v, Anticipate records the read: %v", in, err == nil, read)
		}
	}
}
