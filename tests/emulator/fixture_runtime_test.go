package emulator_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	gh "github.com/google/go-github/v88/github"
	"github.com/gorilla/websocket"
	"github.com/modal-labs/libmodal/modal-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/anthropic"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/github"
	emumodal "github.com/openinspect/pulumi-openinspect/tests/emulator/modal"
	"github.com/openinspect/pulumi-openinspect/tests/toolchain"
)

// fixtureSandboxRecipe is the fixture app's sandbox_image
// (tests/fixtures/upstream/packages/modal-infra/src/images.py) as modal
// 1.4.3 writes it with image builder 2025.06, layer by layer after the
// registry image: debian_slim's own steps, apt_install, run_commands,
// pip_install, env and workdir. (add_local_dir's COPY of the runtime needs
// a local mount, which modal-go cannot upload: the test binds the runtime
// at /app/sandbox_runtime instead, SandboxRuntime.ReadOnlyAt.)
var fixtureSandboxRecipe = [][]string{
	{"RUN apt-get update", "RUN apt-get install -y gcc gfortran build-essential", "RUN pip install --upgrade pip wheel uv",
		"RUN echo 'debconf debconf/frontend select Noninteractive' | debconf-set-selections", `CMD ["sleep", "172800"]`},
	{"RUN apt-get update", "RUN apt-get install -y git curl ca-certificates"},
	{"RUN curl -fsSL https://deb.nodesource.com/setup_22.x | bash -", "RUN apt-get install -y nodejs",
		"RUN npm install -g opencode-ai@1.18.18",
		"RUN mkdir -p /app/opencode-deps && cd /app/opencode-deps && npm install --ignore-scripts --save-exact @opencode-ai/plugin@1.18.18"},
	{"RUN python -m pip install httpx==0.28.1 websockets==15.0.1"},
	{"ENV SANDBOX_VERSION=fixture-v1", "ENV PYTHONUNBUFFERED=1", "ENV PYTHONPATH=/app", "ENV HOME=/root"},
	{"WORKDIR /workspace"},
}

// fixtureRecipeInImagesPy checks the recipe above against images.py's
// source, so the two cannot drift apart silently.
func fixtureRecipeInImagesPy(t *testing.T, root string) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(root, "tests", "fixtures", "upstream", "packages", "modal-infra", "src", "images.py"))
	require.NoError(t, err)
	for _, fragment := range []string{`OPENCODE_VERSION = "1.18.18"`, `.apt_install("git", "curl", "ca-certificates")`,
		`"curl -fsSL https://deb.nodesource.com/setup_22.x | bash -"`, `"apt-get install -y nodejs"`,
		`f"npm install -g opencode-ai@{OPENCODE_VERSION}"`, `"mkdir -p /app/opencode-deps && cd /app/opencode-deps"`,
		`f" && npm install --ignore-scripts --save-exact @opencode-ai/plugin@{OPENCODE_VERSION}"`,
		`.pip_install("httpx==0.28.1", "websockets==15.0.1")`,
		`.env({"SANDBOX_VERSION": "fixture-v1", "PYTHONUNBUFFERED": "1", "PYTHONPATH": "/app", "HOME": "/root"})`,
		`.workdir("/workspace")`} {
		require.Contains(t, string(src), fragment, "images.py's sandbox_image changed: update fixtureSandboxRecipe")
	}
}

// fixtureSession is one session of the test's control plane: what the
// sandbox must present, and what it sent.
type fixtureSession struct {
	id, sandboxID, token string
	repoOwner, repoName  string
	baseBranch           string

	mu           sync.Mutex
	frames       []map[string]any
	wsHeaders    []http.Header
	conn         *websocket.Conn
	refuse       int // a status for the next handshakes (0: accept)
	credentials  int
	prRequests   []map[string]any
	pushFinished chan map[string]any
}

func (fs *fixtureSession) framesOf(kind string) []map[string]any {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	var out []map[string]any
	for _, f := range fs.frames {
		if f["type"] == kind {
			out = append(out, f)
		}
	}
	return out
}

