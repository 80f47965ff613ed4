package client

import "testing"

func TestBatchProgressString(t *testing.T) {
	p := BatchProgress{Total: 6, Started: 4, Existing: 2, Running: 1, Done: 4, Failed: 1}
	if got, want := p.String(), "6 jobs: 4 started, 2 existing, 1 running, 4 done, 1 failed"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
}
