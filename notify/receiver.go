package notify

import (
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Receiver verifies deliveries for a webhook endpoint and rejects
// replays: it remembers every id it accepted until that delivery's
// timestamp leaves the replay window, after which [Verify] rejects the
// delivery by its (signed) timestamp anyway. Its zero value needs only
// Secret; it is safe for concurrent use.
//
// An endpoint that fails after Verify accepted a delivery (and answers
// with an error so warden retries) calls Forget first, so the retry,
// which carries the same id, is accepted.
type Receiver struct {
	// Secret is the shared webhook secret (see [ParseSecret]).
	Secret string
	// Tolerance is the replay window (default DefaultTolerance).
	Tolerance time.Duration
	// Now is the receiver's clock (default time.Now).
	Now func() time.Time

	mu   sync.Mutex
	seen map[string]time.Time // id → when it leaves the window
}

// Verify checks a delivery with [Verify] and then its id: an id accepted
// before, within the window, is an error wrapping ErrReplay. It returns
// the id.
func (r *Receiver) Verify(h http.Header, body []byte) (string, error) {
	now := time.Now()
	if r.Now != nil {
		now = r.Now()
	}
	tol := r.Tolerance
	if tol <= 0 {
		tol = DefaultTolerance
	}
	id, err := Verify(r.Secret, h, body, now, tol)
	if err != nil {
		return "", err
	}
	// Verify parsed the timestamp already; it cannot fail here.
	sec, _ := strconv.ParseInt(h.Get(HeaderTimestamp), 10, 64)
	until := time.Unix(sec, 0).Add(tol)
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, until := range r.seen {
		if now.After(until) {
			delete(r.seen, k)
		}
	}
	if _, ok := r.seen[id]; ok {
		return id, ErrReplay
	}
	if r.seen == nil {
		r.seen = map[string]time.Time{}
	}
	r.seen[id] = until
	return id, nil
}

// Forget drops an accepted id, so a retry of that delivery is accepted.
func (r *Receiver) Forget(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.seen, id)
}
