package builder

import (
	"bytes"
	"context"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openinspect/pulumi-openinspect/internal/reporoot"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/e2b"
	"github.com/openinspect/pulumi-openinspect/tests/toolchain"
)

// e2bFixture is the E2B builder written for the tests, beside the fixture
// runtime it copies.
var e2bFixture = filepath.Join(reporoot.Dir(), "tests", "fixtures", "upstream", "packages", "e2b-infra")

// runE2BFixture runs the fixture's build-template.py (the real e2b 2.29.1
// SDK, locked in its uv.lock) against s, the way the provider runs it.
func runE2BFixture(ctx context.Context, t *testing.T, r *Runner, s *emulator.Server, name string) error {
	t.Helper()
	dir, err := filepath.Abs(e2bFixture)
	require.NoError(t, err)
	venv, err := r.Environment(ctx, dir)
	require.NoError(t, err)
	return r.Run(ctx, Step{Name: "python build-template.py", Dir: dir, Stream: true,
		Env: append(venv.Env(),
			"E2B_API_URL="+s.URL()+e2b.APIPrefix,
			"E2B_API_KEY="+e2b.DefaultAPIKey,
			"E2B_TEMPLATE_ID="+name,
			"E2B_TEMPLATE_CPU=2",
			"E2B_TEMPLATE_MEMORY_MB=4096",
		),
		Args: []string{venv.Python(), "build-template.py"}})
}

// TestE2BFixtureBuildsOnTheEmulator builds the fixture template with the
// real SDK: the emulator sees the SDK's steps and uploaded runtime, streams
// the build log back, fails a build when told to (the SDK's error reaches
// the runner's), a built template is pre-warmed with one sandbox that is
// killed again, and the retry builds the same template again without
// uploading the unchanged runtime twice.
func TestE2BFixtureBuildsOnTheEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("installs e2b from PyPI on a cold cache; -short skips it")
	}
	python := toolchain.Python(t)
	s, err := emulator.Start(emulator.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	var progress []string
	r := &Runner{Label: "e2b", Python: python, CacheDir: filepath.Join(toolchain.CacheDir(), "e2b-venvs"),
		Progress: func(s string) { progress = append(progress, s); t.Log(s) }, Redact: []string{e2b.DefaultAPIKey}}
	const name = "openinspect-fixture-0123456789abcdef"
	require.NoError(t, runE2BFixture(ctx, t, r, s, name))

	inv := s.Inventory().E2B
	require.Len(t, inv.Templates, 1)
	tpl := inv.Templates[0]
	assert.Equal(t, name, tpl.Name)
	require.Len(t, tpl.Builds, 1)
	b := tpl.Builds[0]
	assert.Equal(t, "ready", b.Status)
	assert.Equal(t, 2, b.CPU)
	assert.Equal(t, 4096, b.MemoryMB)
	assert.Equal(t, "python:3.12-slim", b.FromImage, "the SDK turned the Dockerfile's FROM into the base")
	assert.Equal(t, "python -m sandbox_runtime.entrypoint", b.StartCmd)
	assert.True(t, slices.ContainsFunc(b.Steps, func(s string) bool { return strings.HasPrefix(s, "COPY sandbox_runtime /app/sandbox_runtime") }), "steps: %v", b.Steps)
	assert.True(t, slices.ContainsFunc(b.Steps, func(s string) bool { return strings.HasPrefix(s, "RUN ") && strings.Contains(s, "pip install") }), "steps: %v", b.Steps)
	assert.Contains(t, b.Files, "sandbox_runtime/entrypoint.py", "the runtime was uploaded")
	joined := strings.Join(progress, "\n")
	assert.Contains(t, joined, "e2b: ", "the build log streamed as progress")
	assert.Contains(t, joined, "Build finished, template ready", "the emulator's log entries reached the runner")
	assert.NotContains(t, joined, e2b.DefaultAPIKey)
	uploads := s.Counts()["PUT /e2b/uploads/{tid}/{hash}"]
	assert.Equal(t, 1, uploads)
	// The pre-warm started one sandbox of the new build and killed it.
	assert.Equal(t, 1, s.Counts()["POST /e2b/sandboxes"], "one pre-warm sandbox")
	assert.Equal(t, 1, s.Counts()["DELETE /e2b/sandboxes/{id}"], "the pre-warm sandbox killed")
	assert.Contains(t, joined, "pre-warmed with sandbox ")
	assert.Empty(t, inv.Sandboxes, "no sandbox outlives the pre-warm")

	// A failing build fails the run with the build's own reason.
	resp, err := http.Post(s.URL()+"/__emulator/e2b/build-failures", "application/json",
		bytes.NewReader([]byte(`{"reason":"step 4: apt-get exited with status 100"}`)))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	err = runE2BFixture(ctx, t, r, s, name)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "e2b: python build-template.py failed")
	assert.Contains(t, err.Error(), "apt-get exited with status 100")
	assert.NotContains(t, err.Error(), e2b.DefaultAPIKey)

	// The retry builds the same template again; the runtime is not uploaded again.
	require.NoError(t, runE2BFixture(ctx, t, r, s, name))
	inv = s.Inventory().E2B
	require.Len(t, inv.Templates, 1)
	assert.Equal(t, tpl.ID, inv.Templates[0].ID)
	require.Len(t, inv.Templates[0].Builds, 3)
	assert.Equal(t, []string{"ready", "error", "ready"}, []string{inv.Templates[0].Builds[0].Status, inv.Templates[0].Builds[1].Status, inv.Templates[0].Builds[2].Status})
	assert.Equal(t, uploads, s.Counts()["PUT /e2b/uploads/{tid}/{hash}"], "an unchanged runtime is already present")
	assert.Equal(t, 2, s.Counts()["POST /e2b/sandboxes"], "a failed build is not pre-warmed")
	assert.Empty(t, inv.Sandboxes)
}
