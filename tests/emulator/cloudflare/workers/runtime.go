package workers

// The Workers runtime: every deployed script runs in workerd (package
// workerd), with its bindings backed by this emulator's own stores. The
// configuration is derived from state whenever a script's request, queue
// batch or cron needs the runtime; when it differs from the running one
// (an upload, a deployment, a secret, a consumer changed), workerd is
// restarted on the new one. Durable Objects keep their SQLite files across
// restarts, as they keep their storage across deployments on Cloudflare.
//
// Bindings reach the emulator as HTTP requests carrying X-Emulator-Binding
// (bindings.go); each kind speaks the protocol workerd's binding speaks.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/assets"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/workerd"
)

const (
	// PathPrefix is the path alias scripts are served under on the
	// emulator's own address: /__workers/<script>/<path>.
	PathPrefix = "/__workers/"
	// bindingHeader names the binding a request from workerd serves:
	// "<kind>/<account>/<id>".
	bindingHeader = "X-Emulator-Binding"
	// outboundHeader names the script whose fetch() a request from workerd
	// is ("<account>/<script>"), sent in proxy form (outbound.go).
	outboundHeader = "X-Emulator-Outbound"
)

// workersRuntime is the running workerd and what it was started from.
type workersRuntime struct {
	rt *workerd.Runtime // nil: no workerd binary; scripts do not run

	mu     sync.Mutex // serialises (re)starts
	proc   *workerd.Process
	key    string // fingerprint of the configuration proc runs
	starts int    // how many configurations were started, for the bench
	checks int    // startup checks of uploads
	last   time.Duration
	lastN  int  // workers in the configuration last started
	closed bool // Close ran: a late queue delivery must not start workerd again

	// modules are the module files written for each version, by its etag
	// (a digest of its metadata and modules): the configuration is derived
	// on every request, and its modules need hashing and writing only once.
	// Guarded by Server.mu, under which configurations are derived.
	modules map[string][]workerd.Module
}

// runtimeServices are the backends and stubs a configuration's bindings
// point to, each named once however many bindings use it.
type runtimeServices struct {
	backends map[string]workerd.Backend
	stubs    map[string]workerd.Stub
}

func newRuntimeServices() *runtimeServices {
	return &runtimeServices{backends: map[string]workerd.Backend{}, stubs: map[string]workerd.Stub{}}
}

// stub is a service answering every request with status and msg (a
// binding to what is not there), named by its message.
func (rs *runtimeServices) stub(status int, msg string) string {
	sum := sha256.Sum256([]byte(msg))
	svc := "x/" + hex.EncodeToString(sum[:8])
	rs.stubs[svc] = workerd.Stub{Service: svc, Status: status, Message: msg}
	return svc
}

// addTo appends the services to cfg in name order, so the same state always
// renders the same configuration.
func (rs *runtimeServices) addTo(cfg *workerd.Config) {
	for _, k := range core.SortedKeys(rs.backends) {
		cfg.Backends = append(cfg.Backends, rs.backends[k])
	}
	for _, k := range core.SortedKeys(rs.stubs) {
		cfg.Stubs = append(cfg.Stubs, rs.stubs[k])
	}
}

// workerService is the workerd service name of a script.
func workerService(acct, name string) string { return "w/" + acct + "/" + name }

// runtimeConfigLocked derives the configuration every deployed script runs
// in. Module files are written once, named by their content's digest.
func (s *Service) runtimeConfigLocked() (workerd.Config, error) {
	cfg := workerd.Config{StorageDir: filepath.Join(s.dataDir, "workerd", "durable-objects"), TailSink: s.tailSink()}
	services := newRuntimeServices()
	for _, key := range core.SortedKeys(s.st.Workers) {
		ws := s.st.Workers[key]
		if len(ws.Modules) == 0 {
			continue // assets only: nothing to run
		}
		w, err := s.workerConfigLocked(ws.AccountID, ws.Name, &ws.workerContent, ws.version(ws.liveVersionID()), services, false)
		if err != nil {
			return cfg, err
		}
		cfg.Workers = append(cfg.Workers, w)
		if other, _ := ws.splitVersion(); other != nil {
			// A split deployment: its other version runs beside (split.go).
			w, err := s.versionWorkerConfigLocked(ws, other, services)
			if err != nil {
				return cfg, err
			}
			cfg.Workers = append(cfg.Workers, w)
		}
	}
	services.addTo(&cfg)
	return cfg, nil
}

