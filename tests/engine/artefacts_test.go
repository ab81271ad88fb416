package engine

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// buildEmbeddingPlugin builds the provider plugin with an artefact set
// written from the fixture checkout by the release step (-prebuilt
// -unverified) embedded, through a go build overlay, so the tree's own
// provider/internal/artefacts/dist is left as it is.
func buildEmbeddingPlugin(t *testing.T) string {
	t.Helper()
	root, work := repoRoot(), t.TempDir()
	set := filepath.Join(work, "dist")
	release := exec.Command("go", "run", "./provider/cmd/openinspect-release",
		"-source", filepath.Join(root, "tests", "fixtures", "upstream"), "-prebuilt", "-unverified", "-out", set)
	release.Dir = root
	out, err := release.CombinedOutput()
	require.NoError(t, err, "%s", out)
	dist := filepath.Join(root, "provider", "internal", "artefacts", "dist")
	overlay := map[string]map[string]string{"Replace": {}}
	for _, f := range []string{"manifest.json", "artefacts.tar.gz"} {
		overlay["Replace"][filepath.Join(dist, f)] = filepath.Join(set, f)
	}
	raw, err := json.Marshal(overlay)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(work, "overlay.json"), raw, 0o644))
	plugins := filepath.Join(work, "bin")
	build := exec.Command("go", "build", "-overlay", filepath.Join(work, "overlay.json"),
		"-o", filepath.Join(plugins, "pulumi-resource-openinspect"), "./provider/cmd/pulumi-resource-openinspect")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err = build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return plugins
}

// The full installation, web UI included, deploys with no upstream input
// from the artefacts the plugin embeds, and says so in upstreamVerification.
func TestOpenInspectFromEmbeddedArtefacts(t *testing.T) {
	t.Parallel()
	requirePulumi(t)
	plugins := buildEmbeddingPlugin(t)
	emu := startEmulator(t)
	pt := newYAMLTestWith(t, filepath.Join(repoRoot(), "examples", "yaml"), emu, plugins)
	setInstallationSecrets(t, pt.CurrentStack())
	pt.SetConfig(t, "openinspect:cacheDir", t.TempDir())
	editProgram(t, pt, func(program string) string {
		return strings.Replace(program, "      upstream:\n        checkout: ${upstreamCheckout}\n        allowUnverified: ${allowUnverified}\n", "", 1)
	})
	up := previewUp(t, pt)
	assert.Equal(t, 6.0, up.Outputs["appliedMigrations"].Value)
	verification, ok := up.Outputs["upstreamVerification"].Value.(map[string]any)
	require.True(t, ok, "%v", up.Outputs["upstreamVerification"])
	assert.Contains(t, verification["source"], "embedded in the plugin")
	assert.Contains(t, verification["bundle.control-plane"], "embedded")
	assert.Contains(t, verification["migrations"], "from the embedded artefacts")
	// The control plane, the Slack bot and the web, whose build the set
	// holds too (the release step took the fixture's placeholder build).
	require.Len(t, emu.inventory(t).Workers, 3)
	status, page := get(t, up.Outputs["webUrl"].Value.(string))
	assert.Equal(t, http.StatusOK, status, "%s", page)
	assert.Contains(t, page, "<title>Open-Inspect</title>")
	requireSteadyState(t, pt, emu)
	pt.Destroy(t)
	emu.requireEmpty(t)
}

// A supplied checkout that is no git tree is compared with the digests
// recorded for the pin: its migrations are refused at preview, naming the
// file, with no call made.
func TestOpenInspectRefusesUnverifiedMigrations(t *testing.T) {
	t.Parallel()
	requirePulumi(t)
	emu := startEmulator(t)
	pt := newInstallationTest(t, emu)
	pt.SetConfig(t, "allowUnverified", "false")
	_, err := pt.CurrentStack().Preview(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "upstream.checkout: migration "+filepath.Join(repoRoot(), "tests", "fixtures", "upstream", "terraform", "d1", "migrations", "0001_sessions.sql")+" is not one of the pinned commit's")
	assert.Contains(t, err.Error(), "upstream.checkout: migration 0001_create_repo_secrets.sql of the pinned commit is missing")
	calls, counts := emu.cloudflareCalls(t)
	assert.Zero(t, calls, "a refused spec makes no call: %v", counts)
}

func setInstallationSecrets(t tb, stack *auto.Stack) {
	t.Helper()
	for key, value := range installationSecrets {
		require.NoError(t, stack.SetConfig(t.Context(), key, auto.ConfigValue{Value: value, Secret: true}))
	}
}
