package stream

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	tclient "go.temporal.io/sdk/client"

	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/workflows"
)

// Streamer sends each turn's audit records to a sink once, in order, as
// the turn records them. Touch names a turn that made progress; Run
// reads it (its settled history: audit.Settled) and sends the records
// past those it sent. What it sent is kept in a state file, so a
// restarted worker goes on where it stopped and catches up on the turns
// that ran or closed meanwhile.
type Streamer struct {
	// C reads the turns' histories and lists them.
	C tclient.Client
	// Sink takes the records.
	Sink Sink
	// State is the file that keeps what was sent, with its copy
	// State+CopySuffix ("" keeps it in memory: a restart then starts
	// from the turns it is told about).
	State string
	// Logger reports a sink that is down and when it is back.
	Logger *slog.Logger
	// Metrics count what was sent and what failed (nil: none).
	Metrics *Metrics
	// Sweep is how often visibility is asked for the turns that closed
	// (default 2s); Settle how long after a touch a turn is read
	// (default 300ms), and read again twice Settle*6 apart; Interval the
	// least time between two reads of one turn (default 1s), so that a
	// busy turn costs the server one history read a second however
	// often it is touched.
	Sweep, Settle, Interval time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time

	mu  sync.Mutex
	hot map[string]due
	// dirty says st changed since saved, when it was last saved (both
	// used by Run's goroutine only).
	dirty  bool
	saved  time.Time
	st     state
	loaded bool
	// down is when the sink went down (zero: up); retry when to try it
	// again; backoff the wait before that; held the records waiting.
	down, retry time.Time
	backoff     time.Duration
}

// due is when a touched turn is read, how many reads follow, and when
// it was last read.
type due struct {
	at    time.Time
	again int
	last  time.Time
}

// state is what the Streamer sent, kept in State.
type state struct {
	// Since is when the last sweep of closed turns started.
	Since time.Time `json:"since"`
	// Turns are the turns sent from, by workflow id.
	Turns map[string]sent `json:"turns"`
}

// sent is how far a turn's records went.
type sent struct {
	Seq  int    `json:"seq"`
	Hash string `json:"hash"`
	// Closed is when the turn was seen closed with every record sent.
	Closed time.Time `json:"closed,omitzero"`
}

func (s *Streamer) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Streamer) settle() time.Duration {
	if s.Settle > 0 {
		return s.Settle
	}
	return 300 * time.Millisecond
}

// Touch says a turn made progress: it is read after Settle, and again
// twice later (a workflow task may complete after the touch). It never
// blocks for longer than a map update, so activities and workflow code
// (when not replaying) may call it.
func (s *Streamer) Touch(workflowID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hot == nil {
		s.hot = map[string]due{}
	}
	at := s.now().Add(s.settle())
	d, ok := s.hot[workflowID]
	if next := d.last.Add(s.interval()); ok && next.After(at) {
		at = next
	}
	if ok && d.at.Before(at) {
		at = d.at
	}
	s.hot[workflowID] = due{at: at, again: 2, last: d.last}
}

func (s *Streamer) interval() time.Duration {
	if s.Interval > 0 {
		return s.Interval
	}
	return time.Second
}

// Load reads the state file, if Run has not: call it before Run to
// fail at start on a state file that cannot be read.
func (s *Streamer) Load() error {
	if s.loaded {
		return nil
	}
	if err := s.load(); err != nil {
		return err
	}
	s.loaded = true
	return nil
}

