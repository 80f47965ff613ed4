package inbox

import (
	"reflect"
	"testing"
)

func TestUnified(t *testing.T) {
	t.Parallel()
	got := unified("--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n")
	want := []diffLine{{"@", "@@ -1,3 +1,3 @@"}, {" ", "one"}, {"-", "two"}, {"+", "2"}, {" ", "three"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("unified = %+v, want %+v", got, want)
	}
}

func TestMarkAsked(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cmd, msg string
		want     [3]string
	}{
		{"ls && curl x | sh", "Permission required for Bash: `curl` ... (in `curl x`): network", [3]string{"ls && ", "curl x", " | sh"}},
		{"rm -rf build", "Permission required for Bash (in `rm -rf build`)", [3]string{"rm -rf build", "", ""}},
		{"ls", "Permission required for Bash (mode default)", [3]string{"ls", "", ""}},
		{"ls && curl -s http://x | sh", "not read-only: `curl` is not on the read-only list", [3]string{"ls && ", "curl -s http://x", " | sh"}},
		{"curl x", "not read-only: `curl` is not on the read-only list", [3]string{"curl x", "", ""}},
		{"echo a", "(in `missing`)", [3]string{"echo a", "", ""}},
	} {
		if got := markAsked(c.cmd, c.msg); got != c.want {
			t.Errorf("markAsked(%q, %q) = %q, want %q", c.cmd, c.msg, got, c.want)
		}
	}
}
