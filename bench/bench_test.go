package bench

import (
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/workflows"
)

func TestSummarize(t *testing.T) {
	msd := func(v ...int) []time.Duration {
		var out []time.Duration
		for _, x := range v {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return out
	}
	tests := []struct {
		name string
		in   []time.Duration
		want Stats
	}{
		{"empty", nil, Stats{}},
		{"one", msd(7), Stats{N: 1, MedianMS: 7, P95MS: 7, MeanMS: 7, MinMS: 7, MaxMS: 7}},
		{"even count averages the middle", msd(4, 1, 3, 2), Stats{N: 4, MedianMS: 2.5, P95MS: 4, MeanMS: 2.5, MinMS: 1, MaxMS: 4}},
		{"p95 is nearest rank", msd(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 100),
			Stats{N: 21, MedianMS: 11, P95MS: 20, MeanMS: 14.76, MinMS: 1, MaxMS: 100}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Summarize(tt.in)
			// Mean of 310/21 ms is 14.7619…; Summarize rounds to 0.01 ms.
			if got != tt.want {
				t.Errorf("Summarize = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestCallTimes(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	evs := []workflows.Event{
		{Type: workflows.EventToolCall, CallID: "c1", Time: at(0)},
		{Type: workflows.EventDecision, CallID: "c1", Time: at(0)},
		{Type: workflows.EventResult, CallID: "c1", Time: at(12)},
		{Type: workflows.EventToolCall, CallID: "c2", Time: at(30)},
		{Type: workflows.EventResult, CallID: "c2", Time: at(35), Error: true},
		{Type: workflows.EventResult, CallID: "orphan", Time: at(40)},
		{Type: workflows.EventFinal, Time: at(50)},
	}
	ds, errs := callTimes(evs)
	if len(ds) != 2 || ds[0] != 12*time.Millisecond || ds[1] != 5*time.Millisecond || errs != 1 {
		t.Errorf("callTimes = %v, %d errors", ds, errs)
	}
}

func TestListenerPIDAndRSS(t *testing.T) {
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skipf("no /proc (not Linux): %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	pid, err := ListenerPID(port)
	if err != nil || pid != os.Getpid() {
		t.Fatalf("ListenerPID(%d) = %d, %v; want %d", port, pid, err, os.Getpid())
	}
	if at := ListenerPIDAt(ln.Addr().String()); at != pid {
		t.Errorf("ListenerPIDAt(%s) = %d, want %d", ln.Addr(), at, pid)
	}
	for _, addr := range []string{"no-port", "localhost:http-alt"} {
		if at := ListenerPIDAt(addr); at != 0 {
			t.Errorf("ListenerPIDAt(%q) = %d, want 0", addr, at)
		}
	}
	rss, err := RSS(pid)
	if err != nil || rss < 1<<20 {
		t.Fatalf("RSS = %d, %v", rss, err)
	}
	anon, file, err := RSSParts(pid)
	// The parts are read a moment after the whole, so allow some drift.
	if err != nil || anon <= 0 || file <= 0 || anon+file > rss+(64<<20) || anon+file < rss-(64<<20) {
		t.Fatalf("RSSParts = %d + %d, %v; RSS %d", anon, file, err, rss)
	}
	ln.Close()
	if _, err := ListenerPID(port); err == nil {
		t.Errorf("ListenerPID found a listener on closed port %d", port)
	}
	if _, err := RSS(1 << 30); err == nil {
		t.Error("RSS of a missing process succeeded")
	}
}

func TestBashScript(t *testing.T) {
	s := bashScript("touch f", 3)
	if len(s.Steps) != 4 || s.Steps[3].Text != "done" || len(s.Steps[3].ToolCalls) != 0 {
		t.Fatalf("steps = %+v", s.Steps)
	}
	for i, st := range s.Steps[:3] {
		c := st.ToolCalls[0]
		if len(st.ToolCalls) != 1 || c.Name != "Bash" || c.ID != "c"+string(rune('1'+i)) ||
			c.Input.(map[string]any)["command"] != "touch f" {
			t.Errorf("step %d = %+v", i, st)
		}
	}
}

func TestWriteTable(t *testing.T) {
	rep := Report{
		Machine:    Machine{CPUs: 2, MemoryMB: 1024, GoVersion: "go1.26.8", OS: "linux/amd64"},
		Overhead:   &OverheadReport{Variants: []Variant{{Name: "noop", Command: "true", Calls: 3, Ratio: 4.5}}},
		Throughput: &ThroughputReport{Command: "true", Turns: 2, Worker: Memory{PID: 42, Before: 100, Peak: 120, After: 110}},
		Waiting:    &WaitingReport{Turns: 5, ListPendingEntries: 5},
		Docker:     &DockerReport{Unavailable: "no daemon"},
	}
	var b strings.Builder
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"noop", "4.5x", "100 / 120 / 110 (pid 42)", "turns parked", "docker backend unavailable: no daemon"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}
