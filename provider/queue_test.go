package provider

import (
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestQueueLifecycle(t *testing.T) {
	h := newHarness(t)
	u := urn(queueToken, "q")
	check, err := h.server.Check(p.CheckRequest{Urn: u, Inputs: props(t, map[string]any{"name": "open-inspect-slack-completion-test"})})
	require.NoError(t, err)
	require.Empty(t, check.Failures)

	_, err = h.server.Create(p.CreateRequest{Urn: u, Properties: check.Inputs, DryRun: true})
	require.NoError(t, err)
	assert.Zero(t, h.emu.CloudflareCalls(), "preview must not call Cloudflare")

	created, err := h.server.Create(p.CreateRequest{Urn: u, Properties: check.Inputs})
	require.NoError(t, err)
	assert.Equal(t, created.ID, created.Properties.Get("queueId").AsString())
	require.Len(t, h.emu.Inventory().Queues, 1)

	diff, err := h.server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: check.Inputs})
	require.NoError(t, err)
	assert.False(t, diff.HasChanges)
	renamed := props(t, map[string]any{"name": "open-inspect-other"})
	diff, err = h.server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: renamed})
	require.NoError(t, err)
	assert.Equal(t, p.UpdateReplace, diff.DetailedDiff["name"].Kind)

	// A taken name is a conflict until adopted; import reads it by ID.
	_, err = h.server.Create(p.CreateRequest{Urn: urn(queueToken, "dup"), Properties: check.Inputs})
	require.ErrorContains(t, err, "adoptExisting")
	adopted, err := h.server.Create(p.CreateRequest{Urn: urn(queueToken, "dup"),
		Properties: props(t, map[string]any{"name": "open-inspect-slack-completion-test", "adoptExisting": true})})
	require.NoError(t, err)
	assert.Equal(t, created.ID, adopted.ID)
	imported, err := h.server.Read(p.ReadRequest{ID: created.ID, Urn: u})
	require.NoError(t, err)
	assert.Equal(t, "open-inspect-slack-completion-test", imported.Inputs.Get("name").AsString())

	require.NoError(t, h.server.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: created.Properties}))
	assert.True(t, h.emu.Inventory().Empty())
	read, err := h.server.Read(p.ReadRequest{ID: created.ID, Urn: u, Properties: created.Properties})
	require.NoError(t, err)
	assert.Empty(t, read.ID, "a queue deleted out of band drops from state on refresh")
}

func TestQueueCheck(t *testing.T) {
	h := newHarness(t)
	check, err := h.server.Check(p.CheckRequest{Urn: urn(queueToken, "q"), Inputs: props(t, map[string]any{"name": "-Bad_Queue"})})
	require.NoError(t, err)
	require.Len(t, check.Failures, 1)
	assert.Equal(t, "name", check.Failures[0].Property)
	assert.Zero(t, h.emu.CloudflareCalls())
}