func (fs *fixtureSession) send(t *testing.T, frame map[string]any) {
	t.Helper()
	fs.mu.Lock()
	defer fs.mu.Unlock()
	require.NotNil(t, fs.conn, "the sandbox is connected")
	require.NoError(t, fs.conn.WriteJSON(frame))
}

// fixtureControlPlane is the control plane's side of PROTOCOL.md, written
// in Go for the test: the sandbox routes (bearer-checked), the WebSocket
// (headers checked, every frame kept, frames with an ackId acked), and the
// pull-request route, which pushes through the sandbox and opens the pull
// request at the GitHub stand-in as upstream's control plane does. It
// listens on the host's loopback; a sandbox reaches it at
// http://10.0.2.2:PORT, slirp4netns's address for the host's loopback,
// which the sandbox's NO_PROXY sends directly (not through the proxy).
type fixtureControlPlane struct {
	t            *testing.T
	s            *emulator.Server
	installToken string
	url          string // as the sandbox reaches it

	mu       sync.Mutex
	sessions map[string]*fixtureSession
}

func newFixtureControlPlane(t *testing.T, s *emulator.Server, installToken string) *fixtureControlPlane {
	t.Helper()
	cp := &fixtureControlPlane{t: t, s: s, installToken: installToken, sessions: map[string]*fixtureSession{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /sessions/{sid}/commit-signing", cp.authed(func(w http.ResponseWriter, r *http.Request, fs *fixtureSession) {
		writeJSON(w, http.StatusOK, map[string]any{"enabled": false})
	}))
	mux.HandleFunc("GET /sessions/{sid}/sandbox-skills", cp.authed(func(w http.ResponseWriter, r *http.Request, fs *fixtureSession) {
		empty := sha256.Sum256([]byte("[]"))
		writeJSON(w, http.StatusOK, map[string]any{"schemaVersion": 1, "manifestSha256": hex.EncodeToString(empty[:]), "skills": []any{}, "nextCursor": nil})
	}))
	mux.HandleFunc("POST /sessions/{sid}/scm-credentials", cp.authed(func(w http.ResponseWriter, r *http.Request, fs *fixtureSession) {
		fs.mu.Lock()
		fs.credentials++
		fs.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"username": "x-access-token", "password": cp.installToken,
			"expires_at_epoch_ms": time.Now().Add(time.Hour).UnixMilli()})
	}))
	mux.HandleFunc("POST /sessions/{sid}/pr", cp.authed(cp.pullRequest))
	mux.HandleFunc("GET /sessions/{sid}/ws", cp.socket)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	cp.url = "http://10.0.2.2:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	return cp
}

func (cp *fixtureControlPlane) session(id string) *fixtureSession {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return cp.sessions[id]
}

func (cp *fixtureControlPlane) add(fs *fixtureSession) {
	fs.pushFinished = make(chan map[string]any, 4)
	cp.mu.Lock()
	defer cp.mu.Unlock()
	cp.sessions[fs.id] = fs
}

