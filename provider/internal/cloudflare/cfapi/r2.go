package cfapi

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"

	cf "github.com/cloudflare/cloudflare-go/v4"
	"github.com/cloudflare/cloudflare-go/v4/option"
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

// The v4 API's object routes (the ones `wrangler r2 object get/put/delete
// --remote` uses; cloudflare-go has no methods for them). S3 is the
// documented object API, but it needs separate credentials: these take the
// provider's token.
func (c *Client) r2ObjectPath(bucket, key string) string {
	return fmt.Sprintf("accounts/%s/r2/buckets/%s/objects/%s", c.accountID, url.PathEscape(bucket), url.PathEscape(key))
}

// GetObject reads an object's body; ok=false when the object (or the
// bucket) does not exist.
func (c *Client) GetObject(ctx context.Context, bucket, key string) (body []byte, ok bool, err error) {
	var res *http.Response
	err = wrap(fmt.Sprintf("read object %q of R2 bucket %q", key, bucket), c.api.Get(ctx, c.r2ObjectPath(bucket, key), nil, &res))
	if IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer res.Body.Close()
	if body, err = io.ReadAll(res.Body); err != nil {
		return nil, false, fmt.Errorf("read object %q of R2 bucket %q: %w", key, bucket, err)
	}
	return body, true, nil
}

// PutObject stores body under key, replacing any earlier object.
func (c *Client) PutObject(ctx context.Context, bucket, key, contentType string, body []byte) error {
	var res *http.Response
	err := c.api.Put(ctx, c.r2ObjectPath(bucket, key), nil, &res, option.WithRequestBody(contentType, body))
	if err != nil {
		return wrap(fmt.Sprintf("write object %q of R2 bucket %q", key, bucket), err)
	}
	return res.Body.Close()
}

// DeleteObject removes an object; a missing object or bucket is fine.
func (c *Client) DeleteObject(ctx context.Context, bucket, key string) error {
	var res *http.Response
	err := wrap(fmt.Sprintf("delete object %q of R2 bucket %q", key, bucket), c.api.Delete(ctx, c.r2ObjectPath(bucket, key), nil, &res))
	if IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return res.Body.Close()
}
