package modaldeploy

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/blang/semver"

	"github.com/openinspect/pulumi-openinspect/provider/pyfind"
)

// UVVersion is the uv the recipe runs, pinned.
const UVVersion = "0.13.9"

// Target is where a deploy goes. Its values reach the child processes through
// their environment only: never their arguments, never a log line.
type Target struct {
	ServerURL   string // "" = Modal's default
	TokenID     string
	TokenSecret string
	Environment string // "" = the workspace's default
}

// Runner deploys apps. The zero value is not usable: Python and CacheDir
// are required.
type Runner struct {
	// Python is the interpreter (see pyfind.Find).
	Python string
	// CacheDir holds the pinned uv, uv's download cache and one virtual
	// environment per (Python version, uv version, lock file, local
	// packages). Concurrent runs may share it.
	CacheDir string
	// Progress, when set, receives a short status line at each stage.
	Progress func(string)
	// Redact lists more values (secret values the caller knows) to blank
	// out of error messages, besides the token secret.
	Redact []string
	// OutputLines is how many trailing lines of a failed step's output an
	// error quotes (default 30).
	OutputLines int
}

// Result says what a run did.
type Result struct {
	// Venv is the virtual environment the steps ran in.
	Venv string
	// Reused is true when the environment came from the cache and nothing
	// was installed.
	Reused bool
	// Setup and Deploy are how long preparing the environment and running
	// the two steps took.
	Setup, Deploy time.Duration
}

// AppFile is the entry point both steps run.
const AppFile = "deploy.py"

// Run deploys the app in appDir (packages/modal-infra of a checkout, with
// deploy.py and uv.lock): it prepares the environment, then runs
// `python deploy.py --build-sandbox-image` and `modal deploy deploy.py` in
// appDir. Nothing is written into appDir; it may be read-only.
func (r *Runner) Run(ctx context.Context, appDir string, t Target) (Result, error) {
	var res Result
	if r.Python == "" || r.CacheDir == "" {
		return res, errors.New("modaldeploy: Runner needs Python and CacheDir")
	}
	if t.TokenID == "" || t.TokenSecret == "" {
		return res, errors.New("modaldeploy: a Modal token ID and secret are required")
	}
	appDir, err := filepath.Abs(appDir)
	if err != nil {
		return res, fmt.Errorf("modaldeploy: %w", err)
	}
	for _, f := range []string{AppFile, "uv.lock"} {
		if _, err := os.Stat(filepath.Join(appDir, f)); err != nil {
			return res, fmt.Errorf("modaldeploy: %s is not a Modal app directory: %w", appDir, err)
		}
	}
	start := time.Now()
	venv, reused, err := r.environment(ctx, appDir)
	if err != nil {
		return res, err
	}
	res.Venv, res.Reused, res.Setup = venv, reused, time.Since(start)

	start = time.Now()
	env := r.childEnv(venv, t)
	python := venvPython(venv)
	r.progress("modal: building the sandbox image (python deploy.py --build-sandbox-image)")
	if err := r.step(ctx, "python deploy.py --build-sandbox-image", appDir, env, t, python, AppFile, "--build-sandbox-image"); err != nil {
		return res, err
	}
	r.progress("modal: deploying the app (modal deploy deploy.py)")
	if err := r.step(ctx, "modal deploy deploy.py", appDir, env, t, python, "-m", "modal", "deploy", AppFile); err != nil {
		return res, err
	}
	res.Deploy = time.Since(start)
	r.progress("modal: deployed")
	return res, nil
}

func (r *Runner) progress(s string) {
	if r.Progress != nil {
		r.Progress(s)
	}
}