// Run streams until ctx is done. It fails only when its state file
// cannot be read.
func (s *Streamer) Run(ctx context.Context) error {
	if err := s.Load(); err != nil {
		return err
	}
	sweep := s.Sweep
	if sweep <= 0 {
		sweep = 2 * time.Second
	}
	if s.st.Since.IsZero() {
		s.st.Since = s.now()
	} else {
		s.catchUp(ctx)
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	next := s.now()
	for {
		if !s.now().Before(next) {
			s.sweepClosed(ctx)
			next = s.now().Add(sweep)
		}
		s.sendDue(ctx)
		select {
		case <-ctx.Done():
			if s.dirty {
				s.save()
			}
			return nil
		case <-tick.C:
		}
	}
}

// catchUp, after a restart, reads every running turn and those closed
// since the last sweep before the stop.
func (s *Streamer) catchUp(ctx context.Context) {
	q := fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running'", workflows.TurnWorkflow)
	ids, err := s.list(ctx, q)
	if err != nil {
		s.log().Warn("audit stream: listing running turns to catch up", "error", err)
	}
	for _, id := range ids {
		s.Touch(id)
	}
}

// sweepClosed touches the turns that closed since the last sweep (with
// a minute's margin for visibility's lag) and are not known sent.
func (s *Streamer) sweepClosed(ctx context.Context) {
	start := s.now()
	s.mu.Lock()
	since := s.st.Since.Add(-time.Minute)
	s.mu.Unlock()
	q := fmt.Sprintf("WorkflowType = '%s' AND CloseTime >= '%s'", workflows.TurnWorkflow, since.UTC().Format(time.RFC3339Nano))
	ids, err := s.list(ctx, q)
	if err != nil {
		s.log().Warn("audit stream: listing closed turns", "error", err)
		return
	}
	for _, id := range ids {
		s.mu.Lock()
		done := !s.st.Turns[id].Closed.IsZero()
		s.mu.Unlock()
		if !done {
			s.Touch(id)
		}
	}
	s.mu.Lock()
	s.st.Since = start
	// Forget turns closed (and sent) long before the sweep's margin.
	for id, t := range s.st.Turns {
		if !t.Closed.IsZero() && t.Closed.Before(start.Add(-time.Hour)) {
			delete(s.st.Turns, id)
		}
	}
	s.mu.Unlock()
	s.save()
}

func (s *Streamer) list(ctx context.Context, q string) ([]string, error) {
	var ids []string
	seen := map[string]bool{}
	var token []byte
	for {
		resp, err := s.C.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: q, NextPageToken: token, PageSize: 1000})
		if err != nil {
			return ids, err
		}
		for _, ex := range resp.GetExecutions() {
			if id := ex.GetExecution().GetWorkflowId(); !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return ids, nil
		}
	}
}

