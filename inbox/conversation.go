package inbox

import (
	"fmt"
	"net/http"

	"github.com/wardenhq/warden/client"
)

// handleConversation shows a turn's conversation, read from the content
// store with every reference resolved, as plain text (what the agent was
// doing before it asked). A user whose roles are restricted sees only
// turns with a waiting call their roles cover.
func (s *Server) handleConversation(w http.ResponseWriter, r *http.Request) {
	wf := r.URL.Query().Get("workflow")
	if wf == "" {
		writeErr(w, http.StatusBadRequest, fmt.Errorf("workflow is required"))
		return
	}
	if s.cfg.Content == nil {
		writeErr(w, http.StatusNotFound, fmt.Errorf("this inbox has no content store configured"))
		return
	}
	user := userFrom(r)
	if s.restricted(user) {
		ps, err := s.cfg.Client.Pending(r.Context(), wf)
		covered := false
		for _, p := range ps {
			if s.may(user, p.Tool, p.Input, nil, p.Workdir, p.Links) {
				covered = true
				break
			}
		}
		if err != nil || !covered {
			writeErr(w, http.StatusForbidden, fmt.Errorf("your roles cover no waiting call of %s", wf))
			return
		}
	}
	conv, err := s.cfg.Client.Conversation(r.Context(), s.cfg.Content, wf, "")
	if err != nil {
		writeErr(w, http.StatusNotFound, err)
		return
	}
	// Plain text: nothing the agent wrote can run in the page.
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte(client.FormatConversation(conv)))
}
