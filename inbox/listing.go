// The listing: the page's filter (query), the pending entries it selects
// (completed from their turns when the index keeps only a preview), and
// the two places they are shown, the page (GET /) and GET /api/pending.

package inbox

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/workflows"
)

// query is the page's filter state, read from the URL.
type query struct {
	Order    string // "oldest" (default) or "newest"
	Tool     string
	Workflow string // workflow id prefix
	MinAge   string
	Risk     string // "bypass": bypass-immune asks only
	Kind     string
	// Snoozed shows the entries the user snoozed ("show") or only them
	// ("only"); by default they are hidden until their snooze ends.
	Snoozed string
	// Claimed keeps the entries claimed by the user ("me"), by others
	// ("others") or by nobody ("none").
	Claimed string
	// Limit bounds the entries shown (default defaultLimit). In newest
	// order the first visibility page is all that is read.
	Limit  int
	minAge time.Duration
}

// defaultLimit is how many entries the inbox shows unless the URL says.
const defaultLimit = 200

// resolveConcurrency bounds the queries that fetch the whole input of
// entries whose index keeps only a preview.
const resolveConcurrency = 16

func parseQuery(r *http.Request) (query, error) {
	v := r.URL.Query()
	q := query{Order: v.Get("order"), Tool: v.Get("tool"), Workflow: v.Get("workflow"),
		MinAge: v.Get("min_age"), Risk: v.Get("risk"), Kind: v.Get("kind"),
		Snoozed: v.Get("snoozed"), Claimed: v.Get("claimed")}
	switch q.Snoozed {
	case "", "show", "only":
	default:
		return q, fmt.Errorf("snoozed %q: want show or only", q.Snoozed)
	}
	switch q.Claimed {
	case "", "me", "others", "none":
	default:
		return q, fmt.Errorf("claimed %q: want me, others or none", q.Claimed)
	}
	if q.Order != "newest" {
		q.Order = "oldest"
	}
	q.Limit = defaultLimit
	if l := v.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n <= 0 {
			return q, fmt.Errorf("limit %q: want a positive number", l)
		}
		q.Limit = n
	}
	if q.MinAge != "" {
		d, err := time.ParseDuration(q.MinAge)
		if err != nil || d < 0 {
			return q, fmt.Errorf("min_age %q: want a duration like 30s or 5m", q.MinAge)
		}
		q.minAge = d
	}
	return q, nil
}

// list returns the pending entries the query selects, in its order, at
// most q.Limit of them. Entries come from the turns' pending index
// (visibility alone); in newest order only the first page of turns is
// read. Entries whose index keeps only an input preview are completed
// with a query to their turn, so the page shows (and checks roles
// against) the whole input.
func (s *Server) list(ctx context.Context, q query) ([]client.PendingEntry, error) {
	f := client.Filter{Tool: q.Tool, OlderThan: q.minAge, Kind: workflows.PendingKind(q.Kind), Workflow: q.Workflow}
	keep := func(e client.PendingEntry) bool { return q.Risk != "bypass" || e.BypassImmune }
	var es []client.PendingEntry
	if q.Order == "newest" {
		// Turns started last come first from visibility; read pages until
		// the limit is reached.
		var token []byte
		for len(es) < q.Limit {
			page, err := s.cfg.Client.ListPendingPage(ctx, f, q.Limit, token)
			if err != nil {
				return nil, err
			}
			slices.SortStableFunc(page.Entries, func(a, b client.PendingEntry) int { return b.RequestedAt.Compare(a.RequestedAt) })
			for _, e := range page.Entries {
				if keep(e) {
					es = append(es, e)
				}
			}
			if token = page.Next; len(token) == 0 {
				break
			}
		}
	} else {
		all, err := s.cfg.Client.ListPending(ctx, f)
		if err != nil {
			return nil, err
		}
		es = slices.DeleteFunc(all, func(e client.PendingEntry) bool { return !keep(e) })
	}
	if len(es) > q.Limit {
		es = es[:q.Limit]
	}
	es = s.resolve(ctx, es)
	s.withUsage(ctx, es)
	return es, nil
}

