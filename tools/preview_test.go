package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/backend/local"
)

func TestPreview(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(file, []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := &Env{Backend: local.New(dir), Workdir: dir}
	in := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	ctx := context.Background()
	for _, c := range []struct {
		name, tool string
		input      json.RawMessage
		want, not  []string
	}{
		{"write over a file", "Write", in(WriteInput{FilePath: file, Content: "one\n2\nthree\n"}),
			[]string{"--- a/", "-two", "+2", " one"}, []string{"+one"}},
		{"write a new file", "Write", in(WriteInput{FilePath: filepath.Join(dir, "new.txt"), Content: "x\n"}),
			[]string{"--- /dev/null", "+x"}, nil},
		{"edit", "Edit", in(EditInput{FilePath: file, OldString: "three", NewString: "3"}),
			[]string{"-three", "+3"}, nil},
		{"edit without a match", "Edit", in(EditInput{FilePath: file, OldString: "four", NewString: "4"}), nil, []string{"---"}},
		{"relative path", "Write", in(WriteInput{FilePath: "rel.txt", Content: "x"}), nil, []string{"---"}},
		{"other tool", "Bash", in(map[string]string{"command": "ls"}), nil, []string{"---"}},
	} {
		got := Preview(ctx, env, c.tool, c.input)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: preview %q lacks %q", c.name, got, w)
			}
		}
		for _, n := range c.not {
			if strings.Contains(got, n) {
				t.Errorf("%s: preview %q has %q", c.name, got, n)
			}
		}
	}
	big := strings.Repeat("line\n", 5000)
	if got := Preview(ctx, env, "Write", in(WriteInput{FilePath: file, Content: big})); len(got) > MaxPreviewBytes+64 || !strings.Contains(got, "cut at 8 KiB") {
		t.Errorf("big preview: %d bytes", len(got))
	}
}
