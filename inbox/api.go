package inbox

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/tools"
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
		MinAge: v.Get("min_age"), Risk: v.Get("risk"), Kind: v.Get("kind")}
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
			d.Items = append(d.Items, s.view(user, e))
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
	if err != nil {
		var he *httpError
		if errors.As(err, &he) {
			writeErr(w, he.status, he.err)
			return
		}
		writeErr(w, http.StatusBadGateway, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// pending is the listing GET /api/pending answers and GET /api/stream
// pushes: the entries the query selects, each rendered for user.
func (s *Server) pending(ctx context.Context, q query, user string) (pendingList, error) {
	es, err := s.lister(ctx, q)
	if err != nil {
		return pendingList{}, err
	}
	return s.render(es, user)
}

// render is the listing of es for user.
func (s *Server) render(es []client.PendingEntry, user string) (pendingList, error) {
	out := pendingList{User: user, Count: len(es), Items: []pendingItem{}}
	for _, e := range es {
		v := s.view(user, e)
		var b bytes.Buffer
		if err := s.page.ExecuteTemplate(&b, "entry", v); err != nil {
			return pendingList{}, &httpError{status: http.StatusInternalServerError, err: err}
		}
		out.Items = append(out.Items, pendingItem{Key: v.Key, PendingEntry: e, HTML: b.String()})
	}
	return out, nil
}

// Server push of GET /api/stream: the listing is read every
// streamEvery (once for all the streams of one query) and sent when an
// entry came or went (or its hash changed), and at least every
// streamRefresh so the waiting times stay current.
const (
	streamEvery   = time.Second
	streamRefresh = 10 * time.Second
)

// handleStream pushes the listing as server-sent events ("data: JSON",
// the shape of GET /api/pending; "event: failure" when a read fails)
// until the client goes away.
func (s *Server) handleStream(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		writeErr(w, http.StatusInternalServerError, errors.New("this connection cannot stream"))
		return
	}
	q, err := parseQuery(r)
	if err != nil {
		writeErr(w, http.StatusBadRequest, err)
		return
	}
	user := userFrom(r)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	last, sent := "", time.Time{}
	sub := s.hub.subscribe(q)
	defer s.hub.unsubscribe(sub)
	for {
		select {
		case <-r.Context().Done():
			return
		case <-sub.ch:
		}
		l := sub.latest()
		out, err := l.es, l.err
		var list pendingList
		if err == nil {
			list, err = s.render(out, user)
		}
		switch {
		case err != nil && r.Context().Err() == nil:
			b, _ := json.Marshal(map[string]string{"error": err.Error()})
			fmt.Fprintf(w, "event: failure\ndata: %s\n\n", b)
		case err == nil:
			sig := signature(list)
			if sig != last || time.Since(sent) >= streamRefresh {
				b, err := json.Marshal(list)
				if err != nil {
					return
				}
				fmt.Fprintf(w, "data: %s\n\n", b)
				last, sent = sig, time.Now()
			}
		}
		fl.Flush()
	}
}

// signature identifies a listing by its entries and their hashes.
func signature(l pendingList) string {
	var b strings.Builder
	for _, it := range l.Items {
		b.WriteString(it.Key)
		b.WriteByte(' ')
		b.WriteString(it.Hash)
		b.WriteByte('\n')
	}
	return b.String()
}

// api wraps a POST handler: CSRF header, JSON body, JSON answer.
func (s *Server) api(h func(r *http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(csrfHeader) != "1" || !sameOrigin(r) {
			writeErr(w, http.StatusForbidden, errors.New("missing CSRF header or cross-origin request"))
			return
		}
		if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
			writeErr(w, http.StatusUnsupportedMediaType, errors.New("want application/json"))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 4<<20)
		out, err := h(r)
		if err != nil {
			var he *httpError
			if errors.As(err, &he) {
				writeErr(w, he.status, he.err)
				return
			}
			writeErr(w, http.StatusBadGateway, err)
			return
		}
		writeJSON(w, http.StatusOK, out)
	}
}

