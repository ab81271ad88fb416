package cloudflare_test

import (
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapi"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/providertest"
)

// Two installation identities, shaped like NameLock's.
const (
	ownerA = "oi0123456789abcdef0123456789abcdef"
	ownerB = "oifedcba9876543210fedcba9876543210"
)

func emuClient(t testing.TB, h *providertest.Harness) *cfapi.Client {
	t.Helper()
	client, err := cfapi.New(cfapi.Options{APIToken: emulator.DefaultToken,
		AccountID: emulator.DefaultAccountID, BaseURL: h.Emu.CloudflareBaseURL()})
	require.NoError(t, err)
	return client
}

// d1Owner reads the owner row the provider keeps inside a database.
func d1Owner(t *testing.T, client *cfapi.Client, id string) string {
	t.Helper()
	res, err := client.Query(t.Context(), id, "SELECT installation FROM _openinspect_owner")
	require.NoError(t, err)
	require.Len(t, res, 1)
	require.Len(t, res[0].Rows, 1, "exactly one owner row")
	return res[0].Rows[0]["installation"].(string)
}

func TestD1DatabaseOwnershipEvidence(t *testing.T) {
	h := providertest.NewHarness(t)
	client := emuClient(t, h)
	u := providertest.URN(cloudflare.D1DatabaseToken, "db")
	create := func(props map[string]any) (p.CreateResponse, error) {
		return h.Server.Create(p.CreateRequest{Urn: u, Properties: providertest.Props(t, props)})
	}

	created, err := create(map[string]any{"name": "oi-owned", "owner": ownerA})
	require.NoError(t, err)
	assert.False(t, created.Properties.Get("adopted").AsBool())
	assert.Equal(t, ownerA, d1Owner(t, client, created.ID), "the owner is recorded in the database")

	// A create the engine never recorded (a killed run) is finished by the
	// next one: the database records this installation, so it is adopted.
	again, err := create(map[string]any{"name": "oi-owned", "owner": ownerA})
	require.NoError(t, err)
	assert.Equal(t, created.ID, again.ID)
	assert.True(t, again.Properties.Get("adopted").AsBool())

	// Another installation is refused, naming the owner, even with adoptExisting.
	for _, adopt := range []bool{false, true} {
		_, err = create(map[string]any{"name": "oi-owned", "owner": ownerB, "adoptExisting": adopt})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "belongs to installation "+ownerA+", not this one ("+ownerB+")")
		assert.Contains(t, err.Error(), "takeOverFrom: "+ownerA)
		assert.NotContains(t, err.Error(), "pulumi import")
	}
	assert.Equal(t, ownerA, d1Owner(t, client, created.ID), "a refusal changes nothing")

	// takeOverFrom names the live owner: taken over and re-marked.
	taken, err := create(map[string]any{"name": "oi-owned", "owner": ownerB, "takeOverFrom": ownerA})
	require.NoError(t, err)
	assert.Equal(t, created.ID, taken.ID)
	assert.Equal(t, ownerB, d1Owner(t, client, created.ID))
	require.Len(t, h.Emu.Inventory().D1, 1, "nothing was duplicated")
}

func TestD1DatabaseWithoutEvidence(t *testing.T) {
	h := providertest.NewHarness(t)
	client := emuClient(t, h)
	u := providertest.URN(cloudflare.D1DatabaseToken, "db")

	// Empty and unmarked (the provider died between the create and the
	// marker): nothing anyone could lose, so the installation claims it.
	bare, err := client.CreateDatabase(t.Context(), "oi-bare", "")
	require.NoError(t, err)
	claimed, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: providertest.Props(t, map[string]any{"name": "oi-bare", "owner": ownerA})})
	require.NoError(t, err)
	assert.Equal(t, bare.ID, claimed.ID)
	assert.Equal(t, ownerA, d1Owner(t, client, bare.ID))

	// Unmarked with data: needs adoptExisting, and the hint says where.
	used, err := client.CreateDatabase(t.Context(), "oi-used", "")
	require.NoError(t, err)
	_, err = client.Query(t.Context(), used.ID, "CREATE TABLE notes (body TEXT)")
	require.NoError(t, err)
	_, err = h.Server.Create(p.CreateRequest{Urn: u, Properties: providertest.Props(t, map[string]any{"name": "oi-used", "owner": ownerA})})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "records no installation")
	assert.Contains(t, err.Error(), "set adoptExisting: true on the OpenInspect component")
	assert.NotContains(t, err.Error(), "pulumi import")
	adopted, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: providertest.Props(t,
		map[string]any{"name": "oi-used", "owner": ownerA, "adoptExisting": true})})
	require.NoError(t, err)
	assert.Equal(t, used.ID, adopted.ID)
	assert.Equal(t, ownerA, d1Owner(t, client, used.ID), "an adopted database is marked as this installation's")
}

