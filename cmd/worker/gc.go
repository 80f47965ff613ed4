package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/wardenhq/warden/client"
	"github.com/wardenhq/warden/content"
)

// gcContent removes, every interval (default hourly), the content of
// turns the server no longer knows: closed and past the namespace's
// retention. A negative interval turns it off.
func gcContent(ctx context.Context, wc *client.Client, store content.Store, every time.Duration, logger *slog.Logger) {
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
			rep, err := wc.GC(ctx, store, client.GCOptions{})
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
