package cloudflare_test

import (
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
	"github.com/openinspect/pulumi-openinspect/tests/providertest"
)

func TestQueueLifecycle(t *testing.T) {
	h := providertest.NewHarness(t)
	u := providertest.URN(cloudflare.QueueToken, "q")
	checked, _, created := checkedCreate(t, h, u, providertest.Props(t, map[string]any{"name": "open-inspect-slack-completion-test"}))
	assert.Equal(t, created.ID, created.Properties.Get("queueId").AsString())
	require.Len(t, h.Emu.Inventory().Queues, 1)

	diff, err := h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: checked})
	require.NoError(t, err)
	assert.False(t, diff.HasChanges)
	renamed := providertest.Props(t, map[string]any{"name": "open-inspect-other"})
	diff, err = h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: renamed})
	require.NoError(t, err)
	assert.Equal(t, p.UpdateReplace, diff.DetailedDiff["name"].Kind)

	// A taken name is a conflict until adopted; import reads it by ID.
	assertAdoptedOnRequest(t, h, providertest.URN(cloudflare.QueueToken, "dup"), map[string]any{"name": "open-inspect-slack-completion-test"}, created.ID)
	imported, err := h.Server.Read(p.ReadRequest{ID: created.ID, Urn: u})
	require.NoError(t, err)
	assert.Equal(t, "open-inspect-slack-completion-test", imported.Inputs.Get("name").AsString())

	require.NoError(t, h.Server.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: created.Properties}))
	assert.True(t, h.Emu.Inventory().Empty())
	read, err := h.Server.Read(p.ReadRequest{ID: created.ID, Urn: u, Properties: created.Properties})
	require.NoError(t, err)
	assert.Empty(t, read.ID, "a queue deleted out of band drops from state on refresh")
}

func TestQueueCheck(t *testing.T) {
	assertCheckRejects(t, providertest.NewHarness(t), cloudflare.QueueToken, map[string]any{"name": "-Bad_Queue"}, "name")
}
