package e2bfake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// apiError writes the control plane's error body.
func apiError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"code": status, "message": msg})
}

// decodeStrict decodes a JSON body, rejecting unknown fields and wrong
// types the way the API's OpenAPI validation does.
func decodeStrict(r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		return fmt.Errorf("content type %q is not application/json", ct)
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func (s *Server) sandboxJSON(sb *Sandbox) map[string]any {
	m := map[string]any{
		"templateID":  sb.TemplateID,
		"sandboxID":   sb.ID,
		"clientID":    "6532622b",
		"envdVersion": EnvdVersion,
		"domain":      nil,
	}
	if sb.TemplateID == "base" {
		m["alias"] = "base"
	}
	if sb.AccessToken != "" {
		m["envdAccessToken"] = sb.AccessToken
	}
	return m
}

func listedJSON(sb *Sandbox) map[string]any {
	return map[string]any{
		"templateID": sb.TemplateID, "sandboxID": sb.ID, "clientID": "6532622b",
		"startedAt": sb.StartedAt.Format(time.RFC3339Nano), "endAt": sb.EndAt.Format(time.RFC3339Nano),
		"cpuCount": 2, "memoryMB": 512, "diskSizeMB": 1024, "envdVersion": EnvdVersion,
		"metadata": sb.Metadata, "state": sb.State,
	}
}

// timeoutBody is {"timeout": int32 seconds}; a string or fraction fails
// to decode like it fails the API's validation.
type timeoutBody struct {
	Timeout *int32 `json:"timeout"`
}

func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-API-Key") != s.APIKey {
		apiError(w, http.StatusUnauthorized, "Invalid API key, please visit https://e2b.dev/docs/api-key")
		return
	}
	s.mu.Lock()
	s.expireLocked()
	s.mu.Unlock()
	p := strings.Trim(r.URL.Path, "/")
	parts := strings.Split(p, "/")
	switch {
	case p == "sandboxes" && r.Method == http.MethodPost:
		s.create(w, r)
	case p == "v2/sandboxes" && r.Method == http.MethodGet:
		s.list(w, r)
	case len(parts) == 2 && parts[0] == "sandboxes":
		switch r.Method {
		case http.MethodGet:
			s.withSandbox(w, parts[1], func(sb *Sandbox) {
				m := listedJSON(sb)
				m["envdAccessToken"] = sb.AccessToken
				m["domain"] = nil
				writeJSON(w, http.StatusOK, m)
			})
		case http.MethodDelete:
			s.mu.Lock()
			_, ok := s.sandboxes[parts[1]]
			delete(s.sandboxes, parts[1])
			s.mu.Unlock()
			if !ok {
				apiError(w, http.StatusNotFound, fmt.Sprintf("Sandbox %q doesn't exist or you don't have access to it", parts[1]))
				return
			}
			w.WriteHeader(http.StatusNoContent)
		default:
			apiError(w, http.StatusMethodNotAllowed, "method not allowed")
		}
	case len(parts) == 3 && parts[0] == "sandboxes" && r.Method == http.MethodPost:
		s.sandboxAction(w, r, parts[1], parts[2])
	default:
		apiError(w, http.StatusNotFound, "not found: "+r.Method+" "+r.URL.Path)
	}
}

func (s *Server) withSandbox(w http.ResponseWriter, id string, f func(*Sandbox)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb, ok := s.sandboxes[id]
	if !ok {
		apiError(w, http.StatusNotFound, fmt.Sprintf("Sandbox %q doesn't exist or you don't have access to it", id))
		return
	}
	f(sb)
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	var in struct {
		TemplateID          string            `json:"templateID"`
		Timeout             *int32            `json:"timeout"`
		Metadata            map[string]string `json:"metadata"`
		EnvVars             map[string]string `json:"envVars"`
		Secure              *bool             `json:"secure"`
		AllowInternetAccess *bool             `json:"allow_internet_access"`
		AutoPause           *bool             `json:"autoPause"`
	}
	if err := decodeStrict(r, &in); err != nil {
		apiError(w, http.StatusBadRequest, "Error when parsing request: "+err.Error())
		return
	}
	if in.TemplateID == "" {
		apiError(w, http.StatusBadRequest, "templateID is required")
		return
	}
	timeout := int32(15)
	if in.Timeout != nil {
		timeout = *in.Timeout
	}
	if timeout <= 0 {
		apiError(w, http.StatusBadRequest, "Timeout must be greater than 0")
		return
	}
	if timeout > 24*3600 {
		apiError(w, http.StatusBadRequest, "Timeout cannot be greater than 24 hours")
		return
	}
	now := time.Now()
	sb := &Sandbox{
		ID: randHex(20), TemplateID: in.TemplateID, State: "running",
		Metadata: in.Metadata, EnvVars: in.EnvVars,
		StartedAt: now, EndAt: now.Add(time.Duration(timeout) * time.Second),
	}
	if sb.Metadata == nil {
		sb.Metadata = map[string]string{}
	}
	if in.Secure != nil && *in.Secure {
		sb.AccessToken = randHex(32)
	}
	s.mu.Lock()
	s.sandboxes[sb.ID] = sb
	m := s.sandboxJSON(sb)
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, m)
}