// environment returns a ready virtual environment with the app's locked
// dependencies, building it when the cache has none. Builds happen in a
// private directory renamed into place when complete, so concurrent runs
// never see (or break) a half-built one; the loser of a race discards its
// copy.
func (r *Runner) environment(ctx context.Context, appDir string) (string, bool, error) {
	pyVersion, err := pyfind.Version(ctx, r.Python)
	if err != nil {
		return "", false, fmt.Errorf("modaldeploy: running %s: %w", r.Python, err)
	}
	if pyVersion.LT(pyfind.Min) {
		return "", false, fmt.Errorf("modaldeploy: %s is Python %s; the Modal app needs %s or newer (set %s)", r.Python, pyVersion, pyfind.Min, pyfind.ConfigKey)
	}
	key, err := venvKey(appDir, pyVersion)
	if err != nil {
		return "", false, err
	}
	final := filepath.Join(r.CacheDir, "venv-"+key)
	if complete(final) {
		r.progress("modal: reusing the cached Python environment " + filepath.Base(final))
		return final, true, nil
	}
	if err := os.MkdirAll(r.CacheDir, 0o755); err != nil {
		return "", false, fmt.Errorf("modaldeploy: cache: %w", err)
	}
	uv, err := r.uv(ctx, pyVersion)
	if err != nil {
		return "", false, err
	}
	tmp := filepath.Join(r.CacheDir, ".venv-"+key+"-"+randomSuffix())
	defer os.RemoveAll(tmp) // a no-op once renamed
	uvEnv := r.uvEnv(tmp)
	r.progress(fmt.Sprintf("modal: creating a Python %s environment with uv %s", pyVersion, UVVersion))
	// --relocatable: the environment is built under a temporary name and
	// renamed into place.
	if err := r.quiet(ctx, "uv venv", r.CacheDir, uvEnv, uv, "venv", "--relocatable", "--python", r.Python, tmp); err != nil {
		return "", false, err
	}
	r.progress("modal: installing the app's locked dependencies (uv sync --frozen)")
	// --no-install-project: the app runs from its directory, never from a
	// copy installed here.
	if err := r.quiet(ctx, "uv sync --frozen", appDir, uvEnv, uv, "sync", "--frozen", "--no-install-project"); err != nil {
		return "", false, err
	}
	if err := os.WriteFile(filepath.Join(tmp, completeMarker), []byte(key+"\n"), 0o644); err != nil {
		return "", false, fmt.Errorf("modaldeploy: cache: %w", err)
	}
	if err := os.Rename(tmp, final); err != nil {
		if complete(final) {
			return final, false, nil // a concurrent run finished first
		}
		return "", false, fmt.Errorf("modaldeploy: cache: %w", err)
	}
	return final, false, nil
}

// completeMarker is written last into a finished environment.
const completeMarker = ".openinspect-complete"

func complete(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, completeMarker))
	return err == nil
}

// venvKey identifies an environment: the interpreter's version, uv's, the
// lock file, and the local packages it installs from the checkout (their
// sources can change without the lock changing; an editable one is tied
// to its path).
func venvKey(appDir string, py semver.Version) (string, error) {
	lock, err := os.ReadFile(filepath.Join(appDir, "uv.lock"))
	if err != nil {
		return "", fmt.Errorf("modaldeploy: %w", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "python %s\x00uv %s\x00", py, UVVersion)
	h.Write(lock)
	locals, err := localPackages(appDir, lock)
	if err != nil {
		return "", err
	}
	for _, p := range locals {
		sum, err := treeSum(p.Dir)
		if err != nil {
			return "", fmt.Errorf("modaldeploy: local package %s: %w", p.Name, err)
		}
		fmt.Fprintf(h, "\x00local %s %s", p.Name, sum)
		if p.Editable {
			fmt.Fprintf(h, " at %s", p.Dir)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// uv returns the pinned uv binary, installing it (from PyPI, into its own
// cached environment) the first time.
func (r *Runner) uv(ctx context.Context, py semver.Version) (string, error) {
	dir := filepath.Join(r.CacheDir, fmt.Sprintf("uv-%s-py%d.%d", UVVersion, py.Major, py.Minor))
	bin := filepath.Join(venvBin(dir), "uv"+exeSuffix())
	if complete(dir) {
		return bin, nil
	}
	r.progress("modal: installing uv " + UVVersion)
	tmp := dir + ".tmp-" + randomSuffix()
	defer os.RemoveAll(tmp)
	env := scrubbedEnv()
	if err := r.quiet(ctx, "python -m venv", r.CacheDir, env, r.Python, "-m", "venv", tmp); err != nil {
		return "", err
	}
	if err := r.quiet(ctx, "pip install uv", r.CacheDir, env, venvPython(tmp), "-m", "pip", "install",
		"--disable-pip-version-check", "--no-input", "--quiet", "uv=="+UVVersion); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(tmp, completeMarker), nil, 0o644); err != nil {
		return "", fmt.Errorf("modaldeploy: cache: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil && !complete(dir) {
		return "", fmt.Errorf("modaldeploy: cache: %w", err)
	}
	return bin, nil
}

// uvEnv is the environment of uv commands: the project environment is the
// cached one, the interpreter is fixed, and uv may not fetch interpreters.
func (r *Runner) uvEnv(venv string) []string {
	return append(scrubbedEnv(),
		"UV_PROJECT_ENVIRONMENT="+venv,
		"UV_PYTHON="+r.Python,
		"UV_PYTHON_DOWNLOADS=never",
		"UV_CACHE_DIR="+filepath.Join(r.CacheDir, "uv-cache"),
		"UV_NO_PROGRESS=1",
	)
}

// childEnv is the environment of the deploy steps (where a key appears
// twice, os/exec keeps the last, so PATH here wins): the Modal target (and
// nothing of the caller's own Modal settings: MODAL_CONFIG_PATH points at a
// file that does not exist, so ~/.modal.toml is not read), the cached
// environment first on PATH, and no bytecode written into the app.
func (r *Runner) childEnv(venv string, t Target) []string {
	env := append(scrubbedEnv(),
		"VIRTUAL_ENV="+venv,
		"PATH="+venvBin(venv)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"PYTHONDONTWRITEBYTECODE=1",
		"PYTHONUNBUFFERED=1",
		"COLUMNS=160", // long enough for URLs and error lines
		"MODAL_CONFIG_PATH="+filepath.Join(r.CacheDir, "no-modal-config.toml"),
		"MODAL_TOKEN_ID="+t.TokenID,
		"MODAL_TOKEN_SECRET="+t.TokenSecret,
	)
	if t.ServerURL != "" {
		env = append(env, "MODAL_SERVER_URL="+t.ServerURL)
	}
	if t.Environment != "" {
		env = append(env, "MODAL_ENVIRONMENT="+t.Environment)
	}
	return env
}

// scrubbedEnv is the caller's environment without what would steer the
// tools elsewhere: Modal settings (a developer's profile), uv settings and
// Python path overrides.
func scrubbedEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "MODAL_"), strings.HasPrefix(k, "UV_"), k == "VIRTUAL_ENV", k == "PYTHONPATH", k == "PYTHONHOME":
			continue
		}
		out = append(out, kv)
	}
	return out
}

