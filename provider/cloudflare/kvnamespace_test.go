package cloudflare_test

import (
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
	"github.com/openinspect/pulumi-openinspect/tests/providertest"
)

func TestKvNamespaceLifecycle(t *testing.T) {
	h := providertest.NewHarness(t)
	u := providertest.URN(cloudflare.KvNamespaceToken, "kv")
	inputs := providertest.Props(t, map[string]any{"title": "open-inspect-session-index-test"})
	check, err := h.Server.Check(p.CheckRequest{Urn: u, Inputs: inputs})
	require.NoError(t, err)
	require.Empty(t, check.Failures)

	_, err = h.Server.Create(p.CreateRequest{Urn: u, Properties: check.Inputs, DryRun: true})
	require.NoError(t, err)
	assert.Zero(t, h.Emu.CloudflareCalls(), "preview must not call Cloudflare")

	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: check.Inputs})
	require.NoError(t, err)
	assert.Equal(t, created.ID, created.Properties.Get("namespaceId").AsString())
	require.Len(t, h.Emu.Inventory().KV, 1)

	// A new title renames in place: same ID, no replacement.
	renamed := providertest.Props(t, map[string]any{"title": "open-inspect-renamed"})
	diff, err := h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: renamed})
	require.NoError(t, err)
	assert.Equal(t, p.Update, diff.DetailedDiff["title"].Kind)
	updated, err := h.Server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: renamed})
	require.NoError(t, err)
	assert.Equal(t, "open-inspect-renamed", h.Emu.Inventory().KV[0].Title)

	// Refresh sees a rename made outside Pulumi.
	read, err := h.Server.Read(p.ReadRequest{ID: created.ID, Urn: u, Properties: updated.Properties, Inputs: renamed})
	require.NoError(t, err)
	assert.Equal(t, "open-inspect-renamed", read.Inputs.Get("title").AsString())

	// A second namespace with a taken title is refused, then adopted on request.
	other := providertest.URN(cloudflare.KvNamespaceToken, "other")
	_, err = h.Server.Create(p.CreateRequest{Urn: other, Properties: renamed})
	require.ErrorContains(t, err, "adoptExisting")
	adopted, err := h.Server.Create(p.CreateRequest{Urn: other,
		Properties: providertest.Props(t, map[string]any{"title": "open-inspect-renamed", "adoptExisting": true})})
	require.NoError(t, err)
	assert.Equal(t, created.ID, adopted.ID)
	assert.True(t, adopted.Properties.Get("adopted").AsBool())

	// Import by ID.
	imported, err := h.Server.Read(p.ReadRequest{ID: created.ID, Urn: u})
	require.NoError(t, err)
	assert.Equal(t, "open-inspect-renamed", imported.Inputs.Get("title").AsString())

	require.NoError(t, h.Server.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: updated.Properties}))
	assert.True(t, h.Emu.Inventory().Empty())
}

func TestKvNamespaceCheck(t *testing.T) {
	h := providertest.NewHarness(t)
	check, err := h.Server.Check(p.CheckRequest{Urn: providertest.URN(cloudflare.KvNamespaceToken, "kv"), Inputs: providertest.Props(t, map[string]any{"title": ""})})
	require.NoError(t, err)
	require.Len(t, check.Failures, 1)
	assert.Equal(t, "title", family.FailureField(check.Failures[0]))
	assert.Zero(t, h.Emu.CloudflareCalls())
}