func TestWorkerOwnershipEvidence(t *testing.T) {
	h := providertest.NewHarness(t)
	client := emuClient(t, h)
	u := providertest.URN(cloudflare.WorkerToken, "w")
	create := func(props map[string]any) (p.CreateResponse, error) {
		props["name"], props["content"] = "oi-owned-worker", providertest.FixtureWorker
		return h.Server.Create(p.CreateRequest{Urn: u, Properties: providertest.Props(t, props)})
	}
	tags := func() []string {
		s, err := client.GetScriptSettings(t.Context(), "oi-owned-worker")
		require.NoError(t, err)
		return s.Tags
	}

	created, err := create(map[string]any{"owner": ownerA})
	require.NoError(t, err)
	assert.False(t, created.Properties.Get("adopted").AsBool())
	assert.Equal(t, []string{"openinspect-owner-" + ownerA}, tags(), "the owner is a script tag")

	again, err := create(map[string]any{"owner": ownerA})
	require.NoError(t, err, "a script carrying this installation's tag is adopted")
	assert.True(t, again.Properties.Get("adopted").AsBool())

	for _, adopt := range []bool{false, true} {
		_, err = create(map[string]any{"owner": ownerB, "adoptExisting": adopt})
		require.Error(t, err)
		assert.Contains(t, err.Error(), `worker "oi-owned-worker" already exists`)
		assert.Contains(t, err.Error(), "belongs to installation "+ownerA)
	}
	_, err = create(map[string]any{"owner": ownerB, "takeOverFrom": ownerA})
	require.NoError(t, err)
	assert.Equal(t, []string{"openinspect-owner-" + ownerB}, tags(), "the take-over's upload re-tags the script")
	assert.Len(t, h.Emu.Inventory().Workers, 1)
}

// kvOwner reads the owner key the provider keeps in a namespace ("" when absent).
func kvOwner(t *testing.T, client *cfapi.Client, id string) string {
	t.Helper()
	value, ok, err := client.GetValue(t.Context(), id, "_openinspect_owner")
	require.NoError(t, err)
	if !ok {
		return ""
	}
	return string(value)
}

// r2Owner reads the owner object the provider keeps in a bucket ("" when absent).
func r2Owner(t *testing.T, client *cfapi.Client, bucket string) string {
	t.Helper()
	body, ok, err := client.GetObject(t.Context(), bucket, ".openinspect-owner")
	require.NoError(t, err)
	if !ok {
		return ""
	}
	return string(body)
}

