package local

import (
	"context"
	"slices"

	"github.com/wardenhq/warden/backend"
)

// LinksLayer is the name of link resolution in backend.local.sandbox_off:
// turned off, the decision resolves no link of the workspace and a call
// naming one is decided as the link's own path (a test's control).
const LinksLayer = "links"

// ResolveLinks implements backend.LinkResolver on the worker's own file
// system, which holds the local backend's paths: where each of paths
// inside dirs leads through the links below them (backend.LocalLinks),
// read by the worker before the call is decided. With
// backend.local.sandbox_off: [links] it resolves none.
func (b *Backend) ResolveLinks(_ context.Context, dirs, paths []string) map[string]string {
	if slices.Contains(b.Off, LinksLayer) {
		return nil
	}
	return backend.LocalLinks(dirs, paths)
}
