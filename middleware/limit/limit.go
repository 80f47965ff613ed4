// Package limit is a tool-call middleware that caps how many calls of a
// tool run at once on this worker. Calls over the cap wait for a slot;
// if the call's context ends while it waits, the stream yields a Go
// error (cancellation is an infrastructure matter, not a tool result).
package limit

import (
	"context"
	"fmt"
	"sync"

	"github.com/wardenhq/warden/middleware"
	"github.com/wardenhq/warden/tools"
)

// Default is the PerTool key whose limit applies to every tool without
// its own entry (each such tool gets its own slots).
const Default = "*"

// Config configures the concurrency limits. The zero value limits
// nothing.
type Config struct {
	// PerTool maps a tool name (or Default) to the most calls of that
	// tool in flight at once; 0 means no limit.
	PerTool map[string]int `yaml:"per_tool"`
}

// New returns the limit middleware. A negative limit is an error.
func New(cfg Config) (middleware.Middleware, error) {
	for name, n := range cfg.PerTool {
		if n < 0 {
			return nil, fmt.Errorf("limit: %s: %d must not be negative", name, n)
		}
	}
	l := &limiter{limits: cfg.PerTool, slots: map[string]chan struct{}{}}
	return l.wrap, nil
}

// limiter holds one semaphore per limited tool name, made on first use.
type limiter struct {
	limits map[string]int
	mu     sync.Mutex
	slots  map[string]chan struct{}
}

// sem returns the tool's semaphore, or nil when it is not limited.
func (l *limiter) sem(name string) chan struct{} {
	n, ok := l.limits[name]
	if !ok {
		n = l.limits[Default]
	}
	if n <= 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.slots[name]
	if !ok {
		s = make(chan struct{}, n)
		l.slots[name] = s
	}
	return s
}

func (l *limiter) wrap(next middleware.Handler) middleware.Handler {
	return func(ctx context.Context, c middleware.Call) tools.Stream {
		sem := l.sem(c.Name())
		if sem == nil {
			return next(ctx, c)
		}
		// The slot is taken when the stream is consumed, which is when
		// the inner layers and the tool run, and held until it ends.
		return func(yield func(tools.Chunk, error) bool) {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				yield(tools.Chunk{}, fmt.Errorf("limit: waiting for a %s slot (%d in flight): %w", c.Name(), cap(sem), context.Cause(ctx)))
				return
			}
			defer func() { <-sem }()
			for ch, err := range next(ctx, c) {
				if !yield(ch, err) {
					return
				}
			}
		}
	}
}
