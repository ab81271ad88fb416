package cloudflare_test

import (
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
	"github.com/openinspect/pulumi-openinspect/provider/internal/cfapi"
	"github.com/openinspect/pulumi-openinspect/provider/internal/providertest"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
)

// Two installation identities, shaped like NameLock's.
const (
	ownerA = "oi0123456789abcdef0123456789abcdef"
	ownerB = "oifedcba9876543210fedcba9876543210"
)

func emuClient(t *testing.T, h *providertest.Harness) *cfapi.Client {
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
