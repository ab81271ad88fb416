// Package conformance_test drives the emulator with Cloudflare's official
// SDKs, as a user of those SDKs would, independent of the provider's own
// client: the TypeScript SDK (npm cloudflare, installed by
// .ci/node-tools.sh), the Python SDK (PyPI cloudflare, installed by
// .ci/python-tools.sh, its pydantic models constructed with strict
// validation) and the Go SDK (cloudflare-go/v6, a test dependency in
// go.mod; gosdk_test.go). Each script creates, reads, lists, updates and deletes every
// object kind the provider manages and uploads a Worker with a module, a
// source map and static assets; this side then requests the Worker and its
// asset. A missing tool fails the test: it is never skipped.
package conformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/internal/loopback"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
)

// The SDK versions the suite is written against; the .ci scripts pin them.
const (
	typescriptSDKVersion = "7.3.0"
	pythonSDKVersion     = "5.9.0"
	alchemyVersion       = "0.94.0"
)

// repoRoot is two levels above the package directory, where go test runs
// the test (runtime.Caller has no usable path under -trimpath).
func repoRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	require.NoError(t, err)
	return filepath.Clean(filepath.Join(wd, "..", ".."))
}

// ciTool runs a .ci script (cached after its first run) and returns the
// directory it prints. OPENINSPECT_CONFORMANCE_<NAME> names an install made
// another way instead (a developer's scratch copy); the version checks
// below apply to it alike.
func ciTool(t *testing.T, script, override string) string {
	t.Helper()
	if dir := os.Getenv(override); dir != "" {
		return dir
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(repoRoot(t), ".ci", script))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf(".ci/%s failed: %v\n%s", script, err, stderr.String())
	}
	return strings.TrimSpace(stdout.String())
}

func requireNode(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not on PATH: the conformance suite runs Cloudflare's TypeScript SDK and Alchemy on Node.js", tool)
		}
	}
}

func nodeDeps(t *testing.T) string {
	return npmTool(t, "node-tools.sh", "OPENINSPECT_CONFORMANCE_NODE_DEPS", "cloudflare", typescriptSDKVersion)
}

func pythonVenv(t *testing.T) string {
	t.Helper()
	dir := ciTool(t, "python-tools.sh", "OPENINSPECT_CONFORMANCE_PYTHON_VENV")
	py := filepath.Join(dir, "bin", "python")
	out, err := exec.Command(py, "-c", "import cloudflare; print(cloudflare.__version__)").CombinedOutput()
	require.NoError(t, err, "the Python SDK is not installed in %s (.ci/python-tools.sh installs it): %s", dir, out)
	require.Equal(t, pythonSDKVersion, strings.TrimSpace(string(out)), "PyPI cloudflare in %s", dir)
	return py
}

// client is one SDK's script and how to run it.
type client struct {
	name   string // also the prefix of every object it makes
	argv   []string
	extEnv []string
}

func (c client) run(t *testing.T, s *emulator.Server, zoneID string, vars ...string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.argv[0], c.argv[1:]...)
	cmd.Env = append(append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + t.TempDir(),
		"CF_BASE_URL=" + strings.TrimSuffix(s.CloudflareBaseURL(), "/"),
		"CF_API_TOKEN=" + emulator.DefaultToken,
		"CF_ACCOUNT_ID=" + emulator.DefaultAccountID,
		"CF_ZONE_ID=" + zoneID,
		"PREFIX=" + c.name,
	}, c.extEnv...), vars...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	require.NoError(t, err, "%s:\nstdout:\n%s\nstderr:\n%s", c.name, stdout.String(), stderr.String())
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var out map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &out), "%s printed %q", c.name, stdout.String())
	return out
}

func alchemyDeps(t *testing.T) string {
	return npmTool(t, "alchemy-tools.sh", "OPENINSPECT_CONFORMANCE_ALCHEMY", "alchemy", alchemyVersion)
}