// workerConfigLocked is one script's part of the configuration: c is what
// runs, v its version (for version_metadata; nil before the upload is one).
// alone says it is checked on its own (an upload's startup check): bindings
// to other scripts then go to stubs.
func (s *Service) workerConfigLocked(acct, name string, c *workerContent, v *workerVersion, services *runtimeServices, alone bool) (workerd.Worker, error) {
	w := workerd.Worker{
		Service:            workerService(acct, name),
		CompatibilityDate:  c.CompatibilityDate,
		CompatibilityFlags: c.CompatibilityFlags,
		UniqueKeyPrefix:    acct + "-" + name + "-", // a directory name: no slashes
	}
	// Its console output and exceptions reach its log and its tails
	// (tails.go) through the configuration's tail worker.
	props := tailProps{Account: acct, Script: name}
	if v != nil {
		props.Version = v.ID
	}
	w.TailProps = props.asMap()
	mods, err := s.moduleFiles(c)
	if err != nil {
		return w, err
	}
	w.Modules = mods
	declared := map[string]bool{}
	for _, cl := range c.Classes {
		declared[cl] = true
	}
	w.DurableObjectClasses = c.Classes
	// Every fetch() of the script goes to the emulator's outbound gateway,
	// with its full URL (outbound.go).
	w.GlobalOutbound = "o/" + acct + "/" + name
	services.backends[w.GlobalOutbound] = workerd.Backend{Service: w.GlobalOutbound, Address: strings.TrimPrefix(s.baseURL(), "http://"),
		Header: outboundHeader, Value: acct + "/" + name, Proxy: true}
	backend := func(kind, id string) string {
		// Bucket and queue names are per account: so is the service.
		svc := "b/" + kind + "/" + acct + "/" + id
		services.backends[svc] = workerd.Backend{Service: svc, Address: strings.TrimPrefix(s.baseURL(), "http://"), Header: bindingHeader, Value: kind + "/" + acct + "/" + id}
		return svc
	}
	stub := services.stub
	for _, raw := range c.Bindings {
		var b runtimeBinding
		if err := json.Unmarshal(raw, &b); err != nil {
			return w, fmt.Errorf("script %s: binding: %w", name, err)
		}
		bd := workerd.Binding{Name: b.Name}
		switch b.Type {
		case "plain_text", "secret_text":
			text := ""
			if b.Text != nil {
				text = *b.Text
			}
			bd.Text = &text
		case "json":
			j := string(b.JSON)
			if j == "" {
				j = "null"
			}
			bd.JSON = &j
		case "d1":
			bd.D1 = backend("d1", b.ID)
		case "kv_namespace":
			bd.KV = backend("kv", b.NamespaceID)
		case "r2_bucket":
			bd.R2 = backend("r2", b.BucketName)
		case "queue":
			bd.Queue = backend("queue", b.QueueName)
		case "assets":
			bd.Service = backend("assets", name)
		case "service":
			target := s.st.Workers[wkKey(acct, b.Service)]
			switch {
			case alone || target == nil || len(target.Modules) == 0:
				bd.Service = stub(http.StatusServiceUnavailable, fmt.Sprintf("the service binding %s names script %q, which is not deployed", b.Name, b.Service))
			default:
				bd.Service, bd.Entrypoint = workerService(acct, b.Service), b.Entrypoint
			}
		case "durable_object_namespace":
			switch {
			case b.ScriptName == "" || b.ScriptName == name:
				if !declared[b.ClassName] {
					return w, fmt.Errorf("script %s: binding %s names Durable Object class %s, which no migration declared", name, b.Name, b.ClassName)
				}
				bd.DurableObjectClass = b.ClassName
			case alone || s.st.Workers[wkKey(acct, b.ScriptName)] == nil:
				bd.Service = stub(http.StatusServiceUnavailable, fmt.Sprintf("the Durable Object binding %s names script %q, which is not running", b.Name, b.ScriptName))
			default:
				bd.DurableObjectClass, bd.DurableObjectService = b.ClassName, workerService(acct, b.ScriptName)
			}
		case "version_metadata":
			// The version's own values: anything that changes per request
			// would change the configuration and restart workerd each time.
			id, tag, at := c.Etag, "", ""
			if v != nil {
				id, tag, at = v.ID, v.VersionTag, v.CreatedOn.UTC().Format(time.RFC3339)
			}
			meta := fmt.Sprintf(`{"id":%q,"tag":%q,"timestamp":%q}`, id, tag, at)
			bd.JSON = &meta
		default:
			// Workers AI, Analytics Engine, Hyperdrive and the rest have
			// no local backend: the binding is there, and says so when used.
			bd.Service = stub(http.StatusNotImplemented, fmt.Sprintf("%s bindings (%s) are not run by the emulator", b.Type, b.Name))
		}
		w.Bindings = append(w.Bindings, bd)
	}
	return w, nil
}

