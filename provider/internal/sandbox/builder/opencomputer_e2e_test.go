package builder

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openinspect/pulumi-openinspect/internal/reporoot"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/opencomputer"
	"github.com/openinspect/pulumi-openinspect/tests/toolchain"
)

// openComputerPins are what the fixture builder needs, as the provider pins
// them for upstream's.
var openComputerPins = []string{"@opencomputer/sdk@0.12.4", "esbuild@0.28.1"}

// TestOpenComputerFixtureBuildsOnTheEmulator bundles the fixture builder
// with its own package.json script and runs it with the real SDK: the
// snapshot is built under the given name with the runtime's files inlined,
// the SSE build log streams as progress, a failing build fails the run with
// the emulator's reason, and the environment is reused the second time.
func TestOpenComputerFixtureBuildsOnTheEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("installs @opencomputer/sdk and esbuild from npm on a cold cache; -short skips it")
	}
	s, err := emulator.Start(emulator.Options{OpenComputer: opencomputer.Options{BuildTime: 50 * time.Millisecond}})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	root, err := filepath.Abs(filepath.Join(reporoot.Dir(), "tests", "fixtures", "upstream"))
	require.NoError(t, err)
	var progress []string
	r := &Runner{Label: "opencomputer", CacheDir: filepath.Join(toolchain.CacheDir(), "opencomputer-node"),
		Progress: func(s string) { progress = append(progress, s); t.Log(s) }, Redact: []string{opencomputer.DefaultAPIKey}}
	env, err := r.NodeEnvironment(ctx, "", openComputerPins)
	require.NoError(t, err)
	run := func(name string) error {
		return r.RunNodeBuilder(ctx, env, NodeBuilder{Name: "node build-template", Dir: filepath.Join(root, "packages", "opencomputer-infra"),
			Script: "build", Root: root, Env: []string{
				"OPENCOMPUTER_API_URL=" + s.URL() + opencomputer.APIPrefix,
				"OPENCOMPUTER_API_KEY=" + opencomputer.DefaultAPIKey,
				"OPENCOMPUTER_TEMPLATE=" + name,
				"OPENCOMPUTER_BUILDER_MEMORY_MB=4096",
				"OPENINSPECT_REPO_ROOT=" + root,
			}})
	}
	const name = "openinspect-runtime-0123456789abcdef"
	require.NoError(t, run(name))

	snaps := s.Inventory().OpenComputer.Snapshots
	require.Len(t, snaps, 1)
	assert.Equal(t, name, snaps[0].Name)
	assert.Equal(t, "ready", snaps[0].Status)
	assert.Equal(t, 4096, snaps[0].BuilderMemoryMB)
	assert.Contains(t, snaps[0].Files, "/home/sandbox/app/sandbox_runtime/entrypoint.py", "the runtime was inlined: %v", snaps[0].Files)
	joined := strings.Join(progress, "\n")
	assert.Contains(t, joined, "opencomputer: build: ", "the SSE build log streamed as progress")
	assert.NotContains(t, joined, opencomputer.DefaultAPIKey)
	bundles, err := os.ReadDir(filepath.Join(env.Dir, "bundles"))
	require.NoError(t, err)
	assert.Empty(t, bundles, "the bundle is removed after the run")

	resp, err := http.Post(s.URL()+"/__emulator/opencomputer/build-failures", "application/json",
		bytes.NewReader([]byte(`{"reason":"step 2: apt-get exited with status 100"}`)))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	err = run("openinspect-runtime-fedcba9876543210")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "opencomputer: node build-template failed")
	assert.Contains(t, err.Error(), "apt-get exited with status 100")

	again, err := r.NodeEnvironment(ctx, "", openComputerPins)
	require.NoError(t, err)
	assert.True(t, again.Reused)
	assert.Equal(t, env.Dir, again.Dir)
}
