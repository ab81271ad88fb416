package cfapi

import (
	"context"
	"fmt"

	cf "github.com/cloudflare/cloudflare-go/v4"
	"github.com/cloudflare/cloudflare-go/v4/r2"
)

// R2 error codes the provider branches on.
const (
	codeR2BucketNotEmpty = 10008
)

// Bucket is an R2 bucket.
type Bucket struct {
	Name         string
	Location     string
	StorageClass string
	CreatedAt    string
}

func bucketFrom(b *r2.Bucket) Bucket {
	return Bucket{Name: b.Name, Location: string(b.Location), StorageClass: string(b.StorageClass), CreatedAt: b.CreationDate}
}

// CreateBucket creates an R2 bucket. locationHint and storageClass may be empty.
func (c *Client) CreateBucket(ctx context.Context, name, locationHint, storageClass string) (Bucket, error) {
	params := r2.BucketNewParams{AccountID: cf.F(c.accountID), Name: cf.F(name)}
	if locationHint != "" {
		params.LocationHint = cf.F(r2.BucketNewParamsLocationHint(locationHint))
	}
	if storageClass != "" {
		params.StorageClass = cf.F(r2.BucketNewParamsStorageClass(storageClass))
	}
	b, err := c.api.R2.Buckets.New(ctx, params)
	if err != nil {
		return Bucket{}, wrap(fmt.Sprintf("create R2 bucket %q", name), err)
	}
	return bucketFrom(b), nil
}

// GetBucket reads a bucket by name; IsNotFound tells a missing one.
func (c *Client) GetBucket(ctx context.Context, name string) (Bucket, error) {
	b, err := c.api.R2.Buckets.Get(ctx, name, r2.BucketGetParams{AccountID: cf.F(c.accountID)})
	if err != nil {
		return Bucket{}, wrap(fmt.Sprintf("read R2 bucket %q", name), err)
	}
	return bucketFrom(b), nil
}

// FindBucket returns the bucket with this name, or ok=false.
func (c *Client) FindBucket(ctx context.Context, name string) (Bucket, bool, error) {
	b, err := c.GetBucket(ctx, name)
	if IsNotFound(err) {
		return Bucket{}, false, nil
	}
	return b, err == nil, err
}

// DeleteBucket deletes a bucket. A missing bucket is fine. A bucket that still
// holds objects is reported with notEmpty=true and no error: the API offers no
// object listing to empty it, and failing would wedge every destroy.
func (c *Client) DeleteBucket(ctx context.Context, name string) (notEmpty bool, err error) {
	_, err = c.api.R2.Buckets.Delete(ctx, name, r2.BucketDeleteParams{AccountID: cf.F(c.accountID)})
	err = wrap(fmt.Sprintf("delete R2 bucket %q", name), err)
	switch {
	case err == nil, IsNotFound(err):
		return false, nil
	case HasCode(err, codeR2BucketNotEmpty):
		return true, nil
	}
	return false, err
}
