package github

// The OAuth web flow: the authorize page, its form, and the code exchange.

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"mime"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"time"
)

// The documentation GitHub's OAuth errors point to.
const (
	docsAuthorizeErrors = "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-authorization-request-errors/"
	docsTokenErrors     = "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors/"
)

// codeChallengePattern is what RFC 7636 allows an S256 challenge to be: the
// base64url encoding, unpadded, of a SHA-256 digest.
var codeChallengePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)

// authorizeRequest is what GET and POST /login/oauth/authorize carry.
type authorizeRequest struct {
	ClientID            string
	RedirectURI         string // as given; "" when absent
	Scope               string
	State               string
	Login               string // the suggested account
	CodeChallenge       string
	CodeChallengeMethod string
}

func readAuthorizeRequest(v url.Values) authorizeRequest {
	return authorizeRequest{
		ClientID: v.Get("client_id"), RedirectURI: v.Get("redirect_uri"), Scope: v.Get("scope"), State: v.Get("state"),
		Login: v.Get("login"), CodeChallenge: v.Get("code_challenge"), CodeChallengeMethod: v.Get("code_challenge_method"),
	}
}

// values are the parameters the page's form carries back (the suggested
// login is not one: the form's button names the account chosen).
func (a authorizeRequest) values() url.Values {
	v := url.Values{}
	for k, val := range map[string]string{"client_id": a.ClientID, "redirect_uri": a.RedirectURI, "scope": a.Scope, "state": a.State,
		"code_challenge": a.CodeChallenge, "code_challenge_method": a.CodeChallengeMethod} {
		if val != "" {
			v.Set(k, val)
		}
	}
	return v
}

// parseCallback reads a registered callback URL: absolute http(s), no
// fragment.
func parseCallback(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Fragment != "" {
		return nil, fmt.Errorf("callback URL %q is not an absolute http(s) URL without a fragment", raw)
	}
	return u, nil
}

// redirectAllowed is GitHub's rule for a redirect_uri against the
// registered callback: the same scheme, host and port, and a path equal to
// or below the callback's; a loopback callback (127.0.0.1 or [::1]) takes
// any port.
func redirectAllowed(callback *url.URL, raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Fragment != "" || u.Scheme != callback.Scheme || !strings.EqualFold(u.Hostname(), callback.Hostname()) {
		return false
	}
	ip := net.ParseIP(callback.Hostname())
	if (ip == nil || !ip.IsLoopback()) && u.Port() != callback.Port() {
		return false
	}
	base := strings.TrimSuffix(callback.EscapedPath(), "/")
	p := u.EscapedPath()
	return p == base || p == base+"/" || strings.HasPrefix(p, base+"/") || base == ""
}

// checkedAuthorize is an authorize request whose client and redirect hold.
type checkedAuthorize struct {
	authorizeRequest
	app      oauthApp
	redirect string // where the browser goes back to
}

// checkAuthorize validates a request as GitHub does before showing the
// page. It answers the request itself and returns false when the client is
// unknown (404) or the redirect is refused (back to the registered callback
// with redirect_uri_mismatch), or the PKCE parameters are unusable.
func (s *Service) checkAuthorize(w http.ResponseWriter, r *http.Request, req authorizeRequest) (checkedAuthorize, bool) {
	s.mu.Lock()
	app, ok := s.st.OAuthApps[req.ClientID]
	var cp oauthApp
	if ok {
		cp = *app
	}
	s.mu.Unlock()
	if !ok {
		s.logfSafe("github: authorize for unknown client_id %q", req.ClientID)
		writePage(w, http.StatusNotFound, "Not Found", "No OAuth application has the client ID "+req.ClientID+" on this GitHub stand-in.")
		return checkedAuthorize{}, false
	}
	callback, err := parseCallback(cp.CallbackURL)
	if err != nil {
		writePage(w, http.StatusInternalServerError, "Misconfigured application", err.Error())
		return checkedAuthorize{}, false
	}
	c := checkedAuthorize{authorizeRequest: req, app: cp, redirect: cp.CallbackURL}
	if req.RedirectURI != "" {
		if !redirectAllowed(callback, req.RedirectURI) {
			s.logfSafe("github: authorize for %s: redirect_uri %s is not under the registered callback %s", req.ClientID, req.RedirectURI, cp.CallbackURL)
			redirectError(w, r, cp.CallbackURL, req.State, "redirect_uri_mismatch",
				"The redirect_uri MUST match the registered callback URL for this application.", docsAuthorizeErrors+"#redirect-uri-mismatch")
			return c, false
		}
		c.redirect = req.RedirectURI
	}
	if req.CodeChallenge != "" || req.CodeChallengeMethod != "" {
		if req.CodeChallengeMethod != "S256" || !codeChallengePattern.MatchString(req.CodeChallenge) {
			redirectError(w, r, c.redirect, req.State, "invalid_request",
				"code_challenge_method must be S256 with a base64url SHA-256 code_challenge.", docsAuthorizeErrors)
			return c, false
		}
	}
	return c, true
}