func TestKvNamespaceOwnershipEvidence(t *testing.T) {
	h := providertest.NewHarness(t)
	client := emuClient(t, h)
	u := providertest.URN(cloudflare.KvNamespaceToken, "kv")
	create := func(props map[string]any) (p.CreateResponse, error) {
		props["title"] = "oi-owned-kv"
		return h.Server.Create(p.CreateRequest{Urn: u, Properties: providertest.Props(t, props)})
	}

	created, err := create(map[string]any{"owner": ownerA})
	require.NoError(t, err)
	assert.False(t, created.Properties.Get("adopted").AsBool())
	assert.Equal(t, ownerA, kvOwner(t, client, created.ID), "the owner is the value of a reserved key")

	again, err := create(map[string]any{"owner": ownerA})
	require.NoError(t, err, "a namespace recording this installation is adopted")
	assert.Equal(t, created.ID, again.ID)
	assert.True(t, again.Properties.Get("adopted").AsBool())

	for _, adopt := range []bool{false, true} {
		_, err = create(map[string]any{"owner": ownerB, "adoptExisting": adopt})
		require.Error(t, err)
		assert.Contains(t, err.Error(), `KV namespace "oi-owned-kv" already exists`)
		assert.Contains(t, err.Error(), "belongs to installation "+ownerA+", not this one ("+ownerB+")")
		assert.Contains(t, err.Error(), "takeOverFrom: "+ownerA)
	}
	assert.Equal(t, ownerA, kvOwner(t, client, created.ID), "a refusal changes nothing")

	taken, err := create(map[string]any{"owner": ownerB, "takeOverFrom": ownerA})
	require.NoError(t, err)
	assert.Equal(t, created.ID, taken.ID)
	assert.Equal(t, ownerB, kvOwner(t, client, created.ID), "the take-over re-marks the namespace")

	// An owner input that changes (state recorded before KV carried
	// evidence) is written by Update, beside a rename.
	updated, err := h.Server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: taken.Properties,
		Inputs: providertest.Props(t, map[string]any{"title": "oi-owned-kv-renamed", "owner": ownerA})})
	require.NoError(t, err)
	assert.Equal(t, ownerA, kvOwner(t, client, created.ID))
	require.Len(t, h.Emu.Inventory().KV, 1, "nothing was duplicated")
	assert.Equal(t, "oi-owned-kv-renamed", h.Emu.Inventory().KV[0].Title)

	require.NoError(t, h.Server.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: updated.Properties}))
	assert.True(t, h.Emu.Inventory().Empty(), "the marker never blocks the delete")
}

func TestKvNamespaceWithoutEvidence(t *testing.T) {
	h := providertest.NewHarness(t)
	client := emuClient(t, h)
	u := providertest.URN(cloudflare.KvNamespaceToken, "kv")

	// Without a single key (a provider killed between create and marker):
	// nothing anyone could lose, so the installation claims it.
	bare, err := client.CreateNamespace(t.Context(), "oi-bare-kv")
	require.NoError(t, err)
	claimed, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: providertest.Props(t, map[string]any{"title": "oi-bare-kv", "owner": ownerA})})
	require.NoError(t, err)
	assert.Equal(t, bare.ID, claimed.ID)
	assert.Equal(t, ownerA, kvOwner(t, client, bare.ID))

	// Unmarked with keys: needs adoptExisting.
	used, err := client.CreateNamespace(t.Context(), "oi-used-kv")
	require.NoError(t, err)
	require.NoError(t, client.PutValue(t.Context(), used.ID, "session:1", []byte("{}")))
	_, err = h.Server.Create(p.CreateRequest{Urn: u, Properties: providertest.Props(t, map[string]any{"title": "oi-used-kv", "owner": ownerA})})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "records no installation")
	assert.Contains(t, err.Error(), "set adoptExisting: true on the OpenInspect component")
	assert.Equal(t, "", kvOwner(t, client, used.ID), "a refusal marks nothing")
	adopted, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: providertest.Props(t,
		map[string]any{"title": "oi-used-kv", "owner": ownerA, "adoptExisting": true})})
	require.NoError(t, err)
	assert.Equal(t, used.ID, adopted.ID)
	assert.Equal(t, ownerA, kvOwner(t, client, used.ID), "an adopted namespace is marked as this installation's")
}

