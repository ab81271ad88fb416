package github

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// Prefix is where the web routes (the OAuth pages, the token exchange, the
// avatars) are served on the emulator's own address: what
// https://github.com/<path> is rewritten to.
const Prefix = "/github"

// APIPrefix is where the REST API is served: what https://api.github.com
// is rewritten to (go-github's BaseURL is the emulator's URL + APIPrefix + "/").
const APIPrefix = "/github/api"

// RealHosts are GitHub's hosts the outbound gateway sends here, with the
// prefix their paths go under.
var RealHosts = map[string]string{"github.com": Prefix, "api.github.com": APIPrefix}

const (
	stateFileName = "github.json"
	stateVersion  = 1

	// codeLifetime is how long an authorization code may be exchanged:
	// GitHub documents ten minutes.
	codeLifetime = 10 * time.Minute
	// installationTokenLifetime is GitHub's: an hour.
	installationTokenLifetime = time.Hour
)

// The default configuration: one OAuth app, the two local users, one
// GitHub App installed on one organization. None of it is a secret.
const (
	// DefaultOAuthClientID and DefaultOAuthClientSecret are the OAuth
	// client examples/yaml deploys with (its githubOAuth defaults).
	DefaultOAuthClientID     = "demo-oauth-client-id"
	DefaultOAuthClientSecret = "demo-oauth-client-secret"
	// DefaultCallbackURL is the default app's registered callback: a
	// loopback URL, so a web UI on any port of 127.0.0.1 may use it, as on
	// GitHub.
	DefaultCallbackURL = "http://127.0.0.1/api/auth/callback/github"
	// DefaultAppID and DefaultInstallationID are examples/yaml's githubApp
	// defaults; the app has no public key until one is configured.
	DefaultAppID          = "123456"
	DefaultInstallationID = int64(7890123)
	// DefaultOrg is the organization the default app is installed on and
	// DefaultLogin a member of.
	DefaultOrg = "openinspect-local"
	// DefaultLogin is the local user a person signs in as; OutsiderLogin
	// a second one, outside the organization (a pending invitation only).
	DefaultLogin  = "local-dev"
	OutsiderLogin = "outsider"
)

// User is a local GitHub account a person can sign in as.
type User struct {
	Login  string       `json:"login"`
	ID     int64        `json:"id"`
	Name   string       `json:"name,omitempty"`
	Emails []Email      `json:"emails"`
	Orgs   []Membership `json:"orgs,omitempty"`
}

// Email is one of a user's addresses (GET /user/emails).
type Email struct {
	Address    string `json:"email"`
	Primary    bool   `json:"primary"`
	Verified   bool   `json:"verified"`
	Visibility string `json:"visibility,omitempty"` // "public", "private" or "" (null)
}

// Membership is a user's membership of an organization.
type Membership struct {
	Org   string `json:"org"`
	State string `json:"state"` // "active" or "pending"
	Role  string `json:"role"`  // "member" or "admin"
}

// OAuthApp is a client of the OAuth web flow (an OAuth app, or a GitHub
// App's client).
type OAuthApp struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret,omitempty"` // only in Options and admin requests; stored hashed
	Name         string `json:"name,omitempty"`
	CallbackURL  string `json:"callback_url"`
}

// App is a GitHub App: its JWTs are checked against PublicKeyPEM.
type App struct {
	ID            string         `json:"id"` // the numeric app ID, as a string
	Name          string         `json:"name,omitempty"`
	ClientID      string         `json:"client_id,omitempty"` // a JWT's iss may be it too
	PublicKeyPEM  string         `json:"public_key,omitempty"`
	Installations []Installation `json:"installations"`
}

// Installation is an app installed on an account, with the repositories
// it may use.
type Installation struct {
	ID           int64        `json:"id"`
	Account      string       `json:"account"`
	Repositories []Repository `json:"repositories"`
}

// Repository is one repository of an installation.
type Repository struct {
	ID            int64    `json:"id"`
	Owner         string   `json:"owner"`
	Name          string   `json:"name"`
	Description   string   `json:"description,omitempty"`
	Private       bool     `json:"private"`
	Archived      bool     `json:"archived,omitempty"`
	DefaultBranch string   `json:"default_branch"`
	Branches      []string `json:"branches"` // the default branch first
	Language      string   `json:"language,omitempty"`
	Topics        []string `json:"topics,omitempty"`
}

