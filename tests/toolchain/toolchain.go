// Package toolchain finds the tools the tests run that do not come with Go:
// the cache .ci/ scripts build them into, and a Python new enough for the
// Modal CLI. Tests that need a tool fail when it is missing (saying what to
// run); they never skip.
package toolchain

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openinspect/pulumi-openinspect/provider/pyfind"
)

// CacheDir is ${OPENINSPECT_TOOLS_CACHE:-$HOME/.cache/openinspect-tools},
// where the .ci/ scripts build and keep tools between runs.
func CacheDir() string {
	if d := os.Getenv("OPENINSPECT_TOOLS_CACHE"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "openinspect-tools")
}

// BinDir is where the cached tools are linked.
func BinDir() string { return filepath.Join(CacheDir(), "bin") }

// Python finds an interpreter of 3.12 or newer the way the provider and the
// demo do (pyfind.Find: $OPENINSPECT_PYTHON, then PATH, then pyenv's under
// $PYENV_ROOT, `pyenv root` and ~/.pyenv). It fails the test when there is
// none, saying what was tried.
func Python(tb testing.TB) string {
	tb.Helper()
	python, _, err := pyfind.Find("")
	if err != nil {
		tb.Fatalf("the Modal CLI needs Python: %v", err)
	}
	return python
}

// SandboxTools runs .ci/sandbox-tools.sh (Debian's bubblewrap and
// slirp4netns, which the emulator's Modal runs sandboxes with) from the
// repository root root and returns the two binaries. It fails the test
// when they cannot be had.
func SandboxTools(tb testing.TB, root string) (bwrap, slirp4netns string) {
	tb.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("bash", filepath.Join(root, ".ci", "sandbox-tools.sh"))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		tb.Fatalf(".ci/sandbox-tools.sh failed: %v\n%s", err, stderr.String())
	}
	paths := strings.Fields(stdout.String())
	if len(paths) != 2 {
		tb.Fatalf(".ci/sandbox-tools.sh printed %q, not the paths of bwrap and slirp4netns", stdout.String())
	}
	return paths[0], paths[1]
}
