// Package loopback dials "localhost" and every name under ".localhost" on
// the loopback address, as RFC 6761 §6.3 says resolvers should, and every
// other name as usual.
//
// The local cloud (tests/emulator) serves each Worker on its own origin,
// http://<script>.workers.localhost:PORT, the way Cloudflare serves
// https://<script>.<subdomain>.workers.dev. Browsers and curl send
// *.localhost to loopback by themselves; Go's resolver does not (it asks
// DNS, which has no such names), so the provider's and the tests' HTTP
// clients dial through this package instead. It changes no global: only
// the clients built from it get the behaviour.
package loopback

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Addr is where localhost names are sent: IPv4 loopback, the address the
// emulator listens on.
const Addr = "127.0.0.1"

// IsLocalhost reports whether host (no port) is "localhost" or a name under
// it, in any case and with or without a final dot.
func IsLocalhost(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	return h == "localhost" || strings.HasSuffix(h, ".localhost")
}

var dialer = &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}

// DialContext has net.Dialer.DialContext's signature: an address whose host
// is a localhost name is dialled at Addr on the same port, without a DNS
// query; any other address is dialled as usual.
func DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	if host, port, err := net.SplitHostPort(address); err == nil && IsLocalhost(host) {
		address = net.JoinHostPort(Addr, port)
		if network == "tcp6" {
			network = "tcp4" // Addr is IPv4
		}
	}
	return dialer.DialContext(ctx, network, address)
}

// Transport is a copy of http.DefaultTransport (proxy from the environment,
// HTTP/2, idle-connection pooling) that dials with DialContext. A localhost
// name never goes through a proxy: the environment's proxy rules exempt
// "localhost" and loopback addresses but not names under .localhost, which
// a proxy elsewhere could not reach.
func Transport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = DialContext
	t.Proxy = bypassLocalhost(t.Proxy)
	return t
}

// bypassLocalhost wraps an http.Transport Proxy function so localhost names
// are always dialled directly.
func bypassLocalhost(proxy func(*http.Request) (*url.URL, error)) func(*http.Request) (*url.URL, error) {
	return func(r *http.Request) (*url.URL, error) {
		if proxy == nil || IsLocalhost(r.URL.Hostname()) {
			return nil, nil
		}
		return proxy(r)
	}
}

// shared is one transport for every Client, so connections are pooled
// across them as they are on http.DefaultTransport.
var shared = Transport()

// Client is an HTTP client with the given timeout (0: none) whose transport
// dials localhost names on loopback.
func Client(timeout time.Duration) *http.Client {
	return &http.Client{Transport: shared, Timeout: timeout}
}

// IsHost reports whether host (no port) is this machine: a localhost name
// or a loopback address.
func IsHost(host string) bool {
	if IsLocalhost(host) {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// PlainHTTPProblem says why rawURL must not carry a credential: it is plain
// http to a host other than this machine, so whatever rides with each
// request (an API token or key, named by credential) would travel
// unencrypted. Empty means https, loopback http, or not an http URL at all
// (other checks name malformed URLs).
func PlainHTTPProblem(rawURL, credential string) string {
	parsed, err := url.Parse(rawURL)
	if err != nil || !strings.EqualFold(parsed.Scheme, "http") || IsHost(parsed.Hostname()) {
		return ""
	}
	return fmt.Sprintf("%q is plain http to another host: the %s would travel unencrypted; use https "+
		"(http is accepted for localhost, 127.0.0.1 and [::1] only)", rawURL, credential)
}
