package stores

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/content"
	"github.com/wardenhq/warden/content/s3store"
)

// TestOpen: the default content store is a directory in the data
// directory; content.store s3 opens an S3 store of the bucket, and
// without a bucket fails naming the setting.
func TestOpen(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Server.DataDir = t.TempDir()
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fs, ok := s.(*content.FS)
	if !ok || fs.Dir != filepath.Join(cfg.Server.DataDir, "content") {
		t.Fatalf("store %v, want an fs store in the data directory", s)
	}
	cfg.Content.Store = "s3"
	if _, err := Open(cfg); err == nil || !strings.HasPrefix(err.Error(), "content.s3:") {
		t.Fatalf("s3 without a bucket: %v", err)
	}
	cfg.Content.S3.Bucket = "turns"
	s, err = Open(cfg)
	if _, ok := s.(*s3store.Store); err != nil || !ok {
		t.Fatalf("s3 store: %v, %v", s, err)
	}
}
