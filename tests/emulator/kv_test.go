package emulator_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/cloudflare/cloudflare-go/v4"
	"github.com/cloudflare/cloudflare-go/v4/kv"
	"github.com/cloudflare/cloudflare-go/v4/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
)

func TestKVNamespaceLifecycle(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	ctx := context.Background()

	ns, err := c.KV.Namespaces.New(ctx, kv.NamespaceNewParams{AccountID: cloudflare.F(acct), Title: cloudflare.F("sessions")})
	require.NoError(t, err)
	assert.Regexp(t, `^[0-9a-f]{32}$`, ns.ID)
	assert.Equal(t, "sessions", ns.Title)
	assert.True(t, ns.SupportsURLEncoding)

	_, err = c.KV.Namespaces.New(ctx, kv.NamespaceNewParams{AccountID: cloudflare.F(acct), Title: cloudflare.F("sessions")})
	apiErr := requireAPIError(t, err, http.StatusBadRequest, 10014)
	assert.Equal(t, "a namespace with this account ID and title already exists", apiErr.Errors[0].Message)

	got, err := c.KV.Namespaces.Get(ctx, ns.ID, kv.NamespaceGetParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	assert.Equal(t, ns.ID, got.ID)

	renamed, err := c.KV.Namespaces.Update(ctx, ns.ID, kv.NamespaceUpdateParams{AccountID: cloudflare.F(acct), Title: cloudflare.F("sessions-v2")})
	require.NoError(t, err)
	assert.Equal(t, "sessions-v2", renamed.Title)
	other, err := c.KV.Namespaces.New(ctx, kv.NamespaceNewParams{AccountID: cloudflare.F(acct), Title: cloudflare.F("other")})
	require.NoError(t, err)
	_, err = c.KV.Namespaces.Update(ctx, other.ID, kv.NamespaceUpdateParams{AccountID: cloudflare.F(acct), Title: cloudflare.F("sessions-v2")})
	requireAPIError(t, err, http.StatusBadRequest, 10014)

	for _, id := range []string{ns.ID, other.ID} {
		_, err = c.KV.Namespaces.Delete(ctx, id, kv.NamespaceDeleteParams{AccountID: cloudflare.F(acct)})
		require.NoError(t, err)
	}
	_, err = c.KV.Namespaces.Get(ctx, ns.ID, kv.NamespaceGetParams{AccountID: cloudflare.F(acct)})
	requireAPIError(t, err, http.StatusNotFound, 10013)
	_, err = c.KV.Namespaces.Delete(ctx, ns.ID, kv.NamespaceDeleteParams{AccountID: cloudflare.F(acct)})
	requireAPIError(t, err, http.StatusNotFound, 10013)
	assert.True(t, s.Inventory().Empty())
}

func TestKVNamespaceList(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	ctx := context.Background()
	for i := range 5 {
		_, err := c.KV.Namespaces.New(ctx, kv.NamespaceNewParams{AccountID: cloudflare.F(acct), Title: cloudflare.F(fmt.Sprintf("ns-%d", i))})
		require.NoError(t, err)
	}
	pager := c.KV.Namespaces.ListAutoPaging(ctx, kv.NamespaceListParams{AccountID: cloudflare.F(acct), PerPage: cloudflare.F(2.0)})
	var titles []string
	for pager.Next() {
		titles = append(titles, pager.Current().Title)
		require.LessOrEqual(t, len(titles), 5, "pager did not terminate")
	}
	require.NoError(t, pager.Err())
	assert.Equal(t, []string{"ns-0", "ns-1", "ns-2", "ns-3", "ns-4"}, titles)
}

func TestKVKeysAndValues(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	ctx := context.Background()
	ns, err := c.KV.Namespaces.New(ctx, kv.NamespaceNewParams{AccountID: cloudflare.F(acct), Title: cloudflare.F("cache")})
	require.NoError(t, err)

	keys, err := c.KV.Namespaces.Keys.List(ctx, ns.ID, kv.NamespaceKeyListParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	assert.Empty(t, keys.Result, "a new namespace has no keys")
	assert.Empty(t, keys.ResultInfo.Cursor)

	// The value is the raw request body, as with the real API.
	for i := range 12 {
		_, err := c.KV.Namespaces.Values.Update(ctx, ns.ID, fmt.Sprintf("user/%02d", i), kv.NamespaceValueUpdateParams{
			AccountID: cloudflare.F(acct), Value: cloudflare.F("ignored"),
		}, option.WithRequestBody("application/octet-stream", []byte(fmt.Sprintf("value-%d", i))))
		require.NoError(t, err)
	}
	resp, err := c.KV.Namespaces.Values.Get(ctx, ns.ID, "user/07", kv.NamespaceValueGetParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, "value-7", string(body))

	_, err = c.KV.Namespaces.Values.Get(ctx, ns.ID, "missing", kv.NamespaceValueGetParams{AccountID: cloudflare.F(acct)})
	requireAPIError(t, err, http.StatusNotFound, 10009)

	// Keys page by cursor; the auto-pager follows it to the end.
	pager := c.KV.Namespaces.Keys.ListAutoPaging(ctx, ns.ID, kv.NamespaceKeyListParams{AccountID: cloudflare.F(acct), Limit: cloudflare.F(10.0)})
	var names []string
	for pager.Next() {
		names = append(names, pager.Current().Name)
		require.LessOrEqual(t, len(names), 12, "pager did not terminate")
	}
	require.NoError(t, pager.Err())
	require.Len(t, names, 12)
	assert.Equal(t, "user/00", names[0])
	assert.Equal(t, "user/11", names[11])

	inv := s.Inventory()
	require.Len(t, inv.KV, 1)
	assert.Equal(t, 12, inv.KV[0].Keys)
}
