package client

import "fmt"

// String is the progress as one line: the jobs, and how many were
// started, found already started, are running, done and failed.
func (p BatchProgress) String() string {
	return fmt.Sprintf("%d jobs: %d started, %d existing, %d running, %d done, %d failed",
		p.Total, p.Started, p.Existing, p.Running, p.Done, p.Failed)
}

// FailedJobs counts the results of jobs that did not complete (failed or
// interrupted).
func FailedJobs(res []JobResult) int {
	n := 0
	for _, r := range res {
		if r.Status != JobCompleted {
			n++
		}
	}
	return n
}
