package cli

import (
	"testing"

	"github.com/wardenhq/warden/client"
)

func TestFailedJobs(t *testing.T) {
	res := []client.JobResult{{Status: client.JobCompleted}, {Status: client.JobFailed}, {Status: client.JobInterrupted}, {Status: client.JobCompleted}}
	if n := FailedJobs(res); n != 2 {
		t.Errorf("FailedJobs = %d, want 2", n)
	}
	if n := FailedJobs(nil); n != 0 {
		t.Errorf("FailedJobs(nil) = %d", n)
	}
}