// step runs one deploy step; a failure quotes the step's last output lines.
func (r *Runner) step(ctx context.Context, name, dir string, env []string, t Target, prog string, args ...string) error {
	return r.run(ctx, name, dir, env, append([]string{t.TokenSecret}, r.Redact...), prog, args...)
}

// quiet runs a setup command the same way.
func (r *Runner) quiet(ctx context.Context, name, dir string, env []string, prog string, args ...string) error {
	return r.run(ctx, name, dir, env, r.Redact, prog, args...)
}

func (r *Runner) run(ctx context.Context, name, dir string, env, redact []string, prog string, args ...string) error {
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdin = nil
	killGroup(cmd)
	tail := &tailWriter{max: r.OutputLines}
	if tail.max <= 0 {
		tail.max = 30
	}
	cmd.Stdout, cmd.Stderr = tail, tail
	err := runChild(cmd)
	tail.flush()
	if err == nil {
		return nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("modaldeploy: %s: cancelled: %w", name, ctxErr)
	}
	out := redactAll(strings.Join(tail.lines(), "\n"), redact)
	if out == "" {
		return fmt.Errorf("modaldeploy: %s failed: %w", name, err)
	}
	return fmt.Errorf("modaldeploy: %s failed: %w; its last output:\n%s", name, err, out)
}

// redactAll blanks out every secret value in s, longest first so a value
// containing another is blanked whole.
func redactAll(s string, secrets []string) string {
	vals := make([]string, 0, len(secrets))
	for _, v := range secrets {
		if len(v) >= 4 { // shorter "secrets" would blank out ordinary text
			vals = append(vals, v)
		}
	}
	sort.Slice(vals, func(i, j int) bool { return len(vals[i]) > len(vals[j]) })
	for _, v := range vals {
		s = strings.ReplaceAll(s, v, "[redacted]")
	}
	return s
}

// tailWriter keeps the last max lines written to it (stdout and stderr
// interleaved, as a terminal would show them).
type tailWriter struct {
	mu      sync.Mutex
	max     int
	partial []byte
	kept    []string
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		i := strings.IndexAny(string(w.partial), "\r\n")
		if i < 0 {
			break
		}
		w.add(string(w.partial[:i]))
		w.partial = w.partial[i+1:]
	}
	return len(p), nil
}

func (w *tailWriter) add(line string) {
	// The CLI draws boxes around its errors, padded to the terminal's
	// width; an error message reads better without them.
	line = strings.TrimSpace(strings.Trim(strings.TrimSpace(line), boxChars))
	if line == "" {
		return
	}
	w.kept = append(w.kept, line)
	if len(w.kept) > w.max {
		w.kept = w.kept[len(w.kept)-w.max:]
	}
}

func (w *tailWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.partial) > 0 {
		w.add(string(w.partial))
		w.partial = nil
	}
}

func (w *tailWriter) lines() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.kept)
}

// boxChars frame rich's panels.
const boxChars = "│╭╮╰╯─┃┏┓┗┛━"

var _ io.Writer = (*tailWriter)(nil)

func venvBin(venv string) string {
	if runtime.GOOS == "windows" {
		return filepath.Join(venv, "Scripts")
	}
	return filepath.Join(venv, "bin")
}

func venvPython(venv string) string { return filepath.Join(venvBin(venv), "python"+exeSuffix()) }

func exeSuffix() string {
	if runtime.GOOS == "windows" {
		return ".exe"
	}
	return ""
}

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
