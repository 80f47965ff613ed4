package backend

import (
	"fmt"
	"testing"
)

func TestCappedBuffer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		max    int
		writes []string
		want   string
		cut    bool
	}{
		{max: 0, writes: []string{"hello", " world"}, want: "hello world"},
		{max: -1, writes: []string{"abc"}, want: "abc"},
		{max: 5, writes: []string{"hel", "lo"}, want: "hello"},
		{max: 5, writes: []string{"hello world"}, want: "hello", cut: true},
		{max: 5, writes: []string{"hel", "lo wo", "rld"}, want: "hello", cut: true},
		{max: 5, writes: []string{"hello", ""}, want: "hello"},
	} {
		t.Run(fmt.Sprint(tc.max, tc.writes), func(t *testing.T) {
			t.Parallel()
			var teed string
			c := &CappedBuffer{Max: tc.max, Tee: func(p []byte) { teed += string(p) }}
			all := ""
			for _, w := range tc.writes {
				all += w
				if n, err := c.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v; want %d, nil", w, n, err, len(w))
				}
			}
			if string(c.Bytes()) != tc.want || c.Truncated() != tc.cut {
				t.Errorf("kept %q (truncated %v), want %q (%v)", c.Bytes(), c.Truncated(), tc.want, tc.cut)
			}
			if teed != all {
				t.Errorf("tee got %q, want every write %q", teed, all)
			}
		})
	}
}
