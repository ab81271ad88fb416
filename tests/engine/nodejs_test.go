package engine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nodeSDKVersion is stamped into the copy of sdk/nodejs the test compiles
// (the generated package.json holds the ${VERSION} placeholder).
const nodeSDKVersion = "0.0.1-dev"

// nodeStepTimeout bounds one `node inline.js <step>` run (warm: 2-4 s).
const nodeStepTimeout = 3 * time.Minute

// installationResources is what an installation with only its required inputs
// and the Slack bot off registers: the component, its NameLock, six generated
// secrets, D1 and its migrations, one KV namespace, one bucket, two queues,
// WorkerUrls and the control plane.
const installationResources = 16

// TestNodeInlineWorkerPair is TestGoInlineWorkerPair through the generated
// Node SDK: sdk/nodejs is compiled with tsc against pinned @pulumi/pulumi and
// TypeScript (.ci/node-tools.sh), and testdata/nodejs/inline.js runs an inline
// program with the Node Automation API (in-process, so no
// pulumi-language-nodejs plugin) against the real CLI, the provider binary and
// the emulator: one up creating two workers that bind each other plus D1, a
// Durable Object, a file asset script and a secret; a preview that changes
// nothing and calls Cloudflare zero times; a destroy that empties the emulator.

func TestNodeInlineWorkerPair(t *testing.T) {
	t.Parallel()
	requirePulumi(t)
	deps := nodeDeps(t)
	dir := t.TempDir()
	// dir/node_modules links the cached modules. tsc (compiling dir/sdk) and
	// node (running dir/inline.js and dir/sdk/bin) find them by walking up, so
	// the SDK and the program resolve @pulumi/pulumi to the same files: one
	// module instance, as the runtime needs.
	require.NoError(t, os.Symlink(filepath.Join(deps, "node_modules"), filepath.Join(dir, "node_modules")))
	sdk := buildNodeSDK(t, deps, dir)
	typeCheckNodeExample(t, deps, dir, sdk)

	src, err := os.ReadFile(filepath.Join(repoRoot(), "tests", "engine", "testdata", "nodejs", "inline.js"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "inline.js"), src, 0o644))
	for _, sub := range []string{"work", "backend", "home"} {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, sub), 0o755))
	}

	emu := startEmulator(t)
	env := map[string]string{
		"OI_SDK_DIR":       sdk,
		"OI_BIN_DIR":       binDir,
		"OI_BACKEND_DIR":   filepath.Join(dir, "backend"),
		"OI_WORK_DIR":      filepath.Join(dir, "work"),
		"OI_PULUMI_HOME":   filepath.Join(dir, "home"),
		"OI_CF_BASE_URL":   emu.cloudflareBaseURL(),
		"OI_CF_TOKEN":      emulatorToken,
		"OI_CF_ACCOUNT":    emulatorAccount,
		"OI_SCRIPT":        filepath.Join(repoRoot(), "tests", "fixtures", "upstream", "packages", "control-plane", "dist", "index.js"),
		"OI_WORKER_SECRET": anthropicKey,
		"OI_REPO_KEY":      repoSecretsKey,
		"OI_NAME_PREFIX":   "oi-node",
		"OI_CHECKOUT":      filepath.Join(repoRoot(), "tests", "fixtures", "upstream"),
	}
	secrets := []string{anthropicKey, repoSecretsKey, emulatorToken}

	// `pulumi up` previews first: a fresh stack's preview, with every
	// input from a resource not created yet unknown, must pass and create.
	var fresh struct {
		ChangeSummary map[string]int `json:"changeSummary"`
	}
	runNodeStep(t, dir, env, secrets, "preview", &fresh)
	assert.Positive(t, fresh.ChangeSummary["create"], "a fresh stack's preview creates: %v", fresh.ChangeSummary)

	var up struct {
		SDK     string `json:"sdk"`
		Result  string `json:"result"`
		Outputs map[string]struct {
			Value  any  `json:"value"`
			Secret bool `json:"secret"`
		} `json:"outputs"`
	}
	runNodeStep(t, dir, env, secrets, "up", &up)
	t.Logf("@pulumi/pulumi %s", up.SDK)
	assert.Equal(t, "succeeded", up.Result)
	assert.Equal(t, "https://oi-node-control-plane.openinspect-emulator.workers.dev", up.Outputs["url"].Value)
	assert.Equal(t, "oi-node-bot", up.Outputs["botName"].Value)
	assert.Equal(t, map[string]any{"control-plane": "open-inspect-control-plane-oi-node"}, up.Outputs["installationWorkers"].Value)
	inv := emu.inventory(t)
	require.Len(t, inv.D1, 2, "the program's database and the installation's")
	assert.Contains(t, []any{inv.D1[0].ID, inv.D1[1].ID}, up.Outputs["databaseId"].Value, "the exported database id is the emulator's")
	require.Len(t, inv.Workers, 3)
	for _, w := range inv.Workers {
		if w.Name == "open-inspect-control-plane-oi-node" {
			continue
		}
		want, ok := map[string]int{"oi-node-control-plane": 4, "oi-node-bot": 1}[w.Name]
		require.True(t, ok, "unexpected worker %q", w.Name)
		assert.Equal(t, want, w.Bindings, "%s has all its bindings", w.Name)
		if w.Name == "oi-node-control-plane" {
			assert.Equal(t, []string{"SessionDO"}, w.Classes, "the file asset's Durable Object class is declared")
		}
	}
	assertNoPlaintextIn(t, env["OI_BACKEND_DIR"], secrets...)
	assertNoPlaintextIn(t, env["OI_WORK_DIR"], secrets...)

	emu.resetCounts(t)
	var preview struct {
		ChangeSummary map[string]int `json:"changeSummary"`
	}
	runNodeStep(t, dir, env, secrets, "preview", &preview)
	// The stack and the three resources, plus the installation's.
	assert.Equal(t, map[string]int{"same": 4 + installationResources}, preview.ChangeSummary, "an unchanged program previews only sames")
	calls, counts := emu.cloudflareCalls(t)
	assert.Zero(t, calls, "a no-op preview must not call Cloudflare: %v", counts)

	var destroy struct {
		Result          string         `json:"result"`
		ResourceChanges map[string]int `json:"resourceChanges"`
	}
	runNodeStep(t, dir, env, secrets, "destroy", &destroy)
	assert.Equal(t, "succeeded", destroy.Result)
	assert.Equal(t, map[string]int{"delete": 4 + installationResources}, destroy.ResourceChanges)
	emu.requireEmpty(t)
	// The backend keeps the history and backups of every checkpoint.
	assertNoPlaintextIn(t, env["OI_BACKEND_DIR"], secrets...)
}

