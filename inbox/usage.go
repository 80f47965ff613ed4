package inbox

import (
	"context"

	"golang.org/x/sync/errgroup"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/model"
)

// withUsage fills in each entry's turn usage so far (its model tokens and
// cost, from the turn's state query). A turn spends nothing while a call
// of its step waits, so the usage read for one wait (workflow, run and
// call) is kept for as long as that wait is listed: a listing read every
// second asks each waiting turn once. A turn that does not answer is
// listed without usage.
func (s *Server) withUsage(ctx context.Context, es []client.PendingEntry) {
	key := func(e client.PendingEntry) string { return e.WorkflowID + "\x1f" + e.RunID + "\x1f" + e.CallID }
	s.usageMu.Lock()
	known := s.usageSeen
	s.usageMu.Unlock()
	next := make(map[string]*model.Usage, len(es))
	var g errgroup.Group
	g.SetLimit(resolveConcurrency)
	got := make([]*model.Usage, len(es))
	for i, e := range es {
		if u, ok := known[key(e)]; ok {
			got[i] = u
			continue
		}
		g.Go(func() error {
			sum, err := s.cfg.Client.State(ctx, e.WorkflowID)
			if err == nil && (sum.Usage.Total() > 0 || sum.Usage.Cost != nil) {
				u := sum.Usage
				got[i] = &u
			}
			return nil
		})
	}
	_ = g.Wait()
	for i, e := range es {
		es[i].Usage = got[i]
		next[key(e)] = got[i]
	}
	s.usageMu.Lock()
	s.usageSeen = next
	s.usageMu.Unlock()
}
