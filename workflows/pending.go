package workflows

import (
	"encoding/json"
	"slices"
	"unicode/utf8"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// MemoPending is the memo key under which a waiting turn keeps its
// PendingIndex. Visibility listings return it with each execution, so a
// listing of waiting turns needs no query to any of them.
const MemoPending = "warden_pending"

// Search attribute keys, typed.
var (
	saPendingCalls = temporal.NewSearchAttributeKeyKeywordList(SAPendingCalls)
	saPendingTools = temporal.NewSearchAttributeKeyKeywordList(SAPendingTools)
	saWaitingSince = temporal.NewSearchAttributeKeyTime(SAWaitingSince)
)

// PendingIndex is a turn's open entries as its memo keeps them: what a
// listing shows and the hash an answer must carry. It is upserted in the
// workflow task that changes the pending set (a call parks, an answer or
// a policy change is recorded), so visibility follows the turn's own
// history.
type PendingIndex struct {
	Entries []IndexEntry `json:"entries"`
	// More is set when the turn has more open entries than Entries holds.
	More bool `json:"more,omitempty"`
}

// IndexEntry is a pending entry in a turn's index. Input is kept only
// when it is at most PreviewBytes long; otherwise Preview holds its start
// and Input is null (Pending returns the whole entry).
type IndexEntry struct {
	Pending
	Preview string `json:"preview,omitempty"`
}

// Truncated reports whether the entry's input was cut to its preview.
func (e IndexEntry) Truncated() bool { return e.Preview != "" }

// NewPendingIndex builds the index of the open entries ps.
func NewPendingIndex(ps []Pending) PendingIndex {
	idx := PendingIndex{Entries: []IndexEntry{}}
	for i, p := range ps {
		if i == maxIndexEntries {
			idx.More = true
			break
		}
		e := IndexEntry{Pending: p}
		e.Message, e.Reason = clipTo(p.Message, PreviewBytes), clipTo(p.Reason, PreviewBytes)
		e.Context, e.Prompt = clipTo(p.Context, PreviewBytes), clipTo(p.Prompt, PreviewBytes)
		// A diff is not indexed: an entry with one counts as cut, and a
		// listing that shows it asks the turn for the whole entry.
		if len(p.Input) > PreviewBytes || p.Diff != "" {
			e.Input, e.Diff, e.Preview = nil, "", clipTo(string(p.Input), PreviewBytes)
		}
		idx.Entries = append(idx.Entries, e)
	}
	return idx
}

// clipTo cuts s to at most n bytes on a rune boundary.
func clipTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// upsertPending publishes the open entries as search attributes so ops
// can filter waiting turns with a visibility query, and (since
// versionPendingIndex) as the memo's pending index.
func (t *turn) upsertPending(ctx workflow.Context) {
	t.indexDirty = false
	open := t.open()
	defer t.upsertIndex(ctx, open)
	defer t.upsertSession(ctx)
	if len(open) == 0 {
		_ = workflow.UpsertTypedSearchAttributes(ctx, saPendingCalls.ValueUnset(), saPendingTools.ValueUnset(), saWaitingSince.ValueUnset())
		return
	}
	var ids, names []string
	since := open[0].RequestedAt
	for _, p := range open {
		ids = append(ids, p.CallID)
		if !slices.Contains(names, p.Tool) {
			names = append(names, p.Tool)
		}
		if p.RequestedAt.Before(since) {
			since = p.RequestedAt
		}
	}
	_ = workflow.UpsertTypedSearchAttributes(ctx, saPendingCalls.ValueSet(ids), saPendingTools.ValueSet(names), saWaitingSince.ValueSet(since))
}

// upsertIndex writes the memo's pending index when it differs from the
// one last written by this run. Runs recorded before versionPendingIndex
// keep no index.
func (t *turn) upsertIndex(ctx workflow.Context, open []Pending) {
	if workflow.GetVersion(ctx, versionPendingIndex, workflow.DefaultVersion, 1) < 1 {
		return
	}
	idx := NewPendingIndex(open)
	b, err := json.Marshal(idx)
	if err != nil || indexUnchanged(b, t.index) {
		return
	}
	t.index = string(b)
	_ = workflow.UpsertMemo(ctx, map[string]any{MemoPending: idx})
}
