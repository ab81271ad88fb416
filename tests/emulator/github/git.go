package github

// The repositories as git serves them: each configured repository is a
// real bare repository under <data-dir>/github-git/<owner>/<name>.git,
// made on first use with one deterministic commit per configured branch,
// and served over git's smart HTTP protocol by git's own http-backend run
// as a CGI, after the stand-in has checked the credential as GitHub does.
//
// What a client sees (clone, fetch, push with `x-access-token:<token>`) is
// what GitHub answers: anonymous reads of a public repository, 401 with a
// Basic challenge when credentials are needed or wrong, 404 for a
// repository the credential cannot see, 403 for a push the credential may
// not make.

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// gitDirName is where the bare repositories live in the data directory.
const gitDirName = "github-git"

// seedAuthor is who made the seeded commits; seedDate when. Both fixed, so
// a repository's seeded commits have the same IDs on every machine.
const (
	seedAuthorName  = "openinspect local cloud"
	seedAuthorEmail = "local-cloud@openinspect.invalid"
	seedDate        = "2024-01-15T09:00:00Z"
)

// gitCommand runs git with a clean environment (no user or system config),
// so the stand-in's repositories do not depend on who runs the emulator.
func gitCommand(ctx context.Context, dir string, env []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null", "LC_ALL=C"}, env...)
	return cmd
}

