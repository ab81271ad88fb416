package modaldeploy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openinspect/pulumi-openinspect/internal/reporoot"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/internal/sandbox/builder"
	"github.com/openinspect/pulumi-openinspect/provider/internal/sandbox/modalapi"
	"github.com/openinspect/pulumi-openinspect/provider/pyfind"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	emumodal "github.com/openinspect/pulumi-openinspect/tests/emulator/modal"
	"github.com/openinspect/pulumi-openinspect/tests/toolchain"
)

// fixtureFunctions are the fixture app's web endpoints (the contract's
// sandbox.modal.endpoints.functions, as Python names).
var fixtureFunctions = []string{
	"api_health", "api_create_sandbox", "api_snapshot_sandbox", "api_snapshot_build_sandbox", "api_restore_sandbox",
	"api_create_build_sandbox", "api_start_build_sandbox", "api_terminate_build_sandbox", "api_delete_provider_image",
}

// readOnlyFixture copies the fixture's two packages into a checkout-shaped
// directory and makes it read-only, so any write into the app fails the
// deploy.
func readOnlyFixture(t *testing.T) string {
	t.Helper()
	src := filepath.Join(reporoot.Dir(), "tests", "fixtures", "upstream", "packages")
	root := t.TempDir()
	for _, pkg := range []string{"modal-infra", "sandbox-runtime"} {
		base := filepath.Join(src, pkg)
		err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(src, p)
			dst := filepath.Join(root, "packages", rel)
			if d.IsDir() {
				if d.Name() == "__pycache__" {
					return filepath.SkipDir
				}
				return os.MkdirAll(dst, 0o755)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(dst, b, 0o644)
		})
		require.NoError(t, err)
	}
	if runtime.GOOS != "windows" {
		setMode(t, root, 0o555, 0o444)
		t.Cleanup(func() { setMode(t, root, 0o755, 0o644) })
	}
	return filepath.Join(root, "packages", "modal-infra")
}

func setMode(t *testing.T, root string, dirMode, fileMode os.FileMode) {
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, p)
			if dirMode&0o200 != 0 {
				return os.Chmod(p, dirMode) // open up before descending
			}
			return nil
		}
		return os.Chmod(p, fileMode)
	})
	require.NoError(t, err)
	if dirMode&0o200 == 0 {
		for _, dir := range slices.Backward(dirs) { // close deepest first
			require.NoError(t, os.Chmod(dir, dirMode))
		}
	}
}

func listing(t *testing.T, dir string) []string {
	var out []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(dir, p)
		out = append(out, rel)
		return err
	}))
	return out
}

// TestDeployFixtureWithTheRealCLI runs upstream's recipe with the real
// modal 1.4.3 CLI (installed from PyPI by the Runner, then cached) against
// the in-process emulator.
func TestDeployFixtureWithTheRealCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("installs modal from PyPI on a cold cache; -short skips it")
	}
	python := toolchain.Python(t)
	app := readOnlyFixture(t)
	before := listing(t, filepath.Dir(app))

	s, err := emulator.Start(emulator.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	const env = "staging"
	mc, err := modalapi.New(modalapi.Options{TokenID: emumodal.DefaultTokenID, TokenSecret: emumodal.DefaultTokenSecret, Environment: env, ServerURL: s.URL()})
	require.NoError(t, err)
	defer mc.Close()
	secrets := map[string]map[string]string{
		"llm-api-keys": {"ANTHROPIC_API_KEY": "sk-ant-fixture-value"},
		"github-app":   {"GITHUB_APP_ID": "12345", "GITHUB_APP_PRIVATE_KEY": "pem-fixture-value", "GITHUB_APP_INSTALLATION_ID": "678"},
		"internal-api": {"MODAL_API_SECRET": "modal-api-fixture-value", "ALLOWED_CONTROL_PLANE_HOSTS": "cp.example"},
	}
	var values []string
	for name, kv := range secrets {
		require.NoError(t, mc.UpsertSecret(ctx, name, kv))
		for _, v := range kv {
			values = append(values, v)
		}
	}

	var progress []string
	r := &Runner{
		Python:   python,
		CacheDir: filepath.Join(toolchain.CacheDir(), "modal-venvs"),
		Progress: func(s string) { progress = append(progress, s); t.Log(s) },
		Redact:   values,
	}
	target := Target{ServerURL: s.URL(), TokenID: emumodal.DefaultTokenID, TokenSecret: emumodal.DefaultTokenSecret, Environment: env}
	res, err := r.Run(ctx, app, target)
	require.NoError(t, err)
	t.Logf("first run: environment %s (reused %v) in %s, deploy in %s", filepath.Base(res.Venv), res.Reused, res.Setup.Round(time.Millisecond), res.Deploy.Round(time.Millisecond))

	deployed, found, err := mc.DeployedApp(ctx, "open-inspect")
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, "deployed", deployed.State)
	for _, fn := range fixtureFunctions {
		u, err := mc.WebURL(ctx, "open-inspect", fn)
		require.NoError(t, err, fn)
		assert.Equal(t, s.URL()+"/__modal/web/openinspect-emulator-staging--open-inspect-"+strings.ReplaceAll(fn, "_", "-"), u)
	}
	health, err := mc.WebURL(ctx, "open-inspect", "api_health")
	require.NoError(t, err)
	resp, err := http.Get(health)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.JSONEq(t, emumodal.HealthBody, string(body))

	// The eager build made the sandbox image (its layers) in the app.
	var built int
	for _, img := range s.Modal().Images() {
		assert.Equal(t, "ready", img.State)
		if img.AppID == deployed.ID {
			built++
		}
	}
	assert.NotZero(t, built)
	inv := s.Inventory().Modal
	require.Len(t, inv.Apps, 1)
	assert.Equal(t, 1, inv.Apps[0].Version)

	// Warm: the same environment, nothing installed, and an unchanged app
	// publishes no new version.
	progress = nil
	res2, err := r.Run(ctx, app, target)
	require.NoError(t, err)
	t.Logf("second run: environment reused in %s, deploy in %s", res2.Setup.Round(time.Millisecond), res2.Deploy.Round(time.Millisecond))
	assert.True(t, res2.Reused)
	assert.Equal(t, res.Venv, res2.Venv)
	for _, line := range progress {
		assert.NotContains(t, line, "install")
		assert.NotContains(t, line, "creating")
	}
	assert.Equal(t, 1, s.Inventory().Modal.Apps[0].Version)
	assert.Equal(t, before, listing(t, filepath.Dir(app)), "nothing was written into the app")

	// The CLI's other commands a person would reach for work too.
	cli := func(args ...string) string {
		cmd := exec.CommandContext(ctx, builder.Venv{Dir: res.Venv}.Python(), append([]string{"-m", "modal"}, args...)...)
		cmd.Dir, cmd.Env = t.TempDir(), append(builder.BaseEnv(), r.childEnv(builder.Venv{Dir: res.Venv}, target)...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "modal %s: %s", strings.Join(args, " "), out)
		return string(out)
	}
	var secretList []map[string]any
	require.NoError(t, json.Unmarshal([]byte(cli("secret", "list", "--json")), &secretList))
	assert.Len(t, secretList, 3)
	var appList []map[string]any
	require.NoError(t, json.Unmarshal([]byte(cli("app", "list", "--json")), &appList))
	require.Len(t, appList, 1)
	assert.Equal(t, deployed.ID, appList[0]["App ID"])
	assert.Equal(t, "deployed", appList[0]["State"])
	cli("app", "stop", "open-inspect", "-y")
	_, found, err = mc.DeployedApp(ctx, "open-inspect")
	require.NoError(t, err)
	assert.False(t, found)
	resp, err = http.Get(health)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// TestDeployFailureIsReported deploys with the secrets missing: the CLI
