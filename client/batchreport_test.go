package client

import "testing"

func TestBatchReport(t *testing.T) {
	p := BatchProgress{Total: 6, Started: 4, Existing: 2, Running: 1, Done: 4, Failed: 1}
	if got, want := p.String(), "6 jobs: 4 started, 2 existing, 1 running, 4 done, 1 failed"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	res := []JobResult{{Status: JobCompleted}, {Status: JobFailed}, {Status: JobInterrupted}, {Status: JobCompleted}}
	if n := FailedJobs(res); n != 2 {
		t.Errorf("FailedJobs = %d, want 2", n)
	}
	if n := FailedJobs(nil); n != 0 {
		t.Errorf("FailedJobs(nil) = %d", n)
	}
}
