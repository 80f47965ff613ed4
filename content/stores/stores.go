// Package stores opens the content store a configuration names
// (config.Content: a directory, or an S3 bucket). It is the package that
// links both stores, and with S3 the AWS SDK: a program that keeps its
// content in a directory opens it with content.NewFS and links neither
// this package nor content/s3store (package warden and package client
// do not).
package stores

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/content"
	"github.com/wardenhq/warden/content/s3store"
)

// Open opens the content store of c: S3 when content.store is "s3",
// otherwise the directory content.dir (default DATA_DIR/content). S3
// credentials come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY only.
func Open(c config.Config) (content.Store, error) {
	if c.Content.Store == "s3" {
		cfg := c.Content.S3
		cfg.AccessKey, cfg.SecretKey = os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
		s, err := s3store.New(cfg)
		if err != nil {
			return nil, fmt.Errorf("content.s3: %w", err)
		}
		return s, nil
	}
	dir := c.Content.Dir
	if dir == "" {
		dir = filepath.Join(c.Server.DataDir, "content")
	}
	s, err := content.NewFS(dir)
	if err != nil {
		return nil, fmt.Errorf("content.dir: %w", err)
	}
	return s, nil
}
