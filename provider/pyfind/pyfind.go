// Package pyfind finds the Python (3.12 or newer) the Modal CLI runs with.
// It is a leaf shared by the provider (openinspect:pythonPath's fallback),
// the demo (which leaves the choice to the provider) and the tests
// (tests/toolchain), so all three find the same interpreter the same way.
package pyfind

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/blang/semver"
)

// ConfigKey is the provider configuration key that names the interpreter,
// and EnvVar its environment variable.
const (
	ConfigKey = "openinspect:pythonPath"
	EnvVar    = "OPENINSPECT_PYTHON"
)

// Min is the oldest Python the app runs on (upstream's sources use PEP 695
// generics).
var Min = semver.MustParse("3.12.0")

// pathCandidates are tried on PATH in this order: 3.12 first, the version
// upstream's lock targets.
var pathCandidates = []string{"python3.12", "python3.13", "python3"}

// Find picks the interpreter: explicit when set (it must do), else
// $OPENINSPECT_PYTHON (it must do too), else the first that runs and is at
// least Min of python3.12, python3.13 and python3 on PATH, then of the
// versions pyenv installed (under $PYENV_ROOT, `pyenv root` and ~/.pyenv;
// 3.12 first, newest patch first). Shims that exist but cannot run (pyenv's,
// for a version not selected) are skipped. The error lists what was tried.
func Find(explicit string) (string, semver.Version, error) {
	for _, named := range []struct{ path, from string }{{explicit, ConfigKey}, {os.Getenv(EnvVar), EnvVar}} {
		if named.path == "" {
			continue
		}
		v, err := Version(context.Background(), named.path)
		if err != nil {
			return "", semver.Version{}, fmt.Errorf("the Python named by %s (%s) does not run: %w", named.from, named.path, err)
		}
		if v.LT(Min) {
			return "", semver.Version{}, fmt.Errorf("the Python named by %s (%s) is %s; the Modal app needs %s or newer", named.from, named.path, v, Min)
		}
		return named.path, v, nil
	}
	var tried []string
	try := func(path string) (semver.Version, bool) {
		v, err := Version(context.Background(), path)
		switch {
		case err != nil:
			tried = append(tried, fmt.Sprintf("%s: %v", path, err))
		case v.LT(Min):
			tried = append(tried, fmt.Sprintf("%s: %s", path, v))
		default:
			return v, true
		}
		return semver.Version{}, false
	}
	for _, name := range pathCandidates {
		path, err := exec.LookPath(name)
		if err != nil {
			tried = append(tried, name+": not on PATH")
			continue
		}
		if v, ok := try(path); ok {
			return path, v, nil
		}
	}
	for _, root := range pyenvRoots() {
		found := pyenvPythons(root)
		if len(found) == 0 {
			tried = append(tried, fmt.Sprintf("pyenv %s: no %d.%d or newer installed", root, Min.Major, Min.Minor))
		}
		for _, path := range found {
			if v, ok := try(path); ok {
				return path, v, nil
			}
		}
	}
	return "", semver.Version{}, fmt.Errorf("no Python %s or newer found (%s); set %s (or %s) to the path of one",
		Min, strings.Join(tried, "; "), ConfigKey, EnvVar)
}

// pyenvRoots are the pyenv installations to look in, each once: $PYENV_ROOT,
// what `pyenv root` answers (when pyenv is on PATH), and ~/.pyenv, pyenv's
// default.
func pyenvRoots() []string {
	var roots []string
	add := func(dir string) {
		if dir == "" {
			return
		}
		dir = filepath.Clean(dir)
		if !slices.Contains(roots, dir) {
			roots = append(roots, dir)
		}
	}
	add(os.Getenv("PYENV_ROOT"))
	if pyenv, err := exec.LookPath("pyenv"); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if out, err := exec.CommandContext(ctx, pyenv, "root").Output(); err == nil {
			add(strings.TrimSpace(string(out)))
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		add(filepath.Join(home, ".pyenv"))
	}
	return roots
}

// pyenvPythons lists root/versions/<X.Y.Z>/bin/python3 for the versions at
// least Min, in order of preference: the oldest suitable minor first (3.12,
// the version upstream's lock targets), the newest patch of each first.
// Entries that are not plain versions (3.13.0t, miniconda3-latest, a
// virtualenv) are left out.
func pyenvPythons(root string) []string {
	entries, err := os.ReadDir(filepath.Join(root, "versions"))
	if err != nil {
		return nil
	}
	type installed struct {
		version semver.Version
		python  string
	}
	var found []installed
	for _, e := range entries {
		v, err := semver.Parse(e.Name())
		if err != nil || v.LT(Min) || len(v.Pre) > 0 {
			continue
		}
		python := filepath.Join(root, "versions", e.Name(), "bin", "python3")
		if _, err := os.Stat(python); err == nil {
			found = append(found, installed{v, python})
		}
	}
	slices.SortFunc(found, func(a, b installed) int {
		if a.version.Major != b.version.Major || a.version.Minor != b.version.Minor {
			return a.version.Compare(b.version)
		}
		return b.version.Compare(a.version)
	})
	paths := make([]string, len(found))
	for i, f := range found {
		paths[i] = f.python
	}
	return paths
}

// Version runs the interpreter to ask its version.
func Version(ctx context.Context, python string) (semver.Version, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])")
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && len(ee.Stderr) > 0 {
			return semver.Version{}, fmt.Errorf("%w: %s", err, firstLine(string(ee.Stderr)))
		}
		return semver.Version{}, err
	}
	return ParseVersion(string(out))
}

// ParseVersion reads "3.12.1" (surrounding space allowed).
func ParseVersion(s string) (semver.Version, error) {
	v, err := semver.Parse(strings.TrimSpace(s))
	if err != nil {
		return semver.Version{}, fmt.Errorf("unexpected Python version %q: %w", strings.TrimSpace(s), err)
	}
	return v, nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
