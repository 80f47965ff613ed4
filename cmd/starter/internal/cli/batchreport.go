package cli

import "github.com/wardenhq/warden/client"

// FailedJobs counts the results of jobs that did not complete (failed or
// interrupted).
func FailedJobs(res []client.JobResult) int {
	n := 0
	for _, r := range res {
		if r.Status != client.JobCompleted {
			n++
		}
	}
	return n
}