// redirectError sends the browser back to target with an OAuth error.
func redirectError(w http.ResponseWriter, r *http.Request, target, state, code, description, uri string) {
	q := url.Values{"error": {code}, "error_description": {description}, "error_uri": {uri}}
	if state != "" {
		q.Set("state", state)
	}
	http.Redirect(w, r, withQuery(target, q), http.StatusFound)
}

func withQuery(target string, q url.Values) string {
	u, err := url.Parse(target)
	if err != nil {
		return target
	}
	merged := u.Query()
	for k, vs := range q {
		merged[k] = vs
	}
	u.RawQuery = merged.Encode()
	return u.String()
}

// formToken binds the page's form to the request it was shown for, so a
// POST cannot name another client, redirect or challenge than the page.
func (s *Service) formToken(req authorizeRequest) string {
	mac := hmac.New(sha256.New, s.formKey)
	mac.Write([]byte(req.values().Encode()))
	return hex.EncodeToString(mac.Sum(nil))
}

type pageUser struct {
	User
	Suggested bool
	AvatarURL string
}

// authorizePage is GET /login/oauth/authorize: the sign-in page.
func (s *Service) authorizePage(w http.ResponseWriter, r *http.Request) {
	c, ok := s.checkAuthorize(w, r, readAuthorizeRequest(r.URL.Query()))
	if !ok {
		return
	}
	s.mu.Lock()
	users := make([]pageUser, 0, len(s.st.Users))
	for _, u := range s.st.Users {
		users = append(users, pageUser{User: *u, Suggested: strings.EqualFold(u.Login, c.Login)})
	}
	s.mu.Unlock()
	sort.Slice(users, func(i, j int) bool {
		if users[i].Suggested != users[j].Suggested {
			return users[i].Suggested
		}
		return users[i].ID < users[j].ID
	})
	for i := range users {
		users[i].AvatarURL = s.avatarURL(users[i].ID)
	}
	name := c.app.Name
	if name == "" {
		name = c.app.ClientID
	}
	hidden := c.values()
	hidden.Set("authenticity_token", s.formToken(c.authorizeRequest))
	fields := make([]struct{ Name, Value string }, 0, len(hidden))
	for _, k := range sortedKeys(hidden) {
		fields = append(fields, struct{ Name, Value string }{k, hidden.Get(k)})
	}
	redirectHost := c.redirect
	if u, err := url.Parse(c.redirect); err == nil {
		redirectHost = u.Scheme + "://" + u.Host
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_ = authorizeTemplate.Execute(w, map[string]any{"App": name, "Users": users, "Fields": fields, "Redirect": redirectHost})
}

// authorize is the page's form: sign in as the chosen user (or cancel),
// then back to the application.
func (s *Service) authorize(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		writePage(w, http.StatusBadRequest, "Bad request", "The form could not be read.")
		return
	}
	req := readAuthorizeRequest(r.PostForm)
	if !hmac.Equal([]byte(r.PostForm.Get("authenticity_token")), []byte(s.formToken(req))) {
		writePage(w, http.StatusUnprocessableEntity, "Invalid authenticity token", "Reload the sign-in page and try again.")
		return
	}
	c, ok := s.checkAuthorize(w, r, req)
	if !ok {
		return
	}
	if r.PostForm.Get("cancel") != "" {
		redirectError(w, r, c.redirect, c.State, "access_denied", "The user has denied your application access.", docsAuthorizeErrors+"#access-denied")
		return
	}
	login := strings.ToLower(r.PostForm.Get("login"))
	code := randomHex(10) // GitHub's codes are 20 hex digits
	now := time.Now().UTC()
	s.mu.Lock()
	u, known := s.st.Users[login]
	if known {
		s.st.Codes[digest(code)] = &authCode{ClientID: c.ClientID, Login: u.Login, RedirectURI: c.RedirectURI, Scope: c.Scope,
			Challenge: c.CodeChallenge, ExpiresAt: now.Add(codeLifetime)}
		s.st.SignIns = append(s.st.SignIns, SignIn{Login: u.Login, ClientID: c.ClientID, At: now})
		s.dropExpiredLocked(now)
	}
	s.mu.Unlock()
	if !known {
		writePage(w, http.StatusUnprocessableEntity, "Unknown account", "No local user "+login+" exists on this GitHub stand-in.")
		return
	}
	if err := s.save(); err != nil {
		writePage(w, http.StatusInternalServerError, "Could not sign in", err.Error())
		return
	}
	s.logfSafe("github: %s signed in to %s; redirecting to %s", u.Login, c.ClientID, stripQuery(c.redirect))
	q := url.Values{"code": {code}}
	if c.State != "" {
		q.Set("state", c.State)
	}
	http.Redirect(w, r, withQuery(c.redirect, q), http.StatusFound)
}

