package grep

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/wardenhq/warden/backend/local"
)

func TestParseRule(t *testing.T) {
	t.Parallel()
	cases := []struct {
		base, line string
		want       rule
	}{
		{"", "", rule{}},
		{"", "# comment", rule{}},
		{"", "/", rule{}},
		{"", "*.log", rule{pattern: "**/*.log"}},
		{"", "!keep.log", rule{pattern: "**/keep.log", negate: true}},
		{"", `\!bang`, rule{pattern: "**/!bang"}},
		{"", `\#hash`, rule{pattern: "**/#hash"}},
		{"sub", "build/", rule{base: "sub", pattern: "**/build", dirOnly: true}},
		{"", "/root.txt", rule{pattern: "root.txt"}},
		{"", "a/b  \t", rule{pattern: "a/b"}},
	}
	for _, c := range cases {
		if got := parseRule(c.base, c.line); got != c.want {
			t.Errorf("parseRule(%q, %q) = %+v, want %+v", c.base, c.line, got, c.want)
		}
	}
}

func TestRuleMatch(t *testing.T) {
	t.Parallel()
	cases := []struct {
		base, line, rel string
		dir, want       bool
	}{
		{"", "*.log", "a/b/x.log", false, true},
		{"", "build/", "build", false, false}, // dir-only rule, a file
		{"", "build/", "src/build", true, true},
		{"sub", "e.py", "sub/deep/e.py", false, true},
		{"sub", "e.py", "other/e.py", false, false},
		{"", "/root.txt", "x/root.txt", false, false},
	}
	for _, c := range cases {
		if got := parseRule(c.base, c.line).match(c.rel, c.dir); got != c.want {
			t.Errorf("%q in %q on %q (dir %v) = %v, want %v", c.line, c.base, c.rel, c.dir, got, c.want)
		}
	}
}

// TestGoWalk: the Go engine's file selection on a tree with ignore files,
// globs, a type filter and VCS directories.
func TestGoWalk(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, content := range map[string]string{
		"a.go": "foo\n", "b.txt": "foo\n", "drop.log": "foo\n", "keep.log": "foo\n",
		".gitignore": "*.log\n!keep.log\nignored/\n", "ignored/x.go": "foo\n",
		".git/config": "foo\n", "sub/.ignore": "e.py\n", "sub/e.py": "foo\n", "sub/c.go": "foo\n",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b := local.New(dir)
	for _, c := range []struct {
		globs []string
		typ   string
		want  []string
	}{
		{nil, "", []string{".gitignore", "a.go", "b.txt", "keep.log", "sub/.ignore", "sub/c.go"}},
		{[]string{"*.go"}, "", []string{"a.go", "sub/c.go"}},
		{[]string{"!*.go"}, "", []string{".gitignore", "b.txt", "keep.log", "sub/.ignore"}},
		{nil, "go", []string{"a.go", "sub/c.go"}},
	} {
		typeGlobs := types()[c.typ]
		var got []string
		if err := walkFiltered(context.Background(), b, dir, newFilter(c.globs, typeGlobs), DefaultMaxEntries, func(rel string, _ int64) { got = append(got, rel) }); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("globs %v type %q: %v, want %v", c.globs, c.typ, got, c.want)
		}
	}
	lines, _, msg, err := Go(context.Background(), b, Query{Pattern: "foo", Root: dir, Mode: "count", Type: "go"}, time.Minute)
	if err != nil || msg != "" {
		t.Fatal(err, msg)
	}
	want := []string{filepath.Join(dir, "a.go") + ":1", filepath.Join(dir, "sub/c.go") + ":1"}
	if !slices.Equal(lines, want) {
		t.Errorf("count: %v, want %v", lines, want)
	}
	if _, _, msg, _ := Go(context.Background(), b, Query{Pattern: "(", Root: dir, Mode: "count"}, time.Minute); msg == "" {
		t.Error("bad regexp: no tool error")
	}
}
