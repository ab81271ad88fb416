package sandbox_test

import (
	"os"
	"path/filepath"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/providertest"
)

// createNamed creates the image resource u from inputs and asserts that it
// is named name and in status.
func createNamed(t *testing.T, h *providertest.Harness, u resource.URN, inputs property.Map, name, status string) p.CreateResponse {
	t.Helper()
	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs})
	require.NoError(t, err)
	assert.Equal(t, name, created.Properties.Get("name").AsString())
	assert.Equal(t, status, created.Properties.Get("status").AsString())
	return created
}

// imageCase is an image resource as its lifecycle test holds it: the
// resource, its recorded state and its inputs.
type imageCase struct {
	h      *providertest.Harness
	id     string
	urn    resource.URN
	state  property.Map
	inputs property.Map
}

// assertIdleDiff asserts what every image resource promises of an
// unchanged program: a diff with no change, made without one call to the
// backend (calls counts them).
func (c imageCase) assertIdleDiff(t *testing.T, calls func() int) {
	t.Helper()
	c.h.Emu.ResetCounts()
	diff, err := c.h.Server.Diff(p.DiffRequest{ID: c.id, Urn: c.urn, State: c.state, Inputs: c.inputs})
	require.NoError(t, err)
	assert.False(t, diff.HasChanges, "%v", diff.DetailedDiff)
	assert.Zero(t, calls())
}

// changeRuntime edits the sandbox runtime in checkout and asserts the
// resource then wants a rebuild: the runtime is part of every image's
// digest.
func (c imageCase) changeRuntime(t *testing.T, checkout string) {
	t.Helper()
	entry := filepath.Join(checkout, "packages", "sandbox-runtime", "src", "sandbox_runtime", "entrypoint.py")
	b, err := os.ReadFile(entry)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(entry, append(b, []byte("\n# v2\n")...), 0o644))
	diff, err := c.h.Server.Diff(p.DiffRequest{ID: c.id, Urn: c.urn, State: c.state, Inputs: c.inputs})
	require.NoError(t, err)
	assert.Equal(t, map[string]p.PropertyDiff{"source": {Kind: p.Update, InputDiff: true}}, diff.DetailedDiff)
}
