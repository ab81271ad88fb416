package modal

// Materialising an image's RUN steps for the sandboxes that run it
// (sandboxrun.go). No container image is built: a sandbox runs on the
// host's /usr, and what an image's recipe installs from a package registry
// is installed here, once per recipe, into a directory the sandbox binds
// read-only at the same path:
//
//   - `pip install ARGS` / `python[3] -m pip install ARGS` (modal's
//     pip_install and debian_slim write these) go into a virtualenv made
//     from SandboxRuntime.Python, whose bin/ comes first on the sandbox's
//     PATH, so `python` and `python3` are it;
//   - `npm install -g ARGS` goes into an npm prefix whose bin/ is on PATH;
//   - `npm install ARGS` in (cd) or with --prefix a directory under /app
//     goes into a tree bound at that directory;
//   - `apt-get install -y PKGS` is checked against the host (dpkg-query):
//     the sandbox sees the host's /usr, so a package missing there is
//     logged by name; `apt-get update` is nothing to do;
//   - `mkdir -p` and `cd` chained with && to those are followed; anything
//     else (a pipeline such as `curl ... | bash -`, a variable, a
//     redirect, another command) is not run, and logged with the reason.
//
// Only the package registries are reached (by the host's pip and npm, with
// the host's caches); nothing else. The directory is keyed by the
// interpreter and the recipe's RUN steps, so the same recipe deployed
// again, or by another emulator sharing the cache, reuses it; a lock (a
// mutex in the process, flock(2) across processes) keeps two sandboxes of
// one image starting together from materialising it twice. image.json,
// written last, marks a finished tree; a tree without it (a build that was
// killed) is made again.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// imageTreeVersion changes when the layout of a materialised tree does, so
// trees of an older layout are not reused.
const imageTreeVersion = "2"

// materialiseTimeout bounds one recipe's installs (a cold npm or pip cache
// downloads everything).
const materialiseTimeout = 15 * time.Minute

// imageTree is a recipe's RUN steps materialised on this machine.
type imageTree struct {
	// Dir is the tree on the host, bound read-only at the same path in the
	// sandbox (the virtualenv's scripts name their own absolute paths).
	Dir string `json:"dir"`
	// VenvBin is the virtualenv's bin directory ("" when no step
	// pip-installs), first on PATH.
	VenvBin string `json:"venv_bin,omitempty"`
	// NPMBin is the global npm prefix's bin directory, "" when no step
	// installs globally.
	NPMBin string `json:"npm_bin,omitempty"`
	// AppDirs are trees made under /app: the path in the sandbox -> the
	// host directory.
	AppDirs map[string]string `json:"app_dirs,omitempty"`
	// Notes say which steps were not run, or which packages the host
	// lacks, and why; logged at each sandbox's start.
	Notes []string `json:"notes,omitempty"`
}

// imageLocks serialises materialising one key within the process.
type imageLocks struct {
	mu    sync.Mutex
	byKey map[string]*sync.Mutex
}

func (l *imageLocks) of(key string) *sync.Mutex {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byKey == nil {
		l.byKey = map[string]*sync.Mutex{}
	}
	if l.byKey[key] == nil {
		l.byKey[key] = &sync.Mutex{}
	}
	return l.byKey[key]
}

// imageCacheDir is where materialised trees are kept.
func (m *Service) imageCacheDir() string {
	if m.sandboxRuntime.ImageCache != "" {
		return m.sandboxRuntime.ImageCache
	}
	return filepath.Join(m.dataDir, "modal-images")
}

