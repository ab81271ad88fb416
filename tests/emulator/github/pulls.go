package github

// Pull requests: what upstream's control plane calls once the sandbox has
// pushed the agent's branch (POST /repos/{o}/{r}/pulls, and GET of one to
// reuse it), recorded with the head branch and the commits it carries,
// which are read from the repository's git history (git.go), not taken
// from the request.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

const (
	docsPulls      = "https://docs.github.com/rest/pulls/pulls#create-a-pull-request"
	docsPull       = "https://docs.github.com/rest/pulls/pulls#get-a-pull-request"
	docsPullCommit = "https://docs.github.com/rest/pulls/pulls#list-commits-on-a-pull-request"
)

// PullRequest is one pull request as the stand-in keeps it.
type PullRequest struct {
	Number  int    `json:"number"`
	Title   string `json:"title"`
	Body    string `json:"body,omitempty"`
	Head    string `json:"head"` // the head branch
	Base    string `json:"base"` // the base branch
	HeadSHA string `json:"head_sha"`
	BaseSHA string `json:"base_sha"`
	// Commits are the commits on Head not on Base when it was opened,
	// oldest first.
	Commits   []string  `json:"commits"`
	Draft     bool      `json:"draft"`
	State     string    `json:"state"` // "open"
	User      string    `json:"user"`  // who opened it: a login, or an app's "<slug>[bot]"
	UserType  string    `json:"user_type"`
	CreatedAt time.Time `json:"created_at"`
}

// PullRequests lists the pull requests opened on owner/name, oldest first.
func (s *Service) PullRequests(owner, name string) []PullRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []PullRequest
	for _, pr := range s.st.PullRequests[repoKey(owner, name)] {
		cp := *pr
		cp.Commits = append([]string(nil), pr.Commits...)
		out = append(out, cp)
	}
	return out
}

// BranchSHA is the commit owner/name's branch points at in the stand-in's
// git repository, "" when there is no such branch.
func (s *Service) BranchSHA(ctx context.Context, owner, name, branch string) (string, error) {
	repo, ok := s.findRepo(owner, name)
	if !ok {
		return "", fmt.Errorf("emulator: GitHub stand-in has no repository %s/%s", owner, name)
	}
	return s.branchSHA(ctx, repo, branch)
}

func repoKey(owner, name string) string { return strings.ToLower(owner + "/" + name) }

// actor is who a request's credential acts as: an installation token's
// app as its bot, or a user token's user.
func (s *Service) actor(r *http.Request) (login, typ string) {
	tok := credential(r)
	if app, _, status, _ := s.installationOf(tok); status == 0 {
		return botLogin(app), "Bot"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ut := s.st.UserTokens[digest(tok)]; ut != nil {
		return ut.Login, "User"
	}
	return "", ""
}

// validationFailed answers GitHub's 422 with one entry in errors.
func validationFailed(w http.ResponseWriter, entry map[string]string) {
	entry["resource"] = "PullRequest"
	writeAPI(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed",
		"errors": []map[string]string{entry}, "documentation_url": docsPulls, "status": "422"})
}

