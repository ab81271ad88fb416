package github

// The REST routes, in GitHub's shapes and error forms.

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// The documentation URLs GitHub's API errors carry.
const (
	docsRoot       = "https://docs.github.com/rest"
	docsUser       = "https://docs.github.com/rest/users/users#get-the-authenticated-user"
	docsMembership = "https://docs.github.com/rest/orgs/members#get-an-organization-membership-for-the-authenticated-user"
	docsAccessTok  = "https://docs.github.com/rest/apps/apps#create-an-installation-access-token-for-an-app"
	docsRepo       = "https://docs.github.com/rest/repos/repos#get-a-repository"
	docsBranches   = "https://docs.github.com/rest/branches/branches#list-branches"
	docsInstRepos  = "https://docs.github.com/rest/apps/installations#list-repositories-accessible-to-the-app-installation"
)

// created is when every object of the stand-in says it was made: a fixed
// date, so answers do not change between calls.
var created = time.Date(2024, 1, 15, 9, 0, 0, 0, time.UTC).Format(time.RFC3339)

// writeAPIError answers {message, documentation_url, status} as GitHub
// does (status as a string).
func writeAPIError(w http.ResponseWriter, status int, message, docs string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"message": message, "documentation_url": docs, "status": strconv.Itoa(status)})
}

func writeAPI(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-GitHub-Api-Version-Selected", "2022-11-28")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// credential is the token of an Authorization header ("Bearer" or
// "token"), or "".
func credential(r *http.Request) string {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !ok || (!strings.EqualFold(scheme, "bearer") && !strings.EqualFold(scheme, "token")) {
		return ""
	}
	return strings.TrimSpace(tok)
}

// withUser serves h for a valid user token, with its user.
func (s *Service) withUser(h func(http.ResponseWriter, *http.Request, User)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tok := credential(r)
		if tok == "" {
			writeAPIError(w, http.StatusUnauthorized, "Requires authentication", docsUser)
			return
		}
		s.mu.Lock()
		ut := s.st.UserTokens[digest(tok)]
		_, isInstallation := s.st.InstallationTokens[digest(tok)]
		var u User
		if ut != nil && s.st.Users[strings.ToLower(ut.Login)] != nil {
			u = *s.st.Users[strings.ToLower(ut.Login)]
		}
		s.mu.Unlock()
		switch {
		case isInstallation:
			writeAPIError(w, http.StatusForbidden, "Resource not accessible by integration", docsUser)
		case ut == nil || u.Login == "":
			writeAPIError(w, http.StatusUnauthorized, "Bad credentials", docsRoot)
		default:
			h(w, r, u)
		}
	}
}

// withInstallation serves h for a valid, unexpired installation token.
func (s *Service) withInstallation(h func(http.ResponseWriter, *http.Request, *App, Installation)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		app, in, status, msg := s.installationOf(credential(r))
		if status != 0 {
			writeAPIError(w, status, msg, docsInstRepos)
			return
		}
		h(w, r, app, in)
	}
}