// dropExpiredLocked forgets codes and installation tokens past their time.
func (s *Service) dropExpiredLocked(now time.Time) {
	for k, c := range s.st.Codes {
		if now.After(c.ExpiresAt) {
			delete(s.st.Codes, k)
		}
	}
	for k, t := range s.st.InstallationTokens {
		if now.After(t.ExpiresAt) {
			delete(s.st.InstallationTokens, k)
		}
	}
}

// tokenRequest reads the exchange's parameters from a form body, a JSON
// body or the query, as GitHub accepts them, and the client's credentials
// from them or from HTTP Basic authentication.
func tokenRequest(r *http.Request) (url.Values, error) {
	v := url.Values{}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct == "application/json" {
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			return nil, err
		}
		for k, val := range body {
			if s, ok := val.(string); ok {
				v.Set(k, s)
			}
		}
	} else if err := r.ParseForm(); err != nil {
		return nil, err
	} else {
		v = r.Form
	}
	for k, vs := range r.URL.Query() {
		if v.Get(k) == "" && len(vs) > 0 {
			v.Set(k, vs[0])
		}
	}
	if id, secret, ok := r.BasicAuth(); ok && v.Get("client_id") == "" {
		v.Set("client_id", id)
		v.Set("client_secret", secret)
	}
	return v, nil
}

// accessToken is POST /login/oauth/access_token.
func (s *Service) accessToken(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	v, err := tokenRequest(r)
	if err != nil {
		tokenAnswer(w, r, map[string]string{"error": "bad_request", "error_description": "The request body could not be read."})
		return
	}
	answer, issued := s.exchange(v, time.Now().UTC())
	if issued {
		// Written before the answer goes out: a token the client holds
		// must survive a restart.
		if err := s.save(); err != nil {
			answer = map[string]string{"error": "server_error", "error_description": "The token could not be stored."}
		}
	}
	tokenAnswer(w, r, answer)
}

