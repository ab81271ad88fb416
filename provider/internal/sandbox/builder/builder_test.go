package builder

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blang/semver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkout lays out a small checkout: an app, a runtime, a lock file.
func checkout(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range map[string]string{
		"packages/modal-infra/deploy.py":                             "print('deploy')\n",
		"packages/modal-infra/uv.lock":                               "version = 1\n",
		"packages/modal-infra/pyproject.toml":                        "[project]\n",
		"packages/modal-infra/src/app.py":                            "APP = 1\n",
		"packages/modal-infra/src/images/base.py":                    "BASE = 1\n",
		"packages/sandbox-runtime/src/sandbox_runtime/entrypoint.py": "def main(): pass\n",
		"packages/control-plane/dist/index.js":                       "export default {}\n",
	} {
		p := filepath.Join(root, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	return root
}

var patterns = []string{
	"packages/modal-infra/src/**",
	"packages/sandbox-runtime/src/**",
	"packages/modal-infra/deploy.py",
	"packages/modal-infra/pyproject.toml",
	"packages/modal-infra/uv.lock",
	"terraform/modules/modal-app/scripts/deploy.sh",
}

func TestSourceDigest(t *testing.T) {
	root := checkout(t)
	d1, err := SourceDigest(root, patterns)
	require.NoError(t, err)

	fromApp, err := SourceDigest(filepath.Join(root, "packages", "modal-infra"), patterns)
	require.NoError(t, err)
	assert.Equal(t, d1, fromApp, "the app directory finds its checkout")

	reversed := slices.Clone(patterns)
	slices.Reverse(reversed)
	d, err := SourceDigest(root, reversed)
	require.NoError(t, err)
	assert.Equal(t, d1, d, "pattern order does not matter")

	app := filepath.Join(root, "packages/modal-infra/src/app.py")
	later := time.Now().Add(time.Hour)
	require.NoError(t, os.Chtimes(app, later, later))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "packages/modal-infra/src/__pycache__"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "packages/modal-infra/src/__pycache__/app.cpython-312.pyc"), []byte("x"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "packages/control-plane/dist/index.js"), []byte("changed"), 0o644))
	d, err = SourceDigest(root, patterns)
	require.NoError(t, err)
	assert.Equal(t, d1, d, "mtimes, bytecode caches and other packages do not count")

	for _, change := range []struct{ path, content string }{
		{"packages/modal-infra/src/app.py", "APP = 2\n"},
		{"packages/sandbox-runtime/src/sandbox_runtime/new.py", "\n"},
		{"packages/modal-infra/uv.lock", "version = 2\n"},
		{"terraform/modules/modal-app/scripts/deploy.sh", "#!/bin/sh\n"},
	} {
		p := filepath.Join(root, filepath.FromSlash(change.path))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(change.content), 0o644))
		d, err := SourceDigest(root, patterns)
		require.NoError(t, err)
		assert.NotEqual(t, d1, d, change.path)
		d1 = d
	}

	_, err = SourceDigest(t.TempDir(), patterns)
	assert.ErrorContains(t, err, "checkout")
	_, err = SourceDigest(root, []string{"../outside"})
	assert.Error(t, err)
}

func TestVenvKeyFollowsLocalPackages(t *testing.T) {
	root := checkout(t)
	app := filepath.Join(root, "packages/modal-infra")
	lock := "version = 1\n\n[[package]]\nname = \"modal-infra\"\nsource = { virtual = \".\" }\n\n" +
		"[[package]]\nname = \"sandbox-runtime\"\nsource = { directory = \"../sandbox-runtime\" }\n"
	require.NoError(t, os.WriteFile(filepath.Join(app, "uv.lock"), []byte(lock), 0o644))
	locals, err := localPackages(app, []byte(lock))
	require.NoError(t, err)
	require.Len(t, locals, 1)
	assert.Equal(t, filepath.Join(root, "packages/sandbox-runtime"), locals[0].Dir)

	py := semver.MustParse("3.12.1")
	k1, err := VenvKey(app, py)
	require.NoError(t, err)
	k2, err := VenvKey(app, semver.MustParse("3.13.0"))
	require.NoError(t, err)
	assert.NotEqual(t, k1, k2, "another interpreter, another environment")
	require.NoError(t, os.WriteFile(filepath.Join(root, "packages/sandbox-runtime/src/sandbox_runtime/entrypoint.py"), []byte("changed\n"), 0o644))
	k3, err := VenvKey(app, py)
	require.NoError(t, err)
	assert.NotEqual(t, k1, k3, "the installed copy of a local package must not go stale")
}

