package loopback

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIsLocalhost(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost":                       true,
		"LOCALHOST":                       true,
		"localhost.":                      true,
		"web.workers.localhost":           true,
		"web.acct.workers.localhost":      true,
		"Web.Workers.Localhost.":          true,
		"127.0.0.1":                       false,
		"example.com":                     false,
		"notlocalhost":                    false,
		"localhost.example.com":           false,
		"web.workers.localhost.evil.test": false,
		"":                                false,
	} {
		assert.Equal(t, want, IsLocalhost(host), "%q", host)
	}
}

// TestDialContextSendsLocalhostNamesToLoopback: a server on 127.0.0.1 is
// reached under names no DNS knows, and the request keeps its Host, which
// is what the emulator dispatches on.
func TestDialContextSendsLocalhostNamesToLoopback(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s", r.Host, r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	require.NoError(t, err)

	c := Client(0)
	for _, host := range []string{"localhost", "web.workers.localhost", "cp.acct.workers.localhost", "127.0.0.1"} {
		res, err := c.Get("http://" + net.JoinHostPort(host, port) + "/_next/static/x.css")
		require.NoError(t, err, host)
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		require.NoError(t, err)
		assert.Equal(t, net.JoinHostPort(host, port)+" /_next/static/x.css", string(body))
	}

	// tcp6 to a localhost name still reaches the IPv4 listener.
	conn, err := DialContext(context.Background(), "tcp6", net.JoinHostPort("x.localhost", port))
	require.NoError(t, err)
	assert.Equal(t, srv.Listener.Addr().String(), conn.RemoteAddr().String())
	conn.Close()
}

// TestTransportNeverProxiesLocalhostNames: the environment's proxy would
// otherwise get *.localhost, which it cannot reach.
func TestTransportNeverProxiesLocalhostNames(t *testing.T) {
	proxyURL, err := url.Parse("http://proxy.example.test:3128")
	require.NoError(t, err)
	proxy := bypassLocalhost(http.ProxyURL(proxyURL))
	for target, want := range map[string]*url.URL{
		"http://web.workers.localhost:8787/": nil,
		"http://localhost:8787/":             nil,
		"http://example.com/":                proxyURL,
	} {
		got, err := proxy(httptest.NewRequest(http.MethodGet, target, nil))
		require.NoError(t, err)
		assert.Equal(t, want, got, target)
	}
	got, err := bypassLocalhost(nil)(httptest.NewRequest(http.MethodGet, "http://example.com/", nil))
	require.NoError(t, err)
	assert.Nil(t, got)
}

func TestPlainHTTPProblem(t *testing.T) {
	for u, refused := range map[string]bool{
		"http://api.example.com/client/v4/": true,
		"HTTP://10.0.0.5:8080":              true,
		"http://localhost.example.com/":     true,
		"http://127.0.0.1:8787/client/v4/":  false,
		"http://127.8.0.1:8787":             false,
		"http://[::1]:8787":                 false,
		"http://localhost:8787":             false,
		"http://cp.workers.localhost:8787":  false,
		"https://api.example.com/":          false,
		"":                                  false,
	} {
		problem := PlainHTTPProblem(u, "API token")
		assert.Equal(t, refused, problem != "", "%q: %s", u, problem)
		if refused {
			assert.Contains(t, problem, "the API token would travel unencrypted")
		}
	}
}
