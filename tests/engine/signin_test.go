package engine

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/browser"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/github"
	emumodal "github.com/openinspect/pulumi-openinspect/tests/emulator/modal"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/outbound"
	"github.com/openinspect/pulumi-openinspect/tests/toolchain"
)

// TestSignInToTheLocalCloud deploys examples/yaml from the fixture checkout
// with its GitHub App's real key pair (the stand-in holds the public half)
// and an organization allowlist, then does in headless Chromium what a
// person does: opens webUrl, clicks "Sign in with GitHub", passes
// Chromium's warning about the local CA's certificate as a person would
// (Advanced, Proceed), signs in as the local user on the stand-in's
// authorize page, lands on the dashboard signed in with the installation's
// repositories listed, starts a session on one and sees its state: ready,
// with the sandbox the Modal app's own api_create_sandbox created through
// the emulator's Modal API (no container starts). Then the
// outsider, whose membership of the organization is only pending, is
// refused by the control plane's admission policy and stays signed out.
// Every request any script made was answered on the machine (the outbound
// log), and no OAuth secret is stored in the clear.
func TestSignInToTheLocalCloud(t *testing.T) {
	t.Parallel()
	requirePulumi(t)
	// The Modal app's web endpoints run its own code, in virtualenvs made
	// from the Python the provider deploys with (kept in the tool cache).
	emu := startEmulatorWith(t, os.Stderr, "-local-origin", webScript+"=127.0.0.1:0",
		"-modal-python", toolchain.Python(t), "-modal-runners", filepath.Join(toolchain.CacheDir(), "modal-runners"))
	var origins map[string]string
	emu.admin(t, http.MethodGet, "local-origins", &origins)
	webURL := origins[webScript]
	require.NotEmpty(t, webURL)

	// The stand-in knows the installation's OAuth client and its app's
	// public key; the stack holds the client secret and the private key.
	private, public := rsaKeyPair(t)
	clientSecret := installationSecrets["githubOAuthClientSecret"]
	emu.put(t, "github/oauth-apps/"+github.DefaultOAuthClientID, map[string]any{
		"client_secret": clientSecret, "name": "Open-Inspect (engine)", "callback_url": github.DefaultCallbackURL})
	emu.put(t, "github/apps/"+github.DefaultAppID, map[string]any{"public_key": public})

	pt := newInstallationWithWebTest(t, emu)
	pt.SetConfig(t, "webAppUrl", webURL)
	pt.SetConfig(t, "allowedGithubOrgs", github.DefaultOrg)
	pt.SetConfig(t, "allowedEmailDomains", "")
	pt.SetConfig(t, "openinspect:cacheDir", t.TempDir())
	require.NoError(t, pt.CurrentStack().SetConfig(t.Context(), "githubAppPrivateKey", auto.ConfigValue{Value: private, Secret: true}))
	up := previewUp(t, pt)
	require.Equal(t, webURL, up.Outputs["webUrl"].Value, "the stack's webUrl is the web UI's own origin")

	var gh struct {
		github.Inventory
		BrowserURL string `json:"browser_url"`
	}
	emu.admin(t, http.MethodGet, "github", &gh)
	require.True(t, strings.HasPrefix(gh.BrowserURL, "https://"+github.BrowserHost+":"), gh.BrowserURL)

	b := browser.Open(t, 1280, 900)
	shot := func(name string) { b.Screenshot(browser.ArtefactPath(t, name)) }
	b.Navigate(webURL)
	// The sign-in button works once the page's script has run: a click on it
	// before then is lost.
	const signInReady = `document.getElementById("app")?.dataset.hydrated === "true" && !!document.querySelector('button[data-provider="github"]')`
	b.WaitFor(signInReady)
	shot("1-sign-in.png")
	b.Click(`button[data-provider="github"]`)
	if b.WaitForAny(`location.href.startsWith("chrome-error://")`, `!!document.getElementById("sign-in-as-local-dev")`) == 0 {
		shot("2-certificate-warning.png")
		require.True(t, b.ProceedPastCertificateWarning())
	}
	b.WaitFor(`!!document.getElementById("sign-in-as-local-dev")`)
	assert.True(t, strings.HasPrefix(b.URL(), gh.BrowserURL+"/login/oauth/authorize?"), "the stand-in's authorize page: %s", b.URL())
	shot("3-authorize.png")
	b.Click("#sign-in-as-local-dev")

	b.WaitFor(`!!document.getElementById("repos") && document.getElementById("app").dataset.hydrated === "true"`)
	assert.Equal(t, webURL+"/", b.URL(), "back on the web UI, at its root")
	assert.Equal(t, "Local Developer", b.Text("#user-name"))
	assert.Equal(t, "@local-dev", b.Text("#user-login"))
	repos := b.Text("#repos")
	assert.Contains(t, repos, github.DefaultOrg+"/hello-world")
	assert.Contains(t, repos, github.DefaultOrg+"/docs-site")
	cookie, ok := b.Cookies(webURL)["openinspect.session_token"]
	require.True(t, ok, "the session cookie is set on the web's origin")
	assert.True(t, cookie.HTTPOnly, "HttpOnly")
	assert.Equal(t, "Lax", cookie.SameSite)
	shot("4-dashboard.png")

	b.Click(`button[data-repo-name="hello-world"]`)
	b.WaitFor(`["ready", "failed"].includes(document.getElementById("session")?.dataset.status)`)
	shot("5-session.png")
	sessionID := strings.TrimPrefix(b.URL(), webURL+"/session/")
	assert.Equal(t, github.DefaultOrg+"/hello-world", b.Text("#session-repo"))
	status := b.Text("#session-status")
	assert.Equal(t, "ready", status, "sandbox: %s", b.Text("#sandbox-status"))
	assert.Regexp(t, `^warming \(sandbox-openinspect-local-hello-world-\d+\)$`, b.Text("#sandbox-status"), "the status the app's api_create_sandbox answered")

	// The rows the session wrote, and the person's, in D1.
	inv := emu.inventory(t)
	require.Len(t, inv.D1, 1)
	db := inv.D1[0].ID
	users := emu.d1Rows(t, db, "SELECT id, github_login, email FROM users")
	require.Len(t, users, 1, "only the admitted person")
	assert.Equal(t, "local-dev", users[0]["github_login"])
	assert.Equal(t, "local-dev@example.com", users[0]["email"])
	rows := emu.d1Rows(t, db, "SELECT repo_owner, repo_name, status, created_by FROM sessions WHERE id = ?", sessionID)
	require.Len(t, rows, 1)
	assert.Equal(t, map[string]any{"repo_owner": github.DefaultOrg, "repo_name": "hello-world", "status": status, "created_by": users[0]["id"]}, rows[0],
		"the page shows the state the control plane recorded")
	// The sandbox, created through Modal's API by the app's own function.
	var sandbox *emumodal.SandboxEntry
	for _, sb := range emu.inventory(t).Modal.Sandboxes {
		if sb.Tags["openinspect_session_id"] == sessionID {
			sandbox = &sb
		}
	}
	require.NotNil(t, sandbox, "a Modal sandbox tagged with the session: %+v", emu.inventory(t).Modal.Sandboxes)
	assert.True(t, sandbox.Running)
	assert.Equal(t, "hello-world", sandbox.Tags["openinspect_repo_name"])
	for _, r := range emu.d1Rows(t, db, "SELECT access_token FROM user_identities") {
		assert.NotContains(t, r["access_token"], "gho_", "the GitHub token is sealed")
	}

	// The outsider: a pending invitation to the organization is no
	// membership, so the control plane refuses them and sets no session.
	b.Click("#sign-out")
	b.WaitFor(signInReady)
	b.Click(`button[data-provider="github"]`)
	b.WaitFor(`!!document.getElementById("sign-in-as-outsider")`)
	b.Click("#sign-in-as-outsider")
	b.WaitFor(`!location.href.startsWith("` + gh.BrowserURL + `")`)
	shot("6-outsider-refused.png")
	var callback *browser.Request
	for _, r := range b.Log().Requests {
		if strings.HasPrefix(r.URL, webURL+"/api/auth/callback/github?") {
			callback = &r
		}
	}
	require.NotNil(t, callback, "the browser came back to the callback")
	assert.Equal(t, http.StatusInternalServerError, callback.Status, "upstream's refusal: Better Auth's bare 500")
	_, signedIn := b.Cookies(webURL)["openinspect.session_token"]
	assert.False(t, signedIn, "no session for the outsider")
	b.Navigate(webURL)
	b.WaitFor(signInReady)
	assert.Len(t, emu.d1Rows(t, db, "SELECT id FROM users WHERE github_login = 'outsider'"), 0)

	// Nothing any script fetched left the machine.
	var entries []outbound.Entry
	emu.admin(t, http.MethodGet, "outbound", &entries)
	seen := map[string]bool{}
	for _, e := range entries {
		assert.False(t, e.Refused, "refused: %s %s from %s", e.Method, e.URL, e.Script)
		assert.NotEmpty(t, e.To, "%s %s", e.Method, e.URL)
		u := e.URL
		if i := strings.IndexByte(u, '?'); i >= 0 {
			u = u[:i]
		}
		seen[e.Method+" "+u] = true
	}
	for _, want := range []string{
		"POST https://github.com/login/oauth/access_token",
		"GET https://api.github.com/user",
		"GET https://api.github.com/user/emails",
		"GET https://api.github.com/user/memberships/orgs/" + github.DefaultOrg,
		"POST https://api.github.com/app/installations/7890123/access_tokens",
		"GET https://api.github.com/installation/repositories",
		"GET https://api.github.com/repos/" + github.DefaultOrg + "/hello-world",
		"POST https://openinspect-emulator--open-inspect-api-create-sandbox.modal.run/",
	} {
		assert.True(t, seen[want], "the outbound log has %s: %v", want, seen)
	}
}

// rsaKeyPair is a GitHub App's key pair: the private key as PKCS#8 PEM (what
// upstream's control plane imports), the public key as PKIX PEM.
func rsaKeyPair(t *testing.T) (private, public string) {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(k)
	require.NoError(t, err)
	pub, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	require.NoError(t, err)
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}))
}

// put PUTs a JSON body to an admin route.
func (e *emulatorProcess) put(t *testing.T, path string, body any) {
	t.Helper()
	raw, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPut, e.url+"/__emulator/"+path, bytes.NewReader(raw))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Less(t, res.StatusCode, 300, "PUT %s", path)
}