// npmTool returns the directory the .ci script installs into (or env's
// override), failing unless its node_modules holds pkg at version.
func npmTool(t *testing.T, script, env, pkg, version string) string {
	t.Helper()
	requireNode(t)
	dir := ciTool(t, script, env)
	raw, err := os.ReadFile(filepath.Join(dir, "node_modules", pkg, "package.json"))
	require.NoError(t, err, "%s is not installed in %s (.ci/%s installs it)", pkg, dir, script)
	var manifest struct {
		Version string `json:"version"`
	}
	require.NoError(t, json.Unmarshal(raw, &manifest))
	require.Equal(t, version, manifest.Version, "npm %s in %s", pkg, dir)
	return dir
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	// loopback: worker URLs are *.localhost names the resolver may not know.
	resp, err := loopback.Client(0).Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func TestOfficialSDKsAgainstTheEmulator(t *testing.T) {
	root := repoRoot(t)
	deps := nodeDeps(t)
	py := pythonVenv(t)
	clients := []client{
		{name: "ts", argv: []string{"node", filepath.Join(root, "tests", "conformance", "testdata", "typescript_sdk.cjs")},
			extEnv: []string{"NODE_PATH=" + filepath.Join(deps, "node_modules")}},
		{name: "py", argv: []string{py, filepath.Join(root, "tests", "conformance", "testdata", "python_sdk.py")}},
	}

	s, err := emulator.Start(emulator.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	zoneID, ok := s.Zones().ZoneID(emulator.DefaultAccountID, "example.com")
	require.True(t, ok, "the emulator seeds example.com")

	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			made := c.run(t, s, zoneID, "PHASE=create")
			t.Logf("%s: %v calls", c.name, made["calls"])
			worker, _ := made["worker"].(string)
			require.NotEmpty(t, worker, "%v", made)

			// The Worker deployed: its asset is served from the uploaded
			// manifest, any other path by its module (reading D1 through
			// the binding the SDK uploaded).
			url := s.Workers().WorkerURL(worker)
			status, body := get(t, url+"/hello.txt")
			assert.Equal(t, http.StatusOK, status)
			assert.Equal(t, "hello from "+c.name+" assets\n", body)
			status, body = get(t, url+"/anything")
			assert.Equal(t, http.StatusOK, status)
			assert.Equal(t, "worker "+c.name+" 7", body)

			state, err := json.Marshal(made)
			require.NoError(t, err)
			c.run(t, s, zoneID, "PHASE=delete", "STATE="+string(state))
			_, exists := s.Workers().Worker(emulator.DefaultAccountID, worker)
			assert.False(t, exists, "the SDK deleted %s", worker)
		})
	}
}

// Alchemy with its default settings bundles the Worker with a source map and
// uploads it beside the module: the emulator keeps it as a source map (the
// content route serves it back) and runs the module, serving the assets.
func TestAlchemyDeploysAWorkerWithAssets(t *testing.T) {
	deps := alchemyDeps(t)
	app := t.TempDir()
	require.NoError(t, os.CopyFS(app, os.DirFS(filepath.Join(repoRoot(t), "tests", "conformance", "testdata", "alchemy"))))
	require.NoError(t, os.Symlink(filepath.Join(deps, "node_modules"), filepath.Join(app, "node_modules")))

	s, err := emulator.Start(emulator.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	home := t.TempDir()
	run := func(phase string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "node", "alchemy.run.mjs")
		cmd.Dir = app
		cmd.Env = []string{
			"PATH=" + os.Getenv("PATH"),
			"HOME=" + home,
			"PHASE=" + phase,
			"CLOUDFLARE_BASE_URL=" + strings.TrimSuffix(s.CloudflareBaseURL(), "/"),
			"CLOUDFLARE_API_TOKEN=" + emulator.DefaultToken,
			"CLOUDFLARE_ACCOUNT_ID=" + emulator.DefaultAccountID,
			// Nothing leaves the machine: no telemetry.
			"DO_NOT_TRACK=1",
			"ALCHEMY_TELEMETRY_DISABLED=1",
		}
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "alchemy %s:\n%s", phase, out)
		return string(out)
	}
	out := run("up")
	assert.Contains(t, out, `{"worker":"alchemy-web"}`)

	url := s.Workers().WorkerURL("alchemy-web")
	status, body := get(t, url+"/hello.txt")
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "hello from alchemy assets\n", body)
	status, body = get(t, url+"/x")
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "alchemy worker alchemy /x", body)

	// The upload carried a source map (Alchemy's default), kept as one.
	req, err := http.NewRequest(http.MethodGet, s.CloudflareBaseURL()+"accounts/"+emulator.DefaultAccountID+"/workers/scripts/alchemy-web/content/v2", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+emulator.DefaultToken)
	resp, err := loopback.Client(0).Do(req)
	require.NoError(t, err)
	content, err := io.ReadAll(resp.Body)
	require.NoError(t, resp.Body.Close())
	require.NoError(t, err)
	assert.Contains(t, string(content), "Content-Type: application/source-map")

	out = run("destroy")
	t.Logf("alchemy destroy:\n%s", out)
	_, exists := s.Workers().Worker(emulator.DefaultAccountID, "alchemy-web")
	assert.False(t, exists, "alchemy destroy deleted the Worker")
}
