package builder

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// exactPipPin is name==version with an exact version, as upstream pins the
// SDK of a builder that has no lock file (Daytona's build-snapshot.sh:
// `pip install 'daytona==0.161.0'`).
var exactPipPin = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9._-]*)==([0-9]+(\.[0-9]+)*([a-z0-9.+-]*)?)$`)

// PipEnvironment returns a virtual environment with pins (name==version
// each) installed by pip, building it when the cache has none: the
// environment of a builder that pins its SDK but has no lock file. It is
// keyed by the interpreter's version and the pins; the pins' own
// dependencies are whatever pip resolves the first time (upstream leaves
// them unpinned too). Like Environment, it is built in a private directory
// renamed into place, and nothing is written into the builder's checkout.
func (r *Runner) PipEnvironment(ctx context.Context, pins []string) (Venv, error) {
	if r.Python == "" || r.CacheDir == "" {
		return Venv{}, fmt.Errorf("%s: the builder runner needs Python and CacheDir", r.label())
	}
	versions := map[string]string{}
	for _, pin := range pins {
		m := exactPipPin.FindStringSubmatch(pin)
		if m == nil {
			return Venv{}, fmt.Errorf("%s: %q is not a package pinned to an exact version (name==1.2.3)", r.label(), pin)
		}
		versions[m[1]] = m[2]
	}
	pyVersion, err := r.pythonVersion(ctx)
	if err != nil {
		return Venv{}, err
	}
	sorted := slices.Sorted(slices.Values(pins))
	key := envKey(append([]string{"python " + pyVersion.String(), "pip"}, sorted...)...)
	final, tmp, reused, err := r.cacheSlot("pip", key, "Python")
	if reused || err != nil {
		return Venv{Dir: final, Reused: reused}, err
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	r.progress(fmt.Sprintf("creating a Python %s environment with %s", pyVersion, strings.Join(sorted, " ")))
	if err := r.Run(ctx, Step{Name: "python -m venv", Dir: r.CacheDir, Args: []string{r.Python, "-m", "venv", tmp}}); err != nil {
		return Venv{}, err
	}
	venv := Venv{Dir: tmp}
	// The step is run with `python -m pip`, so the scripts' shebangs, which
	// name the temporary directory, are never used.
	install := append([]string{venv.Python(), "-m", "pip", "install", "--disable-pip-version-check", "--no-input", "--quiet"}, sorted...)
	if err := r.Run(ctx, Step{Name: "pip install " + strings.Join(sorted, " "), Dir: r.CacheDir,
		Env: []string{"PIP_CACHE_DIR=" + filepath.Join(r.CacheDir, "pip-cache")}, Args: install}); err != nil {
		return Venv{}, err
	}
	if err := r.checkInstalled("pip", versions, func(name string) (string, error) {
		return installedPipVersion(ctx, venv.Python(), name)
	}); err != nil {
		return Venv{}, err
	}
	if err := r.publish(tmp, final, key); err != nil {
		return Venv{}, err
	}
	return Venv{Dir: final}, nil
}

// installedPipVersion asks the environment's own metadata which version of
// a distribution it holds.
func installedPipVersion(ctx context.Context, python, name string) (string, error) {
	out, err := execOutput(ctx, python, "-c", "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))", name)
	if err != nil {
		return "", fmt.Errorf("reading the installed version of %s: %w", name, err)
	}
	return strings.TrimSpace(out), nil
}

func execOutput(ctx context.Context, prog string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Env = BaseEnv()
	out, err := cmd.Output()
	return string(out), err
}
