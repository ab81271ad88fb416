// Package toolchain finds the tools the tests run that do not come with Go:
// the cache .ci/ scripts build them into, and a Python new enough for the
// Modal CLI. Tests that need a tool fail when it is missing (saying what to
// run); they never skip.
package toolchain

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/blang/semver"
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

// minPython is what upstream's Modal app needs (PEP 695 generics).
var minPython = semver.MustParse("3.12.0")

// Python finds an interpreter of 3.12 or newer: $OPENINSPECT_PYTHON, then
// pyenv's (the project machines have 3.12 and 3.13 there while the default
// python3 is older), then python3.12 and python3.13 on PATH. It fails the
// test when there is none.
func Python(tb testing.TB) string {
	tb.Helper()
	var candidates []string
	if p := os.Getenv("OPENINSPECT_PYTHON"); p != "" {
		candidates = append(candidates, p)
	}
	if home, err := os.UserHomeDir(); err == nil {
		// 3.12 first: the version upstream's lock targets.
		for _, pattern := range []string{"3.12*", "3.1[3-9]*"} {
			found, _ := filepath.Glob(filepath.Join(home, ".pyenv", "versions", pattern, "bin", "python3"))
			sort.Sort(sort.Reverse(sort.StringSlice(found)))
			candidates = append(candidates, found...)
		}
	}
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		for _, name := range []string{"python3.12", "python3.13"} {
			candidates = append(candidates, filepath.Join(dir, name))
		}
	}
	for _, p := range candidates {
		if v, err := version(p); err == nil && v.GTE(minPython) {
			return p
		}
	}
	tb.Fatalf("no Python %s or newer found (set OPENINSPECT_PYTHON to one): the Modal CLI needs it", minPython)
	return ""
}

// version runs the interpreter for its version.
func version(python string) (semver.Version, error) {
	out, err := exec.Command(python, "-c", "import platform; print(platform.python_version())").Output()
	if err != nil {
		return semver.Version{}, err
	}
	return semver.ParseTolerant(strings.TrimSpace(string(out)))
}
