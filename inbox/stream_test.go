package inbox

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/workflows"
)

// readStream counts the listings a stream sends until ctx ends.
func readStream(ctx context.Context, t *testing.T, url string, got *atomic.Int64, first chan<- struct{}) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer tok-a")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			t.Error(err)
		}
		return
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	once := sync.Once{}
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var l pendingList
		if json.Unmarshal([]byte(data), &l) == nil {
			got.Add(1)
			once.Do(func() { close(first) })
		}
	}
}

// TestStreamsShareOnePoller: five open streams of one listing cost one
// visibility read per interval between them, not one each; a stream of
// another listing gets its own poller; and the pollers stop when their
// streams close.
func TestStreamsShareOnePoller(t *testing.T) {
	s, err := New(Config{Client: client.New(nil, "unused"), Users: map[string]config.InboxUser{"alice": {Token: "tok-a"}}})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	reads := map[string]int{}
	s.lister = func(_ context.Context, q query) ([]client.PendingEntry, error) {
		mu.Lock()
		defer mu.Unlock()
		reads[q.Tool]++
		// Every read lists one more entry, so every read is news.
		var es []client.PendingEntry
		for i := range reads[q.Tool] {
			es = append(es, client.PendingEntry{WorkflowID: "turn", Pending: workflows.Pending{CallID: fmt.Sprint(i), Tool: "Bash", Hash: "h"}})
		}
		return es, nil
	}
	every := 20 * time.Millisecond
	s.hub.every = every
	hs := httptest.NewServer(s)
	defer hs.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	readsOf := func(tool string) int {
		mu.Lock()
		defer mu.Unlock()
		return reads[tool]
	}

	var wg sync.WaitGroup
	const streams = 5
	counts := make([]atomic.Int64, streams+1)
	for i := range streams + 1 {
		url := hs.URL + "/api/stream?tool=Bash"
		if i == streams {
			url = hs.URL + "/api/stream?tool=Write"
		}
		first := make(chan struct{})
		wg.Add(1)
		go func() { defer wg.Done(); readStream(ctx, t, url, &counts[i], first) }()
		select {
		case <-first:
		case <-time.After(10 * time.Second):
			t.Fatalf("stream %d sent nothing", i)
		}
	}
	// Until a stream has had several listings (at least 25 intervals),
	// the five streams of Bash are read by one poller: at most one read
	// per interval (each stream polling on its own would read five times
	// as often). A loaded machine only makes the poller read less often.
	r0, c0, t0 := readsOf("Bash"), counts[0].Load(), time.Now()
	for deadline := t0.Add(30 * time.Second); counts[0].Load()-c0 < 3 || time.Since(t0) < 25*every; {
		if time.Now().After(deadline) {
			t.Fatalf("a stream got %d listings in %s", counts[0].Load()-c0, time.Since(t0))
		}
		time.Sleep(every)
	}
	r1, window := readsOf("Bash"), time.Since(t0)
	if max := int(window/every) + 2; r1-r0 > max {
		t.Fatalf("%d visibility reads in %s for %d streams of one listing (one poller reads at most %d): each stream polls on its own", r1-r0, window, streams, max)
	}
	if n := s.hub.running(); n != 2 {
		t.Fatalf("%d pollers for two listings", n)
	}
	if readsOf("Write") == 0 || counts[streams].Load() == 0 {
		t.Fatal("the other listing's stream got nothing")
	}
	t.Logf("%d reads in %s for %d streams of Bash", r1-r0, window.Round(time.Millisecond), streams)

	cancel()
	wg.Wait()
	waitUntil := time.Now().Add(5 * time.Second)
	for s.hub.running() != 0 {
		if time.Now().After(waitUntil) {
			t.Fatalf("%d pollers still running with no stream open", s.hub.running())
		}
		time.Sleep(10 * time.Millisecond)
	}
	after := readsOf("Bash")
	time.Sleep(100 * time.Millisecond)
	if n := readsOf("Bash"); n != after {
		t.Fatalf("the poller read %d more times after its streams closed", n-after)
	}
}