func TestR2BucketOwnershipEvidence(t *testing.T) {
	h := providertest.NewHarness(t)
	client := emuClient(t, h)
	u := providertest.URN(cloudflare.R2BucketToken, "media")
	create := func(props map[string]any) (p.CreateResponse, error) {
		props["name"] = "oi-owned-media"
		return h.Server.Create(p.CreateRequest{Urn: u, Properties: providertest.Props(t, props)})
	}

	created, err := create(map[string]any{"owner": ownerA})
	require.NoError(t, err)
	assert.False(t, created.Properties.Get("adopted").AsBool())
	assert.Equal(t, ownerA, r2Owner(t, client, "oi-owned-media"), "the owner is the body of a reserved object")

	again, err := create(map[string]any{"owner": ownerA})
	require.NoError(t, err, "a bucket recording this installation is adopted")
	assert.True(t, again.Properties.Get("adopted").AsBool())

	for _, adopt := range []bool{false, true} {
		_, err = create(map[string]any{"owner": ownerB, "adoptExisting": adopt})
		require.Error(t, err)
		assert.Contains(t, err.Error(), `R2 bucket "oi-owned-media" already exists`)
		assert.Contains(t, err.Error(), "belongs to installation "+ownerA+", not this one ("+ownerB+")")
		assert.Contains(t, err.Error(), "takeOverFrom: "+ownerA)
	}
	assert.Equal(t, ownerA, r2Owner(t, client, "oi-owned-media"), "a refusal changes nothing")

	taken, err := create(map[string]any{"owner": ownerB, "takeOverFrom": ownerA})
	require.NoError(t, err)
	assert.Equal(t, ownerB, r2Owner(t, client, "oi-owned-media"), "the take-over re-marks the bucket")

	updated, err := h.Server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: taken.Properties,
		Inputs: providertest.Props(t, map[string]any{"name": "oi-owned-media", "owner": ownerA})})
	require.NoError(t, err)
	assert.Equal(t, ownerA, r2Owner(t, client, "oi-owned-media"), "a changed owner input is written by Update")
	require.Len(t, h.Emu.Inventory().R2, 1)
	assert.Equal(t, 1, h.Emu.Inventory().R2[0].Objects, "one marker, never two")

	// The marker is removed before the delete, which R2 allows only on an
	// empty bucket.
	require.NoError(t, h.Server.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: updated.Properties}))
	assert.True(t, h.Emu.Inventory().Empty(), "the marker never blocks the delete: %+v", h.Emu.Inventory())
}

// A bucket retained for its other objects keeps its evidence: its
// installation adopts it again, another is refused naming it.
func TestR2BucketRetainedKeepsEvidence(t *testing.T) {
	h := providertest.NewHarness(t)
	client := emuClient(t, h)
	u := providertest.URN(cloudflare.R2BucketToken, "media")
	props := func(owner string) map[string]any { return map[string]any{"name": "oi-kept-media", "owner": owner} }
	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: providertest.Props(t, props(ownerA))})
	require.NoError(t, err)
	require.NoError(t, h.Emu.R2().PutObject(emulator.DefaultAccountID, "oi-kept-media", "session/1.png", []byte("x")))

	require.NoError(t, h.Server.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: created.Properties}))
	inv := h.Emu.Inventory()
	require.Len(t, inv.R2, 1, "the non-empty bucket is retained")
	assert.Equal(t, 2, inv.R2[0].Objects, "its object and the marker written back")
	assert.Equal(t, ownerA, r2Owner(t, client, "oi-kept-media"))

	_, err = h.Server.Create(p.CreateRequest{Urn: u, Properties: providertest.Props(t, props(ownerB))})
	require.ErrorContains(t, err, "belongs to installation "+ownerA)
	again, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: providertest.Props(t, props(ownerA))})
	require.NoError(t, err)
	assert.True(t, again.Properties.Get("adopted").AsBool())
}

func TestR2BucketWithoutEvidence(t *testing.T) {
	h := providertest.NewHarness(t)
	client := emuClient(t, h)
	u := providertest.URN(cloudflare.R2BucketToken, "media")

	// R2's v4 API cannot list objects, so even an empty unmarked bucket
	// needs adoptExisting.
	_, err := client.CreateBucket(t.Context(), "oi-bare-media", "", "")
	require.NoError(t, err)
	_, err = h.Server.Create(p.CreateRequest{Urn: u, Properties: providertest.Props(t, map[string]any{"name": "oi-bare-media", "owner": ownerA})})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "records no installation")
	assert.Contains(t, err.Error(), "set adoptExisting: true on the OpenInspect component")
	assert.Equal(t, "", r2Owner(t, client, "oi-bare-media"), "a refusal marks nothing")
	adopted, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: providertest.Props(t,
		map[string]any{"name": "oi-bare-media", "owner": ownerA, "adoptExisting": true})})
	require.NoError(t, err)
	assert.True(t, adopted.Properties.Get("adopted").AsBool())
	assert.Equal(t, ownerA, r2Owner(t, client, "oi-bare-media"), "an adopted bucket is marked as this installation's")
}
