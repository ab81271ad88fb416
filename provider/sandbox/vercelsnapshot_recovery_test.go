package sandbox_test

import (
	"testing"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/sandbox"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	emuvercel "github.com/openinspect/pulumi-openinspect/tests/emulator/vercel"
	"github.com/openinspect/pulumi-openinspect/tests/providertest"
)

// A build killed while its sandbox ran leaves that sandbox running (Vercel
// keeps it until its timeout, refusing another of the name with 409
// sandbox_exists). The next create removes it and builds.
func TestVercelSnapshotRecoversFromAKilledBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("installs esbuild and zod from npm on a cold cache; -short skips it")
	}
	h := providertest.NewHarnessWith(t, emulator.Options{Vercel: emuvercel.Options{CommandTime: 20 * time.Millisecond}})
	const project = "prj_openinspect_test"
	u := providertest.URN(sandbox.VercelSnapshotToken, "sandbox-base")
	inputs := providertest.Props(t, map[string]any{"source": fixturePackages(t, "control-plane", "sandbox-runtime"),
		"namePrefix": "oi-a-sandbox-base", "apiUrl": h.Emu.URL() + emuvercel.APIPrefix, "token": emuvercel.DefaultToken, "projectId": project})
	preview, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs, DryRun: true})
	require.NoError(t, err)
	name := preview.Properties.Get("name").AsString()

	// The killed build's sandbox, as the builder started it, still running.
	createVercelSandbox(t, h, project, name, "node22", nil)

	// The stale build sandbox is removed, then the build runs.
	created := createNamed(t, h, u, inputs, name, "created")
	assert.NotEmpty(t, created.Properties.Get("vercelSnapshotId").AsString())
}
