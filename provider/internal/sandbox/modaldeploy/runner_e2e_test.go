package modaldeploy

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/internal/sandbox/modalapi"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	emumodal "github.com/openinspect/pulumi-openinspect/tests/emulator/modal"
	"github.com/openinspect/pulumi-openinspect/tests/toolchain"
)

// TestDeployedEndpointsRunTheAppsCode deploys the fixture app with the real
// CLI, then calls its web endpoints as upstream's control plane does: the
// emulator answers each with the app's own function, run from the source
// the deploy uploaded, in a local Python process whose Modal client is
// pointed at the emulator, so api_create_sandbox creates its sandbox through
// Modal's API here, tagged from the request and launched as upstream's
// launcher launches it (command, workdir, secrets, env keys); with the
// emulator running sandboxes, the fixture's runtime then runs in it from
// the files the image copies to /app.
func TestDeployedEndpointsRunTheAppsCode(t *testing.T) {
	python := toolchain.Python(t)
	app := readOnlyFixture(t)
	root, err := filepath.Abs(filepath.Join("..", "..", "..", ".."))
	require.NoError(t, err)
	bwrap, slirp := toolchain.SandboxTools(t, root)
	s, err := emulator.Start(emulator.Options{Modal: emumodal.Options{Python: python,
		RunnerCache: filepath.Join(toolchain.CacheDir(), "modal-runners"),
		Sandboxes: emumodal.SandboxRuntime{Bwrap: bwrap, Slirp4netns: slirp, Python: python,
			ImageCache: filepath.Join(toolchain.CacheDir(), "modal-images")}}, Logf: t.Logf})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()

	const env, apiSecret = "main", "modal-api-secret-of-the-runner-test"
	mc, err := modalapi.New(modalapi.Options{TokenID: emumodal.DefaultTokenID, TokenSecret: emumodal.DefaultTokenSecret, Environment: env, ServerURL: s.URL()})
	require.NoError(t, err)
	defer mc.Close()
	for name, kv := range map[string]map[string]string{
		"llm-api-keys": {"ANTHROPIC_API_KEY": "sk-ant-runner-test"},
		"github-app":   {"GITHUB_APP_ID": "123456", "GITHUB_APP_PRIVATE_KEY": "pem", "GITHUB_APP_INSTALLATION_ID": "7890123"},
		"internal-api": {"MODAL_API_SECRET": apiSecret, "ALLOWED_CONTROL_PLANE_HOSTS": "cp.example:8443"},
	} {
		require.NoError(t, mc.UpsertSecret(ctx, name, kv))
	}
	r := &Runner{Python: python, CacheDir: filepath.Join(toolchain.CacheDir(), "modal-venvs"), Progress: func(s string) { t.Log(s) }}
	_, err = r.Run(ctx, app, Target{ServerURL: s.URL(), TokenID: emumodal.DefaultTokenID, TokenSecret: emumodal.DefaultTokenSecret, Environment: env})
	require.NoError(t, err)

	call := func(fn, method string, body any, authorized bool) (int, map[string]any) {
		t.Helper()
		u, err := mc.WebURL(ctx, "open-inspect", fn)
		require.NoError(t, err)
		raw, _ := json.Marshal(body)
		req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(raw))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		if authorized {
			stamp := strconv.FormatInt(time.Now().UnixMilli(), 10)
			mac := hmac.New(sha256.New, []byte(apiSecret))
			mac.Write([]byte(stamp))
			req.Header.Set("Authorization", "Bearer "+stamp+"."+hex.EncodeToString(mac.Sum(nil)))
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		var out map[string]any
		require.NoError(t, json.Unmarshal(b, &out), "%d %s", res.StatusCode, b)
		return res.StatusCode, out
	}

	// The health endpoint: the function's own answer.
	status, health := call("api_health", http.MethodGet, nil, false)
	require.Equal(t, http.StatusOK, status, "%v", health)
	assert.JSONEq(t, emumodal.HealthBody, mustJSON(t, health))

	// The control plane's request: a sandbox created through the emulator.
	request := map[string]any{"session_id": "s-1", "sandbox_id": "sandbox-s-1", "repo_owner": "openinspect-local", "repo_name": "hello-world",
		"control_plane_url": "https://cp.example:8443", "sandbox_auth_token": "t", "provider": "anthropic", "model": "claude-sonnet-4-6"}
	status, created := call("api_create_sandbox", http.MethodPost, request, true)
	require.Equal(t, http.StatusOK, status, "%v", created)
	assert.Equal(t, true, created["success"])
	data, _ := created["data"].(map[string]any)
	require.NotNil(t, data, "%v", created)
	assert.Equal(t, "sandbox-s-1", data["sandbox_id"])
	assert.Equal(t, "warming", data["status"])
	objectID, _ := data["modal_object_id"].(string)
	require.NotEmpty(t, objectID)
	sandboxes := s.Modal().Inventory().Sandboxes
	var found *emumodal.SandboxEntry
	for i := range sandboxes {
		if sandboxes[i].ID == objectID {
			found = &sandboxes[i]
		}
	}
	require.NotNil(t, found, "the sandbox exists in the emulator's Modal: %+v", sandboxes)
	assert.Equal(t, "s-1", found.Tags["openinspect_session_id"])
	assert.Equal(t, "hello-world", found.Tags["openinspect_repo_name"])
	assert.Equal(t, "session", found.Tags["openinspect_kind"])
	// Launched as upstream's launcher launches it: the runtime's entry point
	// in /workspace, llm-api-keys attached, the session's settings as env.
	assert.Equal(t, []string{"python", "-m", "sandbox_runtime.entrypoint"}, found.Command)
	assert.Equal(t, "/workspace", found.Workdir)
	assert.Equal(t, []string{"llm-api-keys"}, found.Secrets)
	for _, k := range []string{"ANTHROPIC_API_KEY", "SANDBOX_ID", "CONTROL_PLANE_URL", "SANDBOX_AUTH_TOKEN", "SANDBOX_TIMEOUT_SECONDS",
		"REPO_OWNER", "REPO_NAME", "SESSION_CONFIG", "VCS_HOST", "VCS_CLONE_USERNAME", "PYTHONUNBUFFERED"} {
		assert.Contains(t, found.EnvKeys, k)
	}
	// And it ran: the sandbox runtime the image copies to /app, under the
	// image's PYTHONPATH, read its launch from the environment and ended.
	sandboxDir := s.Modal().SandboxDir(objectID)
	assert.FileExists(t, filepath.Join(sandboxDir, "app", "sandbox_runtime", "entrypoint.py"), "the image's COPY to /app laid out")
	require.Eventually(t, func() bool {
		for _, e := range s.Modal().Inventory().Sandboxes {
			if e.ID == objectID {
				return !e.Running
			}
		}
		return false
	}, time.Minute, 200*time.Millisecond, "the sandbox's command ends")
	out, _ := os.ReadFile(filepath.Join(sandboxDir, "stdout"))
	errOut, _ := os.ReadFile(filepath.Join(sandboxDir, "stderr"))
	// (It boots as a session's sandbox does: the clone, then the managed
	// skills from the control plane, which cp.example is not, so it ends
	// there.)
	assert.True(t, strings.HasPrefix(string(out), "sandbox runtime fixture-v1: sandbox=sandbox-s-1 repo=openinspect-local/hello-world\n"), "stdout: %s\nstderr: %s", out, errOut)
	assert.Contains(t, string(errOut), "boot failed: sandbox-skills", "stdout: %s", out)

	// Unauthorized, or from a host the app does not allow: refused by the
	// app's own checks.
	status, denied := call("api_create_sandbox", http.MethodPost, request, false)
	assert.Equal(t, http.StatusUnauthorized, status, "%v", denied)
	request["control_plane_url"] = "https://elsewhere.example"
	status, _ = call("api_create_sandbox", http.MethodPost, request, true)
	assert.Equal(t, http.StatusUnauthorized, status)

	// Stopping the app, as `modal app stop` and the provider's delete do,
	// ends the process running its endpoints at once, not when the
	// emulator stops; its endpoints then answer that the app is stopped,
	// and nothing starts the runner again.
	runners := runnerPIDs(t, s.DataDir())
	require.Len(t, runners, 1, "one runner serves the deployment")
	healthURL, err := mc.WebURL(ctx, "open-inspect", "api_health")
	require.NoError(t, err)
	var appID string
	for _, a := range s.Modal().Inventory().Apps {
		if a.Name == "open-inspect" && a.State == "deployed" {
			appID = a.ID
		}
	}
	require.NotEmpty(t, appID)
	require.NoError(t, mc.StopApp(ctx, appID))
	require.Eventually(t, func() bool { return len(runnerPIDs(t, s.DataDir())) == 0 }, 3*time.Second, 50*time.Millisecond,
		"the runner %v outlived its app's stop", runners)
	res, err := http.Get(healthURL)
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	assert.Equal(t, http.StatusNotFound, res.StatusCode, "%s", body)
	assert.Contains(t, string(body), "app for invoked web endpoint is stopped")
	assert.Empty(t, runnerPIDs(t, s.DataDir()), "a request to the stopped app started no runner")
}

// runnerPIDs are the live processes running an app's runner.py from under
// the emulator's data directory (a killed one not yet reaped has no
// command line, so it is not listed).
func runnerPIDs(t *testing.T, dataDir string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err, "the test finds processes through /proc (Linux)")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue // it exited meanwhile
		}
		for _, arg := range strings.Split(string(raw), "\x00") {
			if strings.HasPrefix(arg, dataDir+string(filepath.Separator)) && strings.HasSuffix(arg, "runner.py") {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
