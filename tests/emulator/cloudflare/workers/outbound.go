package workers

// What scripts fetch, and where their answers send browsers. Every
// script's globalOutbound is an external service in proxy form pointing at
// the emulator (runtime.go), so each fetch() arrives here with its full URL
// and X-Emulator-Outbound naming the script; the outbound gateway (package
// outbound, through Outbound) sends it to the family of its host, to the
// emulator's own address, or refuses it. Nothing a script fetches leaves the
// machine.
//
// The local cloud's one rewrite of what scripts answer: a redirect (3xx
// Location), or a JSON answer's URL, that sends a browser to a page a
// stand-in serves (GitHub's OAuth pages, https://github.com/login/oauth/…)
// is pointed at the stand-in's browser origin, so a person's own browser
// completes the flow on the machine. Upstream's web hands the sign-in URL
// to its page as JSON ({"url": …}) rather than as a redirect; both are
// rewritten.

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

// Outbound is what the runtime needs of package outbound.
type Outbound interface {
	// ServeOutbound answers a script's fetch: local says which hosts are
	// the emulator's own; next serves the rewritten request.
	ServeOutbound(w http.ResponseWriter, r *http.Request, script string, local func(hostport string) bool, next http.Handler)
	// RewriteBrowserURL points a URL of a stand-in's pages at it.
	RewriteBrowserURL(u string) (string, bool)
}

// IsLocalHost says whether hostport (lower case) is one of the emulator's
// own addresses: its listener (any loopback name, *.workers.localhost),
// a local origin, or a hostname of a zone it holds.
func (s *Service) IsLocalHost(hostport string) bool {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	host = strings.TrimSuffix(host, ".")
	_, ownPort, _ := net.SplitHostPort(strings.TrimPrefix(s.baseURL(), "http://"))
	if port != "" && port == ownPort {
		if ip := net.ParseIP(host); (ip != nil && ip.IsLoopback()) || host == "localhost" || strings.HasSuffix(host, "."+workersDevHost) {
			return true
		}
	}
	for _, lo := range s.localOrigins {
		if strings.TrimPrefix(lo.url, "http://") == hostport {
			return true
		}
	}
	if s.zones != nil && net.ParseIP(host) == nil {
		_, _, zoned := s.zones.ScriptFor(host, "/", "")
		return zoned
	}
	return false
}

// standInURL finds the URLs a browser could be sent to in a JSON text.
var standInURL = regexp.MustCompile(`https://github\.com/login/oauth/[^"\\\s]*`)

// pointBrowserAtStandIns is the runtime's answer rewrite (see above).
func (s *Service) pointBrowserAtStandIns(res *http.Response) error {
	if s.outbound == nil {
		return nil
	}
	if loc := res.Header.Get("Location"); loc != "" {
		if to, ok := s.outbound.RewriteBrowserURL(loc); ok {
			res.Header.Set("Location", to)
			s.logfSafe("runtime: a redirect to %s... pointed at the local stand-in %s...", cutQuery(loc), cutQuery(to))
		}
	}
	ct := strings.ToLower(res.Header.Get("Content-Type"))
	if !strings.Contains(ct, "json") || res.Header.Get("Content-Encoding") != "" || res.ContentLength > 1<<20 {
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, 1<<20+1))
	if err != nil {
		return err
	}
	if len(body) > 1<<20 {
		// Too large to be a sign-in answer: sent on untouched.
		res.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), res.Body), res.Body}
		return nil
	}
	res.Body.Close()
	rewritten := standInURL.ReplaceAllFunc(body, func(u []byte) []byte {
		to, ok := s.outbound.RewriteBrowserURL(string(u))
		if !ok {
			return u
		}
		s.logfSafe("runtime: a JSON answer's %s... pointed at the local stand-in %s...", cutQuery(string(u)), cutQuery(to))
		return []byte(to)
	})
	res.Body = io.NopCloser(bytes.NewReader(rewritten))
	res.ContentLength = int64(len(rewritten))
	res.Header.Set("Content-Length", strconv.Itoa(len(rewritten)))
	return nil
}

// cutQuery drops a URL's query, which may carry state or a challenge.
func cutQuery(u string) string {
	base, _, _ := strings.Cut(u, "?")
	return base
}

func (s *Service) logfSafe(format string, args ...any) {
	if s.logf != nil {
		s.logf(format, args...)
	}
}