// fails, and the error names the step and quotes its output, redacted.
func TestDeployFailureIsReported(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the cached environment of TestDeployFixtureWithTheRealCLI")
	}
	python := toolchain.Python(t)
	app := readOnlyFixture(t)
	s, err := emulator.Start(emulator.Options{Modal: emumodal.Options{Tokens: []emumodal.Token{{ID: "ak-x", Secret: "as-failure-test-secret", Workspace: "ws"}}}})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	r := &Runner{Python: python, CacheDir: filepath.Join(toolchain.CacheDir(), "modal-venvs")}
	_, err = r.Run(ctx, app, Target{ServerURL: s.URL(), TokenID: "ak-x", TokenSecret: "as-failure-test-secret"})
	require.Error(t, err)
	msg := err.Error()
	assert.Contains(t, msg, "modal deploy deploy.py failed")
	assert.Regexp(t, `Secret '(llm-api-keys|github-app|internal-api)' not found`, msg, "the output names a missing secret")
	assert.NotContains(t, msg, "as-failure-test-secret")
	t.Logf("reported as: %s", msg)
}

// TestConcurrentBuildsShareOneEnvironment builds the same environment twice
// at once into an empty cache (uv's download cache and uv itself borrowed
// from the shared one, so nothing is downloaded again): both runs end up
// with the one environment, and no half-built directory is left.
func TestConcurrentBuildsShareOneEnvironment(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two environments")
	}
	python := toolchain.Python(t)
	app := readOnlyFixture(t)
	shared := filepath.Join(toolchain.CacheDir(), "modal-venvs")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	py, err := pyfind.Version(ctx, python)
	require.NoError(t, err)
	warm := &builder.Runner{Python: python, CacheDir: shared}
	_, err = warm.UV(ctx, py) // make sure there is a uv to borrow
	require.NoError(t, err)

	cache := t.TempDir()
	uvDir := fmt.Sprintf("uv-%s-py%d.%d", UVVersion, py.Major, py.Minor)
	require.NoError(t, os.MkdirAll(filepath.Join(shared, "uv-cache"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(shared, uvDir), filepath.Join(cache, uvDir)))
	require.NoError(t, os.Symlink(filepath.Join(shared, "uv-cache"), filepath.Join(cache, "uv-cache")))

	r := &builder.Runner{Python: python, CacheDir: cache}
	type result struct {
		venv string
		err  error
	}
	results := make(chan result, 2)
	for range 2 {
		go func() {
			venv, err := r.Environment(ctx, app)
			results <- result{venv.Dir, err}
		}()
	}
	a, b := <-results, <-results
	require.NoError(t, a.err)
	require.NoError(t, b.err)
	assert.Equal(t, a.venv, b.venv)
	entries, err := os.ReadDir(cache)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{uvDir, "uv-cache", filepath.Base(a.venv)}, names, "one environment, no leftovers")
	out, err := exec.CommandContext(ctx, builder.Venv{Dir: a.venv}.Python(), "-c", "import modal, sandbox_runtime; print(modal.__version__)").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, "1.4.3", strings.TrimSpace(string(out)))
}