// runtimeBinding is what the runtime reads of an uploaded binding.
type runtimeBinding struct {
	bindingSpec
	JSON       json.RawMessage `json:"json"`
	Entrypoint string          `json:"entrypoint"`
}

// moduleFiles writes a version's modules where workerd embeds them from,
// the main module first, once per version (workersRuntime.modules).
func (s *Service) moduleFiles(c *workerContent) ([]workerd.Module, error) {
	if mods, ok := s.runtime.modules[c.Etag]; ok && c.Etag != "" {
		return mods, nil
	}
	dir := filepath.Join(s.dataDir, "workerd", "modules")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	mods := slices.Clone(c.Modules)
	slices.SortStableFunc(mods, func(a, b workerModule) int {
		switch {
		case a.Name == c.MainModule && b.Name != c.MainModule:
			return -1
		case b.Name == c.MainModule && a.Name != c.MainModule:
			return 1
		}
		return 0
	})
	out := make([]workerd.Module, 0, len(mods))
	for _, m := range mods {
		if m.isSourceMap() {
			continue // kept with the version, not run
		}
		sum := sha256.Sum256(m.Content)
		p := filepath.Join(dir, hex.EncodeToString(sum[:])+"-"+path.Base(strings.ReplaceAll(m.Name, "\\", "/")))
		if _, err := os.Stat(p); err != nil {
			if err := os.WriteFile(p, m.Content, 0o600); err != nil {
				return nil, err
			}
		}
		kind := moduleKind(m, c.HasModules)
		out = append(out, workerd.Module{Name: m.Name, Kind: kind, Path: p})
	}
	if c.Etag != "" {
		if s.runtime.modules == nil {
			s.runtime.modules = map[string][]workerd.Module{}
		}
		s.runtime.modules[c.Etag] = out
	}
	return out, nil
}

// moduleKind maps an uploaded part's content type (Cloudflare's module
// types) to workerd's, falling back on the file extension.
func moduleKind(m workerModule, hasModules bool) workerd.ModuleKind {
	if !hasModules {
		return workerd.ServiceWorker
	}
	ct, _, _ := strings.Cut(m.ContentType, ";")
	switch strings.TrimSpace(strings.ToLower(ct)) {
	case "application/javascript+module", "text/javascript+module":
		return workerd.ESModule
	case "application/javascript", "text/javascript":
		return workerd.CommonJSModule
	case "text/plain":
		return workerd.TextModule
	case "application/octet-stream":
		return workerd.DataModule
	case "application/wasm":
		return workerd.WasmModule
	case "application/json":
		return workerd.JSONModule
	case "text/x-python", "application/x-python":
		return workerd.PythonModule
	}
	switch strings.ToLower(path.Ext(m.Name)) {
	case ".cjs":
		return workerd.CommonJSModule
	case ".wasm":
		return workerd.WasmModule
	case ".json":
		return workerd.JSONModule
	case ".txt", ".html", ".sql":
		return workerd.TextModule
	case ".py":
		return workerd.PythonModule
	case ".bin":
		return workerd.DataModule
	}
	return workerd.ESModule
}

// errNoRuntime answers script requests on an emulator without workerd.
var errNoRuntime = errors.New("this emulator runs no scripts: " + workerd.ErrNoBinary.Error())

