package builder

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/openinspect/pulumi-openinspect/provider/pyfind"
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
	pyVersion, err := pyfind.Version(ctx, r.Python)
	if err != nil {
		return Venv{}, fmt.Errorf("%s: running %s: %w", r.label(), r.Python, err)
	}
	if pyVersion.LT(pyfind.Min) {
		return Venv{}, fmt.Errorf("%s: %s is Python %s; the builder needs %s or newer (set %s)", r.label(), r.Python, pyVersion, pyfind.Min, pyfind.ConfigKey)
	}
	sorted := slices.Sorted(slices.Values(pins))
	sum := sha256.Sum256([]byte(fmt.Sprintf("python %s\x00pip\x00%s", pyVersion, strings.Join(sorted, "\x00"))))
	key := hex.EncodeToString(sum[:])[:16]
	final := filepath.Join(r.CacheDir, "pip-"+key)
	if complete(final) {
		r.progress("reusing the cached Python environment " + filepath.Base(final))
		return Venv{Dir: final, Reused: true}, nil
	}
	if err := os.MkdirAll(r.CacheDir, 0o755); err != nil {
		return Venv{}, fmt.Errorf("%s: cache: %w", r.label(), err)
	}
	tmp := filepath.Join(r.CacheDir, ".pip-"+key+"-"+randomSuffix())
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
	for name, want := range versions {
		got, err := installedPipVersion(ctx, venv.Python(), name)
		if err != nil {
			return Venv{}, fmt.Errorf("%s: pip install: %w", r.label(), err)
		}
		if got != want {
			return Venv{}, fmt.Errorf("%s: pip installed %s %s, pinned %s", r.label(), name, got, want)
		}
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