// materialise returns the tree of runs (an image's RUN steps, base images
// first), making it when no finished one is kept. python is the resolved
// interpreter virtualenvs are made from ("" when none is configured).
func (m *Service) materialise(ctx context.Context, python string, runs []string) (imageTree, error) {
	if len(runs) == 0 {
		return imageTree{}, nil
	}
	sum := sha256.Sum256([]byte(imageTreeVersion + "\n" + python + "\n" + strings.Join(runs, "\n")))
	key := "modal-image-" + hex.EncodeToString(sum[:8])
	cache := m.imageCacheDir()
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return imageTree{}, fmt.Errorf("the image cache %s: %w", cache, err)
	}
	dir := filepath.Join(cache, key)
	mu := m.imageLocks.of(key)
	mu.Lock()
	defer mu.Unlock()
	lock, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return imageTree{}, fmt.Errorf("the image cache's lock: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return imageTree{}, fmt.Errorf("the image cache's lock: %w", err)
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()

	manifest := filepath.Join(dir, "image.json")
	if b, err := os.ReadFile(manifest); err == nil {
		var t imageTree
		if json.Unmarshal(b, &t) == nil && t.Dir == dir {
			return t, nil
		}
	}
	if err := ctx.Err(); err != nil {
		return imageTree{}, err // ended while waiting for the lock
	}
	// Made in place: a virtualenv and npm's links name their final paths.
	if err := os.RemoveAll(dir); err != nil {
		return imageTree{}, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return imageTree{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, materialiseTimeout)
	defer cancel()
	started := time.Now()
	m.logfSafe("modal: materialising an image's %d RUN steps into %s", len(runs), dir)
	b := &treeBuilder{ctx: ctx, python: python, tree: imageTree{Dir: dir}}
	for _, run := range runs {
		if err := b.step(run); err != nil {
			_ = os.RemoveAll(dir)
			return imageTree{}, fmt.Errorf("image step %q: %w", run, err)
		}
	}
	out, err := json.MarshalIndent(b.tree, "", "  ")
	if err != nil {
		return imageTree{}, err
	}
	if err := os.WriteFile(manifest, out, 0o644); err != nil {
		return imageTree{}, err
	}
	m.logfSafe("modal: materialised %s in %s", dir, time.Since(started).Round(100*time.Millisecond))
	return b.tree, nil
}

// treeBuilder runs one recipe's steps into a tree.
type treeBuilder struct {
	ctx    context.Context
	python string
	tree   imageTree
}

func (b *treeBuilder) note(format string, args ...any) {
	b.tree.Notes = append(b.tree.Notes, fmt.Sprintf(format, args...))
}

// step materialises one RUN step: its && chain of simple commands, with cd
// followed; a step this cannot read is noted and not run.
func (b *treeBuilder) step(run string) error {
	chain, why := splitAndChain(run)
	if chain == nil {
		b.note("RUN %s: not run: %s", run, why)
		return nil
	}
	// Steps a chain cannot be materialised as a whole are noted before any
	// of it runs, so a half-run step never happens.
	for _, words := range chain {
		if reason := b.unsupported(words); reason != "" {
			b.note("RUN %s: not run: %s", run, reason)
			return nil
		}
	}
	cwd := "/"
	for _, words := range chain {
		switch {
		case words[0] == "cd":
			cwd = sandboxPath(cwd, words[1])
		case words[0] == "mkdir":
			for _, d := range words[1:] {
				if strings.HasPrefix(d, "-") {
					continue
				}
				if p := sandboxPath(cwd, d); underApp(p) {
					if err := os.MkdirAll(b.appDir(p), 0o755); err != nil {
						return err
					}
				}
			}
		case words[0] == "echo":
			if text, file, ok := echoTo(words); ok {
				if err := b.echoTo(cwd, text, file); err != nil {
					return err
				}
			}
		case words[0] == "apt-get":
			b.aptGet(words)
		case isPipInstall(words) != nil:
			if err := b.pipInstall(isPipInstall(words)); err != nil {
				return err
			}
		case words[0] == "npm":
			if err := b.npmInstall(cwd, words[2:]); err != nil {
				return err
			}
		}
	}
	return nil
}

// unsupported says why a simple command cannot be materialised ("" when it
// can).
func (b *treeBuilder) unsupported(words []string) string {
	switch {
	case words[0] == "cd":
		if len(words) != 2 {
			return "cd takes one directory here"
		}
	case words[0] == "mkdir", words[0] == "apt-get" && len(words) > 1 && (words[1] == "update" || words[1] == "install"):
	case isPipInstall(words) != nil:
		if b.python == "" {
			return "a pip install needs the sandboxes' Python (SandboxRuntime.Python, -modal-python), which is not configured"
		}
	case words[0] == "npm" && len(words) > 1 && (words[1] == "install" || words[1] == "i"):
		if _, err := exec.LookPath("npm"); err != nil {
			return "npm is not on the host's PATH"
		}
	case slices.Contains(words, redirectWord):
		_, file, ok := echoTo(words)
		switch {
		case !ok:
			return `the shell operator ">" (the emulator runs no shell; only echo's output is written to a file)`
		case path.IsAbs(file) && !underApp(path.Clean(file)):
			return fmt.Sprintf("echo > %s: only files under /app are laid out into each sandbox", file)
		}
	case words[0] == "curl" || words[0] == "wget":
		return "it downloads from outside the package registries, which a sandbox does not reach"
	default:
		return fmt.Sprintf("%s is not a package install the emulator materialises (pip, npm; apt-get is checked against the host)", words[0])
	}
	return ""
}

// echoTo writes echo's line (its words joined by spaces, then a newline,
// as echo prints them) to file, a path under /app, whose directory the
// recipe made (else it is noted, not run); the directory is laid out into
// each sandbox, so a file directly in /app is noted, not run.
func (b *treeBuilder) echoTo(cwd string, text []string, file string) error {
	p := sandboxPath(cwd, file)
	if !underApp(p) {
		b.note("echo > %s: not run: only files under /app are laid out into each sandbox", p)
		return nil
	}
	dir := path.Dir(p)
	if !underApp(dir) {
		b.note("echo > %s: not run: only files in a directory under /app are laid out (a directory is bound, and /app itself is the sandbox's own)", p)
		return nil
	}
	if _, err := os.Stat(b.appDir(dir)); err != nil {
		b.note("echo > %s: not run: the recipe made no directory %s", p, dir)
		return nil
	}
	if err := os.WriteFile(b.appDir(p), []byte(strings.Join(text, " ")+"\n"), 0o644); err != nil {
		return err
	}
	if b.tree.AppDirs == nil {
		b.tree.AppDirs = map[string]string{}
	}
	b.tree.AppDirs[dir] = b.appDir(dir)
	return nil
}

// appDir is where the tree keeps sandbox path p (under /app).
func (b *treeBuilder) appDir(p string) string {
	return filepath.Join(b.tree.Dir, "app", filepath.FromSlash(strings.TrimPrefix(p, "/app/")))
}

// aptGet checks `apt-get install` packages against the host's dpkg.
func (b *treeBuilder) aptGet(words []string) {
	if words[1] != "install" {
		return
	}
	var missing []string
	for _, pkg := range words[2:] {
		if strings.HasPrefix(pkg, "-") {
			continue
		}
		name, _, _ := strings.Cut(pkg, "=") // pkg=version
		out, err := exec.CommandContext(b.ctx, "dpkg-query", "-W", "-f=${Status}", name).Output()
		if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), " installed") {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		b.note("apt-get install: not installed on the host, so not in the sandbox (it runs on the host's /usr): %s", strings.Join(missing, " "))
	}
}

