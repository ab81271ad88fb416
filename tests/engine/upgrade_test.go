package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/pulumi/providertest"
	"github.com/pulumi/providertest/optproviderupgrade"
	"github.com/pulumi/providertest/pulumitest"
	"github.com/pulumi/providertest/pulumitest/assertpreview"
	"github.com/pulumi/providertest/pulumitest/optnewstack"
	"github.com/pulumi/providertest/pulumitest/optrun"
	"github.com/pulumi/providertest/pulumitest/opttest"
	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/events"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optpreview"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/pyfind"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/daytona"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/e2b"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/modal"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/opencomputer"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/vercel"
	"github.com/openinspect/pulumi-openinspect/tests/toolchain"
)

const (
	// upgradeBaseline is the release the baselines were recorded with
	// (docs/releases.md names its commit); providertest keeps each
	// baseline under testdata/recorded/TestProviderUpgrade/<program>/<it>.
	upgradeBaseline = "0.1.0"
	// baselinePluginEnv names the directory of the baseline release's
	// plugin. Set (by `make record-upgrade-baselines`), the test records
	// the baselines that are missing with it; unset, it only previews.
	baselinePluginEnv = "OPENINSPECT_UPGRADE_BASELINE_PLUGIN"
	// baselineVersionEnv is the version the recording's plugin was built
	// as; it must be upgradeBaseline.
	baselineVersionEnv = "OPENINSPECT_UPGRADE_BASELINE_VERSION"
	// upgradeEmulatorAddr is where the emulator listens, recording and
	// previewing: its URL is in the provider's config, the sandbox
	// blocks, every worker's URL and the vars that carry them, so an
	// address of its own per run would be a change of every installation.
	// The port is below Linux's ephemeral range, where the other tests'
	// emulators (port 0) never land.
	upgradeEmulatorAddr = "127.0.0.1:28049"
	// upgradeCacheDir is the provider's cache directory, a fixed path for
	// the same reason: the web Worker's script and assets directory are
	// renderings under it. It is a symbolic link to the tools cache, where
	// the Modal CLI's and the builders' environments already are.
	upgradeCacheDir = "/tmp/openinspect-upgrade-cache"
	// upgradeCheckout is the fixture checkout, copied into each program's
	// directory and named relative to it (the provider resolves it from
	// the program's directory): every bundle, migration and builder path
	// in the state is then the same on any machine.
	upgradeCheckout = "upstream"
	// expectedDiffFile, beside a baseline, lists the changes its preview
	// may show, each with its reason.
	expectedDiffFile = "expected-diff.json"
	// fixtureDigestFile, beside a baseline, is the digest of the fixture
	// checkout it was recorded from.
	fixtureDigestFile = "fixture.sha256"
)

// portableEnv is how stacks that must not name this machine get Python and
// the cache directory: from the provider's environment fallbacks, which
// Configure reads and the state never keeps, instead of stack config,
// which the state keeps as the provider's inputs.
func portableEnv(t tb) []opttest.Option {
	return []opttest.Option{
		opttest.Env(pyfind.EnvVar, toolchain.Python(t)),
		opttest.Env("OPENINSPECT_CACHE_DIR", upgradeCacheDir),
	}
}

// upgradeProgram is one installation with a recorded baseline: the
// engine tests' own program for it, against the upgrade emulator.
type upgradeProgram struct {
	name string
	// deployment is its deploymentName: the installations share one
	// emulator account, so each has its own.
	deployment string
	pt         func(t *testing.T, emu *emulatorProcess) *pulumitest.PulumiTest
}

// upgradePrograms: examples/yaml (the web on Cloudflare, Modal sandboxes),
// examples/yaml-vercel, and examples/yaml with each other sandbox backend.
var upgradePrograms = []upgradeProgram{
	{"yaml", "web", func(t *testing.T, emu *emulatorProcess) *pulumitest.PulumiTest {
		return newInstallationWithWebTest(t, emu)
	}},
	{"yaml-vercel", "vercel", func(t *testing.T, emu *emulatorProcess) *pulumitest.PulumiTest { return newVercelWebTest(t, emu) }},
	{"daytona", "daytona", func(t *testing.T, emu *emulatorProcess) *pulumitest.PulumiTest {
		pt := newInstallationTest(t, emu)
		withDaytona(t, pt, emu)
		return pt
	}},
	{"e2b", "e2b", func(t *testing.T, emu *emulatorProcess) *pulumitest.PulumiTest {
		pt := newInstallationTest(t, emu)
		withE2B(t, pt, emu)
		return pt
	}},
	{"vercel-sandbox", "vsandbox", func(t *testing.T, emu *emulatorProcess) *pulumitest.PulumiTest {
		pt := newInstallationTest(t, emu)
		withVercel(t, pt, emu)
		return pt
	}},
	{"opencomputer", "ocomputer", func(t *testing.T, emu *emulatorProcess) *pulumitest.PulumiTest {
		pt := newInstallationTest(t, emu)
		withOpenComputer(t, pt, emu)
		return pt
	}},
}

