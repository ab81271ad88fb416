package cfapi_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapi"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
)

func emulatorClient(t *testing.T) (*cfapi.Client, *emulator.Server) {
	t.Helper()
	emu, err := emulator.Start(emulator.Options{DataDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = emu.Close() })
	client, err := cfapi.New(cfapi.Options{APIToken: emulator.DefaultToken, AccountID: emulator.DefaultAccountID,
		BaseURL: emu.CloudflareBaseURL()})
	require.NoError(t, err)
	return client, emu
}

// The KV value calls the ownership marker uses: a raw body round-trips
// byte for byte (not the JSON object cloudflare-go would send), a missing
// key is ok=false, and listing sees the key.
func TestKVValues(t *testing.T) {
	client, _ := emulatorClient(t)
	ctx := t.Context()
	ns, err := client.CreateNamespace(ctx, "oi-values")
	require.NoError(t, err)

	keys, err := client.ListKeys(ctx, ns.ID, 10)
	require.NoError(t, err)
	assert.Empty(t, keys)
	_, ok, err := client.GetValue(ctx, ns.ID, "_openinspect_owner")
	require.NoError(t, err)
	assert.False(t, ok, "a missing key is not an error")

	require.NoError(t, client.PutValue(ctx, ns.ID, "_openinspect_owner", []byte("oi0123")))
	require.NoError(t, client.PutValue(ctx, ns.ID, "user_repo_branch:u1:r1", []byte("main")))
	value, ok, err := client.GetValue(ctx, ns.ID, "_openinspect_owner")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "oi0123", string(value))
	keys, err = client.ListKeys(ctx, ns.ID, 10)
	require.NoError(t, err)
	assert.Equal(t, []string{"_openinspect_owner", "user_repo_branch:u1:r1"}, keys)

	_, _, err = client.GetValue(ctx, "0000000000000000000000000000dead", "k")
	require.Error(t, err, "a missing namespace is an error, not a missing key")
}

// The R2 object calls: put, get back byte for byte, delete (idempotent), and
// a missing object is ok=false.
func TestR2Objects(t *testing.T) {
	client, emu := emulatorClient(t)
	ctx := t.Context()
	_, err := client.CreateBucket(ctx, "oi-objects", "", "")
	require.NoError(t, err)

	_, ok, err := client.GetObject(ctx, "oi-objects", ".openinspect-owner")
	require.NoError(t, err)
	assert.False(t, ok)
	require.NoError(t, client.PutObject(ctx, "oi-objects", ".openinspect-owner", "text/plain", []byte("oi0123")))
	body, ok, err := client.GetObject(ctx, "oi-objects", ".openinspect-owner")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "oi0123", string(body))
	assert.Equal(t, 1, emu.Inventory().R2[0].Objects)

	require.NoError(t, client.DeleteObject(ctx, "oi-objects", ".openinspect-owner"))
	require.NoError(t, client.DeleteObject(ctx, "oi-objects", ".openinspect-owner"), "deleting a missing object is fine")
	assert.Equal(t, 0, emu.Inventory().R2[0].Objects)
	notEmpty, err := client.DeleteBucket(ctx, "oi-objects")
	require.NoError(t, err)
	assert.False(t, notEmpty)

	err = client.PutObject(ctx, "oi-objects", "k", "text/plain", []byte("x"))
	require.Error(t, err, "writing into a missing bucket fails")
	assert.True(t, cfapi.IsNotFound(err), "%v", err)
}