// sameOrigin rejects requests whose Origin header names another host.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	_, host, ok := strings.Cut(o, "://")
	return ok && host == r.Host
}

type httpError struct {
	status int
	err    error
}

func (e *httpError) Error() string { return e.err.Error() }
func (e *httpError) Unwrap() error { return e.err }

func statusErr(status int, format string, args ...any) error {
	return &httpError{status: status, err: fmt.Errorf(format, args...)}
}

func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return statusErr(http.StatusBadRequest, "bad request body: %w", err)
	}
	return nil
}

// ApproveRequest is the body of POST /api/approve.
type ApproveRequest struct {
	WorkflowID string             `json:"workflow_id"`
	CallID     string             `json:"call_id"`
	Hash       string             `json:"hash"`
	Decision   workflows.Decision `json:"decision"`
	Rules      []string           `json:"rules,omitempty"`
	Input      json.RawMessage    `json:"input,omitempty"`
	// Reason says why it is allowed (a ticket); the turn's policy may
	// require one (workflows.Pending.ReasonRequired).
	Reason string `json:"reason,omitempty"`
	// Scope, TTL (a duration such as "24h") and SingleUse remember an
	// always_allow in the turn's policy store (workflows.Approval.Scope):
	// input, turn, agent or namespace. Empty: the turn only.
	Scope     workflows.RememberScope `json:"scope,omitempty"`
	TTL       string                  `json:"ttl,omitempty"`
	SingleUse bool                    `json:"single_use,omitempty"`
}

// DenyRequest is the body of POST /api/deny.
type DenyRequest struct {
	WorkflowID string `json:"workflow_id"`
	CallID     string `json:"call_id"`
	Hash       string `json:"hash"`
	Reason     string `json:"reason"`
}

// AnswerRequest is the body of POST /api/answer: AskUser answers, or a
// plain content for other external calls.
type AnswerRequest struct {
	WorkflowID string                        `json:"workflow_id"`
	CallID     string                        `json:"call_id"`
	Answers    []tools.AskUserQuestionAnswer `json:"answers,omitempty"`
	Content    string                        `json:"content,omitempty"`
	IsError    bool                          `json:"is_error,omitempty"`
	// Hash is the call's hash as the page showed it (default: as read
	// when the answer is sent).
	Hash string `json:"hash,omitempty"`
}

// BulkRequest is the body of POST /api/bulk.
type BulkRequest struct {
	Action string        `json:"action"` // allow or deny
	Reason string        `json:"reason,omitempty"`
	Items  []DenyRequest `json:"items"`
}

// BulkResult is one item's outcome in the answer to POST /api/bulk.
type BulkResult struct {
	WorkflowID string `json:"workflow_id"`
	CallID     string `json:"call_id"`
	OK         bool   `json:"ok"`
	Error      string `json:"error,omitempty"`
}

// authorize finds the open entry and checks the user's roles against it
// (and against an edited input).
func (s *Server) authorize(r *http.Request, wf, callID string, kind workflows.PendingKind, edited json.RawMessage) (workflows.Pending, error) {
	if wf == "" || callID == "" {
		return workflows.Pending{}, statusErr(http.StatusBadRequest, "workflow_id and call_id are required")
	}
	ps, err := s.cfg.Client.Pending(r.Context(), wf)
	if err != nil {
		return workflows.Pending{}, statusErr(http.StatusNotFound, "turn %s: %w", wf, err)
	}
	i := slices.IndexFunc(ps, func(p workflows.Pending) bool { return p.CallID == callID })
	if i < 0 {
		return workflows.Pending{}, statusErr(http.StatusNotFound, "turn %s has no open call %s", wf, callID)
	}
	p := ps[i]
	if p.Kind != kind {
		return p, statusErr(http.StatusBadRequest, "call %s waits for %s, not %s", callID, p.Kind, kind)
	}
	user := userFrom(r)
	if !s.may(user, p.Tool, p.Input) || len(edited) > 0 && !s.may(user, p.Tool, edited) {
		s.unauthorized.Inc()
		return p, statusErr(http.StatusForbidden, "user %s may not answer this %s call", user, p.Tool)
	}
	return p, nil
}

