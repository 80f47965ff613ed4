package inbox

import (
	"fmt"
	"net/http"
	"strings"
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
	if u, ok := s.user(user); !ok || u.rules != nil {
		ps, err := s.cfg.Client.Pending(r.Context(), wf)
		covered := false
		for _, p := range ps {
			if s.may(user, p.Tool, p.Input) {
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
	var b strings.Builder
	fmt.Fprintf(&b, "turn %s, %d messages (conversation %s)\n", wf, len(conv.Messages), conv.Head)
	for _, c := range conv.Compactions {
		fmt.Fprintf(&b, "[compacted (%s): %d → %d messages; the original is kept as %s]\n", c.Strategy, c.MessagesBefore, c.MessagesAfter, c.From)
	}
	for i, m := range conv.Messages {
		fmt.Fprintf(&b, "\n── %d %s", i+1, m.Role)
		if m.ToolName != "" {
			fmt.Fprintf(&b, " %s %s", m.ToolName, m.ToolCallID)
		}
		if m.IsError {
			b.WriteString(" [error]")
		}
		b.WriteString("\n")
		if m.Content != "" {
			b.WriteString(strings.TrimRight(m.Content, "\n"))
			b.WriteString("\n")
		}
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, "→ %s %s %s\n", c.ID, c.Name, c.Input)
		}
	}
	// Plain text: nothing the agent wrote can run in the page.
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte(b.String()))
}
