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
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pulumi/providertest/pulumitest"
	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/browser"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/anthropic"
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
// repositories listed, and starts a session on one. The session runs end to
// end: the Modal app's own api_create_sandbox creates the sandbox through
// the emulator's Modal API, which runs it (a real process tree under
// bubblewrap, from the image its recipe lays out); the fixture's sandbox
// runtime clones the repository from the GitHub stand-in with the token the
// control plane mints, starts the real OpenCode and connects to the
// session's Durable Object; the page shows the sandbox ready. The person
// types a prompt and sends it; the model stand-in's agent reads, writes a
// note quoting the prompt, commits and calls the create-pull-request tool;
// the control plane has the sandbox push the branch and opens the pull
// request on the stand-in; the page shows the agent's tool calls, its reply
// and the pull request's link. The stand-in holds the branch with the
// agent's commit. Then a mistyped model key (the installation's app secret
// ANTHROPIC_API_KEY, which the sandbox's environment takes over the Modal
// secret) fails the next session's prompt on the page with the model API's
// own refusal. Then the outsider, whose membership of the organization is
// only pending, is refused by the control plane's admission policy and
// stays signed out. Every request any script or sandbox made was answered
// on the machine (the outbound log), no OAuth secret is stored in the
// clear, and after pulumi destroy no process of any sandbox is left.
func TestSignInToTheLocalCloud(t *testing.T) {
	t.Parallel()
	// A sandbox idle and unwatched for a minute is stopped.
	c := deploySessionCloud(t, filepath.Join(toolchain.CacheDir(), "modal-images"),
		withSandbox("      sandbox:\n        inactivityTimeoutMs: 60000\n"))
	emu, pt, b, webURL := c.emu, c.pt, c.b, c.webURL
	gh := c.gh
	shot := func(name string) { b.Screenshot(browser.ArtefactPath(t, name)) }
	signInReady := c.signIn(t, shot)
	cookie, ok := b.Cookies(webURL)["openinspect.session_token"]
	require.True(t, ok, "the session cookie is set on the web's origin")
	assert.True(t, cookie.HTTPOnly, "HttpOnly")
	assert.Equal(t, "Lax", cookie.SameSite)
	shot("4-dashboard.png")

	// The sandbox boots: its image laid out (minutes the first time on a
	// machine, from the registries), the clone, OpenCode, the socket.
	sessionID := startSession(t, b, webURL, 10*time.Minute)
	shot("5-sandbox-ready.png")
	assert.Equal(t, github.DefaultOrg+"/hello-world", b.Text("#session-repo"))
	assert.Regexp(t, `^sandbox-openinspect-local-hello-world-\d+$`, b.Text("#sandbox-id"), "the sandbox the control plane named")

	// The control plane restarts (workerd, with the Durable Objects'
	// storage kept): the page subscribes again, the sandbox's bridge
	// connects again, and the prompt sent meanwhile waits for it.
	emu.admin(t, http.MethodDelete, "runtime", nil)
	b.WaitForWithin(`Number(document.getElementById("session").dataset.subscriptions) >= 2`, time.Minute)

	prompt := "Leave a note that the local cloud ran this session"
	sendPrompt(b, prompt)
	b.WaitForWithin(`!document.getElementById("pull-request").hidden || !!document.querySelector("#timeline .failed")`, 5*time.Minute)
	b.WaitFor(`!!document.querySelector("#timeline .done, #timeline .failed")`)
	shot("6-pull-request.png")
	require.Empty(t, b.Text("#timeline .failed"), "the prompt failed: %s", b.Text("#timeline"))
	var timeline struct {
		User  string            `json:"user"`
		Reply string            `json:"reply"`
		Tools map[string]string `json:"tools"`
		PR    string            `json:"pr"`
	}
	b.Eval(`(() => { const tools = {};
		document.querySelectorAll("#timeline .tool").forEach((e) => { tools[e.dataset.tool] = e.dataset.status; });
		return {user: document.querySelector("#timeline .user")?.textContent ?? "", reply: document.querySelector("#timeline .assistant")?.textContent ?? "",
			tools, pr: document.getElementById("pr-link").href}; })()`, &timeline)
	assert.Equal(t, prompt, timeline.User, "the prompt, as the session's object relayed it")
	for _, tool := range []string{"read", "write", "bash", "create-pull-request"} {
		assert.Equal(t, "completed", timeline.Tools[tool], "the agent's %s call, live on the page: %v", tool, timeline.Tools)
	}
	assert.Regexp(t, `^https://github\.com/`+github.DefaultOrg+`/hello-world/pull/\d+$`, timeline.PR)
	assert.Equal(t, "ready", b.Text("#session-status"), "the session's status, live")
	assert.Contains(t, timeline.Reply, timeline.PR, "the agent's reply links the pull request")

	// The stand-in: the pull request, from the session's branch, with the
	// agent's commit, whose note quotes the prompt.
	emu.admin(t, http.MethodGet, "github", &gh)
	pulls := gh.PullRequests[github.DefaultOrg+"/hello-world"]
	require.Len(t, pulls, 1, "one pull request")
	assert.Equal(t, "open-inspect/"+sessionID, pulls[0].Head)
	assert.Equal(t, "main", pulls[0].Base)
	require.Len(t, pulls[0].Commits, 1, "the agent's one commit")
	assert.Contains(t, pulls[0].Body, "Created with [Open-Inspect]("+webURL+"/session/"+sessionID+")")
	bare := filepath.Join(emu.dataDir, "github-git", github.DefaultOrg, "hello-world.git")
	note, err := exec.Command("git", "-C", bare, "show", "refs/heads/open-inspect/"+sessionID+":"+anthropic.NoteFile).Output()
	require.NoError(t, err, "the note on the pushed branch")
	assert.Contains(t, string(note), prompt)

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
	assert.Equal(t, map[string]any{"repo_owner": github.DefaultOrg, "repo_name": "hello-world", "status": "ready", "created_by": users[0]["id"]}, rows[0],
		"the row the control plane recorded")
	// The sandbox, created through Modal's API by the app's own function,
	// runs as processes on this machine.
	sandbox := sessionSandbox(t, emu, sessionID)
	assert.True(t, sandbox.Running)
	assert.Equal(t, "hello-world", sandbox.Tags["openinspect_repo_name"])
	require.NotEmpty(t, sandboxProcesses(t, sandbox.ID), "the sandbox's processes")
	for _, r := range emu.d1Rows(t, db, "SELECT access_token FROM user_identities") {
		assert.NotContains(t, r["access_token"], "gho_", "the GitHub token is sealed")
	}

	// A sandbox killed while the agent works (its model call held, then
	// every process of the sandbox SIGKILLed): the control plane gives it
	// time to come back, then the page says the prompt failed and why.
	b.Navigate(webURL)
	killedSession := startSession(t, b, webURL, 5*time.Minute)
	killed := sessionSandbox(t, emu, killedSession)
	emu.injectFault(t, emulator.Fault{Route: "POST " + anthropic.Prefix + "/v1/messages", Kind: emulator.FaultHold, Times: 1, After: 2})
	sendPrompt(b, prompt)
	require.Eventually(t, func() bool { return emu.holds(t).Held > 0 }, 2*time.Minute, 100*time.Millisecond, "the agent's third model call")
	for _, pid := range sandboxProcesses(t, killed.ID) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	emu.admin(t, http.MethodPost, "faults/release", nil)
	b.WaitForWithin(`!!document.querySelector("#timeline .failed")`, 2*time.Minute)
	shot("7-sandbox-killed.png")
	assert.Contains(t, b.Text("#timeline .failed"), "The sandbox stopped while the agent was working")
	assert.Equal(t, "stopped", b.Text("#sandbox-status"))
	assert.Empty(t, sandboxProcesses(t, killed.ID), "nothing of the killed sandbox lingers")

	// A mistyped model key: the app secret the sandbox's environment takes
	// over the Modal secret. The next session's prompt fails on the page
	// with the model API's refusal.
	editProgram(t, pt, func(program string) string {
		return strings.Replace(program, "ANTHROPIC_API_KEY: ${anthropicApiKey}", "ANTHROPIC_API_KEY: sk-ant-mistyped", 1)
	})
	previewUp(t, pt)
	b.Navigate(webURL)
	startSession(t, b, webURL, 5*time.Minute)
	sendPrompt(b, prompt)
	b.WaitForWithin(`!!document.querySelector("#timeline .failed")`, 3*time.Minute)
	shot("8-wrong-model-key.png")
	assert.Contains(t, b.Text("#timeline .failed"), "invalid x-api-key", "the model API's refusal, on the page")
	assert.Len(t, gh.PullRequests[github.DefaultOrg+"/hello-world"], 1, "no second pull request")

	// The first session's sandbox, idle and unwatched for the installation's
	// sandbox.inactivityTimeoutMs, was told to shut down: it ends, and its
	// page says it stopped.
	require.Eventually(t, func() bool { return len(sandboxProcesses(t, sandbox.ID)) == 0 }, 3*time.Minute, time.Second,
		"the idle sandbox's processes end")
	b.Navigate(webURL + "/session/" + sessionID)
	b.WaitFor(`document.getElementById("session")?.dataset.subscribed === "true"`)
	assert.Equal(t, "stopped", b.Text("#sandbox-status"))
	assert.False(t, sessionSandbox(t, emu, sessionID).Running, "Modal records its end")

	// The outsider: a pending invitation to the organization is no
	// membership, so the control plane refuses them and sets no session.
	b.Click("#sign-out")
	b.WaitFor(signInReady)
	b.Click(`button[data-provider="github"]`)
	b.WaitFor(`!!document.getElementById("sign-in-as-outsider")`)
	b.Click("#sign-in-as-outsider")
	b.WaitFor(`!location.href.startsWith("` + gh.BrowserURL + `")`)
	shot("9-outsider-refused.png")
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
		// The sandbox's own: the clone and the push, and the model.
		"GET https://github.com/" + github.DefaultOrg + "/hello-world.git/info/refs",
		"POST https://github.com/" + github.DefaultOrg + "/hello-world.git/git-receive-pack",
		"POST https://api.anthropic.com/v1/messages",
		"POST https://api.github.com/repos/" + github.DefaultOrg + "/hello-world/pulls",
	} {
		assert.True(t, seen[want], "the outbound log has %s: %v", want, seen)
	}

	// pulumi destroy stops the Modal app, and with it every sandbox's
	// processes.
	pt.Destroy(t)
	assert.Empty(t, sandboxProcesses(t, sandbox.ID), "no process of the sandbox outlives pulumi destroy")
}

