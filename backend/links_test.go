package backend

import (
	"maps"
	"os"
	"path/filepath"
	"testing"
)

// TestLocalLinks resolves the links of a workspace on the local file
// system: a file and a directory linked out of it, a link to a file not
// made yet (a Write would create it), a relative link inside it, a loop,
// and a workspace reached through a link of its own (only the links
// below it count; a target in it is named under the workspace).
func TestLocalLinks(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	real, out := filepath.Join(root, "real"), filepath.Join(root, "out")
	for _, d := range []string{filepath.Join(real, "notes"), filepath.Join(real, "docs"), filepath.Join(out, "ssh")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	keys := filepath.Join(out, "ssh", "authorized_keys")
	if err := os.WriteFile(keys, []byte("k\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(root, "ws") // the workspace, itself a link to real
	for _, l := range [][2]string{
		{real, ws},
		{keys, filepath.Join(real, "notes", "key")},
		{filepath.Join(out, "ssh"), filepath.Join(real, "sshdir")},
		{filepath.Join(out, "ssh", "new_file"), filepath.Join(real, "notes", "dangling")},
		{"../docs/readme", filepath.Join(real, "notes", "readme")},
		{"loop2", filepath.Join(real, "loop1")},
		{"loop1", filepath.Join(real, "loop2")},
	} {
		if err := os.Symlink(l[0], l[1]); err != nil {
			t.Fatal(err)
		}
	}
	paths := []string{
		filepath.Join(ws, "notes", "key"),
		filepath.Join(ws, "sshdir", "id_ed25519"),
		filepath.Join(ws, "notes", "dangling"),
		filepath.Join(ws, "notes", "readme"),
		filepath.Join(ws, "loop1"),
		filepath.Join(ws, "docs", "plain"),     // no link below the workspace
		filepath.Join(ws, "notes", "new"),      // not made yet, no link
		filepath.Join(root, "elsewhere"),       // outside the workspace
		ws,                                     // the workspace itself
		filepath.Join(ws, "notes", "key", "x"), // below a file
	}
	got := LocalLinks([]string{ws}, paths)
	want := map[string]string{
		filepath.Join(ws, "notes", "key"):         keys,
		filepath.Join(ws, "sshdir", "id_ed25519"): filepath.Join(out, "ssh", "id_ed25519"),
		filepath.Join(ws, "notes", "dangling"):    filepath.Join(out, "ssh", "new_file"),
		filepath.Join(ws, "notes", "readme"):      filepath.Join(ws, "docs", "readme"),
		filepath.Join(ws, "loop1"):                "",
		filepath.Join(ws, "notes", "key", "x"):    filepath.Join(keys, "x"),
	}
	if !maps.Equal(got, want) {
		t.Errorf("LocalLinks:\n got %v\nwant %v", got, want)
	}
}
