// Package s3store is a content.Store on an S3-compatible object store
// (AWS S3, MinIO, Ceph, SeaweedFS...), shared by workers on several
// machines. Objects live under PREFIX/turns/TURN/NAME; a successful PUT
// is durable, so a reference never enters history before its content.
package s3store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/wardenhq/warden/config"
	"github.com/wardenhq/warden/content"
)

// Store is a content.Store on S3.
type Store struct {
	c      *s3.Client
	bucket string
	prefix string
	desc   string
}

// New returns a store for the bucket. It does not contact the server.
func New(cfg config.S3) (*Store, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("s3 store: bucket is required")
	}
	region := cfg.Region
	if region == "" {
		region = "us-east-1"
	}
	opts := s3.Options{
		Region:       region,
		UsePathStyle: cfg.PathStyle,
		Credentials:  credentials.NewStaticCredentialsProvider(cfg.AccessKey, cfg.SecretKey, ""),
		// Checksums only when the operation requires them: self-hosted
		// servers do not all speak the newer flexible checksums.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	}
	if cfg.Endpoint != "" {
		opts.BaseEndpoint = aws.String(cfg.Endpoint)
	}
	p := strings.Trim(cfg.Prefix, "/")
	if p != "" {
		p += "/"
	}
	return &Store{c: s3.New(opts), bucket: cfg.Bucket, prefix: p,
		desc: fmt.Sprintf("s3:%s/%s/%s", strings.TrimSuffix(cfg.Endpoint, "/"), cfg.Bucket, p)}, nil
}

// String implements content.Store.
func (s *Store) String() string { return s.desc }

func (s *Store) turnPrefix(turn string) string {
	return s.prefix + "turns/" + content.EscapeTurn(turn) + "/"
}

// Put implements content.Store. A content id that exists is not written
// again (ids are content hashes).
func (s *Store) Put(ctx context.Context, turn, name string, data []byte) error {
	key := s.turnPrefix(turn) + name
	if name != content.HeadName {
		if _, err := s.c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: &key}); err == nil {
			return nil
		}
	}
	_, err := s.c.PutObject(ctx, &s3.PutObjectInput{Bucket: &s.bucket, Key: &key, Body: bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data)))})
	if err != nil {
		return fmt.Errorf("s3 store: put %s: %w", key, err)
	}
	return nil
}

// Get implements content.Store.
func (s *Store) Get(ctx context.Context, turn, name string) ([]byte, error) {
	key := s.turnPrefix(turn) + name
	out, err := s.c.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: &key})
	if err != nil {
		var nsk *types.NoSuchKey
		var api smithy.APIError
		if errors.As(err, &nsk) || errors.As(err, &api) && api.ErrorCode() == "NotFound" {
			return nil, fmt.Errorf("content store %s: %s: %w", s, key, content.ErrNotFound)
		}
		return nil, fmt.Errorf("s3 store: get %s: %w", key, err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, fmt.Errorf("s3 store: read %s: %w", key, err)
	}
	return data, nil
}

// Turns implements content.Store.
func (s *Store) Turns(ctx context.Context) ([]string, error) {
	root := s.prefix + "turns/"
	var out []string
	p := s3.NewListObjectsV2Paginator(s.c, &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: &root, Delimiter: aws.String("/")})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("s3 store: list turns: %w", err)
		}
		for _, cp := range page.CommonPrefixes {
			name := strings.TrimSuffix(strings.TrimPrefix(aws.ToString(cp.Prefix), root), "/")
			t, err := content.UnescapeTurn(name)
			if err != nil {
				continue
			}
			out = append(out, t)
		}
	}
	return out, nil
}

// DeleteTurn implements content.Store.
func (s *Store) DeleteTurn(ctx context.Context, turn string) error {
	prefix := s.turnPrefix(turn)
	p := s3.NewListObjectsV2Paginator(s.c, &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: &prefix})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("s3 store: list %s: %w", prefix, err)
		}
		for _, o := range page.Contents {
			if _, err := s.c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: o.Key}); err != nil {
				return fmt.Errorf("s3 store: delete %s: %w", aws.ToString(o.Key), err)
			}
		}
	}
	return nil
}

// CreateBucket creates the bucket when it does not exist yet.
func (s *Store) CreateBucket(ctx context.Context) error {
	if _, err := s.c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &s.bucket}); err == nil {
		return nil
	}
	if _, err := s.c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &s.bucket}); err != nil {
		return fmt.Errorf("s3 store: create bucket %s: %w", s.bucket, err)
	}
	return nil
}