// nodeDeps runs .ci/node-tools.sh and returns the directory it prints, whose
// node_modules holds the pinned @pulumi/pulumi, typescript and @types/node.
// Missing tools fail the test: it is part of CI.
func nodeDeps(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not on PATH: the Node engine test needs Node.js and npm for .ci/node-tools.sh", tool)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(repoRoot(), ".ci", "node-tools.sh"))
	cmd.Dir = repoRoot()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf(".ci/node-tools.sh failed: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	deps := strings.TrimSpace(lines[len(lines)-1])
	if _, err := os.Stat(filepath.Join(deps, "node_modules", "typescript", "bin", "tsc")); err != nil {
		t.Fatalf(".ci/node-tools.sh printed %q, which has no node_modules/typescript: %v\nstderr:\n%s", deps, err, stderr.String())
	}
	t.Logf(".ci/node-tools.sh: %s (%s)", deps, time.Since(start).Round(time.Millisecond))
	return deps
}

// buildNodeSDK copies sdk/nodejs into dir/sdk, stamps its version, compiles
// it with the SDK's own tsconfig.json into dir/sdk/bin and returns that
// directory (with the package.json that utilities.getVersion reads). The
// caller has linked dir/node_modules.
func buildNodeSDK(t *testing.T, deps, dir string) string {
	t.Helper()
	start := time.Now()
	src := filepath.Join(repoRoot(), "sdk", "nodejs")
	sdk := filepath.Join(dir, "sdk")
	require.NoError(t, filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			// Leftovers of a local build in the source tree are not the SDK.
			if rel == "bin" || rel == "node_modules" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(sdk, rel), 0o755)
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(sdk, rel), raw, 0o644)
	}))

	raw, err := os.ReadFile(filepath.Join(sdk, "package.json"))
	require.NoError(t, err)
	var pkg map[string]any
	require.NoError(t, json.Unmarshal(raw, &pkg))
	require.Equal(t, "@openinspect/pulumi-openinspect", pkg["name"])
	pkg["version"] = nodeSDKVersion
	stamped, err := json.MarshalIndent(pkg, "", "    ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(sdk, "package.json"), stamped, 0o644))

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(deps, "node_modules", "typescript", "bin", "tsc"), "-p", sdk)
	cmd.Dir = sdk
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("compiling sdk/nodejs with tsc (from .ci/node-tools.sh): %v\n%s", err, out)
	}
	bin := filepath.Join(sdk, "bin")
	require.NoError(t, os.WriteFile(filepath.Join(bin, "package.json"), stamped, 0o644))
	require.FileExists(t, filepath.Join(bin, "index.js"))
	t.Logf("compiled sdk/nodejs (%s)", time.Since(start).Round(time.Millisecond))
	return bin
}