func rejected(err error) error {
	if errors.Is(err, client.ErrRejected) || errors.Is(err, client.ErrNotRemembered) {
		return statusErr(http.StatusConflict, "%w", err)
	}
	return err
}

func (s *Server) handleApprove(r *http.Request) (any, error) {
	var req ApproveRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if req.Decision == "" {
		req.Decision = workflows.DecisionAllow
	}
	if req.Decision != workflows.DecisionAllow && req.Decision != workflows.DecisionAlwaysAllow {
		return nil, statusErr(http.StatusBadRequest, "decision %q: want allow or always_allow", req.Decision)
	}
	if len(req.Input) > 0 && !json.Valid(req.Input) {
		return nil, statusErr(http.StatusBadRequest, "edited input is not valid JSON")
	}
	ttl, err := rememberOptions(req)
	if err != nil {
		return nil, err
	}
	p, err := s.authorize(r, req.WorkflowID, req.CallID, workflows.PendingApproval, req.Input)
	if err != nil {
		return nil, err
	}
	rules := trimRules(req.Rules)
	// The input scope adds no rule: it remembers the exact call, which
	// authorize found the user may answer.
	if req.Decision == workflows.DecisionAlwaysAllow && req.Scope != workflows.ScopeInput {
		if err := s.mayAlwaysAllow(r, rules, p); err != nil {
			return nil, err
		}
	}
	var input json.RawMessage
	if len(req.Input) > 0 {
		var b bytes.Buffer
		if err := json.Compact(&b, req.Input); err != nil {
			return nil, statusErr(http.StatusBadRequest, "edited input: %w", err)
		}
		input = b.Bytes()
	}
	a := workflows.Approval{
		CallID: req.CallID, Decision: req.Decision, Hash: req.Hash, Rules: rules, Input: input, By: userFrom(r),
		Reason: strings.TrimSpace(req.Reason), Scope: req.Scope, TTL: ttl, SingleUse: req.SingleUse}
	if err := workflows.CheckAnswerable(p, a); err != nil {
		return nil, statusErr(http.StatusBadRequest, "%w", err)
	}
	ack, err := s.cfg.Client.Approve(r.Context(), req.WorkflowID, a)
	if err != nil {
		return nil, rejected(err)
	}
	return ack, nil
}

// trimRules returns the rules an approver typed, trimmed, without the
// empty ones.
func trimRules(in []string) []string {
	var rules []string
	for _, rl := range in {
		if rl = strings.TrimSpace(rl); rl != "" {
			rules = append(rules, rl)
		}
	}
	return rules
}

// mayAlwaysAllow checks an always-allow of p: it needs a rule (the typed
// rules, else p's suggestions), and no rule may be wider than the
// approver's roles.
func (s *Server) mayAlwaysAllow(r *http.Request, rules []string, p workflows.Pending) error {
	if len(rules) == 0 && len(p.Suggestions) == 0 {
		return statusErr(http.StatusBadRequest, "always allow needs a rule")
	}
	added := rules
	if len(added) == 0 {
		added = p.Suggestions
	}
	u, _ := s.user(userFrom(r))
	for _, rl := range added {
		if err := mayAddRule(u, rl); err != nil {
			s.unauthorized.Inc()
			return statusErr(http.StatusForbidden, "user %s may not add this rule: %w", userFrom(r), err)
		}
	}
	return nil
}

