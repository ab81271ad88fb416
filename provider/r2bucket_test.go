package provider

import (
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
)

func TestR2BucketLifecycle(t *testing.T) {
	h := newHarness(t)
	u := urn(r2BucketToken, "media")
	check, err := h.server.Check(p.CheckRequest{Urn: u, Inputs: props(t, map[string]any{"name": "open-inspect-media-test", "locationHint": "ENAM"})})
	require.NoError(t, err)
	require.Empty(t, check.Failures)
	assert.Equal(t, "enam", check.Inputs.Get("locationHint").AsString(), "hints are normalized so case never diffs")

	created, err := h.server.Create(p.CreateRequest{Urn: u, Properties: check.Inputs})
	require.NoError(t, err)
	assert.Equal(t, "open-inspect-media-test", created.ID)
	require.Len(t, h.emu.Inventory().R2, 1)

	diff, err := h.server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: check.Inputs})
	require.NoError(t, err)
	assert.False(t, diff.HasChanges)

	read, err := h.server.Read(p.ReadRequest{ID: created.ID, Urn: u})
	require.NoError(t, err)
	assert.Equal(t, "open-inspect-media-test", read.Inputs.Get("name").AsString())

	_, err = h.server.Create(p.CreateRequest{Urn: urn(r2BucketToken, "dup"), Properties: check.Inputs})
	require.ErrorContains(t, err, "already exists")

	require.NoError(t, h.server.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: created.Properties}))
	assert.True(t, h.emu.Inventory().Empty())
}

// A bucket with objects is retained, never wedging the destroy.
func TestR2BucketNonEmptyDeleteRetains(t *testing.T) {
	h := newHarness(t)
	u := urn(r2BucketToken, "media")
	created, err := h.server.Create(p.CreateRequest{Urn: u, Properties: props(t, map[string]any{"name": "open-inspect-full"})})
	require.NoError(t, err)
	require.NoError(t, h.emu.PutR2Object(emulator.DefaultAccountID, "open-inspect-full", "a.png", []byte("x")))

	require.NoError(t, h.server.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: created.Properties}))
	inv := h.emu.Inventory()
	require.Len(t, inv.R2, 1, "the non-empty bucket is retained")
	assert.Equal(t, "open-inspect-full", inv.R2[0].Name)
}

func TestR2BucketCheck(t *testing.T) {
	h := newHarness(t)
	check, err := h.server.Check(p.CheckRequest{Urn: urn(r2BucketToken, "b"),
		Inputs: props(t, map[string]any{"name": "Bad_Name", "locationHint": "moon"})})
	require.NoError(t, err)
	fields := map[string]bool{}
	for _, f := range check.Failures {
		fields[f.Property] = true
	}
	assert.True(t, fields["name"])
	assert.True(t, fields["locationHint"])
	assert.Zero(t, h.emu.CloudflareCalls())
}
