package calls

import (
	"encoding/json"
	"testing"
)

// TestUnescaped: an input marshalled by Go (<, > and & as \u003c, \u003e
// and \u0026) reads with those characters as themselves; numbers keep
// their digits; text that is not one JSON value is returned as it is.
func TestUnescaped(t *testing.T) {
	in, err := json.Marshal(map[string]any{"command": "echo a >> log && cat <in", "n": json.Number("12345678901234567890")})
	if err != nil {
		t.Fatal(err)
	}
	if string(in) == `{"command":"echo a >> log && cat <in","n":12345678901234567890}` {
		t.Fatal("json.Marshal no longer escapes: the test shows nothing")
	}
	for _, c := range []struct{ in, want string }{
		{string(in), `{"command":"echo a >> log && cat <in","n":12345678901234567890}`},
		{`not json \u003e`, `not json \u003e`},
		{`{"a":1} {"b":2}`, `{"a":1} {"b":2}`},
		{`"\u003cb\u003e"`, `"<b>"`},
	} {
		if got := Unescaped(c.in); got != c.want {
			t.Errorf("Unescaped(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}