// rememberOptions checks the remembered-approval fields of req and
// returns its TTL.
func rememberOptions(req ApproveRequest) (time.Duration, error) {
	if req.Scope != "" && !req.Scope.Valid() {
		return 0, statusErr(http.StatusBadRequest, "scope %q: want input, turn, agent or namespace", req.Scope)
	}
	if req.Scope != "" && req.Decision != workflows.DecisionAlwaysAllow {
		return 0, statusErr(http.StatusBadRequest, "a scope remembers an always_allow")
	}
	if req.Scope == workflows.ScopeInput && len(trimRules(req.Rules)) > 0 {
		return 0, statusErr(http.StatusBadRequest, "the input scope remembers the exact input and takes no rules")
	}
	if req.Scope == "" && (req.TTL != "" || req.SingleUse) {
		return 0, statusErr(http.StatusBadRequest, "ttl and single_use need a scope")
	}
	if req.TTL == "" {
		return 0, nil
	}
	ttl, err := time.ParseDuration(req.TTL)
	if err != nil || ttl <= 0 {
		return 0, statusErr(http.StatusBadRequest, "ttl %q: want a positive duration such as 24h", req.TTL)
	}
	return ttl, nil
}

func (s *Server) handleDeny(r *http.Request) (any, error) {
	var req DenyRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	return s.deny(r, req)
}

func (s *Server) deny(r *http.Request, req DenyRequest) (workflows.Ack, error) {
	p, err := s.authorize(r, req.WorkflowID, req.CallID, workflows.PendingApproval, nil)
	if err != nil {
		return workflows.Ack{}, err
	}
	a := workflows.Approval{
		CallID: req.CallID, Decision: workflows.DecisionDeny, Hash: req.Hash, Reason: strings.TrimSpace(req.Reason), By: userFrom(r)}
	if err := workflows.CheckAnswerable(p, a); err != nil {
		return workflows.Ack{}, statusErr(http.StatusBadRequest, "%w", err)
	}
	ack, err := s.cfg.Client.Approve(r.Context(), req.WorkflowID, a)
	return ack, rejected(err)
}

func (s *Server) handleAnswer(r *http.Request) (any, error) {
	var req AnswerRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	p, err := s.authorize(r, req.WorkflowID, req.CallID, workflows.PendingExternal, nil)
	if err != nil {
		return nil, err
	}
	res := workflows.ExternalResult{CallID: req.CallID, Content: req.Content, IsError: req.IsError, By: userFrom(r)}
	if p.Tool == "AskUser" {
		ans := tools.AskUserAnswer{Answers: req.Answers}
		if err := tools.ValidateAskUserAnswer(p.Input, ans); err != nil {
			return nil, statusErr(http.StatusBadRequest, "%w", err)
		}
		var err error
		if res, err = client.AskUserResult(req.CallID, ans, userFrom(r)); err != nil {
			return nil, err
		}
	}
	res.Hash = cmp.Or(req.Hash, p.Hash)
	ack, err := s.cfg.Client.CompleteExternal(r.Context(), req.WorkflowID, res)
	if err != nil {
		return nil, rejected(err)
	}
	return ack, nil
}

func (s *Server) handleBulk(r *http.Request) (any, error) {
	var req BulkRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if req.Action != "allow" && req.Action != "deny" {
		return nil, statusErr(http.StatusBadRequest, "action %q: want allow or deny", req.Action)
	}
	out := make([]BulkResult, 0, len(req.Items))
	for _, it := range req.Items {
		var err error
		if req.Action == "deny" {
			it.Reason = req.Reason
			_, err = s.deny(r, it)
		} else {
			var p workflows.Pending
			if p, err = s.authorize(r, it.WorkflowID, it.CallID, workflows.PendingApproval, nil); err == nil {
				a := workflows.Approval{CallID: it.CallID, Decision: workflows.DecisionAllow, Hash: it.Hash, By: userFrom(r),
					Reason: strings.TrimSpace(req.Reason)}
				if err = workflows.CheckAnswerable(p, a); err == nil {
					_, err = s.cfg.Client.Approve(r.Context(), it.WorkflowID, a)
				}
			}
		}
		res := BulkResult{WorkflowID: it.WorkflowID, CallID: it.CallID, OK: err == nil}
		if err != nil {
			res.Error = err.Error()
		}
		out = append(out, res)
	}
	return map[string]any{"results": out}, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, map[string]string{"error": err.Error()})
}
