package emulator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"testing"

	"github.com/cloudflare/cloudflare-go/v4"
	"github.com/cloudflare/cloudflare-go/v4/d1"
	"github.com/cloudflare/cloudflare-go/v4/kv"
	"github.com/cloudflare/cloudflare-go/v4/queues"
	"github.com/cloudflare/cloudflare-go/v4/r2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
)

// The per-object reads a second official client uses (issue 21): a KV
// key's metadata, one queue consumer, and the jurisdiction of R2 and D1
// list entries.

func TestKVKeyMetadata(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	ctx := context.Background()
	ns, err := c.KV.Namespaces.New(ctx, kv.NamespaceNewParams{AccountID: cloudflare.F(acct), Title: cloudflare.F("meta")})
	require.NoError(t, err)

	// A value with metadata, written as KV's multipart form.
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	require.NoError(t, mw.WriteField("value", "v"))
	require.NoError(t, mw.WriteField("metadata", `{"owner":"me","n":2}`))
	require.NoError(t, mw.Close())
	status, env := api(t, s, http.MethodPut, "accounts/"+acct+"/storage/kv/namespaces/"+ns.ID+"/values/with%2Fslash", mw.FormDataContentType(), buf.Bytes())
	require.Equal(t, http.StatusOK, status, "%v", env.Errors)
	_, err = c.KV.Namespaces.Values.Update(ctx, ns.ID, "plain", kv.NamespaceValueUpdateParams{AccountID: cloudflare.F(acct), Value: cloudflare.F("p")})
	require.NoError(t, err)

	res, err := c.KV.Namespaces.Metadata.Get(ctx, ns.ID, "with/slash", kv.NamespaceMetadataGetParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"owner": "me", "n": 2.0}, *res)

	status, env = api(t, s, http.MethodGet, "accounts/"+acct+"/storage/kv/namespaces/"+ns.ID+"/metadata/plain", "", nil)
	require.Equal(t, http.StatusOK, status)
	assert.True(t, env.Success)
	assert.Equal(t, "null", string(env.Result), "a key without metadata has null")

	_, err = c.KV.Namespaces.Metadata.Get(ctx, ns.ID, "missing", kv.NamespaceMetadataGetParams{AccountID: cloudflare.F(acct)})
	requireAPIError(t, err, http.StatusNotFound, 10009)
}

func TestQueueConsumerGet(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	ctx := context.Background()
	mustUpload(t, c, "worker", meta())
	q := createQueue(t, c, "jobs")
	created, err := c.Queues.Consumers.New(ctx, q.QueueID, queues.ConsumerNewParams{AccountID: cloudflare.F(acct),
		Body: queues.ConsumerNewParamsBodyMqWorkerConsumer{ScriptName: cloudflare.F("worker"), Type: cloudflare.F(queues.ConsumerNewParamsBodyMqWorkerConsumerTypeWorker),
			Settings: cloudflare.F(queues.ConsumerNewParamsBodyMqWorkerConsumerSettings{BatchSize: cloudflare.F(7.0)})}})
	require.NoError(t, err)

	status, env := api(t, s, http.MethodGet, "accounts/"+acct+"/queues/"+q.QueueID+"/consumers/"+created.ConsumerID, "", nil)
	require.Equal(t, http.StatusOK, status, "%v", env.Errors)
	var one queues.Consumer
	require.NoError(t, json.Unmarshal(env.Result, &one))
	assert.Equal(t, created.ConsumerID, one.ConsumerID)
	var raw M
	env.into(t, &raw)
	assert.Equal(t, "worker", raw["script_name"])
	assert.EqualValues(t, 7, raw["settings"].(M)["batch_size"])
	for _, key := range []string{"consumer_id", "queue_id", "script_name", "type", "settings", "created_on"} {
		assert.Contains(t, raw, key)
	}
	// The same object as the list's entry.
	listed, err := c.Queues.Consumers.Get(ctx, q.QueueID, queues.ConsumerGetParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	require.Len(t, listed.Result, 1)
	assert.JSONEq(t, listed.Result[0].JSON.RawJSON(), string(env.Result))

	status, env = api(t, s, http.MethodGet, "accounts/"+acct+"/queues/"+q.QueueID+"/consumers/nope", "", nil)
	assert.Equal(t, http.StatusNotFound, status)
	assert.NotZero(t, env.code())
	status, _ = api(t, s, http.MethodGet, "accounts/"+acct+"/queues/"+"00000000000000000000000000000000"+"/consumers/"+created.ConsumerID, "", nil)
	assert.Equal(t, http.StatusNotFound, status)
}

func TestListsCarryJurisdiction(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	ctx := context.Background()
	_, err := c.R2.Buckets.New(ctx, r2.BucketNewParams{AccountID: cloudflare.F(acct), Name: cloudflare.F("media")})
	require.NoError(t, err)
	list, err := c.R2.Buckets.List(ctx, r2.BucketListParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	require.Len(t, list.Buckets, 1)
	assert.EqualValues(t, "default", list.Buckets[0].Jurisdiction)
	got, err := c.R2.Buckets.Get(ctx, "media", r2.BucketGetParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	assert.EqualValues(t, "default", got.Jurisdiction)

	_, err = c.D1.Database.New(ctx, d1.DatabaseNewParams{AccountID: cloudflare.F(acct), Name: cloudflare.F("db")})
	require.NoError(t, err)
	status, env := api(t, s, http.MethodGet, "accounts/"+acct+"/d1/database", "", nil)
	require.Equal(t, http.StatusOK, status)
	var items []M
	env.into(t, &items)
	require.Len(t, items, 1)
	assert.Contains(t, items[0], "jurisdiction")
	assert.Nil(t, items[0]["jurisdiction"], "no jurisdiction is null")
}
