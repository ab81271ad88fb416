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

	"github.com/openinspect/pulumi-openinspect/tests/emulator/opencomputer"
)

const openComputerProgramKey = "  openComputerApiKey:\n    type: string\n    secret: true\n"

// withOpenComputer selects the opencomputer provider against the
// emulator's OpenComputer API, its URL and key given once
// (sandbox.opencomputer) for the build and the control plane.
func withOpenComputer(t *testing.T, pt *pulumitest.PulumiTest, emu *emulatorProcess) {
	t.Helper()
	editProgram(t, pt, func(program string) string {
		program = strings.Replace(program, "config:\n", "config:\n"+openComputerProgramKey, 1)
		return withSandbox("      sandbox:\n        provider: opencomputer\n        opencomputer:\n          apiUrl: " + emu.url + "/opencomputer/api\n" +
			"          apiKey: ${openComputerApiKey}\n")(program)
	})
	require.NoError(t, pt.CurrentStack().SetConfig(t.Context(), "openComputerApiKey",
		auto.ConfigValue{Value: opencomputer.DefaultAPIKey, Secret: true}))
}

// TestOpenComputerInstallation deploys an installation with the
// opencomputer provider: the fixture builder (bundled by its own esbuild
// script and run with Node and the real @opencomputer/sdk by the builder
// runner) builds the digest-named snapshot before the control plane is
// uploaded with its name, URL and the one key; a second preview makes zero
// OpenComputer calls; a failing build fails the up with the builder's
// message and the next up retries it, the old snapshot kept; destroy
// deletes what the installation built.
func TestOpenComputerInstallation(t *testing.T) {
	t.Parallel()
	requirePulumi(t)
	emu := startEmulator(t)
	checkout := fixtureCopy(t)
	pt := newInstallationTest(t, emu)
	pt.SetConfig(t, "upstreamCheckout", checkout)
	withOpenComputer(t, pt, emu)

	up := previewUp(t, pt)
	name := regexp.MustCompile(`^open-inspect-sandbox-engine-[0-9a-f]{16}$`)
	snaps := emu.inventory(t).OpenComputer.Snapshots
	require.Len(t, snaps, 1)
	first := snaps[0]
	assert.Regexp(t, name, first.Name)
	assert.Equal(t, "ready", first.Status)
	assert.Equal(t, 8192, first.BuilderMemoryMB, "upstream's default builder memory")
	assert.Contains(t, first.Files, "/home/sandbox/app/sandbox_runtime/entrypoint.py", "the fixture runtime was inlined by the builder")
	assert.Equal(t, "opencomputer: snapshot "+first.Name+" (ready)", up.Outputs["sandboxStatus"].Value)
	assert.False(t, up.Outputs["sandboxStatus"].Secret, "which image runs is not hidden by the secret API key")

	cp := emu.workerBindings(t, "open-inspect-control-plane-engine")
	assert.Equal(t, first.Name, cp["OPENCOMPUTER_TEMPLATE"]["text"])
	assert.False(t, controlPlaneVarIsSecret(t, pt, "OPENCOMPUTER_TEMPLATE"), "the snapshot name is stored plain: it is not derived from the API key")
	assert.Equal(t, emu.url+"/opencomputer/api", cp["OPENCOMPUTER_API_URL"]["text"])
	assert.Equal(t, "secret_text", cp["OPENCOMPUTER_API_KEY"]["type"])
	assert.Equal(t, "secret_text", cp["ANTHROPIC_API_KEY"]["type"])
	assert.Equal(t, "opencomputer", cp["SANDBOX_PROVIDER"]["text"])
	requireNoPlaintext(t, pt.CurrentStack(), opencomputer.DefaultAPIKey)

	emu.resetCounts(t)
	assertpreview.HasNoChanges(t, pt.Preview(t))
	calls, counts := emu.callsUnder(t, "/opencomputer/")
	assert.Zero(t, calls, "a no-op preview makes no OpenComputer call: %v", counts)

	// A changed runtime whose build fails: the up fails with the builder's
	// own message; the old snapshot still serves.
	touchRuntime(t, checkout)
	const reason = "step 5: uv pip install exited with status 2 (arranged by the test)"
	emu.adminPost(t, "opencomputer/build-failures", map[string]any{"reason": reason}, nil)
	// Up directly: this update is about failing (the build runs at create).
	_, err := pt.CurrentStack().Up(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), reason)
	assert.Contains(t, err.Error(), "node build-template failed")
	assert.NotContains(t, err.Error(), opencomputer.DefaultAPIKey)
	cp = emu.workerBindings(t, "open-inspect-control-plane-engine")
	assert.Equal(t, first.Name, cp["OPENCOMPUTER_TEMPLATE"]["text"], "the control plane keeps the old snapshot while the new one fails")

	retried := previewUp(t, pt)
	var names []string
	for _, s := range emu.inventory(t).OpenComputer.Snapshots {
		if s.Status == "ready" {
			names = append(names, s.Name)
		}
	}
	require.Len(t, names, 2, "the new snapshot beside the superseded one: %v", names)
	assert.Contains(t, names, first.Name, "the superseded snapshot is kept through its grace period")
	current := names[slices.IndexFunc(names, func(n string) bool { return n != first.Name })]
	assert.Regexp(t, name, current)
	assert.Equal(t, "opencomputer: snapshot "+current+" (ready)", retried.Outputs["sandboxStatus"].Value)
	cp = emu.workerBindings(t, "open-inspect-control-plane-engine")
	assert.Equal(t, current, cp["OPENCOMPUTER_TEMPLATE"]["text"])

	// Destroy deletes the running sandboxes of the installation's sessions
	// and snapshots, then its snapshots; another installation's sandbox stays.
	emu.d1(t, retried.Outputs["databaseId"].Value.(string), "INSERT INTO sessions (id, title) VALUES ('s-mine', 'mine')")
	sandboxOf := func(snapshot, session string) string {
		var out struct {
			SandboxID string `json:"sandboxID"`
		}
		emu.adminPost(t, "opencomputer/sandboxes", map[string]any{"snapshot": snapshot,
			"metadata": map[string]string{"openinspect_session_id": session}}, &out)
		return out.SandboxID
	}
	sandboxOf(current, "s-unrecorded")
	sandboxOf("team-base", "s-mine")
	theirs := sandboxOf("team-base", "s-theirs")
	pt.Destroy(t)
	inv := emu.inventory(t).OpenComputer
	assert.Empty(t, inv.Snapshots)
	require.Len(t, inv.Sandboxes, 1, "%+v", inv.Sandboxes)
	assert.Equal(t, theirs, inv.Sandboxes[0].ID)
}
