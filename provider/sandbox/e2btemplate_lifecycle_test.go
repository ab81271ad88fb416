package sandbox_test

import (
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/sandbox"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/e2b"
	"github.com/openinspect/pulumi-openinspect/tests/providertest"
)

// A create whose state was never written (the engine killed after the
// build, or the state lost) finds the ready template of its own digest
// name and adopts it: the same template, no second build.
func TestE2bTemplateAdoptsItsOwnReadyTemplate(t *testing.T) {
	if testing.Short() {
		t.Skip("installs the e2b SDK from PyPI on a cold cache; -short skips it")
	}
	h := providertest.NewHarness(t)
	u := providertest.URN(sandbox.E2bTemplateToken, "sandbox")
	inputs := providertest.Props(t, map[string]any{"source": fixturePackages(t, "e2b-infra", "sandbox-runtime"),
		"namePrefix": "oi-a-sandbox", "apiUrl": h.Emu.URL() + e2b.APIPrefix, "apiKey": e2b.DefaultAPIKey})

	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs})
	require.NoError(t, err)
	templates := h.Emu.Inventory().E2B.Templates
	require.Len(t, templates, 1)
	require.Len(t, templates[0].Builds, 1)

	again, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs})
	require.NoError(t, err)
	assert.Equal(t, created.ID, again.ID)
	assert.Equal(t, created.Properties.Get("e2bTemplateId").AsString(), again.Properties.Get("e2bTemplateId").AsString())
	assert.Equal(t, "ready", again.Properties.Get("status").AsString())
	templates = h.Emu.Inventory().E2B.Templates
	require.Len(t, templates, 1)
	assert.Len(t, templates[0].Builds, 1, "adopted, not built a second time")
}
