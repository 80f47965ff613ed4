// The queue's history: the answered entries (who answered, by which
// channel, when and why), read through Config.History from the turns'
// histories, with a filter; the page (GET /history) and GET
// /api/history.

package inbox

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Answer is one answered entry of the queue's history.
type Answer struct {
	Time       time.Time `json:"time"`
	WorkflowID string    `json:"workflow_id"`
	CallID     string    `json:"call_id"`
	Tool       string    `json:"tool"`
	// Kind is what was answered: approval, budget, external,
	// escalation (the deadline answered) or live_policy (a policy
	// change decided the call).
	Kind string `json:"kind"`
	// Decision is the answer (allow, always_allow, deny, raise,
	// completed, error).
	Decision string `json:"decision"`
	// By is who answered; Via the channel (inbox, slack, key,
	// deadline, policy, unsigned), Identity the key it was sent with.
	By       string `json:"by"`
	Via      string `json:"via"`
	Identity string `json:"identity,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// HistoryReader reads the answers to waiting entries of the turns that
// ran since a time (and whose workflow id starts with prefix), newest
// first. The worker's reads the turns' histories (audit.Answers).
type HistoryReader interface {
	Answered(ctx context.Context, since time.Time, prefix string) ([]Answer, error)
}

// defaultHistorySince is how far back the history reads unless the URL
// says.
const defaultHistorySince = 24 * time.Hour

// historyQuery is the history's filter, read from the URL.
type historyQuery struct {
	Since    string // a duration back from now (default 24h)
	Workflow string // workflow id prefix
	Tool     string
	By       string
	Via      string
	Decision string
	Kind     string
	Limit    int
	since    time.Duration
}

func parseHistoryQuery(r *http.Request) (historyQuery, error) {
	v := r.URL.Query()
	q := historyQuery{Since: v.Get("since"), Workflow: v.Get("workflow"), Tool: v.Get("tool"), By: v.Get("by"),
		Via: v.Get("via"), Decision: v.Get("decision"), Kind: v.Get("kind"), Limit: defaultLimit, since: defaultHistorySince}
	if q.Since != "" {
		d, err := time.ParseDuration(q.Since)
		if err != nil || d <= 0 {
			return q, fmt.Errorf("since %q: want a duration like 2h or 168h", q.Since)
		}
		q.since = d
	}
	if l := v.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n <= 0 {
			return q, fmt.Errorf("limit %q: want a positive number", l)
		}
		q.Limit = n
	}
	return q, nil
}

// keeps reports whether a matches the filter (each set field exactly,
// case aside; the workflow as a prefix).
func (q historyQuery) keeps(a Answer) bool {
	eq := func(want, got string) bool { return want == "" || strings.EqualFold(want, got) }
	return eq(q.Tool, a.Tool) && eq(q.By, a.By) && eq(q.Via, a.Via) && eq(q.Decision, a.Decision) &&
		eq(q.Kind, a.Kind) && strings.HasPrefix(a.WorkflowID, q.Workflow)
}

// historyList is the answer to GET /api/history.
type historyList struct {
	Since time.Time `json:"since"`
	Count int       `json:"count"`
	Items []Answer  `json:"items"`
}

// history reads the answers q selects, newest first, at most q.Limit.
func (s *Server) history(ctx context.Context, q historyQuery, now time.Time) (historyList, error) {
	out := historyList{Since: now.Add(-q.since), Items: []Answer{}}
	if s.cfg.History == nil {
		return out, statusErr(http.StatusNotImplemented, "this inbox has no history reader")
	}
	all, err := s.cfg.History.Answered(ctx, out.Since, q.Workflow)
	if err != nil {
		return out, fmt.Errorf("history: %w", err)
	}
	for _, a := range all {
		if len(out.Items) == q.Limit {
			break
		}
		if q.keeps(a) {
			out.Items = append(out.Items, a)
		}
	}
	out.Count = len(out.Items)
	return out, nil
}

func (s *Server) handleHistory(w http.ResponseWriter, r *http.Request) {
	q, err := parseHistoryQuery(r)
	if err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	out, err := s.history(r.Context(), q, time.Now())
	writeResult(w, out, err)
}

type historyPage struct {
	Title string
	User  string
	Query historyQuery
	historyList
	Error string
}

func (s *Server) handleHistoryPage(w http.ResponseWriter, r *http.Request) {
	d := historyPage{Title: s.cfg.Title, User: userFrom(r)}
	q, err := parseHistoryQuery(r)
	d.Query = q
	if err == nil {
		d.historyList, err = s.history(r.Context(), q, time.Now())
	}
	if err != nil {
		d.Error = err.Error()
	}
	var b bytes.Buffer
	if err := s.page.ExecuteTemplate(&b, "history.html", d); err != nil {
		http.Error(w, "render: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b.Bytes())
}