// isPipInstall returns pip's arguments after `install` when words is a pip
// install (pip, pip3, python[3[.N]] -m pip), else nil.
func isPipInstall(words []string) []string {
	w := words
	if len(w) > 2 && strings.HasPrefix(path.Base(w[0]), "python") && w[1] == "-m" {
		w = w[2:]
	} else if !(w[0] == "pip" || w[0] == "pip3") {
		return nil
	}
	if len(w) < 2 || (w[0] != "pip" && w[0] != "pip3") || w[1] != "install" {
		return nil
	}
	return append([]string{}, w[2:]...)
}

// pipInstall installs args into the tree's virtualenv, made at first use.
func (b *treeBuilder) pipInstall(args []string) error {
	venv := filepath.Join(b.tree.Dir, "venv")
	if b.tree.VenvBin == "" {
		if err := b.run("", b.python, "-m", "venv", venv); err != nil {
			return err
		}
		b.tree.VenvBin = filepath.Join(venv, "bin")
	}
	return b.run("", append([]string{filepath.Join(venv, "bin", "python"), "-m", "pip", "install", "--disable-pip-version-check", "--no-input"}, args...)...)
}

// npmInstall is `npm install args` run in sandbox directory cwd: global
// installs into the tree's npm prefix, others into a directory under /app
// (cwd, or --prefix).
func (b *treeBuilder) npmInstall(cwd string, args []string) error {
	global := false
	target := cwd
	var rest []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-g" || a == "--global":
			global = true
		case a == "--prefix" && i+1 < len(args):
			target = sandboxPath(cwd, args[i+1])
			i++
		case strings.HasPrefix(a, "--prefix="):
			target = sandboxPath(cwd, strings.TrimPrefix(a, "--prefix="))
		default:
			rest = append(rest, a)
		}
	}
	flags := []string{"--no-audit", "--no-fund", "--loglevel=error"}
	if global {
		prefix := filepath.Join(b.tree.Dir, "npm")
		b.tree.NPMBin = filepath.Join(prefix, "bin")
		return b.run("", append(append([]string{"npm", "install", "-g", "--prefix", prefix}, flags...), rest...)...)
	}
	if !underApp(target) {
		b.note("npm install in %s: not run: only installs into a directory under /app (laid out into each sandbox) or global ones are materialised", target)
		return nil
	}
	dir := b.appDir(target)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if b.tree.AppDirs == nil {
		b.tree.AppDirs = map[string]string{}
	}
	b.tree.AppDirs[target] = dir
	return b.run(dir, append(append([]string{"npm", "install", "--prefix", dir}, flags...), rest...)...)
}

