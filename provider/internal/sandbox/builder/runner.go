// Package builder runs upstream's own image builders (Modal's deploy, E2B's
// build-template.py, ...) the one way the provider runs any of them: the
// builder's pinned toolchain in a cached virtual environment keyed by the
// interpreter and the lock file, an environment reduced to what the builder
// needs, secrets blanked out of everything it prints, its log streamed as
// progress, its whole process tree killed with the context, a timeout, and
// an error that quotes the tail of its output.
package builder

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
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

// UVVersion is the uv every Python builder's environment is made with,
// pinned (upstream's E2B recipe installs this one too).
const UVVersion = "0.13.9"

// DefaultTimeout bounds one step when Runner.Timeout is unset: upstream's
// slowest builder (Daytona's image build) takes about 20 minutes.
const DefaultTimeout = 45 * time.Minute

// Runner prepares environments and runs builder steps. Python and CacheDir
// are required for Environment; Run needs neither.
type Runner struct {
	// Label names the builder in progress lines and errors ("modal", "e2b").
	Label string
	// Python is the interpreter (see pyfind.Find).
	Python string
	// CacheDir holds the pinned uv, uv's download cache and one virtual
	// environment per (Python version, uv version, lock file, local
	// packages). Concurrent runs may share it.
	CacheDir string
	// Progress, when set, receives a short status line at each stage and,
	// for a streamed step, each line the builder prints (secrets blanked).
	Progress func(string)
	// Redact lists secret values to blank out of progress and errors.
	Redact []string
	// OutputLines is how many trailing lines of a failed step's output an
	// error quotes (default 30).
	OutputLines int
	// Timeout bounds each step (default DefaultTimeout).
	Timeout time.Duration
}

// Step is one command of a build.
type Step struct {
	// Name says what the step is in progress lines and errors, e.g.
	// "python build-template.py".
	Name string
	// Dir is the working directory.
	Dir string
	// Env is the builder's own variables, added to BaseEnv (a key given
	// here wins over the same key there).
	Env []string
	// Args is the program and its arguments.
	Args []string
	// Stream sends each output line to Progress.
	Stream bool
}

// Venv is a ready virtual environment.
type Venv struct {
	Dir string
	// Reused is true when it came from the cache and nothing was installed.
	Reused bool
}

// Python is the environment's interpreter.
func (v Venv) Python() string { return filepath.Join(venvBin(v.Dir), "python"+exeSuffix()) }

// Env is what a step running inside the environment adds to BaseEnv: the
// environment first on PATH, unbuffered output, no bytecode written into
// the builder's (possibly read-only) sources.
func (v Venv) Env() []string {
	return []string{
		"VIRTUAL_ENV=" + v.Dir,
		"PATH=" + venvBin(v.Dir) + string(os.PathListSeparator) + os.Getenv("PATH"),
		"PYTHONDONTWRITEBYTECODE=1",
		"PYTHONUNBUFFERED=1",
	}
}

// baseKeys are the caller's variables a builder may see: where programs
// and home are, locale and time zone, temporary space, the machine's CA
// bundle and proxies (how it reaches a registry), pip's own settings
// (which index, which certificate). Anything else — a developer's cloud
// credentials, a profile of the platform being deployed to, PYTHONPATH —
// stays out; the caller adds the builder's variables by name.
var baseKeys = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "TMP", "TEMP", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NIX_SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy", "all_proxy",
	"SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "COMSPEC", "PATHEXT", "APPDATA", "LOCALAPPDATA", "USERPROFILE",
}

// BaseEnv is the caller's environment reduced to baseKeys, PIP_* and
// npm's settings (npm_config_*, which registry and certificate npm uses).
func BaseEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if slices.Contains(baseKeys, k) || strings.HasPrefix(k, "PIP_") || strings.HasPrefix(strings.ToLower(k), "npm_config_") {
			out = append(out, kv)
		}
	}
	return out
}

func (r *Runner) label() string {
	if r.Label == "" {
		return "builder"
	}
	return r.Label
}

func (r *Runner) progress(s string) {
	if r.Progress != nil {
		r.Progress(r.label() + ": " + s)
	}
}