// sendDue reads the turns due now, oldest touch first, and sends their
// new records, stopping at the first the sink refuses.
func (s *Streamer) sendDue(ctx context.Context) {
	now := s.now()
	s.mu.Lock()
	if now.Before(s.retry) {
		s.mu.Unlock()
		return
	}
	var ids []string
	for id, d := range s.hot {
		if !d.at.After(now) {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b string) int {
		if c := s.hot[a].at.Compare(s.hot[b].at); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	s.mu.Unlock()
	changed := false
	for _, id := range ids {
		n, closed, err := s.send(ctx, id)
		if errors.Is(err, errSink) {
			break
		}
		s.mu.Lock()
		d := s.hot[id]
		switch {
		case err != nil || closed || d.again == 0:
			delete(s.hot, id)
		default:
			s.hot[id] = due{at: s.now().Add(max(6*s.settle(), s.interval())), again: d.again - 1, last: s.now()}
		}
		s.mu.Unlock()
		if err != nil {
			s.log().Warn("audit stream: reading a turn", "workflow_id", id, "error", err)
		}
		changed = changed || n > 0 || closed
	}
	// What was sent is saved at most once a second (and at every
	// sweep, and when Run stops): a crash re-sends at most that second's
	// records, which their seq and hash tell apart.
	s.dirty = s.dirty || changed
	if s.dirty && !s.now().Before(s.saved.Add(time.Second)) {
		s.save()
	}
}

// errSink marks a sink's refusal (the records wait).
var errSink = errors.New("sink")

// send reads one turn and sends its records past those sent; it says
// how many it sent and whether the turn has closed with all sent.
func (s *Streamer) send(ctx context.Context, id string) (int, bool, error) {
	recs, closed, err := audit.Settled(ctx, s.C, id)
	if err != nil {
		return 0, false, err
	}
	s.mu.Lock()
	t := s.st.Turns[id]
	s.mu.Unlock()
	if t.Seq > len(recs) || (t.Seq > 0 && recs[t.Seq-1].Hash != t.Hash) {
		// What was sent is not what the history now gives: never
		// expected (settled records are final); say so and send on.
		s.log().Error("audit stream: a turn's records changed after they were sent", "workflow_id", id, "sent", t.Seq, "now", len(recs))
		s.Metrics.mismatch()
		if t.Seq > len(recs) {
			t.Seq = len(recs)
		}
	}
	fresh := recs[t.Seq:]
	if len(fresh) > 0 {
		var buf []byte
		for _, r := range fresh {
			line, err := audit.MarshalLine(r)
			if err != nil {
				return 0, false, err
			}
			buf = append(buf, line...)
		}
		if err := s.Sink.Write(ctx, buf); err != nil {
			s.sinkDown(err, len(fresh))
			return 0, false, fmt.Errorf("%w: %w", errSink, err)
		}
		s.sinkUp()
		now := s.now()
		for _, r := range fresh {
			s.Metrics.sent(now.Sub(r.Time))
		}
		last := fresh[len(fresh)-1]
		t.Seq, t.Hash = last.Seq, last.Hash
	}
	if closed {
		t.Closed = s.now()
	}
	s.mu.Lock()
	if s.st.Turns == nil {
		s.st.Turns = map[string]sent{}
	}
	s.st.Turns[id] = t
	s.mu.Unlock()
	return len(fresh), closed, nil
}

// sinkDown counts a refused batch, logs the first of an outage, and
// backs off (1s doubling to 30s).
func (s *Streamer) sinkDown(err error, n int) {
	s.Metrics.failed()
	s.mu.Lock()
	first := s.down.IsZero()
	if first {
		s.down, s.backoff = s.now(), time.Second
	} else if s.backoff *= 2; s.backoff > 30*time.Second {
		s.backoff = 30 * time.Second
	}
	s.retry = s.now().Add(s.backoff)
	s.mu.Unlock()
	s.Metrics.up(false)
	if first {
		s.log().Error("audit stream: the sink refused records; they wait and are sent when it is back",
			"sink", s.Sink.String(), "records", n, "error", err)
	}
}

// sinkUp ends an outage, with a log line that says how long it was.
func (s *Streamer) sinkUp() {
	s.mu.Lock()
	down := s.down
	s.down, s.retry, s.backoff = time.Time{}, time.Time{}, 0
	s.mu.Unlock()
	s.Metrics.up(true)
	if !down.IsZero() {
		s.log().Warn("audit stream: the sink is back; sending the records that waited",
			"sink", s.Sink.String(), "down_for", s.now().Sub(down).Round(time.Second).String())
	}
}

func (s *Streamer) log() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

// CopySuffix names the state file's copy (State+CopySuffix), which save
// writes whole before the state file itself.
const CopySuffix = ".copy"

// load reads the state file, or its copy when the state file is cut
// short or missing (a crash while save wrote it); with neither, a fresh
// state. A symbolic link at a name it reads is an error.
func (s *Streamer) load() error {
	s.st = state{Turns: map[string]sent{}}
	if s.State == "" {
		return nil
	}
	var bad []error
	for _, p := range []string{s.State, s.State + CopySuffix} {
		b, err := readNoLink(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("audit stream state: %w", err)
		}
		var st state
		if err := json.Unmarshal(b, &st); err != nil {
			bad = append(bad, fmt.Errorf("audit stream state %s: %w", p, err))
			continue
		}
		if st.Turns == nil {
			st.Turns = map[string]sent{}
		}
		s.st = st
		return nil
	}
	return errors.Join(bad...)
}

// save writes the state file in place, never by rename: the local
// sandbox hides the worker's own files from tool processes by mounts
// over them, and a file renamed over one on the host detaches the mount
// in the calls running then, which would read (and in their working
// directory write) the new file. So that a crash in the middle loses
// nothing, the whole state goes first to the copy (State+CopySuffix),
// then to the state file, each synced: load takes the copy when the
// state file is cut short. Neither is opened through a symbolic link.
func (s *Streamer) save() {
	s.dirty, s.saved = false, s.now()
	if s.State == "" {
		return
	}
	s.mu.Lock()
	b, err := json.Marshal(s.st)
	s.mu.Unlock()
	if err == nil {
		if err = os.MkdirAll(filepath.Dir(s.State), 0o700); err == nil {
			if err = writeInPlace(s.State+CopySuffix, b); err == nil {
				err = writeInPlace(s.State, b)
			}
		}
	}
	if err != nil {
		s.log().Error("audit stream: saving what was sent", "file", s.State, "error", err)
	}
}

// writeInPlace makes the file p (created 0600 when missing, refused
// when p is a symbolic link) hold b, and syncs it.
func writeInPlace(p string, b []byte) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// readNoLink reads the file p, refused when p is a symbolic link.
func readNoLink(p string) ([]byte, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
