package engine

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/toolchain"
)

// demoConditions are the real conditions of `make demo`'s deployment, each
// allowed one warning line: the fixture checkout's migrations are not the
// pin's (deployed anyway: allowUnverified) and its bundles are not the
// reference build's. Anything else warned about is a finding.
var demoConditions = map[string]*regexp.Regexp{
	"unverified migrations": regexp.MustCompile(`D1 migrations differ from the pinned commit .*upstreamVerification`),
	"bundles differ":        regexp.MustCompile(`the bundles of \d+ workers differ from the reference build .*upstreamVerification`),
}

// warningLine is how the pulumi CLI prints a diagnostic at warning level.
var warningLine = regexp.MustCompile(`^\s*warning: `)

// TestDemoScriptOutput runs `make demo`'s script (examples/run-local.sh)
// against the emulator, offline, as a newcomer would: PATH holds the
// binaries this package built (as the Makefile puts bin/ there), HOME is an
// empty directory, so a Python 3.12+ is found only the shared way (PATH,
// PYENV_ROOT, `pyenv`). Its output has at most one warning line per real
// condition, none about a plugin taken from $PATH, and ends with the
// outputs, upstreamVerification carrying the per-file detail the one
// migrations line points at; the web UI (on Cloudflare) answered the webUrl
// printed.
func TestDemoScriptOutput(t *testing.T) {
	requirePulumi(t)
	// Found here as the provider will find it inside the script; failing
	// here says what was tried.
	toolchain.Python(t)
	demo := t.TempDir()
	cmd := exec.Command(filepath.Join(repoRoot(), "examples", "run-local.sh"))
	cmd.Dir = repoRoot()
	cmd.Env = append(os.Environ(),
		"OPENINSPECT_DEMO_DIR="+demo,
		"OPENINSPECT_BIN_DIR="+binDir,
		"OPENINSPECT_TOOLS_CACHE="+toolchain.CacheDir(),
		"HOME="+t.TempDir(),
		"PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"),
	)
	raw, err := cmd.CombinedOutput()
	out := string(raw)
	require.NoError(t, err, "examples/run-local.sh:\n%s", out)

	assert.NotContains(t, out, "from $PATH", "the plugin is found without Pulumi's ambient-plugin warning")
	perCondition := map[string]int{}
	var unexpected []string
	for _, line := range strings.Split(out, "\n") {
		if !warningLine.MatchString(line) {
			continue
		}
		matched := false
		for name, re := range demoConditions {
			if re.MatchString(line) {
				perCondition[name]++
				matched = true
			}
		}
		if !matched {
			unexpected = append(unexpected, line)
		}
	}
	assert.Empty(t, unexpected, "warnings that are no known condition of the demo:\n%s", out)
	for name, n := range perCondition {
		assert.LessOrEqual(t, n, 1, "condition %q warned %d times:\n%s", name, n, out)
	}
	assert.Equal(t, 1, perCondition["unverified migrations"], "the fixture's unverified migrations are announced once:\n%s", out)

	// The web UI on the emulator's Workers answered the printed webUrl
	// while the emulator ran (the script asks it before it stops).
	assert.Regexp(t, `(?m)^web: GET http://127\.0\.0\.1:\d+/__workers/open-inspect-web-demo answered 200$`, out)

	_, jsonPart, ok := strings.Cut(out, "\noutputs:\n")
	require.True(t, ok, "the script prints the outputs:\n%s", out)
	var outputs map[string]any
	require.NoError(t, json.Unmarshal([]byte(jsonPart), &outputs), "%s", jsonPart)
	for _, key := range []string{"controlPlaneUrl", "webUrl", "databaseId", "workerNames", "upstreamCommit"} {
		assert.NotEmpty(t, outputs[key], "output %s", key)
	}
	webURL, _ := outputs["webUrl"].(string)
	assert.Contains(t, out, "web: GET "+webURL+" answered 200", "the webUrl printed is the one that answered")
	verification, ok := outputs["upstreamVerification"].(map[string]any)
	require.True(t, ok, "upstreamVerification: %v", outputs["upstreamVerification"])
	assert.Contains(t, verification["migrations"], "UNVERIFIED")
	assert.Equal(t, "extra (not one of the pinned commit's)", verification["migrations.0001_sessions.sql"],
		"the per-file detail the warning points at")
	assert.NotContains(t, out, "demo-not-a-real-key", "no secret in the demo's output")
}
