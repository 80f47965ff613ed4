package tools

import (
	"fmt"
	"slices"
	"strings"
)

// Registry holds tools by name. It is filled at worker start and read
// concurrently afterwards; it is not safe to Add while calls run.
type Registry struct {
	byName map[string]Tool
	order  []string
}

// NewRegistry returns a registry holding ts, in order.
func NewRegistry(ts ...Tool) (*Registry, error) {
	r := &Registry{byName: map[string]Tool{}}
	for _, t := range ts {
		if err := r.Add(t); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Add registers a tool; a duplicate or empty name is an error.
func (r *Registry) Add(t Tool) error {
	name := t.Info().Name
	if strings.TrimSpace(name) == "" {
		return fmt.Errorf("tools: tool with empty name")
	}
	if _, dup := r.byName[name]; dup {
		return fmt.Errorf("tools: duplicate tool %q", name)
	}
	r.byName[name] = t
	r.order = append(r.order, name)
	return nil
}

// Get returns the tool named name.
func (r *Registry) Get(name string) (Tool, bool) {
	t, ok := r.byName[name]
	return t, ok
}

// Names lists the registered tool names in registration order.
func (r *Registry) Names() []string { return slices.Clone(r.order) }

// Infos describes the registered tools in registration order. With names
// given, only those (that exist) are described, in the order given.
func (r *Registry) Infos(names ...string) []Info {
	if len(names) == 0 {
		names = r.order
	}
	out := make([]Info, 0, len(names))
	for _, n := range names {
		if t, ok := r.byName[n]; ok {
			out = append(out, t.Info())
		}
	}
	return out
}

// Entries describes the registered tools in registration order, each
// with its source (SourceOf).
func (r *Registry) Entries() []Entry {
	out := make([]Entry, 0, len(r.order))
	for _, n := range r.order {
		t := r.byName[n]
		out = append(out, Entry{Info: t.Info(), Source: SourceOf(t)})
	}
	return out
}
