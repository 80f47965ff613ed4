// GET /api/stream: the listing pushed as server-sent events.

package inbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

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
			list, err = s.render(out, user, q)
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
		b.WriteByte(' ')
		b.WriteString(it.ClaimedBy)
		b.WriteByte(' ')
		b.WriteString(it.SnoozedUntil.String())
		b.WriteByte('\n')
	}
	return b.String()
}