// Environment returns a ready virtual environment with projectDir's locked
// dependencies (`uv sync --frozen` of its uv.lock, the project itself not
// installed: the builder runs from its directory), building it when the
// cache has none. Builds happen in a private directory renamed into place
// when complete, so concurrent runs never see (or break) a half-built one;
// the loser of a race discards its copy. Nothing is written into
// projectDir.
func (r *Runner) Environment(ctx context.Context, projectDir string) (Venv, error) {
	if r.Python == "" || r.CacheDir == "" {
		return Venv{}, fmt.Errorf("%s: the builder runner needs Python and CacheDir", r.label())
	}
	pyVersion, err := r.pythonVersion(ctx)
	if err != nil {
		return Venv{}, err
	}
	key, err := VenvKey(projectDir, pyVersion)
	if err != nil {
		return Venv{}, err
	}
	final, tmp, reused, err := r.cacheSlot("venv", key, "Python")
	if reused || err != nil {
		return Venv{Dir: final, Reused: reused}, err
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	uv, err := r.UV(ctx, pyVersion)
	if err != nil {
		return Venv{}, err
	}
	uvEnv := append(BaseEnv(),
		"UV_PROJECT_ENVIRONMENT="+tmp,
		"UV_PYTHON="+r.Python,
		"UV_PYTHON_DOWNLOADS=never", // or uv trips over pyenv shims and fetches its own
		"UV_CACHE_DIR="+filepath.Join(r.CacheDir, "uv-cache"),
		"UV_NO_PROGRESS=1",
	)
	r.progress(fmt.Sprintf("creating a Python %s environment with uv %s", pyVersion, UVVersion))
	// --relocatable: the environment is built under a temporary name and
	// renamed into place.
	if err := r.Run(ctx, Step{Name: "uv venv", Dir: r.CacheDir, Env: uvEnv, Args: []string{uv, "venv", "--relocatable", "--python", r.Python, tmp}}); err != nil {
		return Venv{}, err
	}
	r.progress("installing the builder's locked dependencies (uv sync --frozen)")
	if err := r.Run(ctx, Step{Name: "uv sync --frozen", Dir: projectDir, Env: uvEnv, Args: []string{uv, "sync", "--frozen", "--no-install-project"}}); err != nil {
		return Venv{}, err
	}
	if err := r.publish(tmp, final, key); err != nil {
		return Venv{}, err
	}
	return Venv{Dir: final}, nil
}

// pythonVersion is the version of the runner's Python, refused when older
// than the builders need.
func (r *Runner) pythonVersion(ctx context.Context) (semver.Version, error) {
	v, err := pyfind.Version(ctx, r.Python)
	if err != nil {
		return v, fmt.Errorf("%s: running %s: %w", r.label(), r.Python, err)
	}
	if v.LT(pyfind.Min) {
		return v, fmt.Errorf("%s: %s is Python %s; the builder needs %s or newer (set %s)", r.label(), r.Python, v, pyfind.Min, pyfind.ConfigKey)
	}
	return v, nil
}

// cacheSlot is where an environment of kind ("venv", "pip", "node") with
// key lives in the cache (final) and, unless a complete one is there
// already (reused), the private directory to build it in (tmp), which
// publish renames into place; the caller removes tmp when done. what names
// the environment in the progress line ("Python", "Node.js").
func (r *Runner) cacheSlot(kind, key, what string) (final, tmp string, reused bool, err error) {
	final = filepath.Join(r.CacheDir, kind+"-"+key)
	if complete(final) {
		r.progress("reusing the cached " + what + " environment " + filepath.Base(final))
		return final, "", true, nil
	}
	if err := os.MkdirAll(r.CacheDir, 0o755); err != nil {
		return "", "", false, fmt.Errorf("%s: cache: %w", r.label(), err)
	}
	return final, filepath.Join(r.CacheDir, "."+kind+"-"+key+"-"+randomSuffix()), false, nil
}

// envKey is the cache key of an environment made of parts (tool versions
// and pins): equal parts, the same environment.
func envKey(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:])[:16]
}

// checkInstalled compares what tool installed, as installed reads it, with
// the pinned versions: a resolver that picked another version fails the
// build rather than caching it under the pins' key.
func (r *Runner) checkInstalled(tool string, pinned map[string]string, installed func(name string) (string, error)) error {
	for name, want := range pinned {
		got, err := installed(name)
		if err != nil {
			return fmt.Errorf("%s: %s install: %w", r.label(), tool, err)
		}
		if got != want {
			return fmt.Errorf("%s: %s installed %s %s, pinned %s", r.label(), tool, name, got, want)
		}
	}
	return nil
}

// completeMarker is written last into a finished environment.
const completeMarker = ".openinspect-complete"

func complete(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, completeMarker))
	return err == nil
}