// installationOf finds the installation an installation token was issued
// for; status is non-zero (with GitHub's message) when there is none.
func (s *Service) installationOf(tok string) (*App, Installation, int, string) {
	if tok == "" {
		return nil, Installation{}, http.StatusUnauthorized, "Requires authentication"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.st.InstallationTokens[digest(tok)]
	if it == nil || time.Now().After(it.ExpiresAt) {
		if s.st.UserTokens[digest(tok)] != nil {
			return nil, Installation{}, http.StatusForbidden, "You must authenticate with an installation access token in order to list repositories for an installation."
		}
		return nil, Installation{}, http.StatusUnauthorized, "Bad credentials"
	}
	app := s.st.Apps[it.AppID]
	if app == nil {
		return nil, Installation{}, http.StatusUnauthorized, "Bad credentials"
	}
	for _, in := range app.Installations {
		if in.ID == it.InstallationID {
			cp := *app
			return &cp, in, 0, ""
		}
	}
	return nil, Installation{}, http.StatusUnauthorized, "Bad credentials"
}

// stableID is a positive number derived from a name, for the IDs of
// accounts the configuration names but numbers nowhere (organizations).
func stableID(kind, name string) int64 {
	h := fnv.New32a()
	h.Write([]byte(kind + "/" + strings.ToLower(name)))
	return 2_000_000 + int64(h.Sum32()%1_000_000)
}

// apiBase is the API's URL as the client sees it: https://api.github.com
// for a script's request through the outbound gateway (X-Forwarded-Host),
// else the emulator's own URL and APIPrefix.
func (s *Service) apiBase(r *http.Request) string {
	if h := r.Header.Get("X-Forwarded-Host"); h != "" {
		proto := r.Header.Get("X-Forwarded-Proto")
		if proto == "" {
			proto = "https"
		}
		return proto + "://" + h
	}
	return s.baseURL() + APIPrefix
}

// webBase is github.com as the client sees it.
func (s *Service) webBase(r *http.Request) string {
	if h := r.Header.Get("X-Forwarded-Host"); h != "" && h != "api.github.com" {
		return "https://" + h
	}
	return "https://github.com"
}

func (s *Service) userJSON(r *http.Request, u User) map[string]any {
	var public any
	for _, e := range u.Emails {
		if e.Primary && e.Verified && e.Visibility == "public" {
			public = e.Address
		}
	}
	var name any
	if u.Name != "" {
		name = u.Name
	}
	return map[string]any{
		"login": u.Login, "id": u.ID, "node_id": fmt.Sprintf("U_%d", u.ID), "avatar_url": s.avatarURL(u.ID), "gravatar_id": "",
		"url": s.apiBase(r) + "/users/" + u.Login, "html_url": s.webBase(r) + "/" + u.Login, "type": "User", "site_admin": false,
		"name": name, "company": nil, "blog": "", "location": nil, "email": public, "hireable": nil, "bio": nil,
		"twitter_username": nil, "public_repos": 0, "public_gists": 0, "followers": 0, "following": 0,
		"created_at": created, "updated_at": created,
	}
}

func (s *Service) getUser(w http.ResponseWriter, r *http.Request, u User) {
	writeAPI(w, http.StatusOK, s.userJSON(r, u))
}

// pageOf serves one page of items with GitHub's per_page (default 30, at
// most 100), page and Link header.
func pageOf[T any](s *Service, w http.ResponseWriter, r *http.Request, items []T) []T {
	page, perPage := core.PageParams(r, 30, 100)
	out, info := core.Paginate(items, page, perPage)
	if info.TotalPages > 1 {
		var links []string
		link := func(p int, rel string) {
			q := r.URL.Query()
			q.Set("page", strconv.Itoa(p))
			q.Set("per_page", strconv.Itoa(perPage))
			path := strings.TrimPrefix(r.URL.Path, APIPrefix)
			links = append(links, fmt.Sprintf("<%s%s?%s>; rel=%q", s.apiBase(r), path, q.Encode(), rel))
		}
		if page > 1 {
			link(page-1, "prev")
		}
		if page < info.TotalPages {
			link(page+1, "next")
			link(info.TotalPages, "last")
		}
		if page > 1 {
			link(1, "first")
		}
		w.Header().Set("Link", strings.Join(links, ", "))
	}
	return out
}

func (s *Service) getEmails(w http.ResponseWriter, r *http.Request, u User) {
	all := make([]map[string]any, 0, len(u.Emails))
	for _, e := range u.Emails {
		var vis any
		if e.Visibility != "" {
			vis = e.Visibility
		}
		all = append(all, map[string]any{"email": e.Address, "primary": e.Primary, "verified": e.Verified, "visibility": vis})
	}
	writeAPI(w, http.StatusOK, pageOf(s, w, r, all))
}

func (s *Service) orgJSON(r *http.Request, org string) map[string]any {
	id := stableID("org", org)
	return map[string]any{"login": org, "id": id, "node_id": fmt.Sprintf("O_%d", id), "url": s.apiBase(r) + "/orgs/" + org,
		"avatar_url": s.avatarURL(id), "description": nil}
}

func (s *Service) getMembership(w http.ResponseWriter, r *http.Request, u User) {
	org := r.PathValue("org")
	for _, m := range u.Orgs {
		if !strings.EqualFold(m.Org, org) {
			continue
		}
		writeAPI(w, http.StatusOK, map[string]any{
			"url": s.apiBase(r) + "/orgs/" + m.Org + "/memberships/" + u.Login, "state": m.State, "role": m.Role,
			"organization_url": s.apiBase(r) + "/orgs/" + m.Org, "organization": s.orgJSON(r, m.Org),
			"user": map[string]any{"login": u.Login, "id": u.ID, "type": "User", "avatar_url": s.avatarURL(u.ID)},
		})
		return
	}
	writeAPIError(w, http.StatusNotFound, "Not Found", docsMembership)
}

// createInstallationToken is POST /app/installations/{id}/access_tokens,
// authenticated by the app's JWT.
func (s *Service) createInstallationToken(w http.ResponseWriter, r *http.Request) {
	jwt := credential(r)
	if jwt == "" {
		writeAPIError(w, http.StatusUnauthorized, "Requires authentication", docsAccessTok)
		return
	}
	id, err := strconv.ParseInt(r.PathValue("installation_id"), 10, 64)
	now := time.Now().UTC()
	s.mu.Lock()
	app, jwtErr := s.appForJWT(jwt, now)
	var in *Installation
	if jwtErr == nil && err == nil {
		for i := range app.Installations {
			if app.Installations[i].ID == id {
				in = &app.Installations[i]
			}
		}
	}
	token := randomToken("ghs_", 36)
	expires := now.Add(installationTokenLifetime).Truncate(time.Second)
	if in != nil {
		s.st.InstallationTokens[digest(token)] = &installationToken{AppID: app.ID, InstallationID: in.ID, ExpiresAt: expires}
		s.dropExpiredLocked(now)
	}
	s.mu.Unlock()
	var je *jwtError
	switch {
	case errors.As(jwtErr, &je):
		s.logfSafe("github: JWT refused for POST /app/installations/%s/access_tokens: %s", r.PathValue("installation_id"), je.why)
		writeAPIError(w, http.StatusUnauthorized, je.message, docsRoot)
		return
	case in == nil:
		writeAPIError(w, http.StatusNotFound, "Not Found", docsAccessTok)
		return
	}
	if err := s.save(); err != nil {
		writeAPIError(w, http.StatusInternalServerError, "Server Error", docsAccessTok)
		return
	}
	s.logfSafe("github: issued an installation token for app %s installation %d", app.ID, in.ID)
	writeAPI(w, http.StatusCreated, map[string]any{
		"token": token, "expires_at": expires.Format(time.RFC3339),
		"permissions":          map[string]string{"contents": "write", "metadata": "read", "pull_requests": "write"},
		"repository_selection": "selected",
	})
}

func (s *Service) repoJSON(r *http.Request, repo Repository) map[string]any {
	ownerType, ownerID := "Organization", stableID("org", repo.Owner)
	s.mu.Lock()
	if u := s.st.Users[strings.ToLower(repo.Owner)]; u != nil {
		ownerType, ownerID = "User", u.ID
	}
	s.mu.Unlock()
	var desc, lang any
	if repo.Description != "" {
		desc = repo.Description
	}
	if repo.Language != "" {
		lang = repo.Language
	}
	visibility := "public"
	if repo.Private {
		visibility = "private"
	}
	topics := repo.Topics
	if topics == nil {
		topics = []string{}
	}
	full := repo.Owner + "/" + repo.Name
	return map[string]any{
		"id": repo.ID, "node_id": fmt.Sprintf("R_%d", repo.ID), "name": repo.Name, "full_name": full, "private": repo.Private,
		"owner": map[string]any{"login": repo.Owner, "id": ownerID, "type": ownerType, "site_admin": false,
			"avatar_url": s.avatarURL(ownerID), "url": s.apiBase(r) + "/users/" + repo.Owner, "html_url": s.webBase(r) + "/" + repo.Owner},
		"html_url": s.webBase(r) + "/" + full, "description": desc, "fork": false, "url": s.apiBase(r) + "/repos/" + full,
		"archived": repo.Archived, "disabled": false, "visibility": visibility, "default_branch": repo.DefaultBranch,
		"language": lang, "topics": topics, "created_at": created, "updated_at": created, "pushed_at": created,
		"clone_url": s.webBase(r) + "/" + full + ".git",
	}
}

func (s *Service) listInstallationRepositories(w http.ResponseWriter, r *http.Request, _ *App, in Installation) {
	repos := append([]Repository(nil), in.Repositories...)
	sort.Slice(repos, func(i, j int) bool { return repos[i].ID < repos[j].ID })
	page := pageOf(s, w, r, repos)
	out := make([]map[string]any, 0, len(page))
	for _, repo := range page {
		out = append(out, s.repoJSON(r, repo))
	}
	writeAPI(w, http.StatusOK, map[string]any{"total_count": len(repos), "repository_selection": "selected", "repositories": out})
}

// visibleRepo finds owner/name for the request's credential: an
// installation token sees its installation's repositories; a user token
// those owned by the user or an organization they are an active member of.
func (s *Service) visibleRepo(r *http.Request, owner, name string) (Repository, string, int, string) {
	tok := credential(r)
	if tok == "" {
		return Repository{}, "", http.StatusUnauthorized, "Requires authentication"
	}
	if _, in, status, _ := s.installationOf(tok); status == 0 {
		for _, repo := range in.Repositories {
			if strings.EqualFold(repo.Owner, owner) && strings.EqualFold(repo.Name, name) {
				return repo, in.Account, 0, ""
			}
		}
		return Repository{}, "", http.StatusNotFound, "Not Found"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ut := s.st.UserTokens[digest(tok)]
	if ut == nil {
		return Repository{}, "", http.StatusUnauthorized, "Bad credentials"
	}
	u := s.st.Users[strings.ToLower(ut.Login)]
	allowed := func(account string) bool {
		if u == nil {
			return false
		}
		if strings.EqualFold(account, u.Login) {
			return true
		}
		for _, m := range u.Orgs {
			if strings.EqualFold(m.Org, account) && m.State == "active" {
				return true
			}
		}
		return false
	}
	for _, app := range s.st.Apps {
		for _, in := range app.Installations {
			for _, repo := range in.Repositories {
				if strings.EqualFold(repo.Owner, owner) && strings.EqualFold(repo.Name, name) && allowed(repo.Owner) {
					return repo, in.Account, 0, ""
				}
			}
		}
	}
	return Repository{}, "", http.StatusNotFound, "Not Found"
}

func (s *Service) getRepository(w http.ResponseWriter, r *http.Request) {
	repo, _, status, msg := s.visibleRepo(r, r.PathValue("owner"), r.PathValue("repo"))
	if status != 0 {
		writeAPIError(w, status, msg, docsRepo)
		return
	}
	writeAPI(w, http.StatusOK, s.repoJSON(r, repo))
}

func (s *Service) listBranches(w http.ResponseWriter, r *http.Request) {
	repo, _, status, msg := s.visibleRepo(r, r.PathValue("owner"), r.PathValue("repo"))
	if status != 0 {
		writeAPIError(w, status, msg, docsBranches)
		return
	}
	// The branches are the git repository's (git.go): the seeded ones and
	// whatever was pushed since.
	heads, err := s.branchHeads(r.Context(), repo)
	if err != nil {
		s.logfSafe("%v", err)
		writeAPIError(w, http.StatusInternalServerError, "Server Error", docsBranches)
		return
	}
	all := make([]map[string]any, 0, len(heads))
	for _, h := range heads {
		b, sha := h[0], h[1]
		all = append(all, map[string]any{"name": b, "protected": b == repo.DefaultBranch,
			"commit": map[string]string{"sha": sha, "url": s.apiBase(r) + "/repos/" + repo.Owner + "/" + repo.Name + "/commits/" + sha}})
	}
	writeAPI(w, http.StatusOK, pageOf(s, w, r, all))
}

// avatarURL is where a browser loads an account's picture: the stand-in's
// own origin, so a page showing it makes no request off the machine.
func (s *Service) avatarURL(id int64) string {
	return s.BrowserURL() + "/avatars/u/" + strconv.FormatInt(id, 10) + "?v=4"
}
