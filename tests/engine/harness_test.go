// Package engine drives whole Pulumi programs through the real pulumi CLI,
// with a local file:// backend, against the standalone emulator binary.
package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openinspect/pulumi-openinspect/internal/reporoot"

	"github.com/pulumi/providertest/pulumitest"
	"github.com/pulumi/providertest/pulumitest/assertpreview"
	"github.com/pulumi/providertest/pulumitest/assertrefresh"
	"github.com/pulumi/providertest/pulumitest/opttest"
	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optpreview"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/vercel"
	"github.com/openinspect/pulumi-openinspect/tests/kube"
)

const (
	emulatorToken   = "engine-test-token"
	emulatorAccount = "00112233445566778899aabbccddeeff"
)

// binDir holds the provider and emulator binaries built once for the package.
var binDir string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// The toolchain cache from .ci/tools.sh, so `go test` works without make.
	os.Setenv("PATH", kube.DefaultBinDir()+string(os.PathListSeparator)+os.Getenv("PATH"))
	dir, err := os.MkdirTemp("", "oi-engine-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binDir = dir
	root := repoRoot()
	for _, b := range []struct{ out, pkg string }{
		{"pulumi-resource-openinspect", "./provider/cmd/pulumi-resource-openinspect"},
		{"openinspect-emulator", "./tests/emulator/cmd/openinspect-emulator"},
	} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, b.out), b.pkg)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building %s: %v\n%s", b.pkg, err, out)
			return 1
		}
	}
	return m.Run()
}

// tb is what the harness helpers need of a test or a benchmark: testing.TB
// plus Deadline, which pulumitest asks for (*testing.T has it; a benchmark
// goes through benchTB).
type tb interface {
	testing.TB
	Deadline() (time.Time, bool)
}

// benchTB lets a benchmark use the harness: it has no deadline.
type benchTB struct{ *testing.B }

func (benchTB) Deadline() (time.Time, bool) { return time.Time{}, false }

func repoRoot() string { return reporoot.Dir() }

// requirePulumi fails (never skips) when the CLI is missing: these tests are
// part of CI, and `make tools` provides the CLI offline.
func requirePulumi(t tb) {
	t.Helper()
	for _, tool := range []string{"pulumi", "pulumi-language-yaml"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not on PATH: run `make tools` (builds it from the Go module proxy)", tool)
		}
	}
}

// emulatorProcess is the standalone emulator binary, one per test.
type emulatorProcess struct {
	url     string
	cmd     *exec.Cmd
	dataDir string // the emulator's -data-dir
	// portable keeps what names this machine out of the stacks run
	// against this emulator (upgrade_test.go).
	portable bool

	mu sync.Mutex
	// userProjects are the Vercel projects a test made for installations
	// to use, as a user makes them (vercelSandboxProject): no destroy
	// deletes them, so requireEmpty leaves them out.
	userProjects map[string]bool
}

func startEmulator(t tb) *emulatorProcess {
	t.Helper()
	return startEmulatorWith(t, os.Stderr)
}

