package engine

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pulumi/providertest/pulumitest"
	"github.com/pulumi/providertest/pulumitest/assertpreview"
	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/e2b"
)

const e2bProgramKey = "  e2bApiKey:\n    type: string\n    secret: true\n"

// withE2B selects the e2b provider against the emulator's E2B API, its key
// given once (sandbox.e2b.apiKey) for the build and the control plane.
func withE2B(t *testing.T, pt *pulumitest.PulumiTest, emu *emulatorProcess) {
	t.Helper()
	editProgram(t, pt, func(program string) string {
		program = strings.Replace(program, "config:\n", "config:\n"+e2bProgramKey, 1)
		return withSandbox("      sandbox:\n        provider: e2b\n        e2b:\n          apiUrl: " + emu.url + "/e2b\n" +
			"          apiKey: ${e2bApiKey}\n")(program)
	})
	require.NoError(t, pt.CurrentStack().SetConfig(t.Context(), "e2bApiKey", auto.ConfigValue{Value: e2b.DefaultAPIKey, Secret: true}))
}

// TestE2BInstallation deploys an installation with the e2b provider: the
// fixture builder (the real e2b SDK, run by the provider's builder runner)
// builds the digest-named template after the control plane is uploaded,
// the control plane carries its name and the one key; a second preview
// makes zero E2B calls; a failing build fails the up with the builder's
// message and the next up retries it, the old template kept.
func TestE2BInstallation(t *testing.T) {
	t.Parallel()
	requirePulumi(t)
	emu := startEmulator(t)
	checkout := fixtureCopy(t)
	pt := newInstallationTest(t, emu)
	pt.SetConfig(t, "upstreamCheckout", checkout)
	withE2B(t, pt, emu)

	up := previewUp(t, pt)
	name := regexp.MustCompile(`^open-inspect-sandbox-engine-[0-9a-f]{12}$`)
	inv := emu.inventory(t).E2B
	require.Len(t, inv.Templates, 1)
	first := inv.Templates[0]
	assert.Regexp(t, name, first.Name)
	require.Len(t, first.Builds, 1)
	build := first.Builds[0]
	assert.Equal(t, "ready", build.Status)
	assert.Equal(t, 2, build.CPU)
	assert.Equal(t, 4096, build.MemoryMB)
	assert.Equal(t, "python:3.12-slim", build.FromImage, "the fixture builder's Dockerfile, turned into steps by the SDK")
	assert.Contains(t, build.Files, "sandbox_runtime/entrypoint.py", "the fixture runtime was uploaded by the builder")
	assert.Equal(t, "e2b: template "+first.Name+" (ready)", up.Outputs["sandboxStatus"].Value)
	assert.False(t, up.Outputs["sandboxStatus"].Secret, "which image runs is not hidden by the secret API key")

	cp := emu.workerBindings(t, "open-inspect-control-plane-engine")
	assert.Equal(t, first.Name, cp["E2B_TEMPLATE_ID"]["text"])
	assert.False(t, controlPlaneVarIsSecret(t, pt, "E2B_TEMPLATE_ID"), "the template name is stored plain: it is not derived from the API key")
	assert.Equal(t, emu.url+"/e2b", cp["E2B_API_URL"]["text"])
	assert.Equal(t, "7200", cp["E2B_SANDBOX_TIMEOUT_SECONDS"]["text"])
	assert.Equal(t, "true", cp["E2B_AUTO_PAUSE"]["text"])
	assert.Equal(t, "secret_text", cp["E2B_API_KEY"]["type"])
	requireNoPlaintext(t, pt.CurrentStack(), e2b.DefaultAPIKey)

	emu.resetCounts(t)
	assertpreview.HasNoChanges(t, pt.Preview(t))
	calls, counts := emu.callsUnder(t, "/e2b/")
	assert.Zero(t, calls, "a no-op preview makes no E2B call: %v", counts)

	// A changed runtime whose build fails: the up fails with the builder's
	// own message; the old template still serves.
	touchRuntime(t, checkout)
	const reason = "step 4: apt-get install exited with status 100 (arranged by the test)"
	emu.adminPost(t, "e2b/build-failures", map[string]any{"reason": reason}, nil)
	// Up directly: this update is about failing (the build runs at create).
	_, err := pt.CurrentStack().Up(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), reason)
	assert.Contains(t, err.Error(), "python build-template.py failed")
	assert.NotContains(t, err.Error(), e2b.DefaultAPIKey)

	retried := previewUp(t, pt)
	inv = emu.inventory(t).E2B
	var names []string
	for _, tpl := range inv.Templates {
		names = append(names, tpl.Name)
	}
	require.Len(t, names, 2, "the new template beside the superseded one: %v", names)
	assert.Contains(t, names, first.Name, "the superseded template is kept through its grace period")
	current := names[slices.IndexFunc(names, func(n string) bool { return n != first.Name })]
	assert.Regexp(t, name, current)
	assert.Equal(t, "e2b: template "+current+" (ready)", retried.Outputs["sandboxStatus"].Value)
	cp = emu.workerBindings(t, "open-inspect-control-plane-engine")
	assert.Equal(t, current, cp["E2B_TEMPLATE_ID"]["text"])

	// Destroy kills the installation's sandboxes and deletes its templates.
	_, err = emu.e2bSandbox(t, first.Name)
	require.NoError(t, err)
	pt.Destroy(t)
	assert.True(t, emu.inventory(t).E2B.Empty(), "%+v", emu.inventory(t).E2B)
}

// e2bSandbox starts a sandbox of a template, as a session would.
func (e *emulatorProcess) e2bSandbox(t *testing.T, template string) (string, error) {
	t.Helper()
	var out struct {
		SandboxID string `json:"sandboxID"`
	}
	e.adminPost(t, "e2b/sandboxes", map[string]any{"template": template}, &out)
	return out.SandboxID, nil
}