// runNodeStep runs `node inline.js <step>` in dir and decodes its OI-RESULT
// line into out. Its output is shown on failure, with the secrets masked, and
// must not hold them at all.
func runNodeStep(t *testing.T, dir string, env map[string]string, secrets []string, step string, out any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), nodeStepTimeout)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, "node", "inline.js", step)
	cmd.Dir = dir
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	// On a timeout, end the CLI and the provider the program started too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()

	mask := func(s string) string {
		for _, secret := range secrets {
			s = strings.ReplaceAll(s, secret, "<secret>")
		}
		return s
	}
	show := func() string {
		return "stdout:\n" + mask(stdout.String()) + "\nstderr:\n" + mask(stderr.String())
	}
	// Not assert.NotContains: it would print the secret it found.
	for _, secret := range secrets {
		if strings.Contains(stdout.String()+stderr.String(), secret) {
			t.Errorf("inline.js %s printed a secret in plaintext (masked below)\n%s", step, show())
		}
	}
	require.NoError(t, runErr, "inline.js %s\n%s", step, show())

	var result string
	sc := bufio.NewScanner(bytes.NewReader(stdout.Bytes()))
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "OI-RESULT "); ok {
			require.Empty(t, result, "inline.js %s printed two results\n%s", step, show())
			result = rest
		}
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, result, "inline.js %s printed no OI-RESULT line\n%s", step, show())
	require.NoError(t, json.Unmarshal([]byte(result), out), "inline.js %s result %s", step, mask(result))
	t.Logf("inline.js %s: %s (%s)", step, mask(result), time.Since(start).Round(time.Millisecond))
}

// typeCheckNodeExample type-checks examples/nodejs against the compiled SDK,
// so the example users copy keeps up with the schema.
func typeCheckNodeExample(t *testing.T, deps, dir, sdk string) {
	t.Helper()
	example := filepath.Join(dir, "example")
	require.NoError(t, os.MkdirAll(example, 0o755))
	src, err := os.ReadFile(filepath.Join(repoRoot(), "examples", "nodejs", "index.ts"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(example, "index.ts"), src, 0o644))
	tsconfig, err := json.Marshal(map[string]any{
		"compilerOptions": map[string]any{
			"strict": true, "noEmit": true, "skipLibCheck": true, "types": []string{"node"},
			"target": "es2020", "module": "commonjs", "moduleResolution": "node",
			// The example imports the package by name; here it is the SDK just compiled.
			"baseUrl": ".", "paths": map[string][]string{"@openinspect/pulumi-openinspect": {sdk}},
		},
		"files": []string{"index.ts"},
	})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(example, "tsconfig.json"), tsconfig, 0o644))
	cmd := exec.CommandContext(t.Context(), "node", filepath.Join(deps, "node_modules", "typescript", "bin", "tsc"), "-p", example)
	cmd.Dir = example
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "examples/nodejs does not type-check against the SDK:\n%s", out)
}