// authed checks the sandbox's bearer token, as the control plane's
// verifySandboxAuth does.
func (cp *fixtureControlPlane) authed(h func(http.ResponseWriter, *http.Request, *fixtureSession)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		fs := cp.session(r.PathValue("sid"))
		if fs == nil {
			writeJSON(w, http.StatusNotFound, map[string]any{"error": "Session not found"})
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+fs.token {
			writeJSON(w, http.StatusUnauthorized, map[string]any{"error": "Unauthorized"})
			return
		}
		h(w, r, fs)
	}
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

// socket is the sandbox's WebSocket: 404 for an unknown session, 403 for
// another sandbox, 401 for a wrong token (the DO's order), or a status the
// test set; then every frame is kept and those with an ackId acked.
func (cp *fixtureControlPlane) socket(w http.ResponseWriter, r *http.Request) {
	fs := cp.session(r.PathValue("sid"))
	switch {
	case fs == nil || r.URL.Query().Get("type") != "sandbox":
		http.Error(w, "not found", http.StatusNotFound)
		return
	case r.Header.Get("X-Sandbox-ID") != fs.sandboxID:
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	case r.Header.Get("Authorization") != "Bearer "+fs.token:
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	fs.mu.Lock()
	refuse := fs.refuse
	fs.wsHeaders = append(fs.wsHeaders, r.Header.Clone())
	fs.mu.Unlock()
	if refuse != 0 {
		http.Error(w, "refused by the test", refuse)
		return
	}
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	fs.mu.Lock()
	fs.conn = conn
	fs.mu.Unlock()
	for {
		var frame map[string]any
		if err := conn.ReadJSON(&frame); err != nil {
			return
		}
		fs.mu.Lock()
		fs.frames = append(fs.frames, frame)
		if ack, ok := frame["ackId"].(string); ok && ack != "" {
			_ = conn.WriteJSON(map[string]any{"type": "ack", "ackId": ack})
		}
		fs.mu.Unlock()
		if t := frame["type"]; t == "push_complete" || t == "push_error" {
			fs.pushFinished <- frame
		}
	}
}

// pullRequest is upstream's PR route in small: head = the requested
// branch unless it is the base, else open-inspect/<session>; a push
// command to the sandbox, waiting for its answer; the pull request opened
// at the stand-in with the installation token.
func (cp *fixtureControlPlane) pullRequest(w http.ResponseWriter, r *http.Request, fs *fixtureSession) {
	var req map[string]any
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "a JSON body is required"})
		return
	}
	fs.mu.Lock()
	fs.prRequests = append(fs.prRequests, req)
	conn := fs.conn
	fs.mu.Unlock()
	base, _ := req["baseBranch"].(string)
	if base == "" {
		base = fs.baseBranch
	}
	head, _ := req["headBranch"].(string)
	if head == "" || head == base {
		head = "open-inspect/" + fs.id
	}
	remote := "https://x-access-token:" + cp.installToken + "@github.com/" + fs.repoOwner + "/" + fs.repoName + ".git"
	spec := map[string]any{"remoteUrl": remote, "redactedRemoteUrl": "https://x-access-token:***@github.com/" + fs.repoOwner + "/" + fs.repoName + ".git",
		"refspec": "HEAD:refs/heads/" + head, "targetBranch": head, "repoOwner": fs.repoOwner, "repoName": fs.repoName, "force": true}
	fs.mu.Lock()
	err := conn.WriteJSON(map[string]any{"type": "push", "pushSpec": spec})
	fs.mu.Unlock()
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"error": "the sandbox is not connected"})
		return
	}
	var done map[string]any
	select {
	case done = <-fs.pushFinished:
	case <-time.After(2 * time.Minute):
		writeJSON(w, http.StatusGatewayTimeout, map[string]any{"error": "the sandbox did not push"})
		return
	}
	if done["type"] != "push_complete" {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"error": fmt.Sprint("push failed: ", done["error"])})
		return
	}
	ctx := r.Context()
	client := goGitHub(cp.t, cp.s, oauth2.NewClient(ctx, oauth2.StaticTokenSource(&oauth2.Token{AccessToken: cp.installToken})))
	title, _ := req["title"].(string)
	body, _ := req["body"].(string)
	pr, _, err := client.PullRequests.Create(ctx, fs.repoOwner, fs.repoName, &gh.NewPullRequest{Title: &title, Head: &head, Base: &base, Body: &body})
	if err != nil {
		writeJSON(w, http.StatusBadGateway, map[string]any{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"prNumber": pr.GetNumber(), "prUrl": pr.GetHTMLURL(), "state": pr.GetState(),
		"headBranch": head, "baseBranch": base, "updated": false})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// fixtureRuntimeEmulator is an emulator running Modal sandboxes with the
// images' RUN steps materialised in the shared tool cache, the fixture's
// runtime at /app/sandbox_runtime, and the model stand-in taking key.
func fixtureRuntimeEmulator(t *testing.T, key string) (*emulator.Server, string) {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	fixtureRecipeInImagesPy(t, root)
	openCodeBinary(t) // .ci/opencode-tools.sh: npm's cache then holds opencode-ai, so the image's install is quick
	rt := sandboxRuntime(t)
	rt.Python = toolchain.Python(t)
	rt.ImageCache = filepath.Join(toolchain.CacheDir(), "modal-images")
	rt.ReadOnlyAt = map[string]string{"/app/sandbox_runtime": filepath.Join(root, "tests", "fixtures", "upstream", "packages", "sandbox-runtime", "src", "sandbox_runtime")}
	s := start(t, emulator.Options{DataDir: t.TempDir(), Modal: emumodal.Options{Sandboxes: rt, Logf: t.Logf},
		Anthropic: anthropic.Options{APIKeys: func() []string { return []string{key} }}})
	return s, root
}

// fixtureImage builds the fixture app's sandbox image recipe, then the
// extra Dockerfile commands given.
func fixtureImage(t *testing.T, c *modal.Client, app *modal.App, extra ...string) *modal.Image {
	t.Helper()
	img := c.Images.FromRegistry("python:3.12.10-slim-bookworm", nil)
	for _, layer := range fixtureSandboxRecipe {
		img = img.DockerfileCommands(layer, nil)
	}
	if len(extra) > 0 {
		img = img.DockerfileCommands(extra, nil)
	}
	built, err := img.Build(context.Background(), app)
	require.NoError(t, err)
	return built
}

// startFixtureSandbox launches the runtime as the fixture app's
// api_create_sandbox does: `python -m sandbox_runtime.entrypoint` in
// /workspace, the model key as a secret, the session as env.
func startFixtureSandbox(t *testing.T, s *emulator.Server, cp *fixtureControlPlane, fs *fixtureSession, apiKey string) *modal.Sandbox {
	t.Helper()
	ctx := context.Background()
	c := mustModal(t, s, "")
	app, err := c.Apps.FromName(ctx, "open-inspect", &modal.AppFromNameParams{CreateIfMissing: true})
	require.NoError(t, err)
	img := fixtureImage(t, c, app)
	keys, err := c.Secrets.FromMap(ctx, map[string]string{"ANTHROPIC_API_KEY": apiKey}, nil)
	require.NoError(t, err)
	session, err := json.Marshal(map[string]string{"session_id": fs.id, "repo_owner": fs.repoOwner, "repo_name": fs.repoName,
		"branch": fs.baseBranch, "provider": "anthropic", "model": "claude-sonnet-4-6"})
	require.NoError(t, err)
	cp.add(fs)
	sb, err := c.Sandboxes.Create(ctx, app, img, &modal.SandboxCreateParams{
		Command: []string{"python", "-m", "sandbox_runtime.entrypoint"}, Workdir: "/workspace", Timeout: 15 * time.Minute,
		Secrets: []*modal.Secret{keys},
		Env: map[string]string{"PYTHONUNBUFFERED": "1", "SANDBOX_ID": fs.sandboxID, "CONTROL_PLANE_URL": cp.url,
			"SANDBOX_AUTH_TOKEN": fs.token, "SANDBOX_TIMEOUT_SECONDS": "900", "REPO_OWNER": fs.repoOwner, "REPO_NAME": fs.repoName,
			"SESSION_CONFIG": string(session), "VCS_HOST": "github.com", "VCS_CLONE_USERNAME": "x-access-token"}})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = sb.Terminate(context.Background(), nil) })
	return sb
}

