// Package outbound is the local cloud's gateway for what scripts fetch: the
// emulator's workerd sends every script's outbound request (its
// globalOutbound, as miniflare's outboundService does) to the emulator
// with the full URL, and this package decides where it goes, with nothing
// leaving the machine:
//
//   - a host of a cloud the emulator stands in for (api.github.com,
//     github.com, *.modal.run, api.cloudflare.com, ...) goes to that
//     family's routes, its path under the family's prefix (each family
//     declares its real hosts, its RealHosts, which the root passes in
//     Options.Hosts);
//   - the emulator's own addresses (127.0.0.1:PORT, localhost,
//     *.workers.localhost, a local origin) go to the emulator as they are;
//   - anything else is refused with 502 and a JSON error saying so.
//
// Each request is logged (method, URL with secret-looking query values
// redacted, the script, where it went and the status), on the emulator's
// log and in a bounded list served at GET /__emulator/outbound.
//
// It also rewrites the URLs a script sends a browser to when they are a
// stand-in's browser pages (GitHub's OAuth pages): RewriteBrowserURL, which
// package workers applies to a script's redirects.
//
// It imports core and the standard library only.
package outbound

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// route sends a real host to a family: host is exact ("api.github.com") or
// a wildcard of one label ("*.modal.run"); the request's path is appended
// to prefix, in which "{label}" stands for the wildcard's label.
type route struct {
	host, family, prefix string
}

// Options configures the gateway.
type Options struct {
	// Hosts are the real hosts the emulator answers for: by family, each
	// host (exact, or "*.<domain>" for one label) and the path prefix its
	// requests go to on the emulator ("{label}" is the wildcard's label).
	Hosts map[string]map[string]string
	// BrowserURL rewrites a URL a browser is sent to, reporting whether it
	// was one of a stand-in's pages (github.Service.RewriteBrowserURL).
	BrowserURL func(string) (string, bool)
	Logf       func(format string, args ...any)
	// Keep is how many entries the log keeps (default 1000).
	Keep int
}

// Entry is one outbound request in the log.
type Entry struct {
	At     time.Time `json:"at"`
	Script string    `json:"script"` // <account>/<script>
	Method string    `json:"method"`
	URL    string    `json:"url"`    // query values of secret-looking names redacted
	To     string    `json:"to"`     // the family, "emulator" for its own addresses, "" when refused
	Status int       `json:"status"` // the answer's
	// Refused says it was not sent anywhere: not a host of the local cloud.
	Refused bool `json:"refused,omitempty"`
}

// Gateway routes outbound requests. Safe for concurrent use.
type Gateway struct {
	opts   Options
	mux    *http.ServeMux
	routes []route // exact hosts first

	mu      sync.Mutex
	entries []Entry
	proxy   *proxy // the HTTP(S) proxy listener (proxy.go), nil until StartProxy
}

// New makes a gateway whose admin routes go on c's mux.
func New(opts Options, c *core.Core) *Gateway {
	if opts.Keep <= 0 {
		opts.Keep = 1000
	}
	g := &Gateway{opts: opts, mux: c.Mux()}
	for _, family := range core.SortedKeys(opts.Hosts) {
		for _, host := range core.SortedKeys(opts.Hosts[family]) {
			g.routes = append(g.routes, route{host: strings.ToLower(host), family: family, prefix: opts.Hosts[family][host]})
		}
	}
	sort.SliceStable(g.routes, func(i, j int) bool {
		return !strings.HasPrefix(g.routes[i].host, "*.") && strings.HasPrefix(g.routes[j].host, "*.")
	})
	return g
}

// Register mounts GET /__emulator/outbound (the log, oldest first),
// DELETE (clears it) and GET /__emulator/outbound-proxy (where the proxy
// listens).
func (g *Gateway) Register() {
	mux := g.mux
	mux.HandleFunc("GET /__emulator/outbound", func(w http.ResponseWriter, _ *http.Request) {
		core.WriteJSON(w, http.StatusOK, g.Entries())
	})
	mux.HandleFunc("GET /__emulator/outbound-proxy", func(w http.ResponseWriter, _ *http.Request) {
		core.WriteJSON(w, http.StatusOK, map[string]string{"url": g.ProxyURL()})
	})
	mux.HandleFunc("DELETE /__emulator/outbound", func(w http.ResponseWriter, _ *http.Request) {
		g.mu.Lock()
		g.entries = nil
		g.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
}

// Entries is the log, oldest first.
func (g *Gateway) Entries() []Entry {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]Entry{}, g.entries...)
}

