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

	"github.com/openinspect/pulumi-openinspect/tests/emulator/vercel"
)

const (
	vercelProgramKey = "  vercelToken:\n    type: string\n    secret: true\n"
	// vercelProject is the project the sandboxes run in, given by name
	// (the Sandbox API takes a project's ID or name): named like an ID, it
	// is what the recorded v0.1.0 states hold (upgrade_test.go).
	vercelProject = "prj_openinspect_engine"
)

// withVercel selects the vercel provider against the emulator's Vercel
// Sandbox API, its token and project given once (sandbox.vercel) for the
// build and the control plane. The project exists in the token's team, as
// on Vercel: the installation's NameLock reads it before anything is built.
func withVercel(t *testing.T, pt *pulumitest.PulumiTest, emu *emulatorProcess) {
	t.Helper()
	emu.vercelSandboxProject(t)
	editProgram(t, pt, func(program string) string {
		program = strings.Replace(program, "config:\n", "config:\n"+vercelProgramKey, 1)
		return withSandbox("      sandbox:\n        provider: vercel\n        vercel:\n          apiUrl: " + emu.url + "/vercel/api\n" +
			"          token: ${vercelToken}\n          projectId: " + vercelProject + "\n")(program)
	})
	require.NoError(t, pt.CurrentStack().SetConfig(t.Context(), "vercelToken",
		auto.ConfigValue{Value: vercel.DefaultToken, Secret: true}))
}

// vercelSandboxProject makes vercelProject in the token's team, as the
// user makes it before any installation (one already there is kept),
// through the emulator's admin API: the test's own setup is no API call
// (TestProviderUpgrade's previews must call nothing).
func (e *emulatorProcess) vercelSandboxProject(t *testing.T) {
	t.Helper()
	e.adminPost(t, "vercel/projects", map[string]string{"name": vercelProject}, nil)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.userProjects == nil {
		e.userProjects = map[string]bool{}
	}
	e.userProjects[vercel.DefaultTeamID+"/"+vercelProject] = true
}

// createdVercelBuilds are the sandbox names of the project's created snapshots.
func (e *emulatorProcess) createdVercelBuilds(t *testing.T) []string {
	var out []string
	for _, s := range e.inventory(t).Vercel.Snapshots {
		if s.Project == vercelProject && s.Status == "created" && !slices.Contains(out, s.SandboxName) {
			out = append(out, s.SandboxName)
		}
	}
	return out
}

// TestVercelInstallation deploys an installation with the vercel provider:
// the fixture builder (bundled by the control plane package's own esbuild
// script and run with Node by the builder runner) builds the base snapshot
// of the digest-named sandbox before the control plane is uploaded with
// that name, the project and the one token; a second preview makes zero
// Vercel calls; a failing build fails the up with the builder's message and
// the next up retries it, the old snapshot kept; destroy deletes what the
// installation built.
func TestVercelInstallation(t *testing.T) {
	t.Parallel()
	requirePulumi(t)
	emu := startEmulator(t)
	checkout := fixtureCopy(t)
	pt := newInstallationTest(t, emu)
	pt.SetConfig(t, "upstreamCheckout", checkout)
	withVercel(t, pt, emu)

	up := previewUp(t, pt)
	name := regexp.MustCompile(`^open-inspect-sandbox-base-engine-[0-9a-f]{16}$`)
	builds := emu.createdVercelBuilds(t)
	require.Len(t, builds, 1)
	first := builds[0]
	assert.Regexp(t, name, first)
	snap := emu.inventory(t).Vercel.Snapshots[0]
	assert.Equal(t, "vercel: base snapshot "+snap.ID+" of sandbox "+first+" (created)", up.Outputs["sandboxStatus"].Value)
	assert.False(t, up.Outputs["sandboxStatus"].Secret, "which image runs is not hidden by the secret API key")

	cp := emu.workerBindings(t, "open-inspect-control-plane-engine")
	assert.Equal(t, first, cp["VERCEL_BASE_SNAPSHOT_NAME"]["text"])
	assert.False(t, controlPlaneVarIsSecret(t, pt, "VERCEL_BASE_SNAPSHOT_NAME"), "the snapshot name is stored plain: it is not derived from the API key")
	assert.Equal(t, vercelProject, cp["VERCEL_PROJECT_ID"]["text"])
	assert.Equal(t, emu.url+"/vercel/api", cp["VERCEL_SANDBOX_API_BASE_URL"]["text"])
	assert.Equal(t, "node24", cp["VERCEL_RUNTIME"]["text"])
	assert.Equal(t, "0", cp["VERCEL_SNAPSHOT_EXPIRATION_MS"]["text"])
	assert.Equal(t, "secret_text", cp["VERCEL_TOKEN"]["type"])
	assert.Equal(t, "vercel", cp["SANDBOX_PROVIDER"]["text"])
	assert.NotContains(t, cp, "VERCEL_BASE_SNAPSHOT_ID", "a managed snapshot is found by name")
	requireNoPlaintext(t, pt.CurrentStack(), vercel.DefaultToken)

	emu.resetCounts(t)
	assertpreview.HasNoChanges(t, pt.Preview(t))
	calls, counts := emu.callsUnder(t, "/vercel/")
	assert.Zero(t, calls, "a no-op preview makes no Vercel call: %v", counts)

	touchRuntime(t, checkout)
	const reason = "bootstrap: pip exited with status 1 (arranged by the test)"
	emu.adminPost(t, "vercel/build-failures", map[string]any{"reason": reason}, nil)
	// Up directly: this update is about failing (the build runs at create).
	_, err := pt.CurrentStack().Up(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Vercel base runtime bootstrap failed with exit code 1")
	assert.Contains(t, err.Error(), "node vercel-base-snapshot failed")
	assert.NotContains(t, err.Error(), vercel.DefaultToken)
	cp = emu.workerBindings(t, "open-inspect-control-plane-engine")
	assert.Equal(t, first, cp["VERCEL_BASE_SNAPSHOT_NAME"]["text"], "the control plane keeps the old snapshot while the new one fails")

	retried := previewUp(t, pt)
	builds = emu.createdVercelBuilds(t)
	require.Len(t, builds, 2, "the new snapshot beside the superseded one: %v", builds)
	assert.Contains(t, builds, first, "the superseded snapshot is kept through its grace period")
	current := builds[slices.IndexFunc(builds, func(n string) bool { return n != first })]
	assert.Regexp(t, name, current)
	assert.Contains(t, retried.Outputs["sandboxStatus"].Value, "of sandbox "+current+" (created)")
	cp = emu.workerBindings(t, "open-inspect-control-plane-engine")
	assert.Equal(t, current, cp["VERCEL_BASE_SNAPSHOT_NAME"]["text"])

	pt.Destroy(t)
	left := emu.inventory(t).Vercel
	assert.Empty(t, left.Sandboxes, "destroy deletes what the installation built: %+v", left)
	assert.Empty(t, left.Snapshots, "destroy deletes what the installation built: %+v", left)
	require.Len(t, left.Projects, 1, "the project the sandboxes ran in is the user's and stays: %+v", left)
	assert.Equal(t, vercelProject, left.Projects[0].Name)
}