// waitForFrame waits for a frame of kind, failing with the sandbox's
// output when none comes.
func waitForFrame(t *testing.T, s *emulator.Server, sb *modal.Sandbox, fs *fixtureSession, kind string, within time.Duration) map[string]any {
	t.Helper()
	var got map[string]any
	require.Eventually(t, func() bool {
		if frames := fs.framesOf(kind); len(frames) > 0 {
			got = frames[0]
			return true
		}
		return false
	}, within, 200*time.Millisecond, "no %s frame from the sandbox; %s", kind, sandboxOutput(s, sb.SandboxID))
	return got
}

// sandboxProcesses are the host PIDs of every process in the sandbox's
// PID namespace (its init's), with their command names.
func sandboxProcesses(initPID int) map[int]string {
	ns, err := os.Readlink("/proc/" + strconv.Itoa(initPID) + "/ns/pid")
	if err != nil {
		return nil
	}
	out := map[int]string{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if other, err := os.Readlink("/proc/" + e.Name() + "/ns/pid"); err == nil && other == ns {
			comm, _ := os.ReadFile("/proc/" + e.Name() + "/comm")
			out[pid] = strings.TrimSpace(string(comm))
		}
	}
	return out
}

// TestFixtureRuntimeRunsAPrompt runs the fixture's sandbox runtime as a
// Modal sandbox (modal-go, the fixture app's image recipe, its RUN steps
// materialised: the virtualenv with httpx and websockets, opencode-ai from
// npm, /app/opencode-deps) against a control plane written here, the model
// stand-in and the GitHub stand-in. It boots (the private repository
// cloned through the proxy with the credential helper asking the control
// plane), connects with the bearer token and X-Sandbox-ID, says ready, and
// runs a prompt in the real OpenCode: the scripted agent reads, writes,
// commits and calls create-pull-request, whose /pr call makes the control
// plane send push; the branch arrives at the stand-in with the agent's
// commit, the pull request is opened, and execution_complete says success.
// Terminate ends every process of the sandbox (checked in /proc).
func TestFixtureRuntimeRunsAPrompt(t *testing.T) {
	const key = "sk-ant-fixture-runtime"
	s, _ := fixtureRuntimeEmulator(t, key)
	ctx := context.Background()
	token := installationToken(t, s)
	cp := newFixtureControlPlane(t, s, token)
	fs := &fixtureSession{id: "sess-fixture-1", sandboxID: "sandbox-openinspect-local-docs-site-1", token: "0123456789abcdef0123456789abcdef",
		repoOwner: github.DefaultOrg, repoName: "docs-site", baseBranch: "main"}
	mainSHA, err := s.GitHub().BranchSHA(ctx, fs.repoOwner, fs.repoName, "main")
	require.NoError(t, err)

	started := time.Now()
	sb := startFixtureSandbox(t, s, cp, fs, key)
	t.Logf("sandbox created in %s (the image's RUN steps materialised or reused)", time.Since(started).Round(time.Millisecond))
	ready := waitForFrame(t, s, sb, fs, "ready", 3*time.Minute)
	t.Logf("ready %s after the create", time.Since(started).Round(time.Millisecond))
	assert.Equal(t, fs.sandboxID, ready["sandboxId"])
	assert.Equal(t, "fixture-v1", ready["runtimeVersion"], "the image's SANDBOX_VERSION")
	assert.Nil(t, ready["opencodeSessionId"])
	assert.Equal(t, []any{map[string]any{"position": float64(0), "repoOwner": fs.repoOwner, "repoName": fs.repoName, "baseSha": mainSHA}},
		ready["repositories"], "the clone of the base branch")
	fs.mu.Lock()
	headers := fs.wsHeaders[0]
	creds := fs.credentials
	fs.mu.Unlock()
	assert.Equal(t, "Bearer "+fs.token, headers.Get("Authorization"))
	assert.Equal(t, fs.sandboxID, headers.Get("X-Sandbox-ID"))
	assert.Positive(t, creds, "git asked the control plane for credentials (a private repository)")

	// Every process of the sandbox, OpenCode among them, in its own PID
	// namespace.
	pids := s.Modal().SandboxPIDs(sb.SandboxID)
	require.Len(t, pids, 2)
	procs := sandboxProcesses(pids[1])
	assert.Contains(t, slices.Collect(maps.Values(procs)), "opencode", "OpenCode runs in the sandbox: %v", procs)

	const prompt = "Add a note that says hello to the team"
	fs.send(t, map[string]any{"type": "prompt", "messageId": "msg-1", "content": prompt, "model": "anthropic/claude-sonnet-4-6",
		"author": map[string]any{"userId": "user-1", "gitIdentity": map[string]any{"mode": "attributed-user", "name": "Ada Lovelace", "email": "ada@example.com"}}})
	done := waitForFrame(t, s, sb, fs, "execution_complete", 4*time.Minute)
	t.Logf("execution_complete %s after the create", time.Since(started).Round(time.Millisecond))
	assert.Equal(t, true, done["success"], "%v; errors: %v; %s", done, fs.framesOf("error"), sandboxOutput(s, sb.SandboxID))
	assert.Equal(t, "msg-1", done["messageId"])
	assert.Equal(t, "execution_complete:msg-1", done["ackId"])

	// The agent's tools ran in OpenCode, each reported as it finished.
	var tools []string
	for _, f := range fs.framesOf("tool_call") {
		assert.Equal(t, "msg-1", f["messageId"])
		if f["status"] == "completed" {
			tools = append(tools, f["tool"].(string))
		}
	}
	assert.Equal(t, []string{"read", "write", "bash", "create-pull-request"}, tools)
	titles := fs.framesOf("session_title")
	require.NotEmpty(t, titles, "OpenCode's title call, answered by the stand-in")
	assert.NotEmpty(t, titles[len(titles)-1]["title"])
	assert.NotEmpty(t, fs.framesOf("step_start"))
	assert.NotEmpty(t, fs.framesOf("step_finish"))
	var summary string
	for _, f := range fs.framesOf("token") {
		summary = f["content"].(string)
	}
	head := "open-inspect/" + fs.id
	assert.Contains(t, summary, "Pull request: https://github.com/"+fs.repoOwner+"/"+fs.repoName+"/pull/1", "the tool gave the agent the PR's URL")
	for _, f := range append(fs.framesOf("token"), done) {
		assert.Equal(t, fs.sandboxID, f["sandboxId"])
		assert.IsType(t, float64(0), f["timestamp"])
	}

	// The /pr call named the checkout's branch; the push reached the
	// stand-in with the agent's commit on top of the base.
	fs.mu.Lock()
	prs := fs.prRequests
	fs.mu.Unlock()
	require.Len(t, prs, 1)
	assert.Equal(t, "main", prs[0]["headBranch"])
	assert.Equal(t, "Add a note that says hello", prs[0]["title"])
	pushed := fs.framesOf("push_complete")
	require.Len(t, pushed, 1)
	assert.Equal(t, head, pushed[0]["branchName"])
	assert.Regexp(t, `^push_complete:[0-9a-f]{16}$`, pushed[0]["ackId"])
	client := goGitHub(t, s, oauth2.NewClient(ctx, oauth2.StaticTokenSource(&oauth2.Token{AccessToken: token})))
	headSHA, err := s.GitHub().BranchSHA(ctx, fs.repoOwner, fs.repoName, head)
	require.NoError(t, err, "the branch was pushed")
	commits, _, err := client.PullRequests.ListCommits(ctx, fs.repoOwner, fs.repoName, 1, nil)
	require.NoError(t, err, "the control plane opened the pull request")
	require.Len(t, commits, 1)
	assert.Equal(t, headSHA, commits[0].GetSHA())
	assert.Equal(t, "Add a note that says hello", commits[0].GetCommit().GetMessage())
	assert.Equal(t, "Ada Lovelace", commits[0].GetCommit().GetAuthor().GetName(), "the prompt's author")
	// What the commit holds, read with git from the stand-in.
	g := newGitClient(t, s)
	clone := filepath.Join(g.home, "check")
	g.must(g.home, "clone", "--quiet", "--branch", head, strings.Replace(s.GitHub().BrowserURL(), "https://", "https://x-access-token:"+token+"@", 1)+
		"/"+fs.repoOwner+"/"+fs.repoName+".git", clone)
	assert.Equal(t, mainSHA, g.must(clone, "rev-parse", "HEAD~1"), "on top of the base")
	assert.Equal(t, anthropic.NoteFile, g.must(clone, "show", "--name-only", "--format=", "HEAD"))
	note, err := os.ReadFile(filepath.Join(clone, anthropic.NoteFile))
	require.NoError(t, err)
	assert.Contains(t, string(note), prompt)
	out := sandboxOutput(s, sb.SandboxID)
	assert.NotContains(t, out, token, "the push's token is never logged")

	// The stand-in answered every model call the sandbox made, through
	// the proxy: OpenCode's title call and the agent's five turns.
	var kinds []string
	for _, e := range s.Anthropic().Exchanges() {
		if e.Error == "" && len(e.Tools) > 0 {
			kinds = append(kinds, e.Kind)
		}
	}
	assert.Equal(t, []string{"read", "write", "bash", "create-pull-request", "summary"}, kinds)

	// Terminate: every process the sandbox started ends.
	require.NotEmpty(t, procs)
	_, err = sb.Terminate(ctx, nil)
	require.NoError(t, err)
	for pid, name := range procs {
		assert.False(t, alive(pid), "%s (pid %d) ended with Terminate", name, pid)
	}
}