func runGit(ctx context.Context, dir string, stdin []byte, env []string, args ...string) (string, error) {
	cmd := gitCommand(ctx, dir, env, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// repoDir is where owner/name's bare repository is (lower case, as GitHub
// matches names without regard to case).
func (s *Service) repoDir(owner, name string) string {
	return filepath.Join(s.dataDir, gitDirName, strings.ToLower(owner), strings.ToLower(name)+".git")
}

// ensureRepo makes repo's bare repository the first time it is used:
// the default branch with a README (and a file in the repository's
// language), each other configured branch one commit further on. Later
// calls find it and change nothing; what was pushed stays.
func (s *Service) ensureRepo(ctx context.Context, repo Repository) (string, error) {
	dir := s.repoDir(repo.Owner, repo.Name)
	s.gitMu.Lock()
	defer s.gitMu.Unlock()
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err == nil {
		return dir, nil
	}
	tmp := dir + ".new"
	_ = os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return "", fmt.Errorf("emulator: GitHub repository %s/%s: %w", repo.Owner, repo.Name, err)
	}
	if err := seedRepo(ctx, tmp, repo); err != nil {
		_ = os.RemoveAll(tmp)
		return "", fmt.Errorf("emulator: GitHub repository %s/%s: %w", repo.Owner, repo.Name, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", fmt.Errorf("emulator: GitHub repository %s/%s: %w", repo.Owner, repo.Name, err)
	}
	return dir, nil
}

func seedRepo(ctx context.Context, dir string, repo Repository) error {
	if _, err := runGit(ctx, dir, nil, nil, "init", "--quiet", "--bare", "--initial-branch="+repo.DefaultBranch); err != nil {
		return err
	}
	// http-backend answers pushes only when told receive-pack is on; the
	// stand-in decides who may push before git sees the request.
	if _, err := runGit(ctx, dir, nil, nil, "config", "http.receivepack", "true"); err != nil {
		return err
	}
	env := []string{"GIT_AUTHOR_NAME=" + seedAuthorName, "GIT_AUTHOR_EMAIL=" + seedAuthorEmail, "GIT_AUTHOR_DATE=" + seedDate,
		"GIT_COMMITTER_NAME=" + seedAuthorName, "GIT_COMMITTER_EMAIL=" + seedAuthorEmail, "GIT_COMMITTER_DATE=" + seedDate}
	files := map[string]string{"README.md": fmt.Sprintf("# %s\n\n%s\n", repo.Name, orDefault(repo.Description, "A repository of the local cloud's GitHub stand-in."))}
	if name, body := languageFile(repo.Language); name != "" {
		files[name] = body
	}
	tree, err := writeTree(ctx, dir, files)
	if err != nil {
		return err
	}
	base, err := runGit(ctx, dir, nil, env, "commit-tree", tree, "-m", "Initial commit")
	if err != nil {
		return err
	}
	if _, err := runGit(ctx, dir, nil, nil, "update-ref", "refs/heads/"+repo.DefaultBranch, base); err != nil {
		return err
	}
	for _, b := range repo.Branches {
		if b == repo.DefaultBranch {
			continue
		}
		files["NOTES.md"] = fmt.Sprintf("# Work on %s\n\nThis branch is one commit ahead of %s.\n", b, repo.DefaultBranch)
		tree, err := writeTree(ctx, dir, files)
		if err != nil {
			return err
		}
		c, err := runGit(ctx, dir, nil, env, "commit-tree", tree, "-p", base, "-m", "Start "+b)
		if err != nil {
			return err
		}
		if _, err := runGit(ctx, dir, nil, nil, "update-ref", "refs/heads/"+b, c); err != nil {
			return err
		}
		delete(files, "NOTES.md")
	}
	return nil
}

// writeTree stores files as blobs and a flat tree, returning its ID.
func writeTree(ctx context.Context, dir string, files map[string]string) (string, error) {
	var entries strings.Builder
	for name, body := range files {
		sha, err := runGit(ctx, dir, []byte(body), nil, "hash-object", "-w", "--stdin")
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&entries, "100644 blob %s\t%s\n", sha, name)
	}
	return runGit(ctx, dir, []byte(entries.String()), nil, "mktree")
}

// languageFile is a small source file in a repository's language, so the
// agent has something to read.
func languageFile(language string) (string, string) {
	switch language {
	case "Go":
		return "main.go", "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hello, world\")\n}\n"
	case "TypeScript":
		return "index.ts", "export const greeting = \"hello, world\";\n"
	}
	return "", ""
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// branchHeads lists the repository's branches and the commit each points
// at: the default branch first, then the others by name.
func (s *Service) branchHeads(ctx context.Context, repo Repository) ([][2]string, error) {
	dir, err := s.ensureRepo(ctx, repo)
	if err != nil {
		return nil, err
	}
	out, err := runGit(ctx, dir, nil, nil, "for-each-ref", "--sort=refname", "--format=%(refname:strip=2) %(objectname)", "refs/heads/")
	if err != nil {
		return nil, err
	}
	var first, rest [][2]string
	for _, line := range strings.Split(out, "\n") {
		name, sha, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if name == repo.DefaultBranch {
			first = append(first, [2]string{name, sha})
		} else {
			rest = append(rest, [2]string{name, sha})
		}
	}
	return append(first, rest...), nil
}

// branchSHA is the commit a branch points at, "" when there is no such
// branch.
func (s *Service) branchSHA(ctx context.Context, repo Repository, branch string) (string, error) {
	heads, err := s.branchHeads(ctx, repo)
	if err != nil {
		return "", err
	}
	for _, h := range heads {
		if h[0] == branch {
			return h[1], nil
		}
	}
	return "", nil
}

// findRepo is the configured repository owner/name, in any installation.
func (s *Service) findRepo(owner, name string) (Repository, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range core.SortedKeys(s.st.Apps) {
		for _, in := range s.st.Apps[k].Installations {
			for _, repo := range in.Repositories {
				if strings.EqualFold(repo.Owner, owner) && strings.EqualFold(repo.Name, name) {
					return repo, true
				}
			}
		}
	}
	return Repository{}, false
}

// The messages GitHub's git endpoint answers with (observed in public bug
// reports; git prints them after "remote:").
const (
	gitBadCredentials = "Invalid username or token. Password authentication is not supported for Git operations."
	gitNotFound       = "Repository not found."
)

// gitCredential is the token of a git request: the password of its Basic
// credentials (git sends x-access-token:<token>, or <login>:<token>), or a
// bearer token.
func gitCredential(r *http.Request) string {
	if _, pass, ok := r.BasicAuth(); ok {
		return pass
	}
	return credential(r)
}

// gitAccess decides a git request: who it is for (REMOTE_USER), or the
// status and message refusing it. push says it is a receive-pack request.
func (s *Service) gitAccess(r *http.Request, repo Repository, push bool) (string, int, string) {
	tok := gitCredential(r)
	if tok == "" {
		if !push && !repo.Private {
			return "anonymous", 0, ""
		}
		return "", http.StatusUnauthorized, gitBadCredentials
	}
	if app, in, status, _ := s.installationOf(tok); status == 0 {
		for _, rr := range in.Repositories {
			if strings.EqualFold(rr.Owner, repo.Owner) && strings.EqualFold(rr.Name, repo.Name) {
				return botLogin(app), 0, ""
			}
		}
		return "", http.StatusNotFound, gitNotFound
	}
	s.mu.Lock()
	ut := s.st.UserTokens[digest(tok)]
	var u *User
	if ut != nil {
		u = s.st.Users[strings.ToLower(ut.Login)]
	}
	s.mu.Unlock()
	if u == nil {
		return "", http.StatusUnauthorized, gitBadCredentials
	}
	member := strings.EqualFold(repo.Owner, u.Login)
	for _, m := range u.Orgs {
		if strings.EqualFold(m.Org, repo.Owner) && m.State == "active" {
			member = true
		}
	}
	switch {
	case member:
		return u.Login, 0, ""
	case repo.Private:
		return "", http.StatusNotFound, gitNotFound
	case push:
		return "", http.StatusForbidden, fmt.Sprintf("Permission to %s/%s.git denied to %s.", repo.Owner, repo.Name, u.Login)
	}
	return u.Login, 0, ""
}

// botLogin is how GitHub names an app acting through an installation
// token: its slug and "[bot]".
func botLogin(app *App) string {
	slug := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return '-'
	}, orDefault(app.Name, "app-"+app.ID))
	for strings.Contains(slug, "--") {
		slug = strings.ReplaceAll(slug, "--", "-")
	}
	return strings.Trim(slug, "-") + "[bot]"
}

