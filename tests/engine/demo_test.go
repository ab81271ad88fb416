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

// TestMakeDemo runs `make demo` as a newcomer would on a fresh machine,
// offline: HOME is an empty directory and the tool cache is new, holding
// only the pulumi CLI and its YAML plugin (linked from the shared cache,
// since building them takes minutes), so the target itself must fetch the
// rest (workerd from npm; the provider the Modal CLI from PyPI); a Python
// 3.12+ is found only the shared way (PATH, PYENV_ROOT, `pyenv`). Its
// script previews and deploys examples/yaml with a plain `pulumi up`. Its
// output has at most one warning line per real condition in each of the
// preview and the update, none about a plugin taken from $PATH, and ends
// with the outputs (upstream's one-line summary on screen, the per-file
// detail the one migrations line points at in outputs.json only); the web
// UI (on Cloudflare) answered the webUrl printed. Run again as `make
// local-cloud`, it prints what answers where, the printed URLs answer while
// it waits, and a TERM to its process group (what Ctrl-C sends) stops it
// and its emulator.
func TestMakeDemo(t *testing.T) {
	requirePulumi(t)
	// Found here as the provider will find it inside the script; failing
	// here says what was tried.
	toolchain.Python(t)
	demo, bin, tools := t.TempDir(), t.TempDir(), freshToolCache(t)
	cmd := exec.Command("make", "demo", "BIN="+bin)
	cmd.Dir = repoRoot()
	cmd.Env = append(os.Environ(),
		"OPENINSPECT_DEMO_DIR="+demo,
		"OPENINSPECT_TOOLS_CACHE="+tools,
		"HOME="+t.TempDir(),
	)
	// A person's shell, not make's: run from `make test`, the inherited
	// MAKELEVEL would make this make print "Entering directory" lines.
	cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return name == "MAKELEVEL" || name == "MAKEFLAGS" || name == "MFLAGS"
	})
	// Go's caches stay where they are (under the real HOME by default):
	// the target's go build is not what this test is about, and from empty
	// caches it would take many minutes.
	cmd.Env = append(cmd.Env, goCacheEnv(t)...)
	raw, err := cmd.CombinedOutput()
	out := string(raw)
	require.NoError(t, err, "make demo:\n%s", out)
	assert.FileExists(t, filepath.Join(tools, "bin", "workerd"), "the target installed workerd into the new cache")

	assert.NotContains(t, out, "from $PATH", "the plugin is found without Pulumi's ambient-plugin warning")
	preview, update, ok := strings.Cut(out, "\nUpdating (")
	require.True(t, ok, "a plain pulumi up previews, then updates:\n%s", out)
	require.Contains(t, preview, "Previewing update (", "%s", out)
	for phase, text := range map[string]string{"preview": preview, "update": update} {
		perCondition := map[string]int{}
		var unexpected []string
		for _, line := range strings.Split(text, "\n") {
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
		assert.Empty(t, unexpected, "%s: warnings that are no known condition of the demo:\n%s", phase, out)
		for name, n := range perCondition {
			assert.LessOrEqual(t, n, 1, "%s: condition %q warned %d times:\n%s", phase, name, n, out)
		}
		assert.Equal(t, 1, perCondition["unverified migrations"], "%s: the fixture's unverified migrations are announced once:\n%s", phase, out)
	}
	assert.NotContains(t, out, "missing (the pinned commit has it)", "the per-file verification detail is not printed")

	// The web UI on the emulator's Workers answered the printed webUrl
	// while the emulator ran (the script asks it before it stops).
	// It is served on a loopback port of its own (the emulator's
	// -local-origin), the only http origin upstream's control plane accepts
	// as WEB_APP_URL.
	assert.Regexp(t, `(?m)^web: GET http://127\.0\.0\.1:\d+ answered 200$`, out)

	outputsFile := filepath.Join(demo, "outputs.json")
	_, jsonPart, ok := strings.Cut(out, "\noutputs (with upstreamVerification's per-file detail: "+outputsFile+"):\n")
	require.True(t, ok, "the script prints the outputs:\n%s", out)
	var shown map[string]any
	require.NoError(t, json.Unmarshal([]byte(jsonPart), &shown), "%s", jsonPart)
	assert.NotContains(t, shown, "upstreamVerification", "its detail is in outputs.json, not on screen")
	assert.Regexp(t, `^checkout .*tests/fixtures/upstream, upstream [0-9a-f]{12}: 0 of the pin's \d+ migrations \(\d+ missing, 6 extra\); `+
		`\d+ of \d+ bundles differ from the reference build; see upstreamVerification$`, shown["upstream"], "the one-line summary")
	raw, err = os.ReadFile(outputsFile)
	require.NoError(t, err)
	var outputs map[string]any
	require.NoError(t, json.Unmarshal(raw, &outputs), "%s", raw)
	for _, key := range []string{"controlPlaneUrl", "webUrl", "databaseId", "workerNames", "upstreamCommit", "upstream"} {
		assert.NotEmpty(t, outputs[key], "output %s", key)
		assert.Equal(t, outputs[key], shown[key], "output %s as shown", key)
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
	stayUp := exec.Command("make", "local-cloud", "BIN="+bin)
	stayUp.Dir = cmd.Dir
	stayUp.Env = slices.Clone(cmd.Env)
	// Its own process group, which Ctrl-C's TERM reaches as a whole.
	stayUp.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	checkStayUp(t, stayUp, outputs)
}

// goCacheEnv pins GOCACHE, GOMODCACHE and GOPATH to what they are now, so
// a command run with another HOME keeps using them.
func goCacheEnv(t *testing.T) []string {
	t.Helper()
	names := []string{"GOCACHE", "GOMODCACHE", "GOPATH"}
	out, err := exec.Command("go", append([]string{"env"}, names...)...).Output()
	require.NoError(t, err, "go env")
	values := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, values, len(names), "go env printed %q", out)
	env := make([]string, len(names))
	for i, name := range names {
		env[i] = name + "=" + values[i]
	}
	return env
}

