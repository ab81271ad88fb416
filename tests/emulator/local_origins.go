package emulator

// Local origins: a script served at the root of a loopback port of its own,
// http://127.0.0.1:PORT, the way `wrangler dev` serves a Worker. The
// workers.localhost hosts (hosts.go) give every script its own origin
// already; a local origin is for a script whose URL must be a plain
// loopback origin, which upstream's control plane demands of the web UI's
// (WEB_APP_URL: https, or http on exactly localhost, 127.0.0.1 or [::1]),
// so that a person can sign in to the web UI on the local cloud. Requests
// are counted and faulted as on the script's other URLs.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// localOrigin is one script's own loopback listener.
type localOrigin struct {
	script string
	url    string
	srv    *http.Server
	done   chan struct{}
}

// ParseLocalOrigin reads a -local-origin flag value, SCRIPT=ADDR
// (e.g. open-inspect-web-demo=127.0.0.1:8788; port 0 picks a free one).
func ParseLocalOrigin(v string) (script, addr string, err error) {
	script, addr, ok := strings.Cut(v, "=")
	if !ok || script == "" || addr == "" {
		return "", "", fmt.Errorf("local origin %q: want SCRIPT=HOST:PORT", v)
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", "", fmt.Errorf("local origin %q: %w", v, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return "", "", fmt.Errorf("local origin %q: %s is not a loopback address", v, host)
	}
	return script, addr, nil
}

// startLocalOrigins listens on each of opts.LocalOrigins and serves its
// script there, at the root.
func (s *Server) startLocalOrigins(origins map[string]string) error {
	for _, script := range core.SortedKeys(origins) {
		ln, err := net.Listen("tcp", origins[script])
		if err != nil {
			return fmt.Errorf("emulator: local origin of %s: listen %s: %w", script, origins[script], err)
		}
		lo := &localOrigin{script: script, url: "http://" + urlHost(ln.Addr().(*net.TCPAddr)), done: make(chan struct{})}
		lo.srv = &http.Server{Handler: s.withBindings(core.WithLog(s.logf, s.localOriginHandler(script))), ReadHeaderTimeout: 10 * time.Second}
		go func() {
			defer close(lo.done)
			_ = lo.srv.Serve(ln)
		}()
		s.localOrigins = append(s.localOrigins, lo)
	}
	return nil
}

// localOriginHandler serves script at the root of its own origin, whatever
// the Host: the path is exactly what the script sees.
func (s *Server) localOriginHandler(script string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.serveScript(w, r, r.URL.EscapedPath(), "", func() (*workerScript, int, error) {
			return s.scriptByNameLocked(script)
		})
	})
}

// LocalOrigins are the scripts served on loopback ports of their own, by
// script name: http://127.0.0.1:PORT.
func (s *Server) LocalOrigins() map[string]string {
	out := make(map[string]string, len(s.localOrigins))
	for _, lo := range s.localOrigins {
		out[lo.script] = lo.url
	}
	return out
}

// closeLocalOrigins stops every local origin's listener.
func (s *Server) closeLocalOrigins() error {
	var errs []error
	for _, lo := range slices.Backward(s.localOrigins) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := lo.srv.Shutdown(ctx); err != nil {
			errs = append(errs, lo.srv.Close())
		}
		cancel()
		<-lo.done
	}
	s.localOrigins = nil
	return errors.Join(errs...)
}

func (s *Server) registerLocalOrigins() {
	s.mux.HandleFunc("GET /__emulator/local-origins", func(w http.ResponseWriter, _ *http.Request) {
		core.WriteJSON(w, http.StatusOK, s.LocalOrigins())
	})
}
