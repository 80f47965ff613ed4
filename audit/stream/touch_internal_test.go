package stream

import (
	"testing"
	"time"
)

// TestTouchKeepsTheInterval: a turn touched right after it was read is
// read again no sooner than Interval after that read; a turn touched
// long after is read Settle after the touch; a second touch never puts
// off a read already due.
func TestTouchKeepsTheInterval(t *testing.T) {
	now := time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC)
	s := &Streamer{Settle: 300 * time.Millisecond, Interval: time.Second, Now: func() time.Time { return now }}
	s.Touch("a")
	if got := s.hot["a"].at; !got.Equal(now.Add(300 * time.Millisecond)) {
		t.Fatalf("first touch due at %s, want settle after it", got.Sub(now))
	}
	// Read at now+300ms, as sendDue records it.
	read := now.Add(300 * time.Millisecond)
	s.hot["a"] = due{at: read.Add(2 * time.Second), again: 1, last: read}
	now = read.Add(100 * time.Millisecond)
	s.Touch("a")
	if got := s.hot["a"].at; !got.Equal(read.Add(time.Second)) {
		t.Errorf("a touch 100ms after a read is due %s after the read, want the interval (1s)", got.Sub(read))
	}
	now = read.Add(200 * time.Millisecond)
	s.Touch("a")
	if got := s.hot["a"].at; !got.Equal(read.Add(time.Second)) {
		t.Errorf("a second touch moved the read to %s after the last, want it kept at 1s", got.Sub(read))
	}
	now = read.Add(5 * time.Second)
	s.hot["a"] = due{at: now.Add(time.Hour), again: 0, last: read}
	s.Touch("a")
	if got := s.hot["a"].at; !got.Equal(now.Add(300 * time.Millisecond)) {
		t.Errorf("a touch long after the last read is due %s after it, want settle", got.Sub(now))
	}
}
