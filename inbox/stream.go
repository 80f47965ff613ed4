package inbox

import (
	"context"
	"sync"
	"time"

	"github.com/wardenhq/warden/client"
)

// streamHub shares one visibility poller per query among the open
// streams (GET /api/stream): any number of tabs on the same listing cost
// one listing every streamEvery, and a poller stops with its last stream.
// Entries are rendered for each stream's user from the shared listing.
type streamHub struct {
	// list reads a query's entries (Server.list).
	list  func(context.Context, query) ([]client.PendingEntry, error)
	every time.Duration

	mu    sync.Mutex
	feeds map[query]*feed
}

// feed is one query's poller: its subscribers and latest listing.
type feed struct {
	cancel context.CancelFunc
	subs   map[*subscription]struct{} // guarded by streamHub.mu

	mu     sync.Mutex
	latest listing
}

// listing is one read of a query: its entries or the error.
type listing struct {
	es  []client.PendingEntry
	err error
}

// subscription is one stream's view of a feed: ch receives a value when
// a newer listing is there (one pending value at most: a slow stream
// skips to the latest).
type subscription struct {
	q  query
	f  *feed
	ch chan struct{}
}

func newStreamHub(list func(context.Context, query) ([]client.PendingEntry, error), every time.Duration) *streamHub {
	return &streamHub{list: list, every: every, feeds: map[query]*feed{}}
}

// subscribe joins the poller of q, starting it if no stream reads q yet.
func (h *streamHub) subscribe(q query) *subscription {
	h.mu.Lock()
	defer h.mu.Unlock()
	f := h.feeds[q]
	if f == nil {
		ctx, cancel := context.WithCancel(context.Background())
		f = &feed{cancel: cancel, subs: map[*subscription]struct{}{}}
		h.feeds[q] = f
		go h.poll(ctx, q, f)
	}
	s := &subscription{q: q, f: f, ch: make(chan struct{}, 1)}
	f.subs[s] = struct{}{}
	f.mu.Lock()
	read := f.latest.es != nil || f.latest.err != nil
	f.mu.Unlock()
	if read {
		s.ch <- struct{}{}
	}
	return s
}

// unsubscribe leaves the feed; the last stream to leave stops its poller.
func (h *streamHub) unsubscribe(s *subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(s.f.subs, s)
	if len(s.f.subs) == 0 {
		s.f.cancel()
		if h.feeds[s.q] == s.f {
			delete(h.feeds, s.q)
		}
	}
}

// latest is the feed's latest listing.
func (s *subscription) latest() listing {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	return s.f.latest
}

// poll reads q every h.every until ctx ends and tells the subscribers.
func (h *streamHub) poll(ctx context.Context, q query, f *feed) {
	tick := time.NewTicker(h.every)
	defer tick.Stop()
	for {
		es, err := h.list(ctx, q)
		if ctx.Err() != nil {
			return
		}
		if es == nil && err == nil {
			es = []client.PendingEntry{}
		}
		f.mu.Lock()
		f.latest = listing{es: es, err: err}
		f.mu.Unlock()
		h.mu.Lock()
		for s := range f.subs {
			select {
			case s.ch <- struct{}{}:
			default:
			}
		}
		h.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// poke tells every stream to render its latest listing again (a claim
// or a snooze changed what it shows).
func (h *streamHub) poke() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, f := range h.feeds {
		for s := range f.subs {
			select {
			case s.ch <- struct{}{}:
			default:
			}
		}
	}
}

// running counts the pollers (one per query with a stream open).
func (h *streamHub) running() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.feeds)
}
