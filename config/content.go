package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Content configures the content store that keeps conversations and tool
// results out of workflow history.
type Content struct {
	// Store is "fs" (a directory; the default) or "s3" (a bucket shared
	// by workers on several machines).
	Store string `yaml:"store"`
	// Dir is the fs store's directory (default: server.data_dir/content).
	Dir string `yaml:"dir"`
	S3  S3     `yaml:"s3"`
	// CacheMB bounds the conversations a worker keeps loaded (default 128).
	CacheMB int `yaml:"cache_mb"`
	// MaxResultBytes bounds one tool result (default 4 MiB): a larger
	// result is a tool error the model reads.
	MaxResultBytes int `yaml:"max_result_bytes"`
	// MaxCallInputBytes bounds one tool call's input in a model reply
	// (default 256 KiB): a larger one ends the turn with a reason.
	MaxCallInputBytes int `yaml:"max_call_input_bytes"`
	// GCInterval is how often the worker removes the content of turns the
	// server no longer knows (closed and past the namespace's retention).
	// 0 means hourly; a negative value turns it off.
	GCInterval time.Duration `yaml:"gc_interval"`
	// Compaction configures the context-window compaction per model
	// provider ("scripted" or a name under models).
	Compaction map[string]Compaction `yaml:"compaction"`
}

// Turn sets defaults of the turns `starter` starts.
type Turn struct {
	// MaxIterations bounds model calls per turn (0: 1000). Long turns
	// continue as new along the way.
	MaxIterations int `yaml:"max_iterations"`
	// ContinueAsNewAfter continues a turn as new once its history has this
	// many events (0: when the server suggests it).
	ContinueAsNewAfter int `yaml:"continue_as_new_after"`
	// Budget is the default budget of the turns `starter run` starts,
	// written as --budget takes it ("tokens=2M,cost=5,time=8h").
	Budget string `yaml:"budget"`
}

func (c Config) validateContent() []error {
	var errs []error
	switch c.Content.Store {
	case "", "fs":
	case "s3":
		if c.Content.S3.Bucket == "" {
			errs = append(errs, errors.New("content.s3.bucket: required with content.store: s3"))
		}
	default:
		errs = append(errs, fmt.Errorf("content.store: %q is not fs or s3", c.Content.Store))
	}
	if c.Content.CacheMB < 0 || c.Content.MaxResultBytes < 0 || c.Content.MaxCallInputBytes < 0 {
		errs = append(errs, errors.New("content.cache_mb, max_result_bytes, max_call_input_bytes: must not be negative"))
	}
	for _, name := range slices.Sorted(maps.Keys(c.Content.Compaction)) {
		if _, ok := c.Models[name]; !ok && name != "scripted" {
			errs = append(errs, fmt.Errorf("content.compaction.%s: no model provider of that name (scripted or one under models)", name))
		}
	}
	if c.Turn.MaxIterations < 0 || c.Turn.ContinueAsNewAfter < 0 {
		errs = append(errs, errors.New("turn.max_iterations, turn.continue_as_new_after: must not be negative"))
	}
	return errs
}