func (s *Server) sandboxAction(w http.ResponseWriter, r *http.Request, id, action string) {
	switch action {
	case "timeout", "connect":
		var in timeoutBody
		if err := decodeStrict(r, &in); err != nil {
			apiError(w, http.StatusBadRequest, "Error when parsing request: "+err.Error())
			return
		}
		if in.Timeout == nil {
			apiError(w, http.StatusBadRequest, "timeout is required")
			return
		}
		if *in.Timeout <= 0 {
			apiError(w, http.StatusBadRequest, "Timeout must be greater than 0")
			return
		}
		s.withSandbox(w, id, func(sb *Sandbox) {
			end := time.Now().Add(time.Duration(*in.Timeout) * time.Second)
			if action == "timeout" {
				sb.EndAt = end
				w.WriteHeader(http.StatusNoContent)
				return
			}
			status := http.StatusOK
			if sb.State == "paused" {
				sb.State, status = "running", http.StatusCreated
			}
			if end.After(sb.EndAt) {
				sb.EndAt = end
			}
			writeJSON(w, status, s.sandboxJSON(sb))
		})
	case "pause":
		s.withSandbox(w, id, func(sb *Sandbox) {
			if sb.State == "paused" {
				apiError(w, http.StatusConflict, fmt.Sprintf("Sandbox %q is already paused", id))
				return
			}
			sb.State = "paused"
			w.WriteHeader(http.StatusNoContent)
		})
	default:
		apiError(w, http.StatusNotFound, "not found: "+r.URL.Path)
	}
}

// listQuery is the filter and page of a GET /v2/sandboxes.
type listQuery struct {
	states    map[string]bool
	metadata  url.Values // every key must match its one value
	limit     int
	nextToken string
}

// parseListQuery reads a list query, or returns the 400 message.
func parseListQuery(q url.Values) (listQuery, string) {
	lq := listQuery{states: map[string]bool{"running": true, "paused": true}, limit: 100, nextToken: q.Get("nextToken")}
	if st := q.Get("state"); st != "" {
		lq.states = map[string]bool{}
		for _, v := range strings.Split(st, ",") {
			if v != "running" && v != "paused" {
				return lq, "invalid state " + strconv.Quote(v)
			}
			lq.states[v] = true
		}
	}
	if md := q.Get("metadata"); md != "" {
		var err error
		if lq.metadata, err = url.ParseQuery(md); err != nil {
			return lq, "Error when parsing metadata: " + err.Error()
		}
	}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 100 {
			return lq, "limit must be between 1 and 100"
		}
		lq.limit = n
	}
	return lq, ""
}

// matchLocked returns the sandboxes lq selects, sorted by id.
func (s *Server) matchLocked(lq listQuery) []*Sandbox {
	var match []*Sandbox
	for _, sb := range s.sandboxes {
		if !lq.states[sb.State] {
			continue
		}
		ok := true
		for k, vs := range lq.metadata {
			ok = ok && len(vs) == 1 && sb.Metadata[k] == vs[0]
		}
		if ok {
			match = append(match, sb)
		}
	}
	sort.Slice(match, func(i, j int) bool { return match[i].ID < match[j].ID })
	return match
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	lq, msg := parseListQuery(r.URL.Query())
	if msg != "" {
		apiError(w, http.StatusBadRequest, msg)
		return
	}
	s.mu.Lock()
	match := s.matchLocked(lq)
	start := 0
	if lq.nextToken != "" {
		start = sort.Search(len(match), func(i int) bool { return match[i].ID >= lq.nextToken })
	}
	end := min(start+lq.limit, len(match))
	page := []map[string]any{}
	running := 0
	for _, sb := range match {
		if sb.State == "running" {
			running++
		}
	}
	for _, sb := range match[start:end] {
		page = append(page, listedJSON(sb))
	}
	if end < len(match) {
		w.Header().Set("X-Next-Token", match[end].ID)
	}
	s.mu.Unlock()
	w.Header().Set("X-Total-Running", strconv.Itoa(running))
	var buf bytes.Buffer
	_ = json.NewEncoder(&buf).Encode(page)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(buf.Bytes())
}