// exchange checks an exchange's parameters in GitHub's order (the client,
// the code, the redirect, the verifier) and, when they hold, spends the
// code and issues a user token; issued says the state changed.
func (s *Service) exchange(v url.Values, now time.Time) (answer map[string]string, issued bool) {
	tokenError := func(code, description, anchor string) map[string]string {
		return map[string]string{"error": code, "error_description": description, "error_uri": docsTokenErrors + anchor}
	}
	clientID := v.Get("client_id")
	badCode := func(why string) map[string]string {
		s.logfSafe("github: token exchange for %s refused: %s", clientID, why)
		return tokenError("bad_verification_code", "The code passed is incorrect or expired.", "#bad-verification-code")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	app, ok := s.st.OAuthApps[clientID]
	if !ok || !sameDigest(v.Get("client_secret"), app.SecretSHA256) {
		s.logfSafe("github: token exchange for client_id %q with wrong client credentials", clientID)
		return tokenError("incorrect_client_credentials", "The client_id and/or client_secret passed are incorrect.", "#incorrect-client-credentials"), false
	}
	key := digest(v.Get("code"))
	code, ok := s.st.Codes[key]
	switch {
	case !ok || code.ClientID != clientID:
		return badCode("the code was not issued to this client, or was exchanged already"), false
	case now.After(code.ExpiresAt):
		delete(s.st.Codes, key)
		return badCode("the code expired"), true
	case code.RedirectURI != "" && v.Get("redirect_uri") != "" && v.Get("redirect_uri") != code.RedirectURI:
		return tokenError("redirect_uri_mismatch", "The redirect_uri MUST match the registered callback URL for this application.", "#redirect-uri-mismatch2"), false
	case code.Challenge != "" && !verifierMatches(v.Get("code_verifier"), code.Challenge):
		return badCode("the code_verifier does not match the code_challenge"), false
	}
	delete(s.st.Codes, key)
	token := randomToken("gho_", 36)
	s.st.UserTokens[digest(token)] = &userToken{Login: code.Login, ClientID: clientID, Scope: code.Scope, CreatedAt: now}
	s.logfSafe("github: issued a user token for %s to %s", code.Login, clientID)
	return map[string]string{"access_token": token, "token_type": "bearer", "scope": code.Scope}, true
}

// verifierMatches is RFC 7636's S256 check.
func verifierMatches(verifier, challenge string) bool {
	if len(verifier) < 43 || len(verifier) > 128 {
		return false
	}
	sum := sha256.Sum256([]byte(verifier))
	return hmac.Equal([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(challenge))
}

// tokenAnswer writes the exchange's answer (HTTP 200 whatever it says, as
// GitHub's) as JSON when the client accepts it, else form-encoded, GitHub's
// default.
func tokenAnswer(w http.ResponseWriter, r *http.Request, fields map[string]string) {
	w.Header().Set("Cache-Control", "no-store")
	if strings.Contains(r.Header.Get("Accept"), "json") {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_ = json.NewEncoder(w).Encode(fields)
		return
	}
	v := url.Values{}
	for k, val := range fields {
		v.Set(k, val)
	}
	w.Header().Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	_, _ = w.Write([]byte(v.Encode()))
}

func stripQuery(u string) string {
	base, _, _ := strings.Cut(u, "?")
	return base
}

func sortedKeys(v url.Values) []string {
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func writePage(w http.ResponseWriter, status int, title, message string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = messageTemplate.Execute(w, map[string]string{"Title": title, "Message": message})
}

const pageStyle = `body{font-family:-apple-system,"Segoe UI","DejaVu Sans",sans-serif;background:#f6f8fa;color:#1f2328;margin:0}
main{max-width:440px;margin:48px auto;background:#fff;border:1px solid #d0d7de;border-radius:6px;padding:24px}
h1{font-size:20px;font-weight:400;text-align:center}p.note{color:#59636e;font-size:13px;text-align:center}
.account{display:flex;gap:12px;align-items:center;width:100%;margin:8px 0;padding:12px;border:1px solid #d0d7de;border-radius:6px;background:#f6f8fa;font:inherit;text-align:left;cursor:pointer}
.account:hover{background:#eaeef2}.account img{width:40px;height:40px;border-radius:50%}
.account .who{flex:1}.account small{display:block;color:#59636e}.suggested{border-color:#0969da}
.cancel{margin-top:16px;width:100%;padding:8px;border:1px solid #d0d7de;border-radius:6px;background:#fff;font:inherit;cursor:pointer}`

var authorizeTemplate = template.Must(template.New("authorize").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Sign in to GitHub · {{.App}}</title>
<style>` + pageStyle + `</style></head><body><main>
<h1>Sign in to GitHub<br>to continue to <strong>{{.App}}</strong></h1>
<p class="note">The local cloud's GitHub stand-in: choose the account to sign in as. You will be sent back to {{.Redirect}}.</p>
<form method="post" action="" id="authorize">
{{range .Fields}}<input type="hidden" name="{{.Name}}" value="{{.Value}}">
{{end}}{{range .Users}}<button type="submit" class="account{{if .Suggested}} suggested{{end}}" name="login" value="{{.Login}}" id="sign-in-as-{{.Login}}" data-login="{{.Login}}">
<img src="{{.AvatarURL}}" alt=""><span class="who"><strong>Sign in as {{.Login}}</strong><small>{{.Name}}</small>
{{range .Emails}}<small>{{.Address}}{{if not .Verified}} (unverified){{end}}</small>{{end}}
{{range .Orgs}}<small>{{.Org}}: {{.State}} {{.Role}}</small>{{end}}</span></button>
{{end}}<button type="submit" class="cancel" name="cancel" value="1" id="cancel">Cancel</button>
</form></main></body></html>
`))

var messageTemplate = template.Must(template.New("message").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}} · GitHub</title><style>` + pageStyle + `</style></head>
<body><main><h1>{{.Title}}</h1><p class="note">{{.Message}}</p></main></body></html>
`))