// run runs a host command (the host's environment: its registries'
// configuration and caches), failing with the tail of its output.
func (b *treeBuilder) run(dir string, args ...string) error {
	cmd := exec.CommandContext(b.ctx, args[0], args[1:]...)
	cmd.Dir = cmpOr(dir, b.tree.Dir)
	cmd.Env = append(os.Environ(), "npm_config_update_notifier=false", "PIP_DISABLE_PIP_VERSION_CHECK=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(args[:min(3, len(args))], " "), err, lastLines(out.String(), 8))
	}
	return nil
}

// sandboxPath is p (absolute, or relative to cwd) cleaned.
func sandboxPath(cwd, p string) string {
	if !path.IsAbs(p) {
		p = path.Join(cwd, p)
	}
	return path.Clean(p)
}

func underApp(p string) bool { return strings.HasPrefix(p, "/app/") }

// splitAndChain reads a RUN step as simple commands joined by &&, each its
// words (single and double quotes and backslashes undone, as a shell
// would). Anything else a shell would interpret (a pipe, ;, ||, a
// redirect, a variable or command substitution, a glob, a background &)
// returns nil and says which.
func splitAndChain(s string) ([][]string, string) {
	var chain [][]string
	var words []string
	var cur strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			words = append(words, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	endCommand := func() bool {
		flush()
		if len(words) == 0 {
			return false
		}
		chain = append(chain, words)
		words = nil
		return true
	}
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch {
		case c == '\'':
			j := i + 1
			for j < len(rs) && rs[j] != '\'' {
				j++
			}
			if j == len(rs) {
				return nil, "an unterminated quote"
			}
			cur.WriteString(string(rs[i+1 : j]))
			inWord, i = true, j
		case c == '"':
			j := i + 1
			for ; j < len(rs) && rs[j] != '"'; j++ {
				if rs[j] == '$' || rs[j] == '`' {
					return nil, "a shell expansion (the emulator runs no shell)"
				}
				if rs[j] == '\\' && j+1 < len(rs) {
					j++
				}
				cur.WriteRune(rs[j])
			}
			if j == len(rs) {
				return nil, "an unterminated quote"
			}
			inWord, i = true, j
		case c == '\\' && i+1 < len(rs):
			cur.WriteRune(rs[i+1])
			inWord, i = true, i+1
		case c == ' ' || c == '\t' || c == '\n':
			flush()
		case c == '&' && i+1 < len(rs) && rs[i+1] == '&':
			if !endCommand() {
				return nil, "an empty command"
			}
			i++
		case c == '|':
			if pipelineFetches(s) {
				return nil, "a pipeline that runs what it downloads from outside the package registries, which a sandbox does not reach"
			}
			return nil, "a shell pipeline (the emulator runs only package installs, and checks apt-get against the host)"
		case c == '>' && (i+1 == len(rs) || rs[i+1] != '>'):
			// A redirect of the command's output to a file: kept as a word
			// of its own, which only echo takes (treeBuilder.unsupported).
			flush()
			words = append(words, redirectWord)
		case strings.ContainsRune(";&<>()", c):
			return nil, fmt.Sprintf("the shell operator %q (the emulator runs no shell)", string(c))
		case strings.ContainsRune("$`*?[~", c):
			return nil, "a shell expansion (the emulator runs no shell)"
		default:
			cur.WriteRune(c)
			inWord = true
		}
	}
	if !endCommand() {
		return nil, "an empty command"
	}
	return chain, ""
}

// redirectWord stands in a command's words for the shell's ">" (a quoted
// ">" is a plain word): `echo TEXT > FILE` is the one command taking it.
const redirectWord = "\x00>"

// echoTo returns the words echo prints and the file its output goes to when
// words is `echo WORDS... > FILE`; ok is false otherwise.
func echoTo(words []string) (text []string, file string, ok bool) {
	n := len(words)
	if words[0] != "echo" || n < 3 || words[n-2] != redirectWord || slices.Contains(words[:n-2], redirectWord) {
		return nil, "", false
	}
	return words[1 : n-2], words[n-1], true
}

// pipelineFetches says a pipeline starts by downloading (curl, wget).
func pipelineFetches(s string) bool {
	first := strings.Fields(s)
	return len(first) > 0 && (first[0] == "curl" || first[0] == "wget")
}
