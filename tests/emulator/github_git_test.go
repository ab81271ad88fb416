package emulator_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	gh "github.com/google/go-github/v88/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/github"
)

// installationToken configures the default app with a fresh key and mints
// an installation token as the control plane does (a JWT, then POST
// /app/installations/{id}/access_tokens).
func installationToken(t *testing.T, s *emulator.Server) string {
	t.Helper()
	private, public := appKey(t)
	require.NoError(t, s.GitHub().PutApp(github.App{ID: github.DefaultAppID, PublicKeyPEM: string(public)}))
	jwt := signJWT(t, private, map[string]any{"iss": github.DefaultAppID, "iat": time.Now().Add(-time.Minute).Unix(), "exp": time.Now().Add(9 * time.Minute).Unix()})
	status, body := rawPost(t, s.URL()+github.APIPrefix+"/app/installations/"+strconv.FormatInt(github.DefaultInstallationID, 10)+"/access_tokens", "Bearer "+jwt)
	require.Equal(t, http.StatusCreated, status, body)
	var out struct {
		Token string `json:"token"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &out))
	require.NotEmpty(t, out.Token)
	return out.Token
}

// gitClient runs the real git against the stand-in's https origin: its CA
// through GIT_SSL_CAINFO, github.localhost resolved to loopback, no user or
// system configuration, no prompts, no proxy.
type gitClient struct {
	t       *testing.T
	home    string
	env     []string
	resolve string
}

func newGitClient(t *testing.T, s *emulator.Server) *gitClient {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is needed to clone from the GitHub stand-in: %v", err)
	}
	home := t.TempDir()
	ca := filepath.Join(home, "ca.pem")
	require.NoError(t, os.WriteFile(ca, s.GitHub().CACertificate(), 0o644))
	u, err := url.Parse(s.GitHub().BrowserURL())
	require.NoError(t, err)
	return &gitClient{t: t, home: home, resolve: github.BrowserHost + ":" + u.Port() + ":127.0.0.1",
		env: []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
			"GIT_SSL_CAINFO=" + ca, "LC_ALL=C", "GIT_AUTHOR_NAME=Agent", "GIT_AUTHOR_EMAIL=agent@example.com",
			"GIT_COMMITTER_NAME=Agent", "GIT_COMMITTER_EMAIL=agent@example.com"}}
}

// run is git args in dir, returning its combined output and error.
func (g *gitClient) run(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-c", "http.curloptResolve=" + g.resolve}, args...)...)
	cmd.Dir, cmd.Env = dir, g.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (g *gitClient) must(dir string, args ...string) string {
	g.t.Helper()
	out, err := g.run(dir, args...)
	require.NoError(g.t, err, "git %s: %s", strings.Join(args, " "), out)
	return strings.TrimSpace(out)
}

// TestGitHubStandInServesGit clones, fetches and pushes the stand-in's
// repositories with the real git over https (the CA given by
// GIT_SSL_CAINFO) using an installation token as the control plane mints
// it, sees a wrong token, a missing one on a private repository and an
// anonymous push refused as GitHub refuses them, then opens a pull request
// from the pushed branch with go-github and reads back its head, base and
// commits.
func TestGitHubStandInServesGit(t *testing.T) {
	dir := t.TempDir()
	s := start(t, emulator.Options{DataDir: dir})
	ctx := context.Background()
	tok := installationToken(t, s)
	g := newGitClient(t, s)
	origin := s.GitHub().BrowserURL()
	authed := func(repo string) string {
		return strings.Replace(origin, "https://", "https://x-access-token:"+tok+"@", 1) + "/" + github.DefaultOrg + "/" + repo + ".git"
	}

	// A clone with the installation token: the seeded default branch, the
	// same commit the branches API reports.
	work := filepath.Join(g.home, "hello-world")
	g.must(g.home, "clone", "--quiet", authed("hello-world"), work)
	readme, err := os.ReadFile(filepath.Join(work, "README.md"))
	require.NoError(t, err)
	assert.Contains(t, string(readme), "# hello-world")
	assert.FileExists(t, filepath.Join(work, "main.go"), "a Go repository has a Go file")
	head := g.must(work, "rev-parse", "HEAD")
	mainSHA, err := s.GitHub().BranchSHA(ctx, github.DefaultOrg, "hello-world", "main")
	require.NoError(t, err)
	assert.Equal(t, mainSHA, head)
	remoteBranches := g.must(work, "branch", "-r")
	assert.Contains(t, remoteBranches, "origin/feature/sign-in", "the configured second branch is a real branch")

	client := goGitHub(t, s, oauth2.NewClient(ctx, oauth2.StaticTokenSource(&oauth2.Token{AccessToken: tok})))
	branches, _, err := client.Repositories.ListBranches(ctx, github.DefaultOrg, "hello-world", nil)
	require.NoError(t, err)
	require.Len(t, branches, 2)
	assert.Equal(t, "main", branches[0].GetName())
	assert.Equal(t, head, branches[0].GetCommit().GetSHA())

	// Refusals: a wrong token, no token on a private repository, a push
	// with no token or a wrong one, a repository the installation does not
	// have. (git sends credentials only when challenged, so a wrong token
	// still clones a public repository, as on GitHub.)
	wrong := func(repo string) string {
		return strings.Replace(authed(repo), tok, "ghs_wrongwrongwrongwrongwrongwrongwrong", 1)
	}
	out, err := g.run(g.home, "clone", "--quiet", wrong("docs-site"), filepath.Join(g.home, "wrong"))
	require.Error(t, err, "a wrong token clones nothing: %s", out)
	assert.Contains(t, out, "Invalid username or token")
	assert.Contains(t, out, "Authentication failed")
	out, err = g.run(g.home, "clone", "--quiet", origin+"/"+github.DefaultOrg+"/docs-site.git", filepath.Join(g.home, "anon-private"))
	require.Error(t, err, "a private repository needs credentials: %s", out)
	assert.NoDirExists(t, filepath.Join(g.home, "anon-private"))
	g.must(g.home, "clone", "--quiet", origin+"/"+github.DefaultOrg+"/hello-world.git", filepath.Join(g.home, "anon-public"))
	out, err = g.run(g.home, "clone", "--quiet", authed("not-there"), filepath.Join(g.home, "missing"))
	require.Error(t, err, "%s", out)
	assert.Contains(t, out, "Repository not found")
	status, body := rawGet(t, s.URL()+github.Prefix+"/"+github.DefaultOrg+"/docs-site.git/info/refs?service=git-upload-pack", "Basic "+basic("x-access-token", "ghs_wrong"))
	assert.Equal(t, http.StatusUnauthorized, status, body)

	// The agent's commit on a new branch, pushed with the token (the push
	// spec's refspec and -f).
	require.NoError(t, os.WriteFile(filepath.Join(work, "HELLO.md"), []byte("said hello\n"), 0o644))
	g.must(work, "add", "HELLO.md")
	g.must(work, "commit", "--quiet", "-m", "Say hello")
	agentSHA := g.must(work, "rev-parse", "HEAD")
	const branch = "open-inspect/session-1"
	out, err = g.run(work, "push", origin+"/"+github.DefaultOrg+"/hello-world.git", "HEAD:refs/heads/"+branch)
	require.Error(t, err, "an anonymous push is refused: %s", out)
	out, err = g.run(work, "push", wrong("hello-world"), "HEAD:refs/heads/"+branch)
	require.Error(t, err, "a push with a wrong token is refused: %s", out)
	assert.Contains(t, out, "Invalid username or token")
	g.must(work, "push", "--quiet", authed("hello-world"), "HEAD:refs/heads/"+branch, "-f")
	pushed, err := s.GitHub().BranchSHA(ctx, github.DefaultOrg, "hello-world", branch)
	require.NoError(t, err)
	assert.Equal(t, agentSHA, pushed)
	// Fetched back by a second clone.
	g.must(filepath.Join(g.home, "anon-public"), "fetch", "--quiet", "origin", branch)
	assert.Equal(t, agentSHA, g.must(filepath.Join(g.home, "anon-public"), "rev-parse", "FETCH_HEAD"))

	// The pull request, as the control plane opens it.
	pr, _, err := client.PullRequests.Create(ctx, github.DefaultOrg, "hello-world", &gh.NewPullRequest{
		Title: gh.Ptr("Say hello"), Head: gh.Ptr(branch), Base: gh.Ptr("main"), Body: gh.Ptr("Created with Open-Inspect")})
	require.NoError(t, err)
	assert.Equal(t, 1, pr.GetNumber())
	assert.Equal(t, "open", pr.GetState())
	assert.Equal(t, branch, pr.GetHead().GetRef())
	assert.Equal(t, agentSHA, pr.GetHead().GetSHA())
	assert.Equal(t, "main", pr.GetBase().GetRef())
	assert.Equal(t, mainSHA, pr.GetBase().GetSHA())
	assert.Equal(t, "https://github.com/"+github.DefaultOrg+"/hello-world/pull/1", pr.GetHTMLURL())
	assert.Equal(t, "Bot", pr.GetUser().GetType())
	assert.True(t, strings.HasSuffix(pr.GetUser().GetLogin(), "[bot]"), pr.GetUser().GetLogin())
	assert.Equal(t, 1, pr.GetCommits())

	again, _, err := client.PullRequests.Get(ctx, github.DefaultOrg, "hello-world", 1)
	require.NoError(t, err)
	assert.Equal(t, pr.GetHTMLURL(), again.GetHTMLURL())
	commits, _, err := client.PullRequests.ListCommits(ctx, github.DefaultOrg, "hello-world", 1, nil)
	require.NoError(t, err)
	require.Len(t, commits, 1)
	assert.Equal(t, agentSHA, commits[0].GetSHA())
	assert.Equal(t, "Say hello", commits[0].GetCommit().GetMessage())
	assert.Equal(t, "Agent", commits[0].GetCommit().GetAuthor().GetName())
	open, _, err := client.PullRequests.List(ctx, github.DefaultOrg, "hello-world", &gh.PullRequestListOptions{Head: github.DefaultOrg + ":" + branch})
	require.NoError(t, err)
	require.Len(t, open, 1)

	// GitHub's 422s: the same head again, a branch that does not exist, no
	// commits between the two.
	_, _, err = client.PullRequests.Create(ctx, github.DefaultOrg, "hello-world", &gh.NewPullRequest{Title: gh.Ptr("again"), Head: gh.Ptr(branch), Base: gh.Ptr("main")})
	requireGitHubError(t, err, http.StatusUnprocessableEntity, "Validation Failed")
	assert.Contains(t, err.Error(), "A pull request already exists for "+github.DefaultOrg+":"+branch)
	_, _, err = client.PullRequests.Create(ctx, github.DefaultOrg, "hello-world", &gh.NewPullRequest{Title: gh.Ptr("x"), Head: gh.Ptr("no-such-branch"), Base: gh.Ptr("main")})
	requireGitHubError(t, err, http.StatusUnprocessableEntity, "Validation Failed")
	_, _, err = client.PullRequests.Create(ctx, github.DefaultOrg, "hello-world", &gh.NewPullRequest{Title: gh.Ptr("x"), Head: gh.Ptr("main"), Base: gh.Ptr("main")})
	requireGitHubError(t, err, http.StatusUnprocessableEntity, "Validation Failed")
	assert.Contains(t, err.Error(), "No commits between main and main")

	inv := s.Inventory().GitHub.PullRequests[github.DefaultOrg+"/hello-world"]
	require.Len(t, inv, 1)
	assert.Equal(t, []string{agentSHA}, inv[0].Commits)
	assert.Equal(t, branch, inv[0].Head)

	// The repository and the pull request outlive a restart of the emulator
	// on the same data directory.
	require.NoError(t, s.Close())
	s2 := start(t, emulator.Options{DataDir: dir})
	again2, err := s2.GitHub().BranchSHA(ctx, github.DefaultOrg, "hello-world", branch)
	require.NoError(t, err)
	assert.Equal(t, agentSHA, again2)
	assert.Len(t, s2.GitHub().PullRequests(github.DefaultOrg, "hello-world"), 1)
}

func basic(user, password string) string {
	r := &http.Request{Header: http.Header{}}
	r.SetBasicAuth(user, password)
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Basic ")
}
