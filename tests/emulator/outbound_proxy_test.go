package emulator_test

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/anthropic"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/github"
)

// proxiedClient is an HTTPS client as a sandbox's is: the gateway as its
// proxy, the local CA as its only trust.
func proxiedClient(t *testing.T, s *emulator.Server) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(s.GitHub().CAFile())
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(pem))
	proxy, err := url.Parse(s.Outbound().ProxyURL())
	require.NoError(t, err)
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy),
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
}

// TestOutboundProxyAnswersLocally uses the outbound gateway as an HTTPS
// proxy, as a sandbox does: api.anthropic.com, api.github.com and
// github.com (git, through HTTPS_PROXY and GIT_SSL_CAINFO) are answered
// by their stand-ins with certificates from the local CA, a host the local
// cloud does not answer is refused, and the log says who answered each.
func TestOutboundProxyAnswersLocally(t *testing.T) {
	const key = "sk-ant-proxy-test"
	s := start(t, emulator.Options{Anthropic: anthropic.Options{APIKeys: func() []string { return []string{key} }}})
	require.True(t, strings.HasPrefix(s.Outbound().ProxyURL(), "http://127.0.0.1:"), s.Outbound().ProxyURL())
	client := proxiedClient(t, s)

	req, err := http.NewRequest(http.MethodPost, "https://api.anthropic.com/v1/messages",
		strings.NewReader(`{"model":"claude-haiku-4-5","max_tokens":10,"messages":[{"role":"user","content":"Fix the login page"}]}`))
	require.NoError(t, err)
	req.Header.Set("x-api-key", key)
	req.Header.Set("anthropic-version", "2023-06-01")
	res, err := client.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", body)
	assert.Contains(t, string(body), "Fix the login page")

	res, err = client.Get("https://api.github.com/repos/" + github.DefaultOrg + "/hello-world")
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, res.StatusCode, "the stand-in's answer to no token")

	res, err = client.Get("https://models.dev/api.json")
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode)

	_, err = client.Get("https://registry.npmjs.org/")
	require.Error(t, err, "a host the local cloud does not answer is refused")
	assert.Contains(t, err.Error(), "Forbidden")

	// git through the proxy, as a sandbox clones: github.com's own URL.
	home := t.TempDir()
	cmd := exec.Command("git", "clone", "--quiet", "https://github.com/"+github.DefaultOrg+"/hello-world.git", filepath.Join(home, "hw"))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
		"HTTPS_PROXY=" + s.Outbound().ProxyURL(), "GIT_SSL_CAINFO=" + s.GitHub().CAFile()}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.FileExists(t, filepath.Join(home, "hw", "README.md"))

	byHost := map[string]string{}
	refused := []string{}
	for _, e := range s.Outbound().Entries() {
		u, _ := url.Parse(e.URL)
		host := e.URL
		if u != nil && u.Host != "" {
			host = u.Host
		}
		if e.Refused {
			refused = append(refused, host)
			continue
		}
		assert.Equal(t, "proxy", e.Script)
		byHost[host] = e.To
	}
	assert.Equal(t, map[string]string{"api.anthropic.com": "anthropic", "api.github.com": "github", "models.dev": "anthropic", "github.com": "github"}, byHost)
	assert.Equal(t, []string{"registry.npmjs.org:443"}, refused)
}
