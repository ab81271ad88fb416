package modal

// Running a deployed app's web endpoints: the emulator keeps the files
// `modal deploy` uploads (the app's source, by content hash, under
// <DataDir>/modal-files), and a request to a web endpoint of a deployed app
// is answered by the app's own function, run by runner.py in a local Python
// process: its source laid out as a container's /root (the mounts' files
// under /root/), its named secrets in its environment as in a container, its
// Modal client pointed at this emulator (MODAL_SERVER_URL and the first
// token), in a virtualenv holding the modal client the app was deployed
// with and the packages its image's `pip install` steps name. No container
// starts: what the function asks of Modal (a sandbox, its tags) is asked of
// this emulator's API. One process serves each deployment, started at its
// first request and stopped by the app's stop (AppStop, what `modal app
// stop` and the provider's delete send), the next deployment or Close.
//
// Without Options.Python there is no runner: api_health answers upstream's
// health body (what the provider's health check reads) and every other
// endpoint 503, saying the function was not run.

import (
	"bufio"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

//go:embed runner.py
var runnerScript []byte

// functionHeader names the function a forwarded request is for (runner.py).
const functionHeader = "X-Openinspect-Function"

// runnerStart bounds a runner's start: the virtualenv's first build
// (packages from PyPI) and the app's import.
const runnerStart = 10 * time.Minute

// webRunner runs deployed apps' web functions.
type webRunner struct {
	python string // the interpreter virtualenvs are made from; "" = no runner
	cache  string // where virtualenvs are kept
	dir    string // where deployments' sources are laid out

	mu      sync.Mutex
	procs   map[string]*runnerProc // by app ID
	stopped map[string]bool        // apps stopped: none runs again (a stop is final on Modal)
	closed  bool
}

type runnerProc struct {
	key   string // the deployment it serves
	ready chan struct{}
	url   string // set before ready closes, with err
	err   error
	done  chan struct{}

	mu      sync.Mutex
	cmd     *exec.Cmd // once started
	stopped bool      // stop was called: a runner still being made never starts
}

// runSpec is what a runner for one deployment needs, read under m.mu.
type runSpec struct {
	key, appName, environment, clientVersion string
	functions                                []runFunction
	files                                    map[string]string // /root-relative path -> sha256
	env                                      map[string]string // the functions' secrets
	requirements                             []string
}

type runFunction struct {
	Name   string `json:"name"`
	Module string `json:"module"`
	Method string `json:"method"`
}

func (m *Service) filesDir() string { return filepath.Join(m.dataDir, "modal-files") }

// keepFile stores an uploaded mount file by its digest.
func (m *Service) keepFile(sum string, data []byte) error {
	if m.hasFile(sum) {
		return nil
	}
	if err := os.MkdirAll(m.filesDir(), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(m.filesDir(), ".upload-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(m.filesDir(), sum))
}

func (m *Service) hasFile(sum string) bool {
	_, err := os.Stat(filepath.Join(m.filesDir(), sum))
	return err == nil
}

// runSpecLocked collects what running app a's current deployment takes.
// The caller holds m.mu.
func (m *Service) runSpecLocked(a *modalApp) (runSpec, error) {
	d := a.current()
	spec := runSpec{key: fmt.Sprintf("%s-v%d", a.ID, d.Version), appName: a.Name, environment: a.Environment,
		clientVersion: d.ClientVer, files: map[string]string{}, env: map[string]string{}}
	reqs := map[string]bool{}
	for _, tag := range slices.Sorted(maps.Keys(d.FunctionIDs)) {
		f := m.st.Functions[d.FunctionIDs[tag]]
		if f == nil || !f.isWeb() {
			continue
		}
		spec.functions = append(spec.functions, runFunction{Name: f.Name, Module: f.Module, Method: f.WebMethod})
		for _, id := range f.MountIDs {
			if mt := m.st.Mounts[id]; mt != nil {
				for p, sum := range mt.Files {
					if rel, ok := strings.CutPrefix(p, "/root/"); ok {
						spec.files[rel] = sum
					}
				}
			}
		}
		for _, id := range f.SecretIDs {
			if sec := m.st.Secrets[id]; sec != nil {
				for k, v := range sec.Values {
					spec.env[k] = v
				}
			}
		}
		for _, r := range m.imageRequirementsLocked(f.ImageID, map[string]bool{}) {
			reqs[r] = true
		}
	}
	spec.requirements = slices.Sorted(maps.Keys(reqs))
	if spec.clientVersion == "" {
		return spec, errors.New("the deployment does not say which modal client made it")
	}
	return spec, nil
}

// imageRequirementsLocked are the packages an image's `pip install` steps
// (its own and its bases') name, as modal's pip_install writes them.
func (m *Service) imageRequirementsLocked(id string, seen map[string]bool) []string {
	img := m.st.Images[id]
	if img == nil || seen[id] {
		return nil
	}
	seen[id] = true
	var out []string
	for _, base := range img.BaseImageIDs {
		out = append(out, m.imageRequirementsLocked(base, seen)...)
	}
	for _, c := range img.Commands {
		_, args, ok := strings.Cut(c, "pip install ")
		if !ok || !strings.HasPrefix(strings.TrimSpace(c), "RUN ") {
			continue
		}
		for _, a := range strings.Fields(args) {
			a = strings.Trim(a, `'"`)
			if a != "" && !strings.HasPrefix(a, "-") && !strings.ContainsAny(a, "&|;") {
				out = append(out, a)
			}
		}
	}
	return out
}

// runWeb answers r with function fn of app a, through the app's runner.
func (m *Service) runWeb(w http.ResponseWriter, r *http.Request, spec runSpec, fn string) {
	p, err := m.runner.process(r.Context(), m, spec)
	if err != nil {
		m.logfSafe("modal: running %s of %s: %v", fn, spec.appName, err)
		http.Error(w, "modal-http: the function could not be started: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	target, _ := url.Parse(p.url)
	rest := "/" + r.PathValue("path")
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.URL.Path, pr.Out.URL.RawPath = rest, ""
			pr.Out.Header.Set(functionHeader, fn)
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, "modal-http: the function did not answer: "+err.Error(), http.StatusBadGateway)
		},
	}
	proxy.ServeHTTP(w, r)
}

// process returns the runner serving spec's deployment, starting it (and
// stopping one of an older deployment of the app) when needed.
func (wr *webRunner) process(ctx context.Context, m *Service, spec runSpec) (*runnerProc, error) {
	appID, _, _ := strings.Cut(spec.key, "-v")
	wr.mu.Lock()
	if wr.closed {
		wr.mu.Unlock()
		return nil, errors.New("the emulator is closing")
	}
	if wr.stopped[appID] { // stopped after the request read its deployment
		wr.mu.Unlock()
		return nil, errors.New("the app was stopped")
	}
	p := wr.procs[appID]
	if p != nil && p.key != spec.key {
		p.stop()
		p = nil
	}
	if p != nil {
		select {
		case <-p.done:
			p = nil // it exited: start another
		default:
		}
	}
	if p == nil {
		p = &runnerProc{key: spec.key, ready: make(chan struct{}), done: make(chan struct{})}
		wr.procs[appID] = p
		go p.start(wr, m, spec)
	}
	wr.mu.Unlock()
	select {
	case <-p.ready:
		return p, p.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// start builds the virtualenv and the source tree, then runs runner.py and
// waits for its port.
func (p *runnerProc) start(wr *webRunner, m *Service, spec runSpec) {
	fail := func(err error) {
		p.err = err
		close(p.ready)
		close(p.done)
	}
	ctx, cancel := context.WithTimeout(context.Background(), runnerStart)
	defer cancel()
	python, err := wr.venv(ctx, m, spec)
	if err != nil {
		fail(err)
		return
	}
	root := filepath.Join(wr.dir, spec.key, "root")
	if err := os.RemoveAll(filepath.Dir(root)); err != nil {
		fail(err)
		return
	}
	for rel, sum := range spec.files {
		b, err := os.ReadFile(filepath.Join(m.filesDir(), sum))
		if err != nil {
			fail(fmt.Errorf("the app's file %s was not kept (deploy it again): %w", rel, err))
			return
		}
		dst := filepath.Join(root, filepath.FromSlash(rel))
		if !strings.HasPrefix(dst, root+string(filepath.Separator)) {
			continue // a path escaping the tree
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			fail(err)
			return
		}
		if err := os.WriteFile(dst, b, 0o600); err != nil {
			fail(err)
			return
		}
	}
	run := filepath.Dir(root)
	script, portFile, cfgFile := filepath.Join(run, "runner.py"), filepath.Join(run, "port"), filepath.Join(run, "runner.json")
	cfg, _ := json.Marshal(map[string]any{"root": root, "environment": spec.environment, "functions": spec.functions, "port_file": portFile})
	if err := errors.Join(os.WriteFile(script, runnerScript, 0o600), os.WriteFile(cfgFile, cfg, 0o600)); err != nil {
		fail(err)
		return
	}
	cmd := exec.Command(python, script, cfgFile)
	cmd.Dir = root
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + run, "LANG=C.UTF-8", "PYTHONUNBUFFERED=1", "PYTHONDONTWRITEBYTECODE=1",
		"MODAL_SERVER_URL=" + m.baseURL(context.Background()), "MODAL_ENVIRONMENT=" + spec.environment}
	for _, t := range m.tokens {
		cmd.Env = append(cmd.Env, "MODAL_TOKEN_ID="+t.ID, "MODAL_TOKEN_SECRET="+t.Secret)
		break
	}
	secrets := make([]string, 0, len(spec.env))
	for k, v := range spec.env {
		cmd.Env = append(cmd.Env, k+"="+v)
		if len(v) >= 4 {
			secrets = append(secrets, v)
		}
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		fail(err)
		return
	}
	cmd.Stdout = nil
	// Started under p.mu, so a stop while the virtualenv was being made
	// (the app stopped meanwhile) keeps it from starting at all.
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		fail(errors.New("the app was stopped"))
		return
	}
	err = cmd.Start()
	if err == nil {
		p.cmd = cmd
	}
	p.mu.Unlock()
	if err != nil {
		fail(err)
		return
	}
	var tail tailBuffer
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			for _, s := range secrets {
				line = strings.ReplaceAll(line, s, "[secret]")
			}
			tail.add(line)
			m.logfSafe("modal runner %s: %s", spec.appName, line)
		}
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); close(p.done) }()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-exited:
			p.err = fmt.Errorf("the app's runner exited (%v) before it served: %s", err, tail.String())
			close(p.ready)
			return
		case <-ctx.Done():
			p.stop()
			p.err = fmt.Errorf("the app's runner did not start within %s: %s", runnerStart, tail.String())
			close(p.ready)
			return
		case <-tick.C:
			if b, err := os.ReadFile(portFile); err == nil {
				if port, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
					p.url = "http://127.0.0.1:" + strconv.Itoa(port)
					close(p.ready)
					return
				}
			}
		}
	}
}