// runtimeProcess returns workerd running the current configuration,
// (re)starting it when the configuration changed.
func (s *Service) runtimeProcess(ctx context.Context) (*workerd.Process, error) {
	if s.runtime.rt == nil {
		return nil, errNoRuntime
	}
	s.mu.Lock()
	cfg, err := s.runtimeConfigLocked()
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	fp, _ := json.Marshal(cfg) // plain data: always marshals
	sum := sha256.Sum256(fp)
	key := hex.EncodeToString(sum[:])

	r := &s.runtime
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errors.New("the emulator is closed")
	}
	if r.proc != nil {
		select {
		case <-r.proc.Exited():
			r.proc = nil
		default:
			if r.key == key {
				return r.proc, nil
			}
		}
	}
	if r.proc != nil {
		// Stopped before the next starts: two processes must not share the
		// Durable Objects' SQLite files.
		r.proc.Stop()
		r.proc = nil
	}
	began := time.Now()
	proc, err := r.rt.Start(ctx, "current", cfg)
	if err != nil {
		return nil, err
	}
	r.proc, r.key = proc, key
	s.ensureLogFiles(cfg)
	r.starts++
	r.last, r.lastN = time.Since(began), len(cfg.Workers)
	return proc, nil
}

// checkStartupLocked runs a version on its own, the way Cloudflare starts
// an upload before accepting it, and refuses it with the runtime's message
// when it does not start (a syntax error, a throw at the top level, a
// compatibility date the runtime does not know, a Durable Object class it
// does not export).
func (s *Service) checkStartupLocked(acct, name string, c *workerContent) error {
	if s.runtime.rt == nil || len(c.Modules) == 0 {
		return nil
	}
	services := newRuntimeServices()
	w, err := s.workerConfigLocked(acct, name, c, nil, services, true)
	if err != nil {
		return wkInvalid("%s", err.Error())
	}
	cfg := workerd.Config{Workers: []workerd.Worker{w}}
	services.addTo(&cfg)
	s.runtime.checks++
	proc, err := s.runtime.rt.Start(context.Background(), "check", cfg)
	var se *workerd.StartError
	switch {
	case errors.As(err, &se):
		// Cloudflare's answer to a script that fails to start.
		return core.NewAPIError(http.StatusBadRequest, 10021, startMessage(se.Message, w.Service, c))
	case err != nil:
		return err
	}
	proc.Stop()
	return nil
}

// startMessage is workerd's startup error as Cloudflare words it. workerd
// names a service-worker script after its service; Cloudflare after its
// part (worker.js for a script sent as the whole body: "Uncaught
// SyntaxError … at worker.js:1:4", observed in cloudflare-typescript issue
// 2799), and reports a script that fails to evaluate without workerd's
// second line about the handlers that failure left unregistered.
func startMessage(msg, service string, c *workerContent) string {
	if c.HasModules {
		return msg
	}
	msg = strings.ReplaceAll(msg, " at "+service+":", " at "+c.MainModule+":")
	const noHandlers = "\nNo event handlers were registered. This script does nothing."
	if head, ok := strings.CutSuffix(msg, noHandlers); ok && head != "" {
		return head
	}
	return msg
}

// stopRuntime ends workerd; closing says for good (Close).
func (s *Service) stopRuntime(closing bool) {
	s.runtime.mu.Lock()
	defer s.runtime.mu.Unlock()
	s.runtime.closed = s.runtime.closed || closing
	if s.runtime.proc != nil {
		s.runtime.proc.Stop()
		s.runtime.proc = nil
	}
}

// RuntimeStats is what the runtime cost so far, for the bench and the
// admin API (GET /__emulator/runtime).
type RuntimeStats struct {
	// Starts counts configurations started (each change of a deployed
	// script, secret or consumer restarts workerd on the next request);
	// Checks the uploads' startup checks.
	Starts int `json:"starts"`
	Checks int `json:"checks"`
	// LastStartMs is how long the last configuration took from exec to
	// its first answer, with LastWorkers scripts in it.
	LastStartMs float64 `json:"last_start_ms"`
	LastWorkers int     `json:"last_workers"`
	// PID and RSSBytes are the running workerd's process and resident
	// memory (0 when none runs).
	PID      int   `json:"pid"`
	RSSBytes int64 `json:"rss_bytes"`
}

// RuntimeStats reports the runtime's starts and the running process.
func (s *Service) RuntimeStats() RuntimeStats {
	s.runtime.mu.Lock()
	defer s.runtime.mu.Unlock()
	st := RuntimeStats{Starts: s.runtime.starts, Checks: s.runtime.checks,
		LastStartMs: float64(s.runtime.last.Microseconds()) / 1000, LastWorkers: s.runtime.lastN}
	if p := s.runtime.proc; p != nil {
		st.PID = p.PID()
		st.RSSBytes = residentBytes(st.PID)
	}
	return st
}

// residentBytes is a process's VmRSS from /proc (0 where there is none).
func residentBytes(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(v), "%d", &kb)
			return kb << 10
		}
	}
	return 0
}

