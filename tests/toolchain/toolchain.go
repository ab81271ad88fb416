// Package toolchain finds the tools the tests run that do not come with Go:
// the cache .ci/ scripts build them into, and a Python new enough for the
// Modal CLI. Tests that need a tool fail when it is missing (saying what to
// run); they never skip.
package toolchain

import (
	"bytes"
	"fmt"
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

// SharedDirEnv names the directory of reference material kept outside the
// repository (third-party files the project may read but not commit, such
// as the Pulumi Kubernetes Operator's CRDs under reference/). CI puts a copy
// of it beside the clone and .ci/run sets the variable to that copy when it
// is unset; docs/testing.md says what is in it.
const SharedDirEnv = "OPENINSPECT_SHARED_DIR"

// SharedDir is the file or directory rel under $OPENINSPECT_SHARED_DIR. It
// fails the test with one message naming the variable when it is unset or
// does not hold rel: a clone run by hand outside CI sets it (or runs
// .ci/run), rather than finding the cause deep in the test.
func SharedDir(tb testing.TB, rel string) string {
	tb.Helper()
	path, err := sharedPath(os.Getenv(SharedDirEnv), rel)
	if err != nil {
		tb.Fatal(err)
	}
	return path
}

// sharedPath resolves rel under dir, the variable's value.
func sharedPath(dir, rel string) (string, error) {
	if dir == "" {
		return "", fmt.Errorf("%s is not set: this test reads %s from the shared reference directory, which CI puts beside the clone "+
			"(.ci/run sets %s to ../shared when it is unset); set it to that directory (see docs/testing.md)", SharedDirEnv, rel, SharedDirEnv)
	}
	path := filepath.Join(dir, filepath.FromSlash(rel))
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("%s=%s does not hold %s: %w (see docs/testing.md)", SharedDirEnv, dir, rel, err)
	}
	return path, nil
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
