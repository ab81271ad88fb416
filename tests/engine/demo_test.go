package engine

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

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
// printed. Run again with OPENINSPECT_DEMO_STAY_UP=1 (`make local-cloud`),
// it prints what answers where, the printed URLs answer while it waits, and
// a TERM stops it and its emulator.
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
	assert.Regexp(t, `(?m)^web: GET http://open-inspect-web-demo\.workers\.localhost:\d+ answered 200$`, out)

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

	// Again, staying up (`make local-cloud`): the second up changes nothing,
	// then the local cloud keeps answering until the script is stopped.
	stayUp := exec.Command(cmd.Path)
	stayUp.Dir = cmd.Dir
	stayUp.Env = append(slices.Clone(cmd.Env), "OPENINSPECT_DEMO_STAY_UP=1")
	checkStayUp(t, stayUp, outputs)
}

// stayUpLine is one "what answers where" line: a label, then a URL.
var stayUpLine = regexp.MustCompile(`^  (emulator|Cloudflare API|Modal API|worker [a-z-]+|web UI) +(http://\S+)`)

// checkStayUp runs the demo script with OPENINSPECT_DEMO_STAY_UP=1, reads
// its "what answers where" block, asks the printed URLs, then stops it with
// TERM (what Ctrl-C's trap does too) and checks the emulator went with it.
func checkStayUp(t *testing.T, cmd *exec.Cmd, outputs map[string]any) {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = cmd.Stdout
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	lines := make(chan string)
	go func() {
		scanner := bufio.NewScanner(stdout)
		for scanner.Scan() {
			lines <- scanner.Text()
		}
		close(lines)
		exited <- cmd.Wait()
	}()
	stopped := false
	defer func() {
		if !stopped {
			_ = cmd.Process.Kill() // this test's own script, by its handle
			go func() {
				for range lines {
				}
			}()
			<-exited
		}
	}()

	var out strings.Builder
	where := map[string]string{}
	deadline := time.After(10 * time.Minute)
	for inBlock := false; ; {
		var line string
		var ok bool
		select {
		case line, ok = <-lines:
		case <-deadline:
			t.Fatalf("no \"what answers where\" block in 10 minutes:\n%s", out.String())
		}
		require.True(t, ok, "the script ended before the local cloud was up:\n%s", out.String())
		out.WriteString(line + "\n")
		if strings.HasPrefix(line, "local cloud: up until Ctrl-C") {
			inBlock = true
		}
		if m := stayUpLine.FindStringSubmatch(line); inBlock && m != nil {
			where[m[1]] = m[2]
		}
		if inBlock && strings.HasPrefix(line, "  curl ") && strings.HasPrefix(line, "  curl http://open-inspect-web-demo.workers.localhost:") {
			break // the block's last line
		}
	}
	assert.Contains(t, out.String(), "web: GET "+outputs["webUrl"].(string)+" answered 200", "the port of the first run is reused:\n%s", out.String())

	t.Logf("the local cloud answers: %v", where)
	emu := where["emulator"]
	require.Regexp(t, `^http://127\.0\.0\.1:\d+$`, emu, "%s", out.String())
	assert.Equal(t, emu+"/client/v4/", where["Cloudflare API"])
	assert.Equal(t, emu, where["Modal API"])
	names, _ := outputs["workerNames"].(map[string]any)
	require.NotEmpty(t, names)
	for worker, script := range names {
		assert.Equal(t, workerOrigin(emu, script.(string)), where["worker "+worker], "%s", out.String())
	}
	assert.Equal(t, outputs["webUrl"], where["web UI"])
	assert.Contains(t, out.String(), "  curl "+outputs["controlPlaneUrl"].(string)+"/health\n")

	// Still answering after the deploy: the web UI's page and the control plane.
	status, page := get(t, where["web UI"])
	assert.Equal(t, http.StatusOK, status, "%s", page)
	assert.Contains(t, page, `data-ws-url="`+workerWebSocket(emu, "open-inspect-control-plane-demo")+`"`)
	status, health := get(t, outputs["controlPlaneUrl"].(string)+"/health")
	assert.Equal(t, http.StatusOK, status, "%s", health)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	for line := range lines {
		out.WriteString(line + "\n")
	}
	require.NoError(t, <-exited, "the stopped script exits 0:\n%s", out.String())
	stopped = true
	assert.Contains(t, out.String(), "local cloud: stopping")
	_, err = http.Get(emu + "/")
	assert.Error(t, err, "the emulator stops with the script")
}