// RewriteBrowserURL points u at a stand-in's browser pages when it is one
// of the pages it stands in for.
func (g *Gateway) RewriteBrowserURL(u string) (string, bool) {
	if g.opts.BrowserURL == nil {
		return u, false
	}
	return g.opts.BrowserURL(u)
}

// ServeOutbound answers one outbound request of script (r.URL absolute, as
// workerd sends a proxy-style request): rewritten for a family, or for the
// emulator itself when local says the host (host[:port], lower case) is
// one of its own addresses, and handed to next; or refused.
func (g *Gateway) ServeOutbound(w http.ResponseWriter, r *http.Request, script string, local func(hostport string) bool, next http.Handler) {
	target := *r.URL
	if target.Host == "" {
		target.Host = r.Host
	}
	if target.Scheme == "" {
		target.Scheme = "http"
	}
	host := strings.ToLower(target.Host)
	e := Entry{At: time.Now().UTC(), Script: script, Method: r.Method, URL: Redact(&target)}
	out := r.Clone(r.Context())
	out.URL = &url.URL{Path: target.Path, RawPath: target.RawPath, RawQuery: target.RawQuery}
	out.RequestURI = out.URL.RequestURI()
	switch family, path, ok := g.route(host, target.EscapedPath()); {
	case ok:
		e.To = family
		out.Host = "127.0.0.1" // the emulator's own routes, not a Worker's host
		out.URL.Path, out.URL.RawPath = path, ""
		if p, err := url.PathUnescape(path); err == nil {
			out.URL.Path, out.URL.RawPath = p, path
		}
		out.RequestURI = out.URL.RequestURI()
		out.Header.Set("X-Forwarded-Host", host)
		out.Header.Set("X-Forwarded-Proto", target.Scheme)
	case local(host):
		e.To = "emulator"
		out.Host = target.Host
	default:
		e.Refused, e.Status = true, http.StatusBadGateway
		g.record(e)
		core.WriteJSON(w, http.StatusBadGateway, map[string]string{"error": fmt.Sprintf(
			"the local cloud sends no request off this machine: script %s fetched %s %s, and %s is none of the hosts it answers for (the emulated clouds' and its own)",
			script, r.Method, e.URL, target.Hostname())})
		return
	}
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	next.ServeHTTP(sw, out)
	e.Status = sw.status
	g.record(e)
}

// route finds the family answering host, and the path the request goes to.
func (g *Gateway) route(hostport, escapedPath string) (family, path string, ok bool) {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	for _, rt := range g.routes {
		prefix := rt.prefix
		switch {
		case strings.HasPrefix(rt.host, "*."):
			label, ok := strings.CutSuffix(host, rt.host[1:])
			if !ok || label == "" || strings.Contains(label, ".") {
				continue
			}
			prefix = strings.ReplaceAll(prefix, "{label}", label)
		case host != rt.host:
			continue
		}
		if escapedPath == "" {
			escapedPath = "/"
		}
		return rt.family, strings.TrimSuffix(prefix, "/") + escapedPath, true
	}
	return "", "", false
}

func (g *Gateway) record(e Entry) {
	g.mu.Lock()
	g.entries = append(g.entries, e)
	if len(g.entries) > g.opts.Keep {
		g.entries = g.entries[len(g.entries)-g.opts.Keep:]
	}
	g.mu.Unlock()
	if g.opts.Logf != nil {
		to := e.To
		if e.Refused {
			to = "REFUSED (not a host of the local cloud)"
		}
		g.opts.Logf("outbound %s: %s %s -> %s %d", e.Script, e.Method, e.URL, to, e.Status)
	}
}

// secretNames are query parameters whose values never reach the log.
var secretNames = map[string]bool{"code": true, "state": true, "client_secret": true, "code_verifier": true, "access_token": true,
	"refresh_token": true, "token": true, "id_token": true, "password": true, "secret": true, "key": true, "signature": true, "sig": true}

// Redact renders u with the values of secret-looking query parameters
// replaced.
func Redact(u *url.URL) string {
	c := *u
	c.User = nil
	if c.RawQuery != "" {
		q := c.Query()
		for k := range q {
			if secretNames[strings.ToLower(k)] {
				q[k] = []string{"REDACTED"}
			}
		}
		c.RawQuery = q.Encode()
	}
	return c.String()
}

type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
