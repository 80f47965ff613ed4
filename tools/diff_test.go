package tools

import (
	"fmt"
	"strings"
	"testing"
)

// bigPair returns a file of n lines and a copy with every step-th line
// changed, and the changed lines' numbers (1-based).
func bigPair(n, step int) (string, string, []int) {
	var a, b strings.Builder
	var changed []int
	for i := range n {
		fmt.Fprintf(&a, "line %d of the file\n", i)
		if i%step == step/2 {
			fmt.Fprintf(&b, "edited line %d\n", i)
			changed = append(changed, i+1)
		} else {
			fmt.Fprintf(&b, "line %d of the file\n", i)
		}
	}
	return a.String(), b.String(), changed
}

// TestUnifiedDiffBigFile: a few edits of a 50,000-line file give one
// small hunk each (the old LCS table gave up beyond 4M cells and showed
// the whole file replaced).
func TestUnifiedDiffBigFile(t *testing.T) {
	t.Parallel()
	a, b, changed := bigPair(50_000, 10_000)
	got := unifiedDiff("a", "b", a, b)
	if n := strings.Count(got, "\n@@ -"); n != len(changed) {
		t.Fatalf("%d hunks, want %d:\n%s", n, len(changed), got)
	}
	for _, l := range changed {
		hunk := fmt.Sprintf("@@ -%d,7 +%d,7 @@\n", l-3, l-3)
		edit := fmt.Sprintf("-line %d of the file\n+edited line %d\n", l-1, l-1)
		if !strings.Contains(got, hunk) || !strings.Contains(got, edit) {
			t.Errorf("no hunk %q with %q in:\n%s", hunk, edit, got)
		}
	}
	if len(got) > 2000 {
		t.Errorf("diff of 5 one-line edits is %d bytes", len(got))
	}
}

// TestUnifiedDiffFinalNewline: a change of the final newline alone is a
// hunk, marked as in GNU diff.
func TestUnifiedDiffFinalNewline(t *testing.T) {
	t.Parallel()
	want := "--- a\n+++ b\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"
	if got := unifiedDiff("a", "b", "a\nb", "a\nb\n"); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// BenchmarkUnifiedDiff diffs a 50,000-line file (1.2 MB) with 5, 500
// and 5,000 changed lines; diff-bytes is the size of the diff.
func BenchmarkUnifiedDiff(b *testing.B) {
	for _, step := range []int{10_000, 100, 10} {
		x, y, changed := bigPair(50_000, step)
		b.Run(fmt.Sprintf("50k-lines-%d-edits", len(changed)), func(b *testing.B) {
			var d string
			for b.Loop() {
				d = unifiedDiff("a", "b", x, y)
			}
			b.ReportMetric(float64(len(d)), "diff-bytes")
		})
	}
}