// resolve replaces entries listed with an input preview by the whole
// entry, asked from the turn; an entry answered meanwhile is kept as
// listed (answering it is refused by the turn).
func (s *Server) resolve(ctx context.Context, es []client.PendingEntry) []client.PendingEntry {
	var g errgroup.Group
	g.SetLimit(resolveConcurrency)
	for i := range es {
		if !es[i].Truncated {
			continue
		}
		g.Go(func() error {
			p, err := s.cfg.Client.PendingCall(ctx, es[i].WorkflowID, es[i].CallID)
			if err == nil {
				es[i].Pending, es[i].Truncated = p, false
			}
			return nil // an entry answered meanwhile stays as listed
		})
	}
	_ = g.Wait()
	return es
}

type pageData struct {
	Title   string
	User    string
	Query   query
	Items   []entryView
	Error   string
	Refresh int64 // milliseconds
	Now     time.Time
}

func (s *Server) handleIndex(w http.ResponseWriter, r *http.Request) {
	user := userFrom(r)
	d := pageData{Title: s.cfg.Title, User: user, Refresh: s.cfg.Refresh.Milliseconds(), Now: time.Now()}
	q, err := parseQuery(r)
	d.Query = q
	if err == nil {
		var es []client.PendingEntry
		es, err = s.list(r.Context(), q)
		for _, e := range es {
			if v, ok := s.viewFor(q, user, e, d.Now); ok {
				d.Items = append(d.Items, v)
			}
		}
	}
	if err != nil {
		d.Error = err.Error()
	}
	var b bytes.Buffer
	if err := s.page.ExecuteTemplate(&b, "index.html", d); err != nil {
		http.Error(w, "render: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b.Bytes())
}

// pendingItem is one entry of GET /api/pending: the entry and its
// server-rendered HTML.
type pendingItem struct {
	Key string `json:"key"`
	client.PendingEntry
	MarkState
	HTML string `json:"html"`
}

type pendingList struct {
	User  string        `json:"user"`
	Count int           `json:"count"`
	Items []pendingItem `json:"items"`
}

func (s *Server) handlePending(w http.ResponseWriter, r *http.Request) {
	q, err := parseQuery(r)
	if err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	out, err := s.pending(r.Context(), q, userFrom(r))
	writeResult(w, out, err)
}

// pending is the listing GET /api/pending answers and GET /api/stream
// pushes: the entries the query selects, each rendered for user.
func (s *Server) pending(ctx context.Context, q query, user string) (pendingList, error) {
	es, err := s.lister(ctx, q)
	if err != nil {
		return pendingList{}, err
	}
	return s.render(es, user, q)
}

// render is the listing of es for user, as q shows it to them (their
// snoozed entries and the claim filter).
func (s *Server) render(es []client.PendingEntry, user string, q query) (pendingList, error) {
	out := pendingList{User: user, Items: []pendingItem{}}
	now := time.Now()
	for _, e := range es {
		v, ok := s.viewFor(q, user, e, now)
		if !ok {
			continue
		}
		var b bytes.Buffer
		if err := s.page.ExecuteTemplate(&b, "entry", v); err != nil {
			return pendingList{}, &httpError{status: http.StatusInternalServerError, err: err}
		}
		out.Items = append(out.Items, pendingItem{Key: v.Key, PendingEntry: e, MarkState: v.Mark, HTML: b.String()})
	}
	out.Count = len(out.Items)
	return out, nil
}

// viewFor is the view of e for user, and whether q shows it to them.
func (s *Server) viewFor(q query, user string, e client.PendingEntry, now time.Time) (entryView, bool) {
	mk := s.marks.get(entryKey(e.WorkflowID, e.CallID))
	if !shown(q, mk, user, now) {
		return entryView{}, false
	}
	v := s.view(user, e)
	v.Mark = markView(mk, user)
	if !v.Mark.SnoozedUntil.After(now) {
		v.Mark.SnoozedUntil = time.Time{}
	}
	return v, true
}
