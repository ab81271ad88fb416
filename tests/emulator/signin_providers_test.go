package emulator_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
)

// TestControlPlaneSignInProviders: GET /internal/auth/sign-in-providers is
// the web service's own route (upstream's web-service policy): only a sig1
// signature of the service "web" reaches it, and it answers the providers
// the installation's user authentication enables, as upstream decides them,
// or 503 when that configuration is incomplete.
func TestControlPlaneSignInProviders(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	db := createDB(t, c, "open-inspect-demo")
	migrateFixture(t, c, db.UUID)
	const path = "/internal/auth/sign-in-providers"
	auth := map[string]string{
		"BROWSER_AUTH_SECRET":  "browser-auth-secret-with-at-least-32-characters",
		"GITHUB_CLIENT_ID":     "Iv1.fixture",
		"GITHUB_CLIENT_SECRET": "github-oauth-client-secret",
		"WEB_APP_URL":          "http://localhost:3000",
		"ALLOWED_USERS":        "octocat",
	}
	// deploy uploads a control plane with auth's settings, changed by edit
	// (an empty value leaves one out).
	deploy := func(script string, edit map[string]string) {
		vars := map[string]string{}
		for k, v := range auth {
			vars[k] = v
		}
		for k, v := range edit {
			vars[k] = v
		}
		var extra []M
		for k, v := range vars {
			if v != "" {
				extra = append(extra, M{"type": "secret_text", "name": k, "text": v})
			}
		}
		uploadIn(t, c, acct, script, cpBindings(db.UUID, extra...))
	}
	web := &sig{service: "web", key: webKey}

	deploy("cp-github", nil)
	r := cpCall(t, s, "cp-github", http.MethodGet, path, "", web, nil)
	assert.Equal(t, http.StatusOK, r.status, r.body)
	assert.Equal(t, `{"providers":["github"]}`, r.body)
	assert.Equal(t, "no-store", r.header.Get("Cache-Control"))
	assert.Equal(t, "application/json", r.header.Get("Content-Type"))

	// Only the web, signing with its own key, is answered.
	for name, g := range map[string]*sig{
		"unsigned":              nil,
		"another service":       slack(),
		"the web, another key":  {service: "web", key: slackKey},
		"the web, another path": {service: "web", key: webKey, path: "/health"},
	} {
		r := cpCall(t, s, "cp-github", http.MethodGet, path, "", g, nil)
		assert.Equal(t, http.StatusUnauthorized, r.status, name)
		assert.Equal(t, unauthBody, r.body, name)
	}

	// Google too, with an admission rule it can use; upstream's order.
	deploy("cp-both", map[string]string{"GOOGLE_CLIENT_ID": "google-client", "GOOGLE_CLIENT_SECRET": "google-secret",
		"ALLOWED_USERS": "", "ALLOWED_EMAIL_DOMAINS": "example.test"})
	r = cpCall(t, s, "cp-both", http.MethodGet, path, "", web, nil)
	assert.Equal(t, http.StatusOK, r.status, r.body)
	assert.Equal(t, `{"providers":["github","google"]}`, r.body)

	// What upstream refuses to run sign-in with: 503, whatever the cause.
	for script, edit := range map[string]map[string]string{
		"cp-no-provider":   {"GITHUB_CLIENT_ID": "", "GITHUB_CLIENT_SECRET": ""},
		"cp-half-github":   {"GITHUB_CLIENT_SECRET": ""},
		"cp-short-secret":  {"BROWSER_AUTH_SECRET": "too-short"},
		"cp-no-admission":  {"ALLOWED_USERS": ""},
		"cp-google-github": {"GOOGLE_CLIENT_ID": "google-client", "GOOGLE_CLIENT_SECRET": "google-secret"},
		// Upstream's loopback hosts are exactly localhost, 127.0.0.1 and [::1].
		"cp-subdomain-origin": {"WEB_APP_URL": "http://open-inspect-web-demo.workers.localhost:8787"},
		"cp-path-origin":      {"WEB_APP_URL": "http://127.0.0.1:8787/__workers/open-inspect-web-demo"},
	} {
		deploy(script, edit)
		r := cpCall(t, s, script, http.MethodGet, path, "", web, nil)
		assert.Equal(t, http.StatusServiceUnavailable, r.status, "%s: %s", script, r.body)
		assert.Equal(t, `{"error":"Sign-in providers are not configured"}`, r.body, script)
	}
}