// TestProviderUpgrade previews today's plugin over the state each program
// left with the baseline release's plugin (providertest's
// PreviewProviderUpgrade, the state recorded once by `make
// record-upgrade-baselines` and committed): nothing may be replaced, and
// nothing may change unless expected-diff.json beside the baseline lists
// the change with its reason.
//
// It previews the recorded state alone, with no remote object behind it:
// every resource's Diff here compares inputs with the state and calls no
// API (the engine tests' no-op previews prove it per family), so a
// replayed state is what a user's `pulumi preview` after the upgrade sees.
// The emulator still listens at the recorded address, empty, and the test
// fails if a preview called it: a Diff or Check that starts reading remote
// objects would make a replayed state no longer what a user sees, and the
// test says so.
func TestProviderUpgrade(t *testing.T) {
	t.Parallel()
	requirePulumi(t)
	baselinePlugin := os.Getenv(baselinePluginEnv)
	recording := baselinePlugin != ""
	if recording {
		require.Equal(t, upgradeBaseline, os.Getenv(baselineVersionEnv),
			"%s: the plugin in %s must be built as the baseline release", baselineVersionEnv, baselinePlugin)
	}
	emu := startUpgradeEmulator(t)
	linkUpgradeCache(t)
	digest := fixtureDigest(t)

	t.Run("programs", func(t *testing.T) {
		for _, prog := range upgradePrograms {
			t.Run(prog.name, func(t *testing.T) {
				t.Parallel()
				dir := filepath.Join("testdata", "recorded", "TestProviderUpgrade", prog.name, upgradeBaseline)
				state := filepath.Join(dir, "stack.json")
				if _, err := os.Stat(state); err != nil && !recording {
					t.Fatalf("no baseline for %s at %s (%v): record it with `make record-upgrade-baselines`", prog.name, state, err)
				}
				if !recording {
					recorded, err := os.ReadFile(filepath.Join(dir, fixtureDigestFile))
					require.NoError(t, err)
					require.Equal(t, strings.TrimSpace(string(recorded)), digest,
						"tests/fixtures/upstream changed since the baseline was recorded: the preview would show the change of the "+
							"installation's input, not of the plugin; record the baselines again (`make record-upgrade-baselines`)")
				}
				pt := prog.pt(t, emu)
				pt.SetConfig(t, "deploymentName", prog.deployment)
				copyFixture(t, filepath.Join(pt.WorkingDir(), upgradeCheckout))
				pt.SetConfig(t, "upstreamCheckout", upgradeCheckout)

				if recording {
					recordBaseline(t, pt, state, baselinePlugin)
					require.NoError(t, os.WriteFile(filepath.Join(dir, fixtureDigestFile), []byte(digest+"\n"), 0o644))
				}
				requireNoTestSecretIn(t, state)
				preview := providertest.PreviewProviderUpgrade(t, pt, "openinspect", upgradeBaseline,
					optproviderupgrade.CacheDir("testdata", "recorded", "TestProviderUpgrade", prog.name, optproviderupgrade.BaselineVersion))
				assertpreview.HasNoReplacements(t, preview)
				expected := readExpectedDiff(t, filepath.Join(dir, expectedDiffFile))
				if len(expected) == 0 && !hasChanges(preview) {
					return
				}
				// Something changed, or changes are expected: which
				// property of which resource, from the engine's events.
				actual := previewChanges(t, pt, state)
				if problems := compareChanges(expected, actual); len(problems) > 0 {
					t.Errorf("the upgrade from %s changes %s unlike %s:\n%s\n\n%s", upgradeBaseline, prog.name,
						filepath.Join(dir, expectedDiffFile), strings.Join(problems, "\n"), preview.StdOut)
				}
			})
		}
	})
	if !recording {
		stats := emu.requests(t)
		assert.Empty(t, stats.Counts, "the previews called the emulator: a Diff or Check reads remote objects now, "+
			"and a replayed state no longer shows what the upgrade does")
	}
}

