package emulator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/cloudflare/cloudflare-go/v4"
	"github.com/cloudflare/cloudflare-go/v4/option"
	"github.com/cloudflare/cloudflare-go/v4/r2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	emur2 "github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/r2"
)

func TestR2BucketLifecycle(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	ctx := context.Background()

	b, err := c.R2.Buckets.New(ctx, r2.BucketNewParams{AccountID: cloudflare.F(acct), Name: cloudflare.F("artifacts"),
		LocationHint: cloudflare.F(r2.BucketNewParamsLocationHintWeur)})
	require.NoError(t, err)
	assert.Equal(t, "artifacts", b.Name)
	assert.Equal(t, "weur", string(b.Location))
	assert.Equal(t, r2.BucketStorageClassStandard, b.StorageClass)
	assert.NotEmpty(t, b.CreationDate)

	_, err = c.R2.Buckets.New(ctx, r2.BucketNewParams{AccountID: cloudflare.F(acct), Name: cloudflare.F("artifacts")})
	requireAPIError(t, err, http.StatusConflict, 10004)

	got, err := c.R2.Buckets.Get(ctx, "artifacts", r2.BucketGetParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	assert.Equal(t, b.CreationDate, got.CreationDate)

	require.NoError(t, s.R2().PutObject(acct, "artifacts", "logs/1.txt", []byte("hello")))
	assert.Equal(t, 1, s.Inventory().R2[0].Objects)
	_, err = c.R2.Buckets.Delete(ctx, "artifacts", r2.BucketDeleteParams{AccountID: cloudflare.F(acct)})
	apiErr := requireAPIError(t, err, http.StatusConflict, 10008)
	assert.Contains(t, apiErr.Errors[0].Message, "not empty")
	require.Len(t, s.Inventory().R2, 1, "a non-empty bucket survives delete")

	require.NoError(t, s.R2().DeleteObject(acct, "artifacts", "logs/1.txt"))
	_, err = c.R2.Buckets.Delete(ctx, "artifacts", r2.BucketDeleteParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	_, err = c.R2.Buckets.Get(ctx, "artifacts", r2.BucketGetParams{AccountID: cloudflare.F(acct)})
	requireAPIError(t, err, http.StatusNotFound, 10006)
	_, err = c.R2.Buckets.Delete(ctx, "artifacts", r2.BucketDeleteParams{AccountID: cloudflare.F(acct)})
	requireAPIError(t, err, http.StatusNotFound, 10006)
	assert.ErrorIs(t, s.R2().PutObject(acct, "artifacts", "k", nil), emur2.ErrNoSuchBucket)
	assert.True(t, s.Inventory().Empty())
}

func TestR2InvalidNames(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	for _, name := range []string{"ab", "-lead", "trail-", "UPPER", "under_score", "dots.here", fmt.Sprintf("%064d", 0)} {
		_, err := c.R2.Buckets.New(context.Background(), r2.BucketNewParams{AccountID: cloudflare.F(acct), Name: cloudflare.F(name)})
		apiErr := requireAPIError(t, err, http.StatusBadRequest, 10005)
		assert.Equal(t, "The specified bucket name is not valid.", apiErr.Errors[0].Message, name)
	}
	for _, name := range []string{"abc", "a-b-c", fmt.Sprintf("%063d", 0)} {
		_, err := c.R2.Buckets.New(context.Background(), r2.BucketNewParams{AccountID: cloudflare.F(acct), Name: cloudflare.F(name)})
		require.NoError(t, err, name)
	}
}

func TestR2ListFiltersAndPages(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	ctx := context.Background()
	for _, n := range []string{"app-a", "app-b", "app-c", "other"} {
		_, err := c.R2.Buckets.New(ctx, r2.BucketNewParams{AccountID: cloudflare.F(acct), Name: cloudflare.F(n)})
		require.NoError(t, err)
	}
	all, err := c.R2.Buckets.List(ctx, r2.BucketListParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	assert.Len(t, all.Buckets, 4)

	// R2 pages by cursor, and the SDK's List drops result_info, so read the
	// raw envelope the way a cursor-following caller has to.
	var names []string
	cursor := ""
	for range 5 {
		params := r2.BucketListParams{AccountID: cloudflare.F(acct), NameContains: cloudflare.F("app"), PerPage: cloudflare.F(2.0)}
		if cursor != "" {
			params.Cursor = cloudflare.F(cursor)
		}
		var raw []byte
		_, err := c.R2.Buckets.List(ctx, params, option.WithResponseBodyInto(&raw))
		require.NoError(t, err)
		var env struct {
			Result struct {
				Buckets []struct {
					Name string `json:"name"`
				} `json:"buckets"`
			} `json:"result"`
			ResultInfo struct {
				Cursor  string `json:"cursor"`
				PerPage int    `json:"per_page"`
			} `json:"result_info"`
		}
		require.NoError(t, json.Unmarshal(raw, &env))
		assert.Equal(t, 2, env.ResultInfo.PerPage)
		for _, b := range env.Result.Buckets {
			names = append(names, b.Name)
		}
		if cursor = env.ResultInfo.Cursor; cursor == "" {
			break
		}
	}
	assert.Equal(t, []string{"app-a", "app-b", "app-c"}, names)
}
