// Reading turns past retention: the namespace's History Archival keeps
// a closed run's history after the server deleted it, and the frontend
// reads it back through GetWorkflowExecutionHistory when it is given the
// run's id, which ListArchivedWorkflowExecutions (Visibility Archival)
// supplies.

package audit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	tclient "go.temporal.io/sdk/client"

	"github.com/wardenhq/warden/workflows"
)

// Source says where a turn's history was read.
type Source string

const (
	// FromServer: every run was read from the server's database.
	FromServer Source = "server"
	// FromArchive: every run was read from the namespace's archive (the
	// turn is past the namespace's retention).
	FromArchive Source = "archive"
	// FromBoth: the older runs of a chain from the archive, the newer
	// ones from the server.
	FromBoth Source = "server and archive"
)

// ErrPastRetention is returned for a turn that neither the server nor
// the namespace's archive has: its history was deleted at the end of the
// namespace's retention and nothing archived it (or it never existed).
var ErrPastRetention = errors.New("not on the server and not in an archive: past the namespace's retention, or never run")

// SourceOf says where runs were read from ("" for no runs).
func SourceOf(runs []Run) Source {
	var server, archive bool
	for _, r := range runs {
		if r.Archived {
			archive = true
		} else {
			server = true
		}
	}
	switch {
	case server && archive:
		return FromBoth
	case archive:
		return FromArchive
	case server:
		return FromServer
	}
	return ""
}

// archivedLatestRun is the run id of the latest archived run of
// workflowID (the one that closed last), or an error wrapping
// ErrPastRetention when the archive has none or the namespace keeps no
// archive (the reason is in the message).
func archivedLatestRun(ctx context.Context, c tclient.Client, workflowID string) (string, error) {
	if strings.ContainsAny(workflowID, `'"\`) {
		return "", fmt.Errorf("turn %s: %w (a workflow id with quotes cannot be looked up in the archive)", workflowID, ErrPastRetention)
	}
	var latest string
	var closed time.Time
	err := listArchived(ctx, c, fmt.Sprintf("WorkflowId = '%s'", workflowID), func(id, run string, t time.Time) {
		if id == workflowID && (latest == "" || t.After(closed)) {
			latest, closed = run, t
		}
	})
	var off archiveOff
	if errors.As(err, &off) {
		return "", fmt.Errorf("turn %s: %w (the namespace keeps no archive: %s)", workflowID, ErrPastRetention, off.why)
	}
	if err != nil {
		return "", fmt.Errorf("turn %s: %w", workflowID, err)
	}
	if latest == "" {
		return "", fmt.Errorf("turn %s: %w", workflowID, ErrPastRetention)
	}
	return latest, nil
}

// archivedTurnIDs are the workflow ids of the archived turns closed at
// or after since (every archived turn for a zero since); none when the
// namespace keeps no archive.
func archivedTurnIDs(ctx context.Context, c tclient.Client, since time.Time) ([]string, error) {
	q := fmt.Sprintf("WorkflowType = '%s'", workflows.TurnWorkflow)
	if !since.IsZero() {
		q += fmt.Sprintf(" AND CloseTime >= '%s'", since.UTC().Format(time.RFC3339Nano))
	}
	var ids []string
	seen := map[string]bool{}
	err := listArchived(ctx, c, q, func(id, _ string, _ time.Time) {
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	})
	if errors.As(err, new(archiveOff)) || errors.As(err, new(*serviceerror.InvalidArgument)) {
		// No archive, or one that cannot be listed by close time (S3's
		// visibility archive needs a workflow id): the server's turns.
		return nil, nil
	}
	return ids, err
}

// archiveOff is the refusal of a server or namespace without (readable)
// visibility archival.
type archiveOff struct{ why string }

func (e archiveOff) Error() string { return "no archive: " + e.why }

// listArchived calls each for every archived run query selects.
func listArchived(ctx context.Context, c tclient.Client, query string, each func(workflowID, runID string, closed time.Time)) error {
	var token []byte
	for {
		resp, err := c.ListArchivedWorkflow(ctx, &workflowservice.ListArchivedWorkflowExecutionsRequest{Query: query, NextPageToken: token, PageSize: 1000})
		var bad *serviceerror.InvalidArgument
		var unimpl *serviceerror.Unimplemented
		switch {
		case errors.As(err, &bad) && strings.Contains(bad.Error(), "not configured"):
			return archiveOff{why: bad.Error()}
		case errors.As(err, &unimpl):
			return archiveOff{why: unimpl.Error()}
		case err != nil:
			return fmt.Errorf("list archived turns: %w", err)
		}
		for _, ex := range resp.GetExecutions() {
			each(ex.GetExecution().GetWorkflowId(), ex.GetExecution().GetRunId(), ex.GetCloseTime().AsTime())
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return nil
		}
	}
}
