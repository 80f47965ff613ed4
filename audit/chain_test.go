package audit

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func chained(t *testing.T, wf string, n int) []Record {
	t.Helper()
	var recs []Record
	at := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	for i := range n {
		recs = append(recs, Record{Time: at.Add(time.Duration(i) * time.Second), WorkflowID: wf, CallID: "c" + string(rune('1'+i)), Tool: "Bash", Kind: KindPermission, Decision: "allow", By: "policy"})
	}
	if err := Link(recs); err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestVerify: an export of two interleaved turns verifies; an edited, a
// removed and a reordered record are each named, as is an edit whose
// chain was rebuilt (only the history tells), and a record the history
// does not have.
func TestVerify(t *testing.T) {
	a, b := chained(t, "a", 4), chained(t, "b", 3)
	source := map[string][]Record{"a": a, "b": b}
	export := []Record{a[0], b[0], a[1], a[2], b[1], a[3], b[2]}
	if err := Verify(export, source); err != nil {
		t.Fatalf("the untouched export: %v", err)
	}
	// A later part of a turn (audit --since) verifies too.
	if err := Verify([]Record{a[2], a[3]}, source); err != nil {
		t.Fatalf("a tail of the turn: %v", err)
	}
	edited := slices.Clone(export)
	edited[3].Decision = "deny"
	removed := slices.Delete(slices.Clone(export), 2, 3)
	reordered := slices.Clone(export)
	reordered[2], reordered[3] = reordered[3], reordered[2]
	rebuilt := slices.Clone(a)
	rebuilt[1].By = "mallory"
	if err := Link(rebuilt); err != nil {
		t.Fatal(err)
	}
	beyond := chained(t, "a", 5)
	for _, c := range []struct {
		name   string
		export []Record
		line   int
		why    string
	}{
		{"edited", edited, 4, "edited"},
		{"removed", removed, 3, "removed or reordered"},
		{"reordered", reordered, 3, "removed or reordered"},
		{"rebuilt chain", rebuilt, 2, "differs from the turn's history: by"},
		{"not in history", beyond, 5, "not in the turn's history"},
		{"unchained", []Record{{WorkflowID: "a"}}, 1, "not chained"},
	} {
		err := Verify(c.export, source)
		var m *Mismatch
		if !errors.As(err, &m) || m.Line != c.line || !strings.Contains(m.Why, c.why) {
			t.Errorf("%s: %v, want line %d: %s", c.name, err, c.line, c.why)
			continue
		}
		t.Logf("%s: %v", c.name, err)
	}
}

// TestLinkIsStable: linking the same records gives the same chain, and a
// change to any record changes its hash and every later one.
func TestLinkIsStable(t *testing.T) {
	a, b := chained(t, "a", 3), chained(t, "a", 3)
	for i := range a {
		if a[i].Hash != b[i].Hash || a[i].Seq != i+1 || (i > 0 && a[i].Prev != a[i-1].Hash) {
			t.Fatalf("record %d: %+v vs %+v", i, a[i], b[i])
		}
	}
	b[0].Reason = "changed"
	if err := Link(b); err != nil {
		t.Fatal(err)
	}
	for i := range a {
		if a[i].Hash == b[i].Hash {
			t.Errorf("record %d kept its hash after record 1 changed", i+1)
		}
	}
}
