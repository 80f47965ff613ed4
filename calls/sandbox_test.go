package calls

import (
	"slices"
	"testing"
)

// TestRebased: a profile decided in one worker's workdir grants the same
// inside another's, and nothing else changes.
func TestRebased(t *testing.T) {
	s := &Sandbox{Write: []string{"/a/ws", "/etc/app.conf"}, Dirs: []string{"/a/ws", "/shared"},
		Protect: []string{"/a/ws/.git/hooks", "/a/ws/.git/config", "/shared/.git/hooks"}}
	r := Rebased(s, "/b/ws")
	if !slices.Equal(r.Write, []string{"/b/ws", "/etc/app.conf"}) || !slices.Equal(r.Dirs, []string{"/b/ws", "/shared"}) ||
		!slices.Equal(r.Protect, []string{"/b/ws/.git/hooks", "/b/ws/.git/config", "/shared/.git/hooks"}) {
		t.Errorf("rebased = %+v", r)
	}
	if s.Write[0] != "/a/ws" {
		t.Error("the recorded profile was changed")
	}
	if Rebased(s, "/a/ws") != s || Rebased(nil, "/b") != nil {
		t.Error("an unchanged profile was copied")
	}
	if r := Rebased(&Sandbox{Write: []string{"/a/wsx"}, Dirs: []string{"/a/ws"}}, "/b/ws"); r.Write[0] != "/a/wsx" {
		t.Errorf("a sibling path moved: %q", r.Write)
	}
}