// RestartRuntime stops workerd, so the next request starts it afresh (the
// bench's cold start).
func (s *Service) RestartRuntime() { s.stopRuntime(false) }

func (s *Service) registerWorkerServing() {
	s.mux.HandleFunc(PathPrefix+"{script_name}", s.workerServe)
	s.mux.HandleFunc(PathPrefix+"{script_name}/{path...}", s.workerServe)
	s.mux.HandleFunc("POST /__emulator/scheduled/{script_name}", s.workerScheduled)
	s.mux.HandleFunc("GET /__emulator/runtime", func(w http.ResponseWriter, _ *http.Request) {
		core.WriteJSON(w, http.StatusOK, s.RuntimeStats())
	})
	s.mux.HandleFunc("DELETE /__emulator/runtime", func(w http.ResponseWriter, _ *http.Request) {
		s.RestartRuntime()
		w.WriteHeader(http.StatusNoContent)
	})
}

// WorkerURL is where a script's own HTTP is served, on its own origin as
// on workers.dev: http://<script>.workers.localhost:PORT (hosts.go). Go's
// resolver does not send *.localhost to loopback; dial it with
// internal/loopback. The /__workers/<script> path alias still answers.
func (s *Service) WorkerURL(script string) string {
	base := s.baseURL()
	if base == "" {
		return ""
	}
	u, err := url.Parse(base)
	if err != nil {
		return base + PathPrefix + script
	}
	return "http://" + net.JoinHostPort(script+"."+workersDevHost, u.Port())
}

// scriptPath is the path of r as the script sees it: everything after
// /__workers/<script>, still percent-encoded as received.
func scriptPath(r *http.Request) string {
	raw := r.URL.EscapedPath()
	rest := strings.TrimPrefix(raw, PathPrefix)
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		return rest[i:]
	}
	return "/"
}

// workerServe serves the path alias /__workers/<script>/...: the script
// sees the path after its name, and its assets' redirects keep the prefix.
func (s *Service) workerServe(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("script_name")
	s.serveScript(w, r, scriptPath(r), PathPrefix+name, func() (*workerScript, int, error) {
		return s.scriptByNameLocked(name)
	})
}

// serveScript serves one request of a script at path p (percent-encoded,
// as the script sees it): assets first where Cloudflare serves them first,
// then the script in workerd. resolve, called under s.mu, finds the
// script; base prefixes the assets' redirect locations (the path alias's
// prefix, or "" on the script's own origin). Requests are counted and
// faulted under "<METHOD> /__workers/{script_name}<path>" however the
// script was reached.
func (s *Service) serveScript(w http.ResponseWriter, r *http.Request, p, base string, resolve func() (*workerScript, int, error)) {
	route := PathPrefix + "{script_name}" + p
	s.core.Count(r.Method+" "+route, false)
	// Every request gets a ray, as on Cloudflare: the script sees it, the
	// client gets it back, and the script's log names it (tails.go), so a
	// failed request in a browser's network panel leads to its exception.
	ray := newRay()
	r.Header.Set(rayHeader, ray)
	w.Header().Set(rayHeader, ray)
	delay, f := s.core.TakeFaults(r.Method, route)
	if s.core.ServeFault(w, r, delay, f, workerFaultAnswers) {
		return
	}
	decoded, err := url.PathUnescape(p)
	if err != nil {
		decoded = p
	}
	s.mu.Lock()
	ws, status, err := resolve()
	var service, name, acct string
	var runnable, hasMain bool
	var served *assets.Assets
	if err == nil {
		// A split deployment's request goes to one of its versions (split.go).
		var content *workerContent
		service, content = ws.servedVersion(r)
		name, acct, runnable, served, hasMain = ws.Name, ws.AccountID, len(content.Modules) > 0, content.Assets, content.MainModule != ""
	}
	s.mu.Unlock()
	if err != nil {
		core.WriteJSON(w, status, map[string]string{"error": err.Error()})
		return
	}
	if s.assets.Serve(w, r, acct, served, hasMain, decoded, false, base) {
		return
	}
	if !runnable {
		core.WriteJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("worker script %q has no code to run", name)})
		return
	}
	proc, err := s.runtimeProcess(r.Context())
	if err != nil {
		core.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
		return
	}
	target, _ := url.Parse(proc.URL())
	// The script sees its own path under the host it was asked at, the way
	// a workers.dev script sees its URL.
	seen := "http://" + r.Host + p
	if r.URL.RawQuery != "" {
		seen += "?" + r.URL.RawQuery
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.URL.Path, pr.Out.URL.RawPath = "/", ""
			pr.Out.Host = r.Host
			pr.Out.Header.Set("X-Emulator-Worker", service)
			pr.Out.Header.Set("X-Emulator-Url", seen)
		},
		ModifyResponse: func(res *http.Response) error {
			res.Header.Del(rayHeader) // the emulator's, set above, is the one
			return s.pointBrowserAtStandIns(res)
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			core.WriteJSON(w, http.StatusBadGateway, map[string]string{"error": "the Workers runtime did not answer: " + err.Error()})
		},
	}
	proxy.ServeHTTP(w, r)
}

