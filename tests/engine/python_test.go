package engine

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const pythonSecret = "py-secret-value-0123456789abcdef"

// TestPythonInlineWorkerPair drives the generated Python SDK through the
// engine with the Automation API: two workers that bind each other and a D1
// binding, and an OpenInspect installation (a remote component), in one up;
// an unchanged preview with zero Cloudflare calls; destroy.
func TestPythonInlineWorkerPair(t *testing.T) {
	t.Parallel()
	requirePulumi(t)
	out, err := exec.Command(filepath.Join(repoRoot(), ".ci", "python-tools.sh")).Output()
	require.NoError(t, err, ".ci/python-tools.sh prepares the Pulumi Python SDK")
	python := filepath.Join(strings.TrimSpace(string(out)), "bin", "python")
	emu := startEmulator(t)
	dir := t.TempDir()
	for _, sub := range []string{"work", "home", "backend"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, sub), 0o755))
	}
	// The Python Automation API cannot set plugin paths; a Pulumi.yaml in the
	// work dir can.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "work", "Pulumi.yaml"), []byte(
		"name: oi-engine-python\nruntime: python\nplugins:\n  providers:\n    - name: openinspect\n      path: "+binDir+"\n"), 0o644))
	// Install the committed SDK (from a copy: building writes next to the
	// sources) so its version metadata exists, as it does for users.
	src := filepath.Join(dir, "sdk")
	require.NoError(t, os.CopyFS(src, os.DirFS(filepath.Join(repoRoot(), "sdk", "python"))))
	site := filepath.Join(dir, "site")
	install := exec.CommandContext(t.Context(), python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
		"--no-deps", "--no-build-isolation", "--target", site, src)
	msg, err := install.CombinedOutput()
	require.NoError(t, err, "installing the Python SDK: %s", msg)
	run := func(step string) map[string]any {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), python, filepath.Join("testdata", "python", "inline.py"), step)
		cmd.Env = append(os.Environ(),
			"PYTHONPATH="+site,
			"PYTHONPYCACHEPREFIX="+filepath.Join(dir, "pycache"),
			"OI_SCRIPT="+filepath.Join(repoRoot(), "tests", "fixtures", "upstream", "packages", "control-plane", "dist", "index.js"),
			"OI_SECRET="+pythonSecret,
			"OI_REPO_KEY="+repoSecretsKey,
			"OI_CHECKOUT="+filepath.Join(repoRoot(), "tests", "fixtures", "upstream"),
			"OI_WORK_DIR="+filepath.Join(dir, "work"),
			"OI_PULUMI_HOME="+filepath.Join(dir, "home"),
			"OI_BACKEND_DIR="+filepath.Join(dir, "backend"),
			"OI_BIN_DIR="+binDir,
			"OI_TOKEN="+emulatorToken,
			"OI_ACCOUNT="+emulatorAccount,
			"OI_API_BASE_URL="+emu.cloudflareBaseURL(),
		)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		assert.NotContains(t, stdout.String()+stderr.String(), pythonSecret, "program output must not show the secret")
		require.NoError(t, err, "inline.py %s:\n%s\n%s", step, stdout.String(), stderr.String())
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		var result map[string]any
		require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &result), stdout.String())
		return result
	}

	// `pulumi up` previews first: a fresh stack's preview, with every
	// input from a resource not created yet unknown, must pass and create.
	fresh, _ := run("preview")["changes"].(map[string]any)
	assert.Positive(t, fresh["create"], "a fresh stack's preview creates: %v", fresh)
	up := run("up")
	outputs, _ := up["outputs"].(map[string]any)
	assert.Equal(t, "https://oi-py-control-plane.openinspect-emulator.workers.dev", outputs["url"])
	assert.Equal(t, map[string]any{"control-plane": "open-inspect-control-plane-py"}, outputs["installationWorkers"])
	inv := emu.inventory(t)
	require.Len(t, inv.Workers, 3)
	for _, w := range inv.Workers {
		if w.Name == "open-inspect-control-plane-py" {
			continue
		}
		want, ok := map[string]int{"oi-py-control-plane": 4, "oi-py-bot": 1}[w.Name]
		require.True(t, ok, "unexpected worker %q", w.Name)
		assert.Equal(t, want, w.Bindings, "%s has all its bindings", w.Name)
	}
	assert.Len(t, inv.D1, 2, "the program's database and the installation's")

	emu.resetCounts(t)
	preview := run("preview")
	changes, _ := preview["changes"].(map[string]any)
	for op := range changes {
		assert.Equal(t, "same", op, "an unchanged program previews no change: %v", changes)
	}
	calls, counts := emu.cloudflareCalls(t)
	assert.Zero(t, calls, "%v", counts)

	run("destroy")
	emu.requireEmpty(t)
	assertNoPlaintextIn(t, filepath.Join(dir, "backend"), pythonSecret)
}