// startEmulatorWith starts the emulator writing its output to out, with
// extra command-line flags (e.g. -v, its request log).
func startEmulatorWith(t tb, out io.Writer, flags ...string) *emulatorProcess {
	t.Helper()
	dir := t.TempDir()
	addrFile := filepath.Join(dir, "addr")
	cmd := exec.Command(filepath.Join(binDir, "openinspect-emulator"), append([]string{
		"-listen", "127.0.0.1:0", "-data-dir", filepath.Join(dir, "data"),
		"-token", emulatorToken, "-account", emulatorAccount, "-addr-file", addrFile}, flags...)...)
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	e := &emulatorProcess{cmd: cmd, dataDir: filepath.Join(dir, "data")}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(addrFile); err == nil && len(b) > 0 {
			e.url = strings.TrimSpace(string(b))
			return e
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("emulator did not report its address within 30s")
	return nil
}

func (e *emulatorProcess) cloudflareBaseURL() string { return e.url + "/client/v4/" }

func (e *emulatorProcess) admin(t tb, method, path string, out any) {
	t.Helper()
	req, err := http.NewRequest(method, e.url+"/__emulator/"+path, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Less(t, resp.StatusCode, 300, "%s %s", method, path)
	if out != nil {
		require.NoError(t, json.NewDecoder(resp.Body).Decode(out))
	}
}

func (e *emulatorProcess) resetCounts(t tb) { e.admin(t, http.MethodDelete, "requests", nil) }

// requestStats is the admin API's GET requests answer.
type requestStats struct {
	Counts          map[string]int `json:"counts"`
	CloudflareCalls int            `json:"cloudflare_calls"`
	CloudflareBytes int64          `json:"cloudflare_bytes"`
}

func (e *emulatorProcess) requests(t tb) requestStats {
	var stats requestStats
	e.admin(t, http.MethodGet, "requests", &stats)
	return stats
}

func (e *emulatorProcess) cloudflareCalls(t tb) (int, map[string]int) {
	stats := e.requests(t)
	return stats.CloudflareCalls, stats.Counts
}

// postAdmin POSTs a JSON body to an admin route and returns the status.
func (e *emulatorProcess) postAdmin(t tb, path string, body []byte) int {
	t.Helper()
	resp, err := http.Post(e.url+"/__emulator/"+path, "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	return resp.StatusCode
}

// inventory returns what exists in the emulator, without the account's
// ownership registry: no installation owns or deletes it, by design
// (registryRecords reads what it holds).
func (e *emulatorProcess) inventory(t tb) emulator.Inventory {
	inv := e.fullInventory(t)
	inv.D1 = withoutRegistry(inv.D1)
	return inv
}

func (e *emulatorProcess) fullInventory(t tb) emulator.Inventory {
	var inv emulator.Inventory
	e.admin(t, http.MethodGet, "inventory", &inv)
	return inv
}

// requireEmpty: nothing is left but the ownership registry, and it records
// nothing (every destroy removed its records).
func (e *emulatorProcess) requireEmpty(t *testing.T) {
	t.Helper()
	inv := e.inventory(t)
	e.mu.Lock()
	var projects []vercel.ProjectEntry
	for _, p := range inv.Vercel.Projects {
		if !e.userProjects[p.Team+"/"+p.Name] || len(p.Env) > 0 || len(p.Deployments) > 0 || len(p.Domains) > 0 {
			projects = append(projects, p)
		}
	}
	e.mu.Unlock()
	inv.Vercel.Projects = projects
	require.True(t, inv.Empty(), "emulator still holds %+v", inv)
	require.Empty(t, e.registryRecords(t), "the ownership registry still records objects")
}

// requireNoPlaintext scans the stack's backend directory, the state files as
// they are stored, for a secret's plaintext.
func requireNoPlaintext(t *testing.T, stack *auto.Stack, secret string) {
	t.Helper()
	backend := stack.Workspace().GetEnvVars()["PULUMI_BACKEND_URL"]
	require.True(t, strings.HasPrefix(backend, "file://"), "backend %q", backend)
	assertNoPlaintextIn(t, strings.TrimPrefix(backend, "file://"), secret)
}

// assertNoPlaintextIn scans every file under root (a local backend, a
// workspace) for the secrets' plaintext.
func assertNoPlaintextIn(t *testing.T, root string, secrets ...string) {
	t.Helper()
	files := 0
	require.NoError(t, filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		for i, secret := range secrets {
			// Not require.NotContains: it would print the file, secret included.
			if bytes.Contains(raw, []byte(secret)) {
				t.Fatalf("%s holds secret #%d in plaintext", path, i)
			}
		}
		return nil
	}))
	require.NotZero(t, files, "no files under %s", root)
}

// requireNoOpPreview previews an Automation API stack and checks it changes
// nothing and makes no Cloudflare call.
func requireNoOpPreview(t *testing.T, stack auto.Stack, emu *emulatorProcess) {
	t.Helper()
	emu.resetCounts(t)
	preview, err := stack.Preview(t.Context())
	require.NoError(t, err)
	assertpreview.HasNoChanges(t, preview)
	calls, counts := emu.cloudflareCalls(t)
	assert.Zero(t, calls, "a no-op preview must not call Cloudflare: %v", counts)
}

// previewUp is `pulumi up` as the CLI runs it: a preview, then the update.
// The Automation API's Up is `pulumi up --skip-preview`, so without the
// preview a test never sees what a user's first command sees: every input
// that depends on a resource not created yet is unknown (issue 30: a fresh
// installation's web Worker failed Check at preview). A preview error fails
// the test. beforeUp runs between the two: a test that counts the update's
// Cloudflare calls resets the emulator's counts there.
func previewUp(t pulumitest.PT, pt *pulumitest.PulumiTest, beforeUp ...func()) auto.UpResult {
	t.Helper()
	pt.Preview(t)
	for _, f := range beforeUp {
		f()
	}
	return pt.Up(t)
}

// previewUpStack is previewUp for an Automation API stack (an inline
// program, or a program the test set up itself).
func previewUpStack(ctx context.Context, t testing.TB, stack auto.Stack, opts ...optup.Option) (auto.UpResult, error) {
	t.Helper()
	_, err := stack.Preview(ctx, optpreview.SuppressProgress())
	require.NoError(t, err, "the preview before the update")
	return stack.Up(ctx, opts...)
}

// newYAMLTest copies a YAML program and configures its stack for an emulator.
func newYAMLTest(t tb, dir string, emu *emulatorProcess) *pulumitest.PulumiTest {
	t.Helper()
	return newYAMLTestWith(t, dir, emu, binDir)
}

// newYAMLTestWith is newYAMLTest with the provider plugin from pluginDir.
func newYAMLTestWith(t tb, dir string, emu *emulatorProcess, pluginDir string) *pulumitest.PulumiTest {
	t.Helper()
	opts := []opttest.Option{
		opttest.LocalProviderPath("openinspect", pluginDir),
		opttest.SkipInstall(),
		// The gRPC debug log would hold secret values in plaintext.
		opttest.DisableGrpcLog(),
		opttest.Env("PULUMI_SKIP_UPDATE_CHECK", "true"),
	}
	if emu.portable {
		opts = append(opts, portableEnv(t)...)
	}
	pt := pulumitest.NewPulumiTest(t, dir, opts...)
	configureStack(t, pt.CurrentStack(), emu)
	pt.SetConfig(t, "deploymentName", "engine")
	pt.SetConfig(t, "openinspect:workersDevBaseUrl", emu.workersDevBase())
	return pt
}

// requireSteadyState checks a deployed YAML program is at rest: a preview
// changes nothing and calls Cloudflare zero times, a refresh finds nothing
// changed, and the preview after it is still empty.
func requireSteadyState(t *testing.T, pt *pulumitest.PulumiTest, emu *emulatorProcess) {
	t.Helper()
	emu.resetCounts(t)
	assertpreview.HasNoChanges(t, pt.Preview(t))
	calls, counts := emu.cloudflareCalls(t)
	assert.Zero(t, calls, "a no-op preview must not call Cloudflare: %v", counts)
	assertrefresh.HasNoChanges(t, pt.Refresh(t))
	assertpreview.HasNoChanges(t, pt.Preview(t))
}