// recordBaseline deploys the program with the baseline release's plugin,
// as a user's `pulumi up` (preview, then update), and writes the stack's
// state where PreviewProviderUpgrade reads its baseline. providertest would
// record it itself, but from `pulumi stack export --show-secrets` with the
// secrets replaced by a placeholder, and only outside lists (a ModalApp's
// secrets list stayed in plaintext); a placeholder also reads as a change
// of every secret input at the preview. This exports the state as the
// backend keeps it: each secret the passphrase provider's ciphertext
// (pulumitest's fixed test passphrase), which the import decrypts. It keeps
// no gRPC log: the log carries the provider's config and the component's
// inputs unmarked, test secrets among them in plaintext.
func recordBaseline(t *testing.T, pt *pulumitest.PulumiTest, state, plugin string) {
	t.Helper()
	if _, err := os.Stat(state); err == nil {
		t.Fatalf("%s exists: remove it to record it again (`make record-upgrade-baselines` does)", state)
	}
	base := pt.CopyToTempDir(t, opttest.LocalProviderPath("openinspect", plugin))
	previewUp(t, base)
	stack := base.CurrentStack()
	cmd := exec.CommandContext(t.Context(), "pulumi", "stack", "export", "--stack", stack.Name())
	cmd.Dir = base.WorkingDir()
	cmd.Env = os.Environ()
	for k, v := range stack.Workspace().GetEnvVars() {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "pulumi stack export: %s", stderr.String())
	var export apitype.UntypedDeployment
	require.NoError(t, json.Unmarshal(out, &export))
	raw, err := json.MarshalIndent(export, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(state), 0o755))
	require.NoError(t, os.WriteFile(state, raw, 0o644))
}

// startUpgradeEmulator starts the emulator at upgradeEmulatorAddr, failing
// clearly when the port is taken (another run of this test).
func startUpgradeEmulator(t *testing.T) *emulatorProcess {
	t.Helper()
	l, err := net.Listen("tcp", upgradeEmulatorAddr)
	if err != nil {
		t.Fatalf("the upgrade tests' emulator address %s is taken (another run of TestProviderUpgrade?): %v", upgradeEmulatorAddr, err)
	}
	require.NoError(t, l.Close())
	emu := startEmulatorWith(t, os.Stderr, "-listen", upgradeEmulatorAddr)
	require.Equal(t, "http://"+upgradeEmulatorAddr, emu.url)
	emu.portable = true
	return emu
}

// linkUpgradeCache points upgradeCacheDir at the tools cache, replacing a
// link another tools cache left.
func linkUpgradeCache(t *testing.T) {
	t.Helper()
	target := toolchain.CacheDir()
	if current, err := os.Readlink(upgradeCacheDir); err == nil && current == target {
		return
	}
	tmp := fmt.Sprintf("%s.%d", upgradeCacheDir, os.Getpid())
	require.NoError(t, os.Symlink(target, tmp))
	require.NoError(t, os.Rename(tmp, upgradeCacheDir), "%s must be a symbolic link (or absent)", upgradeCacheDir)
}

// fixtureDigest is a SHA-256 over the fixture checkout's file names and
// contents (what copyFixture copies).
func fixtureDigest(t *testing.T) string {
	t.Helper()
	root := filepath.Join(repoRoot(), "tests", "fixtures", "upstream")
	h := sha256.New()
	require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "__pycache__" {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		fmt.Fprintf(h, "%s %x\n", filepath.ToSlash(rel), sum)
		return nil
	}))
	return hex.EncodeToString(h.Sum(nil))
}

// upgradeTestSecrets are the plaintexts no recorded file may hold.
func upgradeTestSecrets() []string {
	out := []string{emulatorToken, modal.DefaultTokenSecret, daytona.DefaultAPIKey, e2b.DefaultAPIKey,
		opencomputer.DefaultAPIKey, vercel.DefaultToken}
	for _, v := range installationSecrets {
		out = append(out, v)
	}
	return out
}

// requireNoTestSecretIn fails when a recorded state holds a test secret in
// plaintext (it keeps them as the passphrase provider's ciphertext).
func requireNoTestSecretIn(t *testing.T, path string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	for i, secret := range upgradeTestSecrets() {
		if strings.Contains(string(raw), secret) {
			t.Fatalf("%s holds test secret #%d in plaintext", path, i)
		}
	}
}

// expectedChange is one entry of expected-diff.json: a change the upgrade
// makes to a resource and why it is right.
type expectedChange struct {
	// URN is the resource's URN in the baseline's stack.
	URN string `json:"urn"`
	// Op is the step: update, create or delete.
	Op string `json:"op"`
	// Property is the property path that changes (an update's), as the
	// engine's detailed diff names it; empty for a create or delete.
	Property string `json:"property,omitempty"`
	// Reason says why the change is right, for the release note.
	Reason string `json:"reason"`
}

