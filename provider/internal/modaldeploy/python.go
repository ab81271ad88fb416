// Package modaldeploy deploys a Modal app from its sources the way
// Open-Inspect's own recipe does (uv sync --frozen, then `python deploy.py
// --build-sandbox-image`, then `modal deploy deploy.py`), with nothing done by
// hand: it finds a suitable Python, keeps a cached virtual environment with
// the pinned uv and the app's locked dependencies, and runs both steps with
// the Modal credentials in the child's environment only.
//
// It also computes the digest the provider compares to decide whether the
// app's sources changed (SourceDigest).
package modaldeploy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/blang/semver"
)

// PythonConfigKey is the provider configuration key that names the Python
// interpreter, and PythonEnvVar its environment variable.
const (
	PythonConfigKey = "openinspect:pythonPath"
	PythonEnvVar    = "OPENINSPECT_PYTHON"
)

// MinPython is the oldest Python the app runs on (upstream's sources use
// PEP 695 generics).
var MinPython = semver.MustParse("3.12.0")

// pythonCandidates are tried on PATH, newest first.
var pythonCandidates = []string{"python3.13", "python3.12", "python3"}

// FindPython picks the interpreter: explicit when set (it must do), else
// $OPENINSPECT_PYTHON, else the first of python3.13, python3.12 and python3
// on PATH that runs and is at least MinPython. Shims that exist but cannot
// run (pyenv's, for a version not selected) are skipped.
func FindPython(explicit string) (string, semver.Version, error) {
	for _, named := range []struct{ path, from string }{{explicit, PythonConfigKey}, {os.Getenv(PythonEnvVar), PythonEnvVar}} {
		if named.path == "" {
			continue
		}
		v, err := PythonVersion(context.Background(), named.path)
		if err != nil {
			return "", semver.Version{}, fmt.Errorf("modaldeploy: the Python named by %s (%s) does not run: %w", named.from, named.path, err)
		}
		if v.LT(MinPython) {
			return "", semver.Version{}, fmt.Errorf("modaldeploy: the Python named by %s (%s) is %s; the Modal app needs %s or newer", named.from, named.path, v, MinPython)
		}
		return named.path, v, nil
	}
	var tried []string
	for _, name := range pythonCandidates {
		path, err := exec.LookPath(name)
		if err != nil {
			tried = append(tried, name+": not on PATH")
			continue
		}
		v, err := PythonVersion(context.Background(), path)
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s: %v", path, err))
			continue
		}
		if v.LT(MinPython) {
			tried = append(tried, fmt.Sprintf("%s: %s", path, v))
			continue
		}
		return path, v, nil
	}
	return "", semver.Version{}, fmt.Errorf("modaldeploy: no Python %s or newer found (%s); set %s (or %s) to the path of one",
		MinPython, strings.Join(tried, "; "), PythonConfigKey, PythonEnvVar)
}

// PythonVersion runs the interpreter to ask its version.
func PythonVersion(ctx context.Context, python string) (semver.Version, error) {
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
	return ParsePythonVersion(string(out))
}

// ParsePythonVersion reads "3.12.1" (surrounding space allowed).
func ParsePythonVersion(s string) (semver.Version, error) {
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