// DefaultUsers are the local users when Options.Users is nil.
func DefaultUsers() []User {
	return []User{
		{Login: DefaultLogin, ID: 1001, Name: "Local Developer",
			Emails: []Email{
				{Address: "local-dev@example.com", Primary: true, Verified: true, Visibility: "private"},
				{Address: "local-dev@unverified.example.com", Verified: false},
			},
			Orgs: []Membership{{Org: DefaultOrg, State: "active", Role: "admin"}}},
		{Login: OutsiderLogin, ID: 1002, Name: "Outside Contributor",
			Emails: []Email{{Address: "outsider@example.org", Primary: true, Verified: true, Visibility: "public"}},
			Orgs:   []Membership{{Org: DefaultOrg, State: "pending", Role: "member"}}},
	}
}

// DefaultApps is the GitHub App when Options.Apps is nil: installed on
// DefaultOrg with two repositories, and no public key yet (the demo
// configures the public half of the key pair it generates).
func DefaultApps() []App {
	return []App{{ID: DefaultAppID, Name: "Open-Inspect (local)", Installations: []Installation{{
		ID: DefaultInstallationID, Account: DefaultOrg,
		Repositories: []Repository{
			{ID: 700001, Owner: DefaultOrg, Name: "hello-world", Description: "A small service to start sessions on",
				DefaultBranch: "main", Branches: []string{"main", "feature/sign-in"}, Language: "Go", Topics: []string{"demo"}},
			{ID: 700002, Owner: DefaultOrg, Name: "docs-site", Description: "The documentation site", Private: true,
				DefaultBranch: "main", Branches: []string{"main"}, Language: "TypeScript"},
		},
	}}}}
}

// Options configures the stand-in. Nil lists take the defaults; the admin
// routes (admin.go) add to or replace what the state holds.
type Options struct {
	Users     []User
	OAuthApps []OAuthApp // nil: DefaultOAuthClientID with DefaultCallbackURL
	Apps      []App
	// BrowserAddr is where Start listens for the browser origin (https);
	// "" is 127.0.0.1:0.
	BrowserAddr string
	// BaseURL is the emulator's URL once it listens, for the URLs its
	// answers carry when no browser origin runs.
	BaseURL func() string
	Logf    func(format string, args ...any)
}

// Service is the stand-in. mu guards st; it is never held while the file
// is written.
type Service struct {
	core      *core.Core
	mux       *http.ServeMux
	dataDir   string
	baseURL   func() string
	logf      func(format string, args ...any)
	stateFile *core.StateFile
	addr      string
	formKey   []byte // binds an authorize page's form to its request (oauth.go)

	browser *browserOrigin // nil until Start

	mu sync.Mutex
	st *state
	// gitMu serialises making a repository on disk (git.go); git itself
	// locks refs for concurrent pushes.
	gitMu sync.Mutex
}

// state is github.json.
type state struct {
	Version   int                  `json:"version"`
	Users     map[string]*User     `json:"users"`      // by login, lower case
	OAuthApps map[string]*oauthApp `json:"oauth_apps"` // by client ID
	Apps      map[string]*App      `json:"apps"`       // by app ID
	// Codes, UserTokens and InstallationTokens are keyed by the SHA-256 of
	// the value handed out.
	Codes              map[string]*authCode          `json:"codes"`
	UserTokens         map[string]*userToken         `json:"user_tokens"`
	InstallationTokens map[string]*installationToken `json:"installation_tokens"`
	SignIns            []SignIn                      `json:"sign_ins"`
	// PullRequests are the pull requests opened, by "owner/name" (lower
	// case), in the order they were opened (pulls.go).
	PullRequests map[string][]*PullRequest `json:"pull_requests"`
}

// oauthApp is an OAuthApp as stored: its secret's digest only.
type oauthApp struct {
	ClientID     string `json:"client_id"`
	SecretSHA256 string `json:"client_secret_sha256"`
	Name         string `json:"name,omitempty"`
	CallbackURL  string `json:"callback_url"`
}

// authCode is an issued authorization code.
type authCode struct {
	ClientID    string    `json:"client_id"`
	Login       string    `json:"login"`
	RedirectURI string    `json:"redirect_uri,omitempty"` // as given to authorize ("" when absent)
	Scope       string    `json:"scope"`
	Challenge   string    `json:"code_challenge,omitempty"`
	ExpiresAt   time.Time `json:"expires_at"`
}

type userToken struct {
	Login     string    `json:"login"`
	ClientID  string    `json:"client_id"`
	Scope     string    `json:"scope"`
	CreatedAt time.Time `json:"created_at"`
}

type installationToken struct {
	AppID          string    `json:"app_id"`
	InstallationID int64     `json:"installation_id"`
	ExpiresAt      time.Time `json:"expires_at"`
}