// TestFixtureRuntimeReportsAModelError runs a prompt with an API key the
// model stand-in does not take: the sandbox reports Anthropic's
// authentication error as an error frame and execution_complete
// success=false; then, when the control plane refuses its reconnect with
// 410, the runtime ends with 0.
func TestFixtureRuntimeReportsAModelError(t *testing.T) {
	s, _ := fixtureRuntimeEmulator(t, "sk-ant-the-seeded-key")
	cp := newFixtureControlPlane(t, s, installationToken(t, s))
	fs := &fixtureSession{id: "sess-fixture-2", sandboxID: "sandbox-openinspect-local-hello-world-2", token: "fedcba9876543210fedcba9876543210",
		repoOwner: github.DefaultOrg, repoName: "hello-world", baseBranch: "main"}
	sb := startFixtureSandbox(t, s, cp, fs, "sk-ant-not-seeded")
	waitForFrame(t, s, sb, fs, "ready", 3*time.Minute)
	fs.send(t, map[string]any{"type": "prompt", "messageId": "msg-2", "content": "Add a note", "model": "anthropic/claude-sonnet-4-6",
		"author": map[string]any{"userId": "user-2", "gitIdentity": map[string]any{"mode": "agent-only"}}})
	done := waitForFrame(t, s, sb, fs, "execution_complete", 3*time.Minute)
	assert.Equal(t, false, done["success"])
	assert.Contains(t, done["error"], "invalid x-api-key", "the stand-in's authentication error")
	errs := fs.framesOf("error")
	require.NotEmpty(t, errs)
	assert.Contains(t, errs[0]["error"], "invalid x-api-key")
	assert.Equal(t, "error:msg-2", errs[0]["ackId"])
	assert.Empty(t, fs.framesOf("push_complete"))

	// The control plane drops the socket and refuses the sandbox from now
	// on, as the DO does for a stopped sandbox: the runtime exits 0.
	fs.mu.Lock()
	fs.refuse = http.StatusGone
	conn := fs.conn
	fs.mu.Unlock()
	require.NoError(t, conn.Close())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code, err := sb.Wait(ctx)
	require.NoError(t, err, "%s", sandboxOutput(s, sb.SandboxID))
	assert.Equal(t, 0, code, "%s", sandboxOutput(s, sb.SandboxID))
	assert.Contains(t, sandboxOutput(s, sb.SandboxID), "refused the sandbox (410)")
}