// stop kills the runner (this process only, by its own handle), or keeps
// one still being made from starting.
func (p *runnerProc) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped = true
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
	}
}

// stopApp ends the runner of the app's web endpoints, if one runs: a
// stopped app serves nothing, and Modal ends its containers. It does not
// wait for the process to exit (the caller may hold the service's lock);
// the runner's own goroutine reaps it.
func (wr *webRunner) stopApp(appID string) {
	wr.mu.Lock()
	p := wr.procs[appID]
	delete(wr.procs, appID)
	if wr.stopped == nil {
		wr.stopped = map[string]bool{}
	}
	wr.stopped[appID] = true
	wr.mu.Unlock()
	if p != nil {
		p.stop()
	}
}

// venv is the interpreter of a virtualenv with the deployment's modal
// client and its image's packages, made once per set (PyPI, the first time).
func (wr *webRunner) venv(ctx context.Context, m *Service, spec runSpec) (string, error) {
	reqs := append([]string{"modal==" + spec.clientVersion}, spec.requirements...)
	sum := sha256.Sum256([]byte(wr.python + "\n" + strings.Join(reqs, "\n")))
	dir := filepath.Join(wr.cache, "modal-runner-"+hex.EncodeToString(sum[:8]))
	python := filepath.Join(dir, "bin", "python")
	if _, err := os.Stat(python); err == nil {
		return python, nil
	}
	if err := os.MkdirAll(wr.cache, 0o755); err != nil {
		return "", err
	}
	build, err := os.MkdirTemp(wr.cache, ".modal-runner-build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(build)
	m.logfSafe("modal: making the runner's virtualenv %s (%s)", dir, strings.Join(reqs, " "))
	// Made where it will live: pip writes the venv's path into it.
	steps := [][]string{{wr.python, "-m", "venv", dir + ".tmp"}, append([]string{dir + ".tmp/bin/python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check"}, reqs...)}
	_ = os.RemoveAll(dir + ".tmp")
	for _, step := range steps {
		cmd := exec.CommandContext(ctx, step[0], step[1:]...)
		cmd.Dir = build
		if out, err := cmd.CombinedOutput(); err != nil {
			_ = os.RemoveAll(dir + ".tmp")
			return "", fmt.Errorf("%s: %v: %s", strings.Join(step[:min(3, len(step))], " "), err, lastLines(string(out), 5))
		}
	}
	if err := os.Rename(dir+".tmp", dir); err != nil {
		if _, statErr := os.Stat(python); statErr == nil {
			_ = os.RemoveAll(dir + ".tmp") // another emulator made it meanwhile
			return python, nil
		}
		return "", err
	}
	return python, nil
}

// close stops every runner.
func (wr *webRunner) close() {
	wr.mu.Lock()
	wr.closed = true
	procs := wr.procs
	wr.procs = map[string]*runnerProc{}
	wr.mu.Unlock()
	for _, p := range procs {
		p.stop()
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
		}
	}
}

// tailBuffer keeps the last lines a runner wrote, for its start error.
type tailBuffer struct {
	mu    sync.Mutex
	lines []string
}

func (t *tailBuffer) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, line)
	if len(t.lines) > 12 {
		t.lines = t.lines[len(t.lines)-12:]
	}
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, "\n")
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
