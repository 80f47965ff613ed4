package client

import (
	"context"
	"log/slog"
	"time"

	"github.com/wardenhq/warden/content"
)

// GCEvery runs GC (with the zero GCOptions: only the content of turns
// the server no longer knows) every interval (default hourly) until ctx
// ends, logging what it removed and its errors. A negative interval
// returns at once.
func (cl *Client) GCEvery(ctx context.Context, store content.Store, every time.Duration, logger *slog.Logger) {
	if every < 0 {
		return
	}
	if every == 0 {
		every = time.Hour
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			rep, err := cl.GC(ctx, store, GCOptions{})
			if err != nil {
				logger.Warn("content gc", "err", err)
				continue
			}
			if len(rep.Removed) > 0 {
				logger.Info("content gc", "removed", len(rep.Removed), "kept", rep.Kept)
			}
		}
	}
}