func (c expectedChange) key() string { return c.Op + " " + c.URN + " " + c.Property }

func readExpectedDiff(t *testing.T, path string) []expectedChange {
	t.Helper()
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	var out []expectedChange
	require.NoError(t, json.Unmarshal(raw, &out), path)
	for i, c := range out {
		require.NotEmpty(t, c.URN, "%s[%d].urn", path, i)
		require.Contains(t, []string{"update", "create", "delete"}, c.Op, "%s[%d].op", path, i)
		require.Equal(t, c.Op == "update", c.Property != "", "%s[%d].property: an update names the property, a create or delete none", path, i)
		require.NotEmpty(t, strings.TrimSpace(c.Reason), "%s[%d].reason: every expected change says why", path, i)
	}
	return out
}

func hasChanges(preview auto.PreviewResult) bool {
	for op, n := range preview.ChangeSummary {
		if op != apitype.OpSame && n > 0 {
			return true
		}
	}
	return false
}

// previewChanges previews the baseline's state again, as
// PreviewProviderUpgrade does, and lists each change from the engine's
// events: an update once per changed property path.
func previewChanges(t *testing.T, pt *pulumitest.PulumiTest, state string) []expectedChange {
	t.Helper()
	test := pt.CopyToTempDir(t, opttest.NewStackOptions(optnewstack.DisableAutoDestroy()))
	test.Run(t, func(*pulumitest.PulumiTest) { t.Fatalf("no baseline at %s", state) }, optrun.WithCache(state))
	ch := make(chan events.EngineEvent)
	var changes []expectedChange
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range ch {
			if e.ResourcePreEvent == nil {
				continue
			}
			m := e.ResourcePreEvent.Metadata
			switch m.Op {
			// A replacement's create and delete steps repeat its replace.
			case apitype.OpSame, apitype.OpRead, apitype.OpCreateReplacement, apitype.OpDeleteReplaced:
				continue
			case apitype.OpUpdate:
				paths := slices.Sorted(maps.Keys(m.DetailedDiff))
				if len(paths) == 0 {
					paths = m.Diffs
				}
				for _, p := range paths {
					changes = append(changes, expectedChange{URN: m.URN, Op: string(m.Op), Property: p})
				}
			default:
				changes = append(changes, expectedChange{URN: m.URN, Op: string(m.Op)})
			}
		}
	}()
	test.Preview(t, optpreview.EventStreams(ch))
	<-done
	return changes
}

// compareChanges lists each change the preview made that is not expected
// (or is a replacement, which no entry allows) and each expected change it
// did not make (a stale entry).
func compareChanges(expected, actual []expectedChange) []string {
	want := map[string]bool{}
	for _, c := range expected {
		want[c.key()] = true
	}
	seen := map[string]bool{}
	var problems []string
	for _, c := range actual {
		seen[c.key()] = true
		if !want[c.key()] {
			problems = append(problems, fmt.Sprintf("unexpected: %s %s %s (list it in %s with its reason, or fix the plugin)",
				c.Op, c.URN, c.Property, expectedDiffFile))
		}
	}
	for _, c := range expected {
		if !seen[c.key()] {
			problems = append(problems, fmt.Sprintf("expected but not seen: %s %s %s (%s): remove the entry", c.Op, c.URN, c.Property, c.Reason))
		}
	}
	sort.Strings(problems)
	return problems
}

// TestCompareChanges: an unlisted change and a listed change the preview
// did not make are both reported; a listed change that happened is not.
func TestCompareChanges(t *testing.T) {
	t.Parallel()
	const urn = "urn:pulumi:test::p::openinspect:index:Worker::w"
	listed := expectedChange{URN: urn, Op: "update", Property: "vars.A", Reason: "new var"}
	stale := expectedChange{URN: urn, Op: "update", Property: "vars.B", Reason: "gone"}
	problems := compareChanges([]expectedChange{listed, stale}, []expectedChange{
		{URN: urn, Op: "update", Property: "vars.A"},
		{URN: urn, Op: "replace"},
	})
	assert.Equal(t, []string{
		"expected but not seen: update " + urn + " vars.B (gone): remove the entry",
		"unexpected: replace " + urn + "  (list it in expected-diff.json with its reason, or fix the plugin)",
	}, problems)
	assert.Empty(t, compareChanges([]expectedChange{listed}, []expectedChange{{URN: urn, Op: "update", Property: "vars.A"}}))
}