func TestRedactAndTail(t *testing.T) {
	assert.Equal(t, "token [redacted] and [redacted]", RedactAll("token as-secret-1 and as-secret-1-longer", []string{"as-secret-1", "as-secret-1-longer", "x"}))
	w := &tailWriter{max: 2}
	_, _ = w.Write([]byte("one\ntwo\r\nthree\n\nfou"))
	_, _ = w.Write([]byte("r"))
	w.flush()
	assert.Equal(t, []string{"three", "four"}, w.lines())
}

func TestStepFailureQuotesRedactedOutput(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs sh")
	}
	var streamed []string
	r := &Runner{Label: "e2b", OutputLines: 3, Redact: []string{"as-very-secret"}, Progress: func(s string) { streamed = append(streamed, s) }}
	err := r.Run(context.Background(), Step{Name: "deploy", Dir: t.TempDir(), Stream: true,
		Args: []string{"sh", "-c", `echo start; echo "token $0" >&2; echo last; exit 3`, "as-very-secret"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "e2b: deploy failed: exit status 3")
	assert.Contains(t, err.Error(), "token [redacted]\nlast")
	assert.NotContains(t, err.Error(), "as-very-secret")
	assert.Equal(t, []string{"e2b: start", "e2b: token [redacted]", "e2b: last"}, streamed, "each line streamed as progress, redacted")
}

func TestCancelKillsTheProcessGroup(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("process groups are Unix")
	}
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "grandchild")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	r := &Runner{}
	t0 := time.Now()
	err := r.Run(ctx, Step{Name: "sleeper", Dir: dir, Args: []string{"sh", "-c", `sleep 30 & echo $! > ` + pidFile + `; wait`}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cancelled")
	assert.Less(t, time.Since(t0), 10*time.Second)
	b, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	pid := strings.TrimSpace(string(b))
	require.Eventually(t, func() bool { return gone(pid) }, 5*time.Second, 50*time.Millisecond, "the grandchild outlived the cancellation")
}

// gone reports whether a process has exited: no longer there, or a zombie
// waiting for a parent (init, here) to reap it.
func gone(pid string) bool {
	if b, err := os.ReadFile("/proc/" + pid + "/stat"); err == nil {
		fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		return len(fields) > 0 && fields[0] == "Z"
	} else if runtime.GOOS == "linux" {
		return true
	}
	return exec.Command("kill", "-0", pid).Run() != nil
}

func TestStepEnvironmentIsReduced(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs sh")
	}
	t.Setenv("AWS_SECRET_ACCESS_KEY", "developer-credential")
	t.Setenv("PYTHONPATH", "/elsewhere")
	t.Setenv("PIP_INDEX_URL", "http://127.0.0.1:1/simple")
	t.Setenv("HOME", "/home/builder-test")
	var lines []string
	r := &Runner{Progress: func(s string) { lines = append(lines, s) }}
	err := r.Run(context.Background(), Step{Name: "env", Dir: t.TempDir(), Stream: true, Env: []string{"E2B_TEMPLATE_ID=tpl", "HOME=/home/own"},
		Args: []string{"sh", "-c", `env | sort`}})
	require.NoError(t, err)
	out := strings.Join(lines, "\n")
	assert.Contains(t, out, "builder: E2B_TEMPLATE_ID=tpl", "the builder's own variables")
	assert.Contains(t, out, "builder: PIP_INDEX_URL=http://127.0.0.1:1/simple", "how to reach the registry")
	assert.Contains(t, out, "builder: HOME=/home/own", "the step's value wins")
	assert.NotContains(t, out, "developer-credential")
	assert.NotContains(t, out, "PYTHONPATH")
}

func TestStepTimeoutIsReported(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs sh")
	}
	r := &Runner{Label: "e2b", Timeout: 200 * time.Millisecond}
	err := r.Run(context.Background(), Step{Name: "python build-template.py", Dir: t.TempDir(), Args: []string{"sh", "-c", "echo building; sleep 30"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "e2b: python build-template.py failed: timed out after 200ms; its last output:\nbuilding")
}
