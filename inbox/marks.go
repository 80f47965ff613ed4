// Claims and snoozes: the inbox's own state about waiting entries,
// which answers nothing. A claim says who took an entry ("assigned to
// me", shown to every user); a snooze hides an entry from one user's
// list until a time. They live in the inbox process and, with
// Config.MarksFile, in a JSON file that survives a restart.

package inbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wardenhq/warden/workflows"
)

// markKeep is how long a claim is kept: an entry waits at most its
// approval timeout, so a claim this old is of an entry long answered.
const markKeep = 30 * 24 * time.Hour

// Mark is what the inbox keeps about one waiting entry.
type Mark struct {
	// ClaimedBy is the user who claimed the entry, at ClaimedAt.
	ClaimedBy string    `json:"claimed_by,omitempty"`
	ClaimedAt time.Time `json:"claimed_at,omitzero"`
	// Snoozed maps a user to when the entry returns to their list.
	Snoozed map[string]time.Time `json:"snoozed,omitempty"`
}

// marks holds the marks by entry key (workflow id, \x1f, call id),
// saved to path after each change when path is set.
type marks struct {
	mu   sync.Mutex
	path string
	m    map[string]Mark
}

// marksFile is the file's form.
type marksFile struct {
	Marks map[string]Mark `json:"marks"`
}

// loadMarks reads path's marks (none when path is empty or the file
// does not exist yet).
func loadMarks(path string) (*marks, error) {
	ms := &marks{path: path, m: map[string]Mark{}}
	if path == "" {
		return ms, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return ms, nil
	}
	if err != nil {
		return nil, fmt.Errorf("inbox: read marks: %w", err)
	}
	var f marksFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("inbox: read marks %s: %w", path, err)
	}
	if f.Marks != nil {
		ms.m = f.Marks
	}
	return ms, nil
}

// get returns key's mark.
func (ms *marks) get(key string) Mark {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return ms.m[key]
}

// change applies fn to key's mark, drops what has expired by now and
// saves. An error from fn changes nothing.
func (ms *marks) change(key string, now time.Time, fn func(*Mark) error) (Mark, error) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	old := ms.m[key]
	mk := old
	mk.Snoozed = maps.Clone(old.Snoozed)
	if err := fn(&mk); err != nil {
		return old, err
	}
	ms.m[key] = mk
	ms.prune(now)
	if err := ms.save(); err != nil {
		ms.m[key] = old
		return old, err
	}
	return mk, nil
}

// prune drops snoozes that have ended and claims older than markKeep,
// and marks left empty.
func (ms *marks) prune(now time.Time) {
	for k, mk := range ms.m {
		for u, until := range mk.Snoozed {
			if !until.After(now) {
				delete(mk.Snoozed, u)
			}
		}
		if mk.ClaimedBy != "" && now.Sub(mk.ClaimedAt) > markKeep {
			mk.ClaimedBy, mk.ClaimedAt = "", time.Time{}
		}
		if mk.ClaimedBy == "" && len(mk.Snoozed) == 0 {
			delete(ms.m, k)
			continue
		}
		ms.m[k] = mk
	}
}