// createPullRequest is POST /repos/{owner}/{repo}/pulls {title, head,
// base, body?, draft?}.
func (s *Service) createPullRequest(w http.ResponseWriter, r *http.Request) {
	repo, _, status, msg := s.visibleRepo(r, r.PathValue("owner"), r.PathValue("repo"))
	if status != 0 {
		writeAPIError(w, status, msg, docsPulls)
		return
	}
	var in struct {
		Title *string `json:"title"`
		Head  string  `json:"head"`
		Base  string  `json:"base"`
		Body  *string `json:"body"`
		Draft bool    `json:"draft"`
		Issue *int    `json:"issue"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		writeAPIError(w, http.StatusBadRequest, "Problems parsing JSON", docsPulls)
		return
	}
	switch {
	case in.Head == "":
		validationFailed(w, map[string]string{"field": "head", "code": "missing_field"})
		return
	case in.Base == "":
		validationFailed(w, map[string]string{"field": "base", "code": "missing_field"})
		return
	case in.Title == nil && in.Issue == nil:
		validationFailed(w, map[string]string{"field": "title", "code": "missing_field"})
		return
	case in.Issue != nil:
		validationFailed(w, map[string]string{"field": "issue", "code": "invalid"})
		return
	}
	head := in.Head
	if owner, branch, ok := strings.Cut(head, ":"); ok {
		if !strings.EqualFold(owner, repo.Owner) {
			// A head in a fork: the stand-in has no forks.
			validationFailed(w, map[string]string{"field": "head", "code": "invalid"})
			return
		}
		head = branch
	}
	ctx := r.Context()
	headSHA, err := s.branchSHA(ctx, repo, head)
	if err != nil {
		s.logfSafe("%v", err)
		writeAPIError(w, http.StatusInternalServerError, "Server Error", docsPulls)
		return
	}
	baseSHA, err := s.branchSHA(ctx, repo, in.Base)
	if err != nil {
		s.logfSafe("%v", err)
		writeAPIError(w, http.StatusInternalServerError, "Server Error", docsPulls)
		return
	}
	switch {
	case headSHA == "":
		validationFailed(w, map[string]string{"field": "head", "code": "invalid"})
		return
	case baseSHA == "":
		validationFailed(w, map[string]string{"field": "base", "code": "invalid"})
		return
	}
	dir := s.repoDir(repo.Owner, repo.Name)
	revs, err := runGit(ctx, dir, nil, nil, "rev-list", "--reverse", baseSHA+".."+headSHA)
	if err != nil {
		s.logfSafe("%v", err)
		writeAPIError(w, http.StatusInternalServerError, "Server Error", docsPulls)
		return
	}
	commits := strings.Fields(revs)
	if len(commits) == 0 {
		validationFailed(w, map[string]string{"code": "custom", "message": fmt.Sprintf("No commits between %s and %s", in.Base, head)})
		return
	}
	login, typ := s.actor(r)
	key := repoKey(repo.Owner, repo.Name)
	s.mu.Lock()
	for _, pr := range s.st.PullRequests[key] {
		if pr.State == "open" && pr.Head == head && pr.Base == in.Base {
			s.mu.Unlock()
			validationFailed(w, map[string]string{"code": "custom", "message": fmt.Sprintf("A pull request already exists for %s:%s.", repo.Owner, head)})
			return
		}
	}
	pr := &PullRequest{Number: len(s.st.PullRequests[key]) + 1, Head: head, Base: in.Base, HeadSHA: headSHA, BaseSHA: baseSHA,
		Commits: commits, Draft: in.Draft, State: "open", User: login, UserType: typ, CreatedAt: time.Now().UTC().Truncate(time.Second)}
	if in.Title != nil {
		pr.Title = *in.Title
	}
	if in.Body != nil {
		pr.Body = *in.Body
	}
	s.st.PullRequests[key] = append(s.st.PullRequests[key], pr)
	cp := *pr
	s.mu.Unlock()
	if err := s.save(); err != nil {
		writeAPIError(w, http.StatusInternalServerError, "Server Error", docsPulls)
		return
	}
	s.logfSafe("github: %s opened pull request #%d on %s/%s: %s -> %s (%d commits)", login, cp.Number, repo.Owner, repo.Name, head, in.Base, len(commits))
	w.Header().Set("Location", s.apiBase(r)+"/repos/"+repo.Owner+"/"+repo.Name+"/pulls/"+strconv.Itoa(cp.Number))
	writeAPI(w, http.StatusCreated, s.pullJSON(r, repo, cp))
}

// pullOf finds the request's pull request, answering 404 when there is none.
func (s *Service) pullOf(w http.ResponseWriter, r *http.Request, docs string) (Repository, PullRequest, bool) {
	repo, _, status, msg := s.visibleRepo(r, r.PathValue("owner"), r.PathValue("repo"))
	if status != 0 {
		writeAPIError(w, status, msg, docs)
		return Repository{}, PullRequest{}, false
	}
	n, err := strconv.Atoi(r.PathValue("number"))
	s.mu.Lock()
	prs := s.st.PullRequests[repoKey(repo.Owner, repo.Name)]
	var pr *PullRequest
	if err == nil && n >= 1 && n <= len(prs) {
		pr = prs[n-1]
	}
	var cp PullRequest
	if pr != nil {
		cp = *pr
		cp.Commits = append([]string(nil), pr.Commits...)
	}
	s.mu.Unlock()
	if pr == nil {
		writeAPIError(w, http.StatusNotFound, "Not Found", docs)
		return Repository{}, PullRequest{}, false
	}
	return repo, cp, true
}

func (s *Service) getPullRequest(w http.ResponseWriter, r *http.Request) {
	if repo, pr, ok := s.pullOf(w, r, docsPull); ok {
		writeAPI(w, http.StatusOK, s.pullJSON(r, repo, pr))
	}
}

// listPullRequests is GET /repos/{o}/{r}/pulls with GitHub's state
// (open, closed, all; default open), head ("owner:branch") and base
// filters, newest first.
func (s *Service) listPullRequests(w http.ResponseWriter, r *http.Request) {
	repo, _, status, msg := s.visibleRepo(r, r.PathValue("owner"), r.PathValue("repo"))
	if status != 0 {
		writeAPIError(w, status, msg, docsPulls)
		return
	}
	q := r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	var head string
	if h := q.Get("head"); h != "" {
		owner, branch, ok := strings.Cut(h, ":")
		if !ok || !strings.EqualFold(owner, repo.Owner) {
			head = "\x00" // another owner's branch: nothing matches
		} else {
			head = branch
		}
	}
	all := []map[string]any{}
	for _, pr := range s.PullRequests(repo.Owner, repo.Name) {
		if (state != "all" && pr.State != state) || (head != "" && pr.Head != head) || (q.Get("base") != "" && pr.Base != q.Get("base")) {
			continue
		}
		all = append([]map[string]any{s.pullJSON(r, repo, pr)}, all...)
	}
	writeAPI(w, http.StatusOK, pageOf(s, w, r, all))
}

// listPullRequestCommits is GET /repos/{o}/{r}/pulls/{n}/commits: the
// commits recorded when it was opened, read from git.
func (s *Service) listPullRequestCommits(w http.ResponseWriter, r *http.Request) {
	repo, pr, ok := s.pullOf(w, r, docsPullCommit)
	if !ok {
		return
	}
	dir := s.repoDir(repo.Owner, repo.Name)
	all := make([]map[string]any, 0, len(pr.Commits))
	for _, sha := range pr.Commits {
		out, err := runGit(r.Context(), dir, nil, nil, "show", "-s", "--format=%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%cI%x00%B", sha)
		if err != nil {
			s.logfSafe("%v", err)
			writeAPIError(w, http.StatusInternalServerError, "Server Error", docsPullCommit)
			return
		}
		f := strings.SplitN(out, "\x00", 7)
		if len(f) != 7 {
			writeAPIError(w, http.StatusInternalServerError, "Server Error", docsPullCommit)
			return
		}
		all = append(all, map[string]any{"sha": sha, "node_id": "C_" + sha[:16],
			"url":      s.apiBase(r) + "/repos/" + repo.Owner + "/" + repo.Name + "/commits/" + sha,
			"html_url": s.webBase(r) + "/" + repo.Owner + "/" + repo.Name + "/commit/" + sha,
			"commit": map[string]any{"message": strings.TrimSpace(f[6]),
				"author":    map[string]string{"name": f[0], "email": f[1], "date": f[2]},
				"committer": map[string]string{"name": f[3], "email": f[4], "date": f[5]}}})
	}
	writeAPI(w, http.StatusOK, pageOf(s, w, r, all))
}

// pullJSON is a pull request in GitHub's shape.
func (s *Service) pullJSON(r *http.Request, repo Repository, pr PullRequest) map[string]any {
	full := repo.Owner + "/" + repo.Name
	api := s.apiBase(r) + "/repos/" + full
	html := s.webBase(r) + "/" + full + "/pull/" + strconv.Itoa(pr.Number)
	var body any
	if pr.Body != "" {
		body = pr.Body
	}
	user := map[string]any{"login": pr.User, "type": pr.UserType}
	ref := func(branch, sha string) map[string]any {
		return map[string]any{"label": repo.Owner + ":" + branch, "ref": branch, "sha": sha,
			"user": map[string]any{"login": repo.Owner}, "repo": s.repoJSON(r, repo)}
	}
	at := pr.CreatedAt.Format(time.RFC3339)
	return map[string]any{
		"id": int64(repo.ID)*1000 + int64(pr.Number), "node_id": fmt.Sprintf("PR_%d_%d", repo.ID, pr.Number), "number": pr.Number,
		"url": api + "/pulls/" + strconv.Itoa(pr.Number), "html_url": html, "diff_url": html + ".diff", "patch_url": html + ".patch",
		"issue_url": api + "/issues/" + strconv.Itoa(pr.Number), "commits_url": api + "/pulls/" + strconv.Itoa(pr.Number) + "/commits",
		"state": pr.State, "locked": false, "title": pr.Title, "body": body, "user": user, "draft": pr.Draft,
		"created_at": at, "updated_at": at, "closed_at": nil, "merged_at": nil, "merge_commit_sha": nil,
		"merged": false, "mergeable": nil, "commits": len(pr.Commits),
		"head": ref(pr.Head, pr.HeadSHA), "base": ref(pr.Base, pr.BaseSHA),
		"labels": []any{}, "requested_reviewers": []any{}, "assignees": []any{},
	}
}