// gitRoute serves what github.com serves under a repository's path for
// git's smart HTTP protocol: GET /{owner}/{repo}/info/refs?service=... and
// POST /{owner}/{repo}/git-upload-pack|git-receive-pack ({repo} with or
// without ".git"). Anything else under Prefix is GitHub's 404 page.
func (s *Service) gitRoute(w http.ResponseWriter, r *http.Request) {
	parts := strings.SplitN(r.PathValue("path"), "/", 3)
	var service, pattern string
	if len(parts) == 3 {
		switch {
		case r.Method == http.MethodGet && parts[2] == "info/refs":
			service, pattern = r.URL.Query().Get("service"), "GET "+Prefix+"/{owner}/{repo}/info/refs"
		case r.Method == http.MethodPost && (parts[2] == "git-upload-pack" || parts[2] == "git-receive-pack"):
			service, pattern = parts[2], "POST "+Prefix+"/{owner}/{repo}/"+parts[2]
		}
	}
	if pattern == "" {
		s.core.Count(r.Method+" "+Prefix+"/{path...}", false)
		writePage(w, http.StatusNotFound, "Not Found", "This is not a web page of GitHub's that the stand-in serves.")
		return
	}
	s.core.Count(pattern, false)
	delay, f := s.core.TakeFaults(r.Method, strings.TrimPrefix(pattern, r.Method+" "))
	if s.core.ServeFault(w, r, delay, f, webFaultAnswers) {
		return
	}
	if service != "git-upload-pack" && service != "git-receive-pack" {
		// Dumb HTTP (info/refs without ?service=) is not served by GitHub either.
		gitRefuse(w, http.StatusForbidden, "Please upgrade your git client.")
		return
	}
	s.serveGit(w, r, parts[0], strings.TrimSuffix(parts[1], ".git"), service, parts[2])
}

// serveGit answers one request of the smart protocol for owner/name, by
// git http-backend once the credential is checked; rest is "info/refs" or
// the service.
func (s *Service) serveGit(w http.ResponseWriter, r *http.Request, owner, name, service, rest string) {
	repo, ok := s.findRepo(owner, name)
	if !ok {
		if gitCredential(r) == "" {
			gitRefuse(w, http.StatusUnauthorized, gitBadCredentials)
			return
		}
		gitRefuse(w, http.StatusNotFound, gitNotFound)
		return
	}
	who, status, msg := s.gitAccess(r, repo, service == "git-receive-pack")
	if status != 0 {
		s.logfSafe("github: git %s %s/%s refused: %d", service, repo.Owner, repo.Name, status)
		gitRefuse(w, status, msg)
		return
	}
	dir, err := s.ensureRepo(r.Context(), repo)
	if err != nil {
		s.logfSafe("%v", err)
		gitRefuse(w, http.StatusInternalServerError, "The stand-in could not open the repository.")
		return
	}
	gitBin, err := exec.LookPath("git")
	if err != nil {
		gitRefuse(w, http.StatusInternalServerError, "git is not installed where the emulator runs.")
		return
	}
	h := &cgi.Handler{
		Path: gitBin, Args: []string{"http-backend"}, Dir: dir,
		// PATH_INFO is the whole path (Root "/"): the repository's
		// directory under GIT_PROJECT_ROOT, then info/refs or the service.
		Root: "/",
		Env: []string{"GIT_PROJECT_ROOT=" + filepath.Join(s.dataDir, gitDirName), "GIT_HTTP_EXPORT_ALL=1",
			"REMOTE_USER=" + who, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME=" + dir},
		Stderr: gitStderr{s},
	}
	r2 := r.Clone(r.Context())
	r2.URL.Path = "/" + strings.ToLower(repo.Owner) + "/" + strings.ToLower(repo.Name) + ".git/" + rest
	r2.URL.RawPath = ""
	r2.RequestURI = r2.URL.RequestURI()
	start := time.Now()
	h.ServeHTTP(w, r2)
	if service == "git-receive-pack" && r.Method == http.MethodPost {
		s.logfSafe("github: %s pushed to %s/%s (%s)", who, repo.Owner, repo.Name, time.Since(start).Round(time.Millisecond))
	}
}

// gitRefuse answers a refused git request as GitHub does: plain text,
// which git prints after "remote:", with a Basic challenge on 401 so git
// asks its credential helper.
func gitRefuse(w http.ResponseWriter, status int, msg string) {
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Basic realm="GitHub"`)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintln(w, msg)
}

// gitStderr sends http-backend's complaints to the emulator's log.
type gitStderr struct{ s *Service }

func (g gitStderr) Write(p []byte) (int, error) {
	if msg := strings.TrimSpace(string(p)); msg != "" {
		g.s.logfSafe("github: git http-backend: %s", msg)
	}
	return len(p), nil
}