// freshToolCache is a new tool cache holding only the pulumi CLI and the
// YAML plugin, linked from the shared cache by their versioned directories
// (the ones .ci/tools.sh looks for), so `make` finds them built and must
// install everything else itself.
func freshToolCache(t *testing.T) string {
	t.Helper()
	shared, fresh := toolchain.CacheDir(), t.TempDir()
	for _, prefix := range []string{"pulumi-v", "pulumi-yaml-v"} {
		dirs, err := filepath.Glob(filepath.Join(shared, prefix+"[0-9]*"))
		require.NoError(t, err)
		var built []string
		for _, d := range dirs {
			if !strings.HasSuffix(d, ".tmp") {
				built = append(built, d)
			}
		}
		require.NotEmpty(t, built, "no %s* in %s: run make pulumi-tools", prefix, shared)
		for _, d := range built {
			require.NoError(t, os.Symlink(d, filepath.Join(fresh, filepath.Base(d))))
		}
	}
	return fresh
}

// stayUpLine is one "what answers where" line: a label, then a URL.
var stayUpLine = regexp.MustCompile(`^  (emulator|Cloudflare API|Modal API|worker [a-z-]+|web UI|GitHub stand-in) +(https?://\S+)`)

// logLine is one "worker logs" line: a label, then a log file's path.
var logLine = regexp.MustCompile(`^  (worker [a-z-]+|web UI) +(/\S+\.log)$`)

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
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // this test's own process group
			go func() {
				for range lines {
				}
			}()
			<-exited
		}
	}()

	var out strings.Builder
	where, logs := map[string]string{}, map[string]string{}
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
		if m := logLine.FindStringSubmatch(line); inBlock && m != nil {
			logs[m[1]] = m[2]
		}
		if inBlock && line == "  curl "+outputs["webUrl"].(string) {
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
	// Each script's log file is named, and exists: the emulator makes one
	// for every script workerd runs, before it first logs.
	require.Len(t, logs, len(names)+1, "a log line per worker and the web:\n%s", out.String())
	for label, path := range logs {
		assert.FileExists(t, path, "%s's log", label)
	}
	assert.NotEqual(t, emu, where["web UI"], "the web UI on a port of its own")
	assert.Contains(t, out.String(), "  curl "+outputs["controlPlaneUrl"].(string)+"/health\n")
	// Where to sign in, and as whom: the GitHub stand-in's pages on their
	// https origin, the local user named.
	assert.Regexp(t, `^https://github\.localhost:\d+$`, where["GitHub stand-in"], "%s", out.String())
	assert.Contains(t, out.String(), "sign in: open "+outputs["webUrl"].(string)+`, click "Sign in with GitHub" and sign in as local-dev`)

	// Still answering after the deploy: the web UI's page and the control plane.
	status, page := get(t, where["web UI"])
	assert.Equal(t, http.StatusOK, status, "%s", page)
	assert.Contains(t, page, `data-ws-url="`+workerWebSocket(emu, "open-inspect-control-plane-demo")+`"`)
	assert.Contains(t, page, "Sign in with GitHub", "the control plane accepts the web's origin and names its sign-in provider")
	status, health := get(t, outputs["controlPlaneUrl"].(string)+"/health")
	assert.Equal(t, http.StatusOK, status, "%s", health)

	require.NoError(t, syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM), "TERM to the process group, as Ctrl-C")
	for line := range lines {
		out.WriteString(line + "\n")
	}
	// make itself gets the TERM too and ends by it, as after a Ctrl-C; the
	// script's own clean stop shows in its last line and the emulator's end.
	if err := <-exited; err != nil {
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "%s", out.String())
		status, _ := exit.Sys().(syscall.WaitStatus)
		assert.True(t, status.Signaled() && status.Signal() == syscall.SIGTERM, "make ends by the TERM sent, not by a failure: %v\n%s", err, out.String())
	}
	stopped = true
	assert.Contains(t, out.String(), "local cloud: stopping")
	// The emulator got the TERM too and shuts down gracefully (workerd, its
	// stores); make does not wait for that, so neither can this check.
	stoppedWithin := func() bool {
		_, err := http.Get(emu + "/")
		return err != nil
	}
	assert.Eventually(t, stoppedWithin, 30*time.Second, 100*time.Millisecond, "the emulator stops with the script")
	// And every process of the script's group ends (the emulator's workerd
	// and Modal runners with it): one still writing into the demo's
	// directory would outlive the test's own clean-up of it.
	var live []string
	assert.Eventually(t, func() bool { live = liveInGroup(cmd.Process.Pid); return len(live) == 0 },
		time.Minute, 100*time.Millisecond, "processes of the stopped local cloud still run: %v", &live)
}
