package cloudflare_test

import (
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/providertest"
)

func TestD1DatabaseLifecycle(t *testing.T) {
	h := providertest.NewHarness(t)
	u := providertest.URN(cloudflare.D1DatabaseToken, "db")
	checked, preview, created := checkedCreate(t, h, u, providertest.Props(t, map[string]any{"name": "oi-test-db"}))
	assert.True(t, preview.Properties.Get("databaseId").IsComputed(), "databaseId is unknown in preview")
	require.NotEmpty(t, created.ID)
	assert.Equal(t, created.ID, created.Properties.Get("databaseId").AsString())
	assert.Equal(t, emulator.DefaultAccountID, created.Properties.Get("accountId").AsString())
	assert.False(t, created.Properties.Get("adopted").AsBool())
	inv := h.Emu.Inventory()
	require.Len(t, inv.D1, 1)
	assert.Equal(t, "oi-test-db", inv.D1[0].Name)

	// An unchanged program diffs clean without calling Cloudflare.
	h.Emu.ResetCounts()
	diff, err := h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: checked})
	require.NoError(t, err)
	assert.False(t, diff.HasChanges)
	assert.Zero(t, h.Emu.CloudflareCalls())

	// Refresh reads the same database back.
	read, err := h.Server.Read(p.ReadRequest{ID: created.ID, Urn: u, Properties: created.Properties, Inputs: checked})
	require.NoError(t, err)
	assert.Equal(t, created.ID, read.ID)
	assert.Equal(t, "oi-test-db", read.Inputs.Get("name").AsString())

	// Renaming replaces; toggling adoptExisting is an in-place update.
	renamed := providertest.Props(t, map[string]any{"name": "oi-other"})
	diff, err = h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: renamed})
	require.NoError(t, err)
	assert.Equal(t, p.UpdateReplace, diff.DetailedDiff["name"].Kind)
	adopt := providertest.Props(t, map[string]any{"name": "oi-test-db", "adoptExisting": true})
	diff, err = h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: adopt})
	require.NoError(t, err)
	assert.Equal(t, p.Update, diff.DetailedDiff["adoptExisting"].Kind)
	updated, err := h.Server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: adopt})
	require.NoError(t, err)
	assert.True(t, updated.Properties.Get("adoptExisting").AsBool())
	assert.Equal(t, created.ID, updated.Properties.Get("databaseId").AsString())

	require.NoError(t, h.Server.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: updated.Properties}))
	assert.True(t, h.Emu.Inventory().Empty(), "delete leaves the emulator empty: %+v", h.Emu.Inventory())
	// A repeated delete (an interrupted destroy) succeeds.
	require.NoError(t, h.Server.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: updated.Properties}))

	// Refresh of a database deleted out of band drops it from state.
	read, err = h.Server.Read(p.ReadRequest{ID: created.ID, Urn: u, Properties: created.Properties, Inputs: checked})
	require.NoError(t, err)
	assert.Empty(t, read.ID)
}

func TestD1DatabaseRefusesToCaptureExisting(t *testing.T) {
	h := providertest.NewHarness(t)
	existing, err := emuClient(t, h).CreateDatabase(t.Context(), "oi-taken", "")
	require.NoError(t, err)

	u := providertest.URN(cloudflare.D1DatabaseToken, "db")
	_, err = h.Server.Create(p.CreateRequest{Urn: u, Properties: providertest.Props(t, map[string]any{"name": "oi-taken"})})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "already exists")
	assert.Contains(t, err.Error(), existing.ID)
	require.Len(t, h.Emu.Inventory().D1, 1, "the conflict must not create or delete anything")
	assertAdoptedOnRequest(t, h, u, map[string]any{"name": "oi-taken"}, existing.ID)
}

func TestD1DatabaseImportByID(t *testing.T) {
	h := providertest.NewHarness(t)
	db, err := emuClient(t, h).CreateDatabase(t.Context(), "oi-imported", "")
	require.NoError(t, err)

	// pulumi import calls Read with nothing but the ID.
	read, err := h.Server.Read(p.ReadRequest{ID: db.ID, Urn: providertest.URN(cloudflare.D1DatabaseToken, "db")})
	require.NoError(t, err)
	assert.Equal(t, db.ID, read.ID)
	assert.Equal(t, "oi-imported", read.Inputs.Get("name").AsString())
	assert.Equal(t, db.ID, read.Properties.Get("databaseId").AsString())
}

func TestD1DatabaseCheckNamesTheFieldBeforeAnyCall(t *testing.T) {
	h := providertest.NewHarness(t)
	check, err := h.Server.Check(p.CheckRequest{Urn: providertest.URN(cloudflare.D1DatabaseToken, "db"),
		Inputs: providertest.Props(t, map[string]any{"name": "bad name!", "primaryLocationHint": "mars"})})
	require.NoError(t, err)
	fields := family.ProblemsByField(check.Failures)
	assert.Contains(t, fields["name"], "bad name!")
	assert.Contains(t, fields["primaryLocationHint"], "mars")

	check, err = h.Server.Check(p.CheckRequest{Urn: providertest.URN(cloudflare.D1DatabaseToken, "db"), Inputs: property.NewMap(nil)})
	require.NoError(t, err)
	require.NotEmpty(t, check.Failures)
	assert.Equal(t, "name", family.FailureField(check.Failures[0]))
	assert.Zero(t, h.Emu.CloudflareCalls())
}

func TestD1DatabaseRefusesAnotherAccount(t *testing.T) {
	h := providertest.NewHarness(t)
	created, err := h.Server.Create(p.CreateRequest{Urn: providertest.URN(cloudflare.D1DatabaseToken, "db"), Properties: providertest.Props(t, map[string]any{"name": "oi-acct"})})
	require.NoError(t, err)
	state := created.Properties.Set("accountId", property.New("ffffffffffffffffffffffffffffffff"))
	err = h.Server.Delete(p.DeleteRequest{ID: created.ID, Urn: providertest.URN(cloudflare.D1DatabaseToken, "db"), Properties: state})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ffffffffffffffffffffffffffffffff")
	require.Len(t, h.Emu.Inventory().D1, 1, "nothing is deleted in the wrong account")
}
