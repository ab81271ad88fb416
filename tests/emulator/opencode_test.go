package emulator_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/anthropic"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/github"
)

// openCodeBinary runs .ci/opencode-tools.sh (OpenCode at upstream's pin,
// from npm) and returns the binary it prints. A missing tool fails the
// test: it is part of CI.
func openCodeBinary(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not on PATH: .ci/opencode-tools.sh installs OpenCode with npm", tool)
		}
	}
	// go test runs in the package's directory, tests/emulator.
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, ".ci", "opencode-tools.sh"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf(".ci/opencode-tools.sh failed: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	bin := strings.TrimSpace(lines[len(lines)-1])
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf(".ci/opencode-tools.sh printed %q: %v", bin, err)
	}
	return bin
}

// TestOpenCodeRunsAgainstTheModelStandIn runs the real OpenCode (1.18.18,
// the version upstream's sandbox pins) non-interactively in a clone of the
// GitHub stand-in's repository, with the outbound gateway as its HTTPS
// proxy and the local CA as its trust, as a sandbox runs it: it reaches
// api.anthropic.com (the model stand-in) and the model catalogue only
// through the gateway, carries out the scripted agent's tool calls (read,
// write, bash) and leaves the note quoting the prompt committed in the
// repository. Then the same run with a key the installation did not seed
// fails with Anthropic's authentication error and commits nothing.
func TestOpenCodeRunsAgainstTheModelStandIn(t *testing.T) {
	bin := openCodeBinary(t)
	const key = "sk-ant-opencode-test"
	s := start(t, emulator.Options{Anthropic: anthropic.Options{APIKeys: func() []string { return []string{key} }}})

	home := t.TempDir()
	repo := filepath.Join(home, "hello-world")
	baseEnv := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
		"HTTPS_PROXY=" + s.Outbound().ProxyURL(), "HTTP_PROXY=" + s.Outbound().ProxyURL(), "NO_PROXY=127.0.0.1,localhost",
		"SSL_CERT_FILE=" + s.GitHub().CAFile(), "GIT_SSL_CAINFO=" + s.GitHub().CAFile(), "NODE_EXTRA_CA_CERTS=" + s.GitHub().CAFile(),
		"GIT_AUTHOR_NAME=Agent", "GIT_AUTHOR_EMAIL=agent@example.com", "GIT_COMMITTER_NAME=Agent", "GIT_COMMITTER_EMAIL=agent@example.com",
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"), "XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
		// What upstream's runtime gives OpenCode: the model, and every
		// permission granted (no prompts in a sandbox).
		`OPENCODE_CONFIG_CONTENT={"model":"anthropic/claude-sonnet-4-6","permission":{"*":{"*":"allow"}}}`}
	clone := exec.Command("git", "clone", "--quiet", "https://github.com/"+github.DefaultOrg+"/hello-world.git", repo)
	clone.Env = baseEnv
	out, err := clone.CombinedOutput()
	require.NoError(t, err, "%s", out)
	before := gitOut(t, repo, baseEnv, "rev-parse", "HEAD")

	runOpenCode := func(apiKey, prompt string) (string, error) {
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "run", "--print-logs", prompt)
		cmd.Dir = repo
		cmd.Env = append(append([]string{}, baseEnv...), "ANTHROPIC_API_KEY="+apiKey)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	// A key the installation did not seed: Anthropic's 401, nothing done.
	out2, _ := runOpenCode("sk-ant-not-seeded", "Add a note that says hello")
	assert.Contains(t, out2, "invalid x-api-key", "OpenCode reports the stand-in's authentication error")
	assert.Equal(t, before, gitOut(t, repo, baseEnv, "rev-parse", "HEAD"), "no commit with a wrong key")
	assert.NoFileExists(t, filepath.Join(repo, anthropic.NoteFile))

	const prompt = "Add a note that says hello to the team"
	logs, err := runOpenCode(key, prompt)
	require.NoError(t, err, "opencode run: %s", tail(logs, 4000))

	note, err := os.ReadFile(filepath.Join(repo, anthropic.NoteFile))
	require.NoError(t, err, "the write tool ran: %s", tail(logs, 4000))
	// (opencode run hands the model its message quoted.)
	assert.Contains(t, string(note), prompt, "the note quotes the prompt")
	assert.True(t, strings.HasPrefix(gitOut(t, repo, baseEnv, "log", "-1", "--format=%s"), "Add a note that says"), "the bash tool committed")
	assert.Equal(t, before, gitOut(t, repo, baseEnv, "rev-parse", "HEAD~1"))
	assert.Contains(t, gitOut(t, repo, baseEnv, "show", "--stat", "--format=", "HEAD"), anthropic.NoteFile)

	// The model stand-in answered each step OpenCode asked for.
	var kinds []string
	for _, e := range s.Anthropic().Exchanges() {
		if e.Error == "" && len(e.Tools) > 0 {
			kinds = append(kinds, e.Kind)
			assert.Contains(t, e.Tools, "write", "OpenCode offers its tools")
			assert.True(t, e.Stream, "OpenCode streams")
		}
	}
	assert.Equal(t, []string{"read", "write", "bash", "summary"}, kinds)

	// Everything OpenCode and git fetched went through the gateway and was
	// answered here; what it asked for that the local cloud does not
	// answer was refused, never sent.
	answered := map[string]bool{}
	for _, e := range s.Outbound().Entries() {
		if !e.Refused {
			answered[e.To] = true
			continue
		}
		t.Logf("refused (not a host of the local cloud): %s %s", e.Method, e.URL)
	}
	assert.True(t, answered["anthropic"], "api.anthropic.com answered through the proxy")
	assert.True(t, answered["github"], "github.com answered through the proxy")
}

func gitOut(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %s: %s", strings.Join(args, " "), out)
	return strings.TrimSpace(string(out))
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