// save writes the marks to a temporary file and renames it over path.
func (ms *marks) save() error {
	if ms.path == "" {
		return nil
	}
	b, err := json.Marshal(marksFile{Marks: ms.m})
	if err != nil {
		return fmt.Errorf("inbox: save marks: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(ms.path), 0o700); err != nil {
		return fmt.Errorf("inbox: save marks: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(ms.path), ".inbox-marks-*")
	if err != nil {
		return fmt.Errorf("inbox: save marks: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("inbox: save marks: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("inbox: save marks: %w", err)
	}
	if err := os.Rename(tmp.Name(), ms.path); err != nil {
		return fmt.Errorf("inbox: save marks: %w", err)
	}
	return nil
}

// ClaimRequest is the body of POST /api/claim.
type ClaimRequest struct {
	WorkflowID string `json:"workflow_id"`
	CallID     string `json:"call_id"`
	// Action is claim (the entry is not claimed, or is the user's),
	// take (claim an entry another user claimed) or release (the
	// user's claim, or with take's rights anyone's: release drops
	// only the user's own).
	Action string `json:"action"`
}

// SnoozeRequest is the body of POST /api/snooze: For (a duration such
// as "2h") or Until (RFC 3339) hides the entry from the user's list
// until then; neither brings it back now.
type SnoozeRequest struct {
	WorkflowID string `json:"workflow_id"`
	CallID     string `json:"call_id"`
	For        string `json:"for,omitempty"`
	Until      string `json:"until,omitempty"`
}

// maxSnooze bounds a snooze (an entry's deadline comes sooner).
const maxSnooze = 30 * 24 * time.Hour

// handleClaim claims, takes or releases a waiting entry for the user,
// whose roles must cover it.
func (s *Server) handleClaim(r *http.Request) (any, error) {
	var req ClaimRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if req.Action != "claim" && req.Action != "take" && req.Action != "release" {
		return nil, statusErr(http.StatusBadRequest, "action %q: want claim, take or release", req.Action)
	}
	if _, err := s.authorize(r.Context(), userFrom(r), req.WorkflowID, req.CallID, nil, allKinds()...); err != nil {
		return nil, err
	}
	user, now := userFrom(r), time.Now()
	mk, err := s.marks.change(entryKey(req.WorkflowID, req.CallID), now, func(mk *Mark) error {
		switch {
		case req.Action == "release":
			if mk.ClaimedBy != user {
				return statusErr(http.StatusConflict, "%s is not claimed by %s", req.CallID, user)
			}
			mk.ClaimedBy, mk.ClaimedAt = "", time.Time{}
		case mk.ClaimedBy != "" && mk.ClaimedBy != user && req.Action != "take":
			return statusErr(http.StatusConflict, "%s is claimed by %s (since %s): take it to claim it yourself",
				req.CallID, mk.ClaimedBy, mk.ClaimedAt.UTC().Format(time.RFC3339))
		default:
			mk.ClaimedBy, mk.ClaimedAt = user, now
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.hub.poke()
	return markView(mk, user), nil
}

// handleSnooze snoozes a waiting entry for the user (or wakes it).
func (s *Server) handleSnooze(r *http.Request) (any, error) {
	var req SnoozeRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	now := time.Now()
	var until time.Time
	switch {
	case req.For != "" && req.Until != "":
		return nil, statusErr(http.StatusBadRequest, "snooze for a duration or until a time, not both")
	case req.For != "":
		d, err := time.ParseDuration(req.For)
		if err != nil || d <= 0 {
			return nil, statusErr(http.StatusBadRequest, "for %q: want a positive duration such as 2h", req.For)
		}
		until = now.Add(d)
	case req.Until != "":
		t, err := time.Parse(time.RFC3339, req.Until)
		if err != nil || !t.After(now) {
			return nil, statusErr(http.StatusBadRequest, "until %q: want a time to come, in RFC 3339 (2026-01-02T15:04:05Z)", req.Until)
		}
		until = t
	}
	if until.Sub(now) > maxSnooze {
		return nil, statusErr(http.StatusBadRequest, "a snooze lasts at most %s", maxSnooze)
	}
	if req.WorkflowID == "" || req.CallID == "" {
		return nil, statusErr(http.StatusBadRequest, "workflow_id and call_id are required")
	}
	ps, err := s.waiting(r.Context(), req.WorkflowID)
	if err != nil {
		return nil, statusErr(http.StatusNotFound, "turn %s: %w", req.WorkflowID, err)
	}
	if !slices.ContainsFunc(ps, func(p workflows.Pending) bool { return p.CallID == req.CallID }) {
		return nil, statusErr(http.StatusNotFound, "turn %s has no open call %s", req.WorkflowID, req.CallID)
	}
	user := userFrom(r)
	mk, err := s.marks.change(entryKey(req.WorkflowID, req.CallID), now, func(mk *Mark) error {
		if until.IsZero() {
			delete(mk.Snoozed, user)
			return nil
		}
		if mk.Snoozed == nil {
			mk.Snoozed = map[string]time.Time{}
		}
		mk.Snoozed[user] = until
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.hub.poke()
	return markView(mk, user), nil
}

// MarkState is a mark as one user sees it (the answer to POST
// /api/claim and /api/snooze, and part of each listed entry).
type MarkState struct {
	ClaimedBy string    `json:"claimed_by,omitempty"`
	ClaimedAt time.Time `json:"claimed_at,omitzero"`
	// SnoozedUntil is when the entry returns to this user's list.
	SnoozedUntil time.Time `json:"snoozed_until,omitzero"`
}

func markView(mk Mark, user string) MarkState {
	return MarkState{ClaimedBy: mk.ClaimedBy, ClaimedAt: mk.ClaimedAt, SnoozedUntil: mk.Snoozed[user]}
}

// allKinds are the kinds of waiting entries.
func allKinds() []workflows.PendingKind {
	return []workflows.PendingKind{workflows.PendingApproval, workflows.PendingExternal, workflows.PendingBudget}
}

// entryKey is an entry's key (entryView.Key).
func entryKey(wf, callID string) string { return wf + "\x1f" + callID }

// shown reports whether the query shows an entry with mark mk to user at
// now: a snoozed entry only with snoozed=show (or only), a claim filter
// (claimed=me, others or none) keeps the entries it names.
func shown(q query, mk Mark, user string, now time.Time) bool {
	snoozed := mk.Snoozed[user].After(now)
	switch q.Snoozed {
	case "show":
	case "only":
		if !snoozed {
			return false
		}
	default:
		if snoozed {
			return false
		}
	}
	switch strings.ToLower(q.Claimed) {
	case "me":
		return mk.ClaimedBy == user
	case "others":
		return mk.ClaimedBy != "" && mk.ClaimedBy != user
	case "none":
		return mk.ClaimedBy == ""
	}
	return true
}
