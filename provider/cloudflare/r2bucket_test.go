package cloudflare_test

import (
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/providertest"
)

func TestR2BucketLifecycle(t *testing.T) {
	h := providertest.NewHarness(t)
	u := providertest.URN(cloudflare.R2BucketToken, "media")
	check, err := h.Server.Check(p.CheckRequest{Urn: u, Inputs: providertest.Props(t, map[string]any{"name": "open-inspect-media-test", "locationHint": "ENAM"})})
	require.NoError(t, err)
	require.Empty(t, check.Failures)
	assert.Equal(t, "enam", check.Inputs.Get("locationHint").AsString(), "hints are normalized so case never diffs")

	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: check.Inputs})
	require.NoError(t, err)
	assert.Equal(t, "open-inspect-media-test", created.ID)
	require.Len(t, h.Emu.Inventory().R2, 1)

	diff, err := h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: check.Inputs})
	require.NoError(t, err)
	assert.False(t, diff.HasChanges)

	read, err := h.Server.Read(p.ReadRequest{ID: created.ID, Urn: u})
	require.NoError(t, err)
	assert.Equal(t, "open-inspect-media-test", read.Inputs.Get("name").AsString())

	_, err = h.Server.Create(p.CreateRequest{Urn: providertest.URN(cloudflare.R2BucketToken, "dup"), Properties: check.Inputs})
	require.ErrorContains(t, err, "already exists")

	require.NoError(t, h.Server.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: created.Properties}))
	assert.True(t, h.Emu.Inventory().Empty())
}

// A bucket with objects is retained, never wedging the destroy.
func TestR2BucketNonEmptyDeleteRetains(t *testing.T) {
	h := providertest.NewHarness(t)
	u := providertest.URN(cloudflare.R2BucketToken, "media")
	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: providertest.Props(t, map[string]any{"name": "open-inspect-full"})})
	require.NoError(t, err)
	require.NoError(t, h.Emu.R2().PutObject(emulator.DefaultAccountID, "open-inspect-full", "a.png", []byte("x")))

	require.NoError(t, h.Server.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: created.Properties}))
	inv := h.Emu.Inventory()
	require.Len(t, inv.R2, 1, "the non-empty bucket is retained")
	assert.Equal(t, "open-inspect-full", inv.R2[0].Name)
}

func TestR2BucketCheck(t *testing.T) {
	assertCheckRejects(t, providertest.NewHarness(t), cloudflare.R2BucketToken, map[string]any{"name": "Bad_Name", "locationHint": "moon"}, "name", "locationHint")
}