// scriptByNameLocked finds the script /__workers/<name> (and
// <name>.workers.localhost) serves. A script without modules is found, for
// its assets; callers that run code check it has some.
func (s *Service) scriptByNameLocked(name string) (*workerScript, int, error) {
	var found []*workerScript
	for _, key := range core.SortedKeys(s.st.Workers) {
		if ws := s.st.Workers[key]; ws.Name == name {
			found = append(found, ws)
		}
	}
	switch {
	case len(found) == 0:
		return nil, http.StatusNotFound, fmt.Errorf("no worker script named %q", name)
	case len(found) > 1:
		accts := make([]string, len(found))
		for i, ws := range found {
			accts[i] = ws.AccountID
		}
		return nil, http.StatusConflict, fmt.Errorf("worker script %q exists in more than one account (%s); /__workers/<script> and <script>.workers.localhost cannot tell them apart (use <script>.<account subdomain>.workers.localhost)",
			name, strings.Join(accts, ", "))
	}
	return found[0], 0, nil
}

// workerFaultAnswers answer in plain JSON, as a worker would.
var workerFaultAnswers = core.FaultAnswers{
	RateLimited: func(w http.ResponseWriter, _ *core.Fault) {
		core.WriteJSON(w, http.StatusTooManyRequests, map[string]string{"error": "Too many requests"})
	},
	ServerError: func(w http.ResponseWriter, f *core.Fault) {
		core.WriteJSON(w, f.Status, map[string]string{"error": "Internal server error"})
	},
}

// dispatch sends one non-fetch event (queue, scheduled) to a script
// through the gateway and decodes the handler's result into out.
func (s *Service) dispatch(ctx context.Context, acct, script, event string, body, out any) error {
	proc, err := s.runtimeProcess(ctx)
	if err != nil {
		return err
	}
	in, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, proc.URL()+"/", bytes.NewReader(in))
	if err != nil {
		return err
	}
	req.Header.Set("X-Emulator-Worker", workerService(acct, script))
	req.Header.Set("X-Emulator-Event", event)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s event for %s: %w", event, script, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.NewDecoder(res.Body).Decode(&e)
		return fmt.Errorf("%s event for %s: %d %s", event, script, res.StatusCode, e.Error)
	}
	return json.NewDecoder(res.Body).Decode(out)
}

// workerScheduled runs a script's scheduled handler now:
// POST /__emulator/scheduled/<script>?cron=<expression> (the first of the
// script's crons when absent). It answers the handler's outcome.
func (s *Service) workerScheduled(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	ws, status, err := s.scriptByNameLocked(r.PathValue("script_name"))
	if err == nil && len(ws.Modules) == 0 {
		status, err = http.StatusNotFound, fmt.Errorf("worker script %q has no code to run", ws.Name)
	}
	var acct, name, cron string
	if err == nil {
		acct, name = ws.AccountID, ws.Name
		if len(ws.Crons) > 0 {
			cron = ws.Crons[0].Cron
		}
	}
	s.mu.Unlock()
	if err != nil {
		core.AdminError(w, status, err)
		return
	}
	if c := r.URL.Query().Get("cron"); c != "" {
		cron = c
	}
	var out struct {
		Outcome string `json:"outcome"`
		NoRetry bool   `json:"noRetry"`
	}
	if err := s.dispatch(r.Context(), acct, name, "scheduled", map[string]any{"cron": cron, "scheduledTime": time.Now().UnixMilli()}, &out); err != nil {
		core.AdminError(w, http.StatusBadGateway, err)
		return
	}
	core.WriteJSON(w, http.StatusOK, out)
}