// SignIn is one completed authorization: who signed in to which client.
type SignIn struct {
	Login    string    `json:"login"`
	ClientID string    `json:"client_id"`
	At       time.Time `json:"at"`
}

// New loads github.json from dataDir (if any), then applies opts: its
// users, OAuth apps and apps replace those of the same key.
func New(opts Options, dataDir string, c *core.Core) (*Service, error) {
	s := &Service{core: c, mux: c.Mux(), dataDir: dataDir, baseURL: opts.BaseURL, logf: opts.Logf, addr: opts.BrowserAddr,
		stateFile: core.NewStateFile(filepath.Join(dataDir, stateFileName), ".github-*.json", "GitHub state"),
		formKey:   make([]byte, 32)}
	_, _ = rand.Read(s.formKey)
	if s.baseURL == nil {
		s.baseURL = func() string { return "" }
	}
	if s.addr == "" {
		s.addr = "127.0.0.1:0"
	}
	s.st = &state{Version: stateVersion}
	if err := core.LoadState(s.stateFile.Path(), "GitHub state", stateVersion, s.st); err != nil {
		return nil, err
	}
	core.NonNil(&s.st.Users)
	core.NonNil(&s.st.OAuthApps)
	core.NonNil(&s.st.Apps)
	core.NonNil(&s.st.Codes)
	core.NonNil(&s.st.UserTokens)
	core.NonNil(&s.st.InstallationTokens)
	core.NonNil(&s.st.PullRequests)
	core.DropNil(s.st.Users)
	core.DropNil(s.st.OAuthApps)
	core.DropNil(s.st.Apps)
	core.DropNil(s.st.Codes)
	core.DropNil(s.st.UserTokens)
	core.DropNil(s.st.InstallationTokens)

	users, apps, clients := opts.Users, opts.Apps, opts.OAuthApps
	if users == nil {
		users = DefaultUsers()
	}
	if apps == nil {
		apps = DefaultApps()
	}
	if clients == nil {
		clients = []OAuthApp{{ClientID: DefaultOAuthClientID, ClientSecret: DefaultOAuthClientSecret,
			Name: "Open-Inspect (local)", CallbackURL: DefaultCallbackURL}}
	}
	for _, u := range users {
		if err := s.putUserLocked(u); err != nil {
			return nil, err
		}
	}
	for _, a := range apps {
		if err := s.putAppLocked(a, false); err != nil {
			return nil, err
		}
	}
	for _, c := range clients {
		if err := s.putOAuthAppLocked(c); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Register mounts the web routes, the REST routes and the admin routes.
func (s *Service) Register() {
	s.web("GET /login/oauth/authorize", s.authorizePage)
	s.web("POST /login/oauth/authorize", s.authorize)
	s.web("POST /login/oauth/access_token", s.accessToken)
	s.web("GET /avatars/u/{id}", s.avatar)

	s.api("GET /user", s.withUser(s.getUser))
	s.api("GET /user/emails", s.withUser(s.getEmails))
	s.api("GET /user/memberships/orgs/{org}", s.withUser(s.getMembership))
	s.api("POST /app/installations/{installation_id}/access_tokens", s.createInstallationToken)
	s.api("GET /installation/repositories", s.withInstallation(s.listInstallationRepositories))
	s.api("GET /repos/{owner}/{repo}", s.getRepository)
	s.api("GET /repos/{owner}/{repo}/branches", s.listBranches)
	s.api("POST /repos/{owner}/{repo}/pulls", s.createPullRequest)
	s.api("GET /repos/{owner}/{repo}/pulls", s.listPullRequests)
	s.api("GET /repos/{owner}/{repo}/pulls/{number}", s.getPullRequest)
	s.api("GET /repos/{owner}/{repo}/pulls/{number}/commits", s.listPullRequestCommits)
	// git's smart HTTP protocol (git.go), on github.com's paths: one
	// pattern under Prefix, as wildcards of owner and repository would
	// overlap the API's catch-all below.
	s.mux.HandleFunc(Prefix+"/{path...}", s.gitRoute)
	const other = APIPrefix + "/{path...}"
	s.mux.HandleFunc(other, func(w http.ResponseWriter, r *http.Request) {
		s.core.Count(r.Method+" "+other, false)
		writeAPIError(w, http.StatusNotFound, "Not Found", docsRoot)
	})
	s.registerAdmin()
}

// web registers a route of github.com under Prefix; api one of
// api.github.com under APIPrefix. Both count, then apply faults.
func (s *Service) web(pattern string, h http.HandlerFunc) {
	s.route(Prefix, pattern, h, webFaultAnswers)
}
func (s *Service) api(pattern string, h http.HandlerFunc) {
	s.route(APIPrefix, pattern, h, apiFaultAnswers)
}

func (s *Service) route(prefix, pattern string, h http.HandlerFunc, answers core.FaultAnswers) {
	method, path, ok := strings.Cut(pattern, " ")
	if !ok || !strings.HasPrefix(path, "/") {
		panic("emulator: GitHub pattern must be \"METHOD /path\": " + pattern)
	}
	full := method + " " + prefix + path
	s.mux.HandleFunc(full, func(w http.ResponseWriter, r *http.Request) {
		s.core.Count(full, false)
		delay, f := s.core.TakeFaults(r.Method, prefix+path)
		if s.core.ServeFault(w, r, delay, f, answers) {
			return
		}
		w.Header().Set("X-GitHub-Request-Id", strings.ToUpper(core.NewHexID()[:16]))
		h(w, r)
	})
}

// Calls is the number of requests made under Prefix, matched or not.
func (s *Service) Calls() int {
	return s.core.CountsWhere(func(k string) bool {
		_, route, ok := strings.Cut(k, " ")
		return ok && (route == Prefix || strings.HasPrefix(route, Prefix+"/"))
	})
}

func (s *Service) save() error { return s.stateFile.Save(&s.mu, s.st) }

// Save writes github.json.
func (s *Service) Save() error { return s.save() }

func (s *Service) logfSafe(format string, args ...any) {
	if s.logf != nil {
		s.logf(format, args...)
	}
}

// digest is how a secret is kept: the hex SHA-256 of its value.
func digest(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// sameDigest compares a presented secret with a stored digest in constant
// time.
func sameDigest(presented, stored string) bool {
	return subtle.ConstantTimeCompare([]byte(digest(presented)), []byte(stored)) == 1
}

// randomToken is prefix followed by n random characters of GitHub's token
// alphabet.
func randomToken(prefix string, n int) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return prefix + string(b)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (s *Service) putUserLocked(u User) error {
	if u.Login == "" || u.ID <= 0 {
		return fmt.Errorf("emulator: a GitHub user needs a login and a positive id: %+v", u)
	}
	for _, m := range u.Orgs {
		if m.Org == "" || (m.State != "active" && m.State != "pending") {
			return fmt.Errorf("emulator: GitHub user %s: a membership needs an org and the state active or pending", u.Login)
		}
	}
	cp := u
	cp.Emails = append([]Email(nil), u.Emails...)
	cp.Orgs = append([]Membership(nil), u.Orgs...)
	s.st.Users[strings.ToLower(u.Login)] = &cp
	return nil
}

func (s *Service) putOAuthAppLocked(a OAuthApp) error {
	if a.ClientID == "" || a.ClientSecret == "" {
		return fmt.Errorf("emulator: a GitHub OAuth app needs a client ID and a client secret")
	}
	if _, err := parseCallback(a.CallbackURL); err != nil {
		return fmt.Errorf("emulator: GitHub OAuth app %s: %w", a.ClientID, err)
	}
	s.st.OAuthApps[a.ClientID] = &oauthApp{ClientID: a.ClientID, SecretSHA256: digest(a.ClientSecret), Name: a.Name, CallbackURL: a.CallbackURL}
	return nil
}

// putAppLocked stores a; keepKey keeps a configured public key when a
// carries none (an admin PUT of its installations only).
func (s *Service) putAppLocked(a App, keepKey bool) error {
	if a.ID == "" {
		return fmt.Errorf("emulator: a GitHub App needs an id")
	}
	if a.PublicKeyPEM != "" {
		if _, err := parsePublicKey(a.PublicKeyPEM); err != nil {
			return fmt.Errorf("emulator: GitHub App %s: %w", a.ID, err)
		}
	} else if old := s.st.Apps[a.ID]; keepKey && old != nil {
		a.PublicKeyPEM = old.PublicKeyPEM
	}
	for _, in := range a.Installations {
		if in.ID <= 0 || in.Account == "" {
			return fmt.Errorf("emulator: GitHub App %s: an installation needs a positive id and an account", a.ID)
		}
		for _, r := range in.Repositories {
			if r.Owner == "" || r.Name == "" || r.ID <= 0 || r.DefaultBranch == "" {
				return fmt.Errorf("emulator: GitHub App %s: a repository needs an id, owner, name and default branch", a.ID)
			}
		}
	}
	cp := a
	s.st.Apps[a.ID] = &cp
	return nil
}