// sessionCloud is examples/yaml from the fixture checkout deployed on a
// local cloud that runs sessions' sandboxes, and a Chromium to use it.
type sessionCloud struct {
	emu    *emulatorProcess
	pt     *pulumitest.PulumiTest
	b      *browser.Session
	webURL string
	gh     struct {
		github.Inventory
		BrowserURL string `json:"browser_url"`
	}
}

// deploySessionCloud deploys the installation with its GitHub App's real
// key pair (the stand-in holds the public half) and an organization
// allowlist; the Modal app's web endpoints run its own code (virtualenvs
// made from the Python the provider deploys with, in the tool cache) and
// its sandboxes run under bubblewrap with slirp4netns, each image laid out
// once in imageCache.
func deploySessionCloud(t tb, imageCache string, edits ...func(string) string) *sessionCloud {
	t.Helper()
	requirePulumi(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	toolchain.SandboxTools(t, root)
	c := &sessionCloud{}
	c.emu = startEmulatorWith(t, os.Stderr, "-local-origin", webScript+"=127.0.0.1:0",
		"-modal-python", toolchain.Python(t), "-modal-runners", filepath.Join(toolchain.CacheDir(), "modal-runners"),
		"-modal-sandboxes", "-modal-image-cache", imageCache)
	var origins map[string]string
	c.emu.admin(t, http.MethodGet, "local-origins", &origins)
	c.webURL = origins[webScript]
	require.NotEmpty(t, c.webURL)

	// The stand-in knows the installation's OAuth client and its app's
	// public key; the stack holds the client secret and the private key.
	private, public := rsaKeyPair(t)
	c.emu.put(t, "github/oauth-apps/"+github.DefaultOAuthClientID, map[string]any{
		"client_secret": installationSecrets["githubOAuthClientSecret"], "name": "Open-Inspect (engine)", "callback_url": github.DefaultCallbackURL})
	c.emu.put(t, "github/apps/"+github.DefaultAppID, map[string]any{"public_key": public})

	c.pt = newInstallationWithWebTest(t, c.emu)
	for _, edit := range edits {
		editProgram(t, c.pt, edit)
	}
	c.pt.SetConfig(t, "webAppUrl", c.webURL)
	c.pt.SetConfig(t, "allowedGithubOrgs", github.DefaultOrg)
	c.pt.SetConfig(t, "allowedEmailDomains", "")
	c.pt.SetConfig(t, "openinspect:cacheDir", t.TempDir())
	require.NoError(t, c.pt.CurrentStack().SetConfig(t.Context(), "githubAppPrivateKey", auto.ConfigValue{Value: private, Secret: true}))
	up := previewUp(t, c.pt)
	require.Equal(t, c.webURL, up.Outputs["webUrl"].Value, "the stack's webUrl is the web UI's own origin")

	c.emu.admin(t, http.MethodGet, "github", &c.gh)
	require.True(t, strings.HasPrefix(c.gh.BrowserURL, "https://"+github.BrowserHost+":"), c.gh.BrowserURL)
	c.b = browser.Open(t, 1280, 900)
	return c
}

// signIn does what a person does: opens webUrl, clicks "Sign in with
// GitHub", passes Chromium's warning about the local CA's certificate
// (Advanced, Proceed), signs in as the local user on the stand-in's
// authorize page and lands on the dashboard with the installation's
// repositories. It returns the expression that says the sign-in page is
// ready for a click.
func (c *sessionCloud) signIn(t tb, shot func(string)) string {
	t.Helper()
	b := c.b
	b.Navigate(c.webURL)
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
	assert.True(t, strings.HasPrefix(b.URL(), c.gh.BrowserURL+"/login/oauth/authorize?"), "the stand-in's authorize page: %s", b.URL())
	shot("3-authorize.png")
	b.Click("#sign-in-as-local-dev")

	b.WaitFor(`!!document.getElementById("repos") && document.getElementById("app").dataset.hydrated === "true"`)
	assert.Equal(t, c.webURL+"/", b.URL(), "back on the web UI, at its root")
	assert.Equal(t, "Local Developer", b.Text("#user-name"))
	assert.Equal(t, "@local-dev", b.Text("#user-login"))
	repos := b.Text("#repos")
	assert.Contains(t, repos, github.DefaultOrg+"/hello-world")
	assert.Contains(t, repos, github.DefaultOrg+"/docs-site")
	return signInReady
}

// startSession starts a session on hello-world from the dashboard the page
// shows and waits until its sandbox has connected; it returns the
// session's ID.
func startSession(t tb, b *browser.Session, webURL string, boot time.Duration) string {
	t.Helper()
	b.Click(`button[data-repo-name="hello-world"]`)
	b.WaitFor(`document.getElementById("session")?.dataset.subscribed === "true"`)
	b.WaitForWithin(`["ready", "failed"].includes(document.getElementById("session").dataset.sandboxStatus)`, boot)
	require.Equal(t, "ready", b.Text("#sandbox-status"), "the sandbox connected to the session: %s", b.Text("#timeline"))
	return strings.TrimPrefix(b.URL(), webURL+"/session/")
}

// sendPrompt types the prompt into the session page's box and sends it.
func sendPrompt(b *browser.Session, prompt string) {
	b.Type("#prompt-input", prompt)
	b.Click("#send-prompt")
}

// sessionSandbox is the Modal sandbox tagged with the session.
func sessionSandbox(t tb, emu *emulatorProcess, sessionID string) emumodal.SandboxEntry {
	t.Helper()
	for _, sb := range emu.inventory(t).Modal.Sandboxes {
		if sb.Tags["openinspect_session_id"] == sessionID {
			return sb
		}
	}
	t.Fatalf("no Modal sandbox tagged with session %s: %+v", sessionID, emu.inventory(t).Modal.Sandboxes)
	return emumodal.SandboxEntry{}
}

// sandboxProcesses are the PIDs of the processes running in the Modal
// sandbox id (its environment names it).
func sandboxProcesses(t tb, id string) []int {
	t.Helper()
	procs, err := filepath.Glob("/proc/[0-9]*/environ")
	require.NoError(t, err)
	var pids []int
	for _, p := range procs {
		env, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(env, []byte("MODAL_SANDBOX_ID="+id+"\x00")) {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if fields, ok := statFields(pid); err == nil && ok && fields[0] != "Z" {
			pids = append(pids, pid)
		}
	}
	return pids
}

// rsaKeyPair is a GitHub App's key pair: the private key as PKCS#8 PEM (what
// upstream's control plane imports), the public key as PKIX PEM.
func rsaKeyPair(t tb) (private, public string) {
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
func (e *emulatorProcess) put(t tb, path string, body any) {
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
