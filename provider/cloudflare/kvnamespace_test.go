package cloudflare_test

import (
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
	"github.com/openinspect/pulumi-openinspect/tests/providertest"
)

func TestKvNamespaceLifecycle(t *testing.T) {
	h := providertest.NewHarness(t)
	u := providertest.URN(cloudflare.KvNamespaceToken, "kv")
	_, _, created := checkedCreate(t, h, u, providertest.Props(t, map[string]any{"title": "open-inspect-session-index-test"}))
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
	assertAdoptedOnRequest(t, h, providertest.URN(cloudflare.KvNamespaceToken, "other"), map[string]any{"title": "open-inspect-renamed"}, created.ID)

	// Import by ID.
	imported, err := h.Server.Read(p.ReadRequest{ID: created.ID, Urn: u})
	require.NoError(t, err)
	assert.Equal(t, "open-inspect-renamed", imported.Inputs.Get("title").AsString())

	require.NoError(t, h.Server.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: updated.Properties}))
	assert.True(t, h.Emu.Inventory().Empty())
}

func TestKvNamespaceCheck(t *testing.T) {
	assertCheckRejects(t, providertest.NewHarness(t), cloudflare.KvNamespaceToken, map[string]any{"title": ""}, "title")
}
