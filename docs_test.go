package warden_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// docFiles are the manual's files whose links TestDocLinks checks:
// README.md (the map) and the pages of docs/.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) == 0 {
		t.Fatalf("no pages in %s", filepath.Join(root, "docs"))
	}
	return append([]string{filepath.Join(root, "README.md")}, pages...)
}

var (
	mdLink     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	codeSpan   = regexp.MustCompile("`[^`]*`")
	hasScheme  = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	mdHeading  = regexp.MustCompile(`^#{1,6} +(.*?) *#* *$`)
	fenceStart = "```"
)

// mdLines calls f with each line of a Markdown file outside its fenced
// code blocks.
func mdLines(text string, f func(line string)) {
	fence := false
	for line := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), fenceStart) {
			fence = !fence
			continue
		}
		if !fence {
			f(line)
		}
	}
}

// anchors returns the anchors of a Markdown file's headings, named as
// GitHub names them: lower case, punctuation dropped, spaces as
// hyphens, a repeated one suffixed -1, -2, ...
func anchors(text string) []string {
	var out []string
	seen := map[string]int{}
	mdLines(text, func(line string) {
		m := mdHeading.FindStringSubmatch(line)
		if m == nil {
			return
		}
		var b strings.Builder
		for _, r := range strings.ToLower(codeSpanMarks(m[1])) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out = append(out, fmt.Sprintf("%s-%d", a, n))
		} else {
			out = append(out, a)
		}
		seen[a]++
	})
	return out
}

// codeSpanMarks drops the backquotes of a heading's code spans (their
// text stays in the anchor).
func codeSpanMarks(s string) string { return strings.ReplaceAll(s, "`", "") }

// brokenLinks returns a line for each relative link of file that names
// no file of the repository under root, or no heading of the file it
// names; and for each link that leaves the repository.
func brokenLinks(t *testing.T, root, file string) []string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	mdLines(string(data), func(line string) {
		for _, m := range mdLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
			if hasScheme.MatchString(m[1]) {
				continue // a web address: not a file of ours
			}
			if msg := checkLink(root, file, m[1]); msg != "" {
				bad = append(bad, fmt.Sprintf("%s: %s: %s", file, m[1], msg))
			}
		}
	})
	return bad
}

// checkLink says what is wrong with one relative link of file, or "".
func checkLink(root, file, link string) string {
	target, anchor, _ := strings.Cut(link, "#")
	path := file
	if target != "" {
		if filepath.IsAbs(target) {
			return "an absolute path"
		}
		path = filepath.Join(filepath.Dir(file), filepath.FromSlash(target))
		if rel, err := filepath.Rel(root, path); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return "outside the repository"
		}
		if _, err := os.Stat(path); err != nil {
			return "no such file"
		}
	}
	if anchor == "" {
		return ""
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("an anchor into %s, which cannot be read: %v", path, err)
	}
	if !slices.Contains(anchors(string(data)), anchor) {
		return "no such heading in " + path
	}
	return ""
}

// TestDocLinks: every relative link of README.md and docs/*.md names a
// file of the repository and, with an #anchor, one of its headings.
func TestDocLinks(t *testing.T) {
	t.Parallel()
	n := 0
	for _, f := range docFiles(t, ".") {
		for _, b := range brokenLinks(t, ".", f) {
			t.Error(b)
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n += len(mdLink.FindAllString(string(data), -1))
	}
	if n == 0 {
		t.Fatal("the manual has no links at all: the check read nothing")
	}
}

// TestDocLinksControl: the check finds a link to a missing file, to a
// missing heading, and out of the repository, and passes the good ones.
func TestDocLinksControl(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	page := "# A page\n\n## The `x` tool: how, why\n\n```\n# not a heading\n```\n"
	readme := "[ok](docs/a.md#the-x-tool-how-why) [web](https://example.com) `[code](nowhere.md)`\n" +
		"[gone](docs/b.md) [bad anchor](docs/a.md#not-a-heading) [out](../x.md) [self](#a-readme)\n# A README\n"
	for name, text := range map[string]string{"README.md": readme, "docs/a.md": page} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, f := range docFiles(t, root) {
		for _, b := range brokenLinks(t, root, f) {
			_, link, _ := strings.Cut(b, ": ")
			link, _, _ = strings.Cut(link, ": ")
			got = append(got, link)
		}
	}
	want := []string{"docs/b.md", "docs/a.md#not-a-heading", "../x.md"}
	if !slices.Equal(got, want) {
		t.Errorf("the check reported %q, want %q", got, want)
	}
}