// VenvKey identifies an environment: the interpreter's version, uv's, the
// lock file, and the local packages it installs from the checkout (their
// sources can change without the lock changing; an editable one is tied
// to its path).
func VenvKey(projectDir string, py semver.Version) (string, error) {
	lock, err := os.ReadFile(filepath.Join(projectDir, "uv.lock"))
	if err != nil {
		return "", fmt.Errorf("builder: %w", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "python %s\x00uv %s\x00", py, UVVersion)
	h.Write(lock)
	locals, err := localPackages(projectDir, lock)
	if err != nil {
		return "", err
	}
	for _, p := range locals {
		sum, err := treeSum(p.Dir)
		if err != nil {
			return "", fmt.Errorf("builder: local package %s: %w", p.Name, err)
		}
		fmt.Fprintf(h, "\x00local %s %s", p.Name, sum)
		if p.Editable {
			fmt.Fprintf(h, " at %s", p.Dir)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// UV returns the pinned uv binary, installing it (`pip install uv==…` into
// its own cached environment) the first time.
func (r *Runner) UV(ctx context.Context, py semver.Version) (string, error) {
	dir := filepath.Join(r.CacheDir, fmt.Sprintf("uv-%s-py%d.%d", UVVersion, py.Major, py.Minor))
	bin := filepath.Join(venvBin(dir), "uv"+exeSuffix())
	if complete(dir) {
		return bin, nil
	}
	r.progress("installing uv " + UVVersion)
	tmp := dir + ".tmp-" + randomSuffix()
	defer os.RemoveAll(tmp)
	if err := r.Run(ctx, Step{Name: "python -m venv", Dir: r.CacheDir, Args: []string{r.Python, "-m", "venv", tmp}}); err != nil {
		return "", err
	}
	tmpPython := Venv{Dir: tmp}.Python()
	if err := r.Run(ctx, Step{Name: "pip install uv", Dir: r.CacheDir, Args: []string{tmpPython, "-m", "pip", "install",
		"--disable-pip-version-check", "--no-input", "--quiet", "uv==" + UVVersion}}); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(tmp, completeMarker), nil, 0o644); err != nil {
		return "", fmt.Errorf("%s: cache: %w", r.label(), err)
	}
	if err := os.Rename(tmp, dir); err != nil && !complete(dir) {
		return "", fmt.Errorf("%s: cache: %w", r.label(), err)
	}
	return bin, nil
}

// Run runs one step with BaseEnv plus the step's own variables. A failure
// names the step and quotes its last output lines, secrets blanked; a
// cancelled or timed-out step says so.
func (r *Runner) Run(ctx context.Context, s Step) error {
	if len(s.Args) == 0 {
		return fmt.Errorf("%s: step %q has no command", r.label(), s.Name)
	}
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	stepCtx, cancel := context.WithTimeoutCause(ctx, timeout, errTimedOut)
	defer cancel()
	cmd := exec.CommandContext(stepCtx, s.Args[0], s.Args[1:]...)
	// Where a key appears twice, os/exec keeps the last: the step's own win.
	cmd.Dir, cmd.Env = s.Dir, append(BaseEnv(), s.Env...)
	killGroup(cmd)
	tail := &tailWriter{max: r.OutputLines, redact: r.Redact}
	if tail.max <= 0 {
		tail.max = 30
	}
	if s.Stream && r.Progress != nil {
		tail.line = func(l string) { r.Progress(r.label() + ": " + l) }
	}
	cmd.Stdout, cmd.Stderr = tail, tail
	err := runChild(cmd)
	tail.flush()
	if err == nil {
		return nil
	}
	out := strings.Join(tail.lines(), "\n")
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("%s: %s: cancelled: %w", r.label(), s.Name, ctx.Err())
	case errors.Is(context.Cause(stepCtx), errTimedOut):
		err = fmt.Errorf("timed out after %s", timeout)
	}
	if out == "" {
		return fmt.Errorf("%s: %s failed: %w", r.label(), s.Name, err)
	}
	return fmt.Errorf("%s: %s failed: %w; its last output:\n%s", r.label(), s.Name, err, out)
}

var errTimedOut = errors.New("builder step timed out")

// RedactAll blanks out every secret value in s, longest first so a value
// containing another is blanked whole.
func RedactAll(s string, secrets []string) string {
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
// interleaved, as a terminal would show them), secrets blanked, and hands
// each to line when set.
type tailWriter struct {
	mu      sync.Mutex
	max     int
	redact  []string
	line    func(string)
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
	// CLIs draw boxes around their errors, padded to the terminal's width;
	// an error message reads better without them.
	line = strings.TrimSpace(strings.Trim(strings.TrimSpace(line), boxChars))
	if line == "" {
		return
	}
	line = RedactAll(line, w.redact)
	if w.line != nil {
		w.line(line)
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

func venvBin(venv string) string {
	if runtime.GOOS == "windows" {
		return filepath.Join(venv, "Scripts")
	}
	return filepath.Join(venv, "bin")
}

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

// publish marks the environment built in tmp complete (the marker holds its
// key, written last) and renames it to final in one step; a concurrent run
// that published final first is no error.
func (r *Runner) publish(tmp, final, key string) error {
	if err := os.WriteFile(filepath.Join(tmp, completeMarker), []byte(key+"\n"), 0o644); err != nil {
		return fmt.Errorf("%s: cache: %w", r.label(), err)
	}
	if err := os.Rename(tmp, final); err != nil && !complete(final) {
		return fmt.Errorf("%s: cache: %w", r.label(), err)
	}
	return nil
}
