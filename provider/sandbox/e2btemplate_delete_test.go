package sandbox_test

import (
	"path/filepath"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/internal/providertest"
	"github.com/openinspect/pulumi-openinspect/provider/sandbox"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
)

// An E2bTemplate using an existing template (templateId) builds nothing and,
// on delete, kills only the sandboxes of sessions its installation's D1
// records — found by upstream's metadata key, openinspect_session_id — and
// never deletes the template it did not build.
func TestE2bTemplateOverrideDeletesOnlyItsSessionsSandboxes(t *testing.T) {
	h := providertest.NewHarnessWith(t, emulator.Options{})
	dbID := sessionsDB(t, h, "s-mine")
	_, err := h.Emu.CreateE2BTemplate("", "shared-base")
	require.NoError(t, err)
	u := providertest.URN(sandbox.E2bTemplateToken, "sandbox")
	inputs := providertest.Props(t, map[string]any{
		"source": filepath.Join("..", "..", "tests", "fixtures", "upstream"), "namePrefix": "oi-prod-sandbox",
		"apiUrl": h.Emu.E2BAPIURL(), "apiKey": emulator.DefaultE2BAPIKey,
		"templateId": "shared-base", "d1DatabaseId": dbID,
	})
	check, err := h.Server.Check(p.CheckRequest{Urn: u, Inputs: inputs})
	require.NoError(t, err)
	require.Empty(t, check.Failures)
	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: check.Inputs})
	require.NoError(t, err)
	assert.Equal(t, "shared-base", created.Properties.Get("name").AsString())
	assert.False(t, created.Properties.Get("built").AsBool())
	templates := h.Emu.Inventory().E2B.Templates
	require.Len(t, templates, 1)
	require.Empty(t, templates[0].Builds, "an override builds nothing")

	sandboxOf := func(session string) string {
		md := map[string]string{"openinspect_framework": "open-inspect"}
		if session != "" {
			md["openinspect_session_id"] = session
		}
		id, err := h.Emu.CreateE2BSandbox(emulator.E2BSandboxSpec{Template: "shared-base", Metadata: md})
		require.NoError(t, err)
		return id
	}
	mine, theirs, unlabelled := sandboxOf("s-mine"), sandboxOf("s-theirs"), sandboxOf("")
	require.NoError(t, h.Server.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: created.Properties}))

	inv := h.Emu.Inventory().E2B
	var left []string
	for _, sb := range inv.Sandboxes {
		left = append(left, sb.ID)
	}
	assert.NotContains(t, left, mine, "the sandbox of a session this installation recorded is killed")
	assert.ElementsMatch(t, []string{theirs, unlabelled}, left, "another installation's sandboxes survive")
	require.Len(t, inv.Templates, 1, "the template it did not build stays")
	assert.Equal(t, "shared-base", inv.Templates[0].Name)
	assert.Empty(t, inv.Templates[0].Builds)
}
