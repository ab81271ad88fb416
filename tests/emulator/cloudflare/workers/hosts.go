package workers

// Serving Workers by Host, as Cloudflare does: each script on its own
// origin, and zones' hostnames by custom domain and route. withHosts runs
// before the mux, so the API and admin paths on the emulator's own address
// (127.0.0.1:PORT, localhost, any IP or other name) are untouched.
//
//   - <script>.<subdomain>.workers.localhost[:port] is the script of the
//     account whose workers.dev subdomain is <subdomain> (PUT
//     workers/subdomain, else Options.WorkersSubdomain), the local stand-in
//     for https://<script>.<subdomain>.workers.dev. <script>.workers.localhost
//     leaves the account out and, like /__workers/<script>, answers 409 when
//     two accounts have a script of that name. The script sees the path
//     exactly as sent. A script whose workers.dev route was turned off
//     (POST workers/scripts/{name}/subdomain with enabled false, or DELETE,
//     what the provider sends for workersDev false) answers 404 there, as
//     Cloudflare stops serving it on workers.dev; its routes, custom domains
//     and the /__workers/ alias still reach it. One whose route was never
//     set is served: Cloudflare gives every Worker a workers.dev route when
//     it is created, and tests upload scripts without turning it on.
//   - A hostname of a zone: the zone routes whose pattern matches the
//     request (host and path; "*" only at the start of the host and the end
//     of the path; the most specific wins), then the custom domain of that
//     hostname. Routes come first because Cloudflare documents that a route
//     takes precedence over a custom domain on the same hostname (the
//     logging-Worker-in-front example in its Routes page); a matching route
//     without a script runs no Worker and falls through to the custom
//     domain, as a route without a Worker does to the origin.
//   - A hostname under workers.localhost or under a zone the emulator holds
//     that nothing serves answers 404 with a JSON error naming the host.
//
// Requests are counted and faulted under the same key as the path alias:
// "<METHOD> /__workers/{script_name}<path>".

import (
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// workersDevHost is the local stand-in for workers.dev.
const workersDevHost = "workers.localhost"

// withHosts serves requests addressed to a Worker's hostname; every other
// request goes to next.
func (s *Service) withHosts(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := requestHost(r)
		if host == "" || host == "localhost" || net.ParseIP(host) != nil {
			next.ServeHTTP(w, r)
			return
		}
		if label, ok := strings.CutSuffix(host, "."+workersDevHost); ok {
			script, sub, _ := strings.Cut(label, ".")
			s.serveScript(w, r, r.URL.EscapedPath(), "", func() (*workerScript, int, error) {
				ws, status, err := s.scriptByHostLocked(script, sub)
				if err == nil && ws.WorkersDevOff {
					return nil, http.StatusNotFound, fmt.Errorf("worker script %q is not served on %s: its workers.dev route is disabled; "+
						"reach it by its routes or custom domains", ws.Name, host)
				}
				return ws, status, err
			})
			return
		}
		if host == workersDevHost {
			core.WriteJSON(w, http.StatusNotFound, map[string]string{"error": "no worker answers on " + host + ": use <script>." + host})
			return
		}
		acct, script, zoned := s.zones.ScriptFor(host, r.URL.EscapedPath(), r.URL.RawQuery)
		switch {
		case script != "":
			s.serveScript(w, r, r.URL.EscapedPath(), "", func() (*workerScript, int, error) {
				if cur := s.st.Workers[wkKey(acct, script)]; cur != nil {
					return cur, 0, nil
				}
				return nil, http.StatusNotFound, fmt.Errorf("no worker script named %q", script)
			})
		case zoned:
			core.WriteJSON(w, http.StatusNotFound, map[string]string{
				"error": fmt.Sprintf("no worker route or custom domain serves %s%s", host, r.URL.EscapedPath())})
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// requestHost is r's host without the port, lower case, without a final dot.
func requestHost(r *http.Request) string {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.TrimSuffix(strings.ToLower(host), ".")
}

// workersSubdomainLocked is the account's workers.dev subdomain.
func (s *Service) workersSubdomainLocked(acct string) string {
	if sub, ok := s.st.WorkersSubdomains[acct]; ok {
		return sub
	}
	return s.workersSubdomain
}

// scriptByHostLocked finds the script of <script>[.<sub>].workers.localhost:
// sub ("" for any account) picks the account by its workers.dev subdomain.
func (s *Service) scriptByHostLocked(name, sub string) (*workerScript, int, error) {
	if sub == "" {
		return s.scriptByNameLocked(name)
	}
	var found []*workerScript
	for _, key := range core.SortedKeys(s.st.Workers) {
		if ws := s.st.Workers[key]; ws.Name == name && s.workersSubdomainLocked(ws.AccountID) == sub {
			found = append(found, ws)
		}
	}
	switch len(found) {
	case 0:
		return nil, http.StatusNotFound, fmt.Errorf("no worker script named %q in an account with workers.dev subdomain %q", name, sub)
	case 1:
		return found[0], 0, nil
	}
	accts := make([]string, len(found))
	for i, ws := range found {
		accts[i] = ws.AccountID
	}
	return nil, http.StatusConflict, fmt.Errorf("worker script %q exists in more than one account with workers.dev subdomain %q (%s): give each account its own subdomain",
		name, sub, strings.Join(accts, ", "))
}
