package local_test

import (
	"testing"

	"github.com/wardenhq/warden/backend"
	"github.com/wardenhq/warden/backend/backendtest"
	"github.com/wardenhq/warden/backend/local"
)

func TestConformance(t *testing.T) {
	backendtest.Run(t, func(t *testing.T) (backend.Backend, string) {
		dir := t.TempDir()
		return local.New(dir), dir
	})
}
