package s3store_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/content/contenttest"
	"github.com/wardenhq/warden/content/s3store"
)

// TestS3 runs the store conformance suite against gofakes3, an S3
// protocol server in Go, over real HTTP with SigV4-signed requests.
func TestS3(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	defer srv.Close()
	s, err := s3store.New(config.S3{Endpoint: srv.URL, Bucket: "warden", Prefix: "ci", PathStyle: true,
		AccessKey: "test", SecretKey: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateBucket(context.Background()); err != nil {
		t.Fatal(err)
	}
	contenttest.Run(t, s)
}
