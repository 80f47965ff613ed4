package audit

import "testing"

// TestExtractRecordedWindows reads a recorded turn under two window
// limits of one call per hour (turn and agent scope): the second call
// of each reached its bound, a window record says so (ask, naming the
// limit and its scope), an approval allowed it, and it ran; the first
// call of each ran without a window record.
func TestExtractRecordedWindows(t *testing.T) {
	t.Parallel()
	recs, err := Extract("window-record", load(t, "window_turn_v15.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, call := range []string{"p1", "s1"} {
		for _, r := range recs {
			if r.CallID == call && r.Kind == KindWindow {
				t.Errorf("%s: a window record for a call under its bound: %+v", call, r)
			}
		}
		find(t, recs, call, KindExecution)
	}
	for call, scope := range map[string]string{"p2": "turn scope", "s2": "agent scope"} {
		w := find(t, recs, call, KindWindow)
		if w.Decision != "ask" || w.Layer != "window" || !containsAll(w.Reason, scope, "1 calls per 1h0m0s") {
			t.Errorf("%s window record: %+v", call, w)
		}
		if a := find(t, recs, call, KindApproval); a.Decision != "allow" || a.By != "recorder" {
			t.Errorf("%s approval: %+v", call, a)
		}
		find(t, recs, call, KindExecution)
	}
}
