package sandbox_test

import (
	"path/filepath"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/sandbox"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/e2b"
	"github.com/openinspect/pulumi-openinspect/tests/providertest"
)

// An E2bTemplate using an existing template (templateId) builds nothing and,
// on delete, kills only the sandboxes of sessions its installation's D1
// records — found by upstream's metadata key, openinspect_session_id — and
// never deletes the template it did not build.
func TestE2bTemplateOverrideDeletesOnlyItsSessionsSandboxes(t *testing.T) {
	h := providertest.NewHarnessWith(t, emulator.Options{})
	dbID := sessionsDB(t, h, "s-mine")
	_, err := h.Emu.E2B().CreateTemplate("", "shared-base")
	require.NoError(t, err)
	u := providertest.URN(sandbox.E2bTemplateToken, "sandbox")
	inputs := providertest.Props(t, map[string]any{
		"source": filepath.Join("..", "..", "tests", "fixtures", "upstream"), "namePrefix": "oi-prod-sandbox",
		"apiUrl": h.Emu.URL() + e2b.APIPrefix, "apiKey": e2b.DefaultAPIKey,
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
		id, err := h.Emu.E2B().CreateSandbox(e2b.SandboxSpec{Template: "shared-base", Metadata: md})
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

// Two installations' templates in one E2B team: deleting one removes its
// built template (current and superseded) and the sandboxes started from
// them or recorded as its sessions, and leaves the other's template and
// sandboxes as they were; deleting the other then empties the team.
func TestE2bTemplateDeleteLeavesAnotherInstallation(t *testing.T) {
	h := providertest.NewHarnessWith(t, emulator.Options{})
	u := providertest.URN(sandbox.E2bTemplateToken, "sandbox")
	type installation struct {
		state     property.Map
		sandboxes []string
	}
	install := func(prefix, session string) installation {
		current, old := prefix+"-0123456789ab", prefix+"-ba9876543210"
		var in installation
		for _, name := range []string{current, old} {
			id, err := h.Emu.E2B().CreateTemplate("", name)
			require.NoError(t, err)
			sb, err := h.Emu.E2B().CreateSandbox(e2b.SandboxSpec{Template: id})
			require.NoError(t, err)
			in.sandboxes = append(in.sandboxes, sb)
		}
		// A session's sandbox started from a template this installation did
		// not build (a manual override earlier in its life).
		_, err := h.Emu.E2B().CreateTemplate("", prefix+"-manual")
		require.NoError(t, err)
		sb, err := h.Emu.E2B().CreateSandbox(e2b.SandboxSpec{Template: prefix + "-manual",
			Metadata: map[string]string{"openinspect_session_id": session}})
		require.NoError(t, err)
		in.sandboxes = append(in.sandboxes, sb)
		in.state = providertest.Props(t, map[string]any{
			"source": ".", "namePrefix": prefix, "apiUrl": h.Emu.URL() + e2b.APIPrefix, "apiKey": e2b.DefaultAPIKey,
			"d1DatabaseId": sessionsDB(t, h, session), "name": current, "digest": "0123456789ab", "e2bTemplateId": "",
			"status": "ready", "built": true,
			"superseded": []any{map[string]any{"name": old, "retiredAt": "2026-12-01T00:00:00Z"}},
		})
		return in
	}
	a, b := install("oi-a-sandbox", "s-a"), install("oi-b-sandbox", "s-b")
	inventory := func() (templates, sandboxes []string) {
		inv := h.Emu.Inventory().E2B
		for _, tpl := range inv.Templates {
			templates = append(templates, tpl.Name)
		}
		for _, sb := range inv.Sandboxes {
			sandboxes = append(sandboxes, sb.ID)
		}
		return templates, sandboxes
	}

	require.NoError(t, h.Server.Delete(p.DeleteRequest{ID: "a", Urn: u, Properties: a.state}))
	templates, sandboxes := inventory()
	assert.ElementsMatch(t, []string{"oi-a-sandbox-manual", "oi-b-sandbox-0123456789ab", "oi-b-sandbox-ba9876543210", "oi-b-sandbox-manual"}, templates,
		"a's built templates are gone, its manual one stays, b's are untouched")
	assert.ElementsMatch(t, b.sandboxes, sandboxes, "only b's sandboxes are left")

	require.NoError(t, h.Server.Delete(p.DeleteRequest{ID: "b", Urn: u, Properties: b.state}))
	templates, sandboxes = inventory()
	assert.ElementsMatch(t, []string{"oi-a-sandbox-manual", "oi-b-sandbox-manual"}, templates)
	assert.Empty(t, sandboxes)
}
