package emulator_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	gh "github.com/google/go-github/v88/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/openinspect/pulumi-openinspect/internal/loopback"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/github"
)

// ghBrowser is what a person's browser is to the stand-in's pages: an https
// client that trusts the local CA, dials github.localhost on loopback, keeps
// cookies and does not follow redirects (the test reads each one).
func ghBrowser(t *testing.T, s *emulator.Server) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(s.GitHub().CACertificate()), "the stand-in's CA")
	tr := loopback.Transport()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

var hiddenInput = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)

// signInAs opens authURL as a browser, checks the page offers login, and
// submits its form as that user (or cancels, for login ""), returning where
// the stand-in sends the browser back to.
func signInAs(t *testing.T, client *http.Client, authURL, login string) *url.URL {
	t.Helper()
	res, err := client.Get(authURL)
	require.NoError(t, err)
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", page)
	form := url.Values{}
	for _, m := range hiddenInput.FindAllStringSubmatch(string(page), -1) {
		form.Set(html.UnescapeString(m[1]), html.UnescapeString(m[2]))
	}
	require.NotEmpty(t, form.Get("authenticity_token"), "the page's form: %s", page)
	if login == "" {
		form.Set("cancel", "1")
	} else {
		require.Contains(t, string(page), `id="sign-in-as-`+login+`"`, "the page offers %s", login)
		form.Set("login", login)
	}
	// The form posts to the page's own URL (action="").
	res, err = client.PostForm(authURL, form)
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusFound, res.StatusCode, "%s", body)
	back, err := url.Parse(res.Header.Get("Location"))
	require.NoError(t, err)
	return back
}

func oauthConfig(s *emulator.Server, redirect string) *oauth2.Config {
	return &oauth2.Config{
		ClientID: github.DefaultOAuthClientID, ClientSecret: github.DefaultOAuthClientSecret, RedirectURL: redirect,
		Endpoint: oauth2.Endpoint{
			AuthURL:  s.GitHub().BrowserURL() + "/login/oauth/authorize",
			TokenURL: s.URL() + github.Prefix + "/login/oauth/access_token",
		},
	}
}

func goGitHub(t *testing.T, s *emulator.Server, hc *http.Client) *gh.Client {
	t.Helper()
	base := s.URL() + github.APIPrefix + "/"
	c, err := gh.NewClient(gh.WithHTTPClient(hc), gh.WithURLs(&base, &base))
	require.NoError(t, err)
	return c
}

// TestGitHubOAuthWebFlow runs the web flow as golang.org/x/oauth2 and a
// browser do (authorize page with state and PKCE, the form, the code
// exchanged once with its verifier), then reads the signed-in user with
// go-github: /user, /user/emails (paginated), org memberships; and the
// flow's refusals in GitHub's forms.
func TestGitHubOAuthWebFlow(t *testing.T) {
	s := start(t, emulator.Options{})
	ctx := context.Background()
	browser := ghBrowser(t, s)
	const callback = "http://127.0.0.1:4567/api/auth/callback/github"
	conf := oauthConfig(s, callback)
	require.True(t, strings.HasPrefix(conf.Endpoint.AuthURL, "https://"+github.BrowserHost+":"), "the pages are on the https browser origin: %s", conf.Endpoint.AuthURL)

	verifier := oauth2.GenerateVerifier()
	back := signInAs(t, browser, conf.AuthCodeURL("state-123", oauth2.S256ChallengeOption(verifier)), github.DefaultLogin)
	assert.Equal(t, callback, back.Scheme+"://"+back.Host+back.Path, "back to the app's callback, any loopback port")
	assert.Equal(t, "state-123", back.Query().Get("state"))
	code := back.Query().Get("code")
	require.Regexp(t, `^[0-9a-f]{20}$`, code)

	// Without the verifier, or with another, the code is refused; with it,
	// exchanged once.
	_, err := conf.Exchange(ctx, code)
	requireOAuthError(t, err, "bad_verification_code")
	_, err = conf.Exchange(ctx, code, oauth2.VerifierOption(oauth2.GenerateVerifier()))
	requireOAuthError(t, err, "bad_verification_code")
	tok, err := conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(tok.AccessToken, "gho_"), "a user token")
	assert.Equal(t, "bearer", strings.ToLower(tok.TokenType))
	_, err = conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	requireOAuthError(t, err, "bad_verification_code")

	// Wrong client credentials.
	wrong := *conf
	wrong.ClientSecret = "not-the-secret"
	v2 := oauth2.GenerateVerifier()
	back = signInAs(t, browser, conf.AuthCodeURL("s2", oauth2.S256ChallengeOption(v2)), github.DefaultLogin)
	_, err = wrong.Exchange(ctx, back.Query().Get("code"), oauth2.VerifierOption(v2))
	requireOAuthError(t, err, "incorrect_client_credentials")

	// The user, through go-github with the token.
	client := goGitHub(t, s, conf.Client(ctx, tok))
	user, _, err := client.Users.Get(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, github.DefaultLogin, user.GetLogin())
	assert.EqualValues(t, 1001, user.GetID())
	assert.Equal(t, "Local Developer", user.GetName())
	assert.True(t, strings.HasPrefix(user.GetAvatarURL(), s.GitHub().BrowserURL()+"/avatars/u/1001"), "the avatar is on the stand-in: %s", user.GetAvatarURL())
	emails, resp, err := client.Users.ListEmails(ctx, &gh.ListOptions{PerPage: 1})
	require.NoError(t, err)
	require.Len(t, emails, 1)
	assert.Equal(t, "local-dev@example.com", emails[0].GetEmail())
	assert.True(t, emails[0].GetPrimary() && emails[0].GetVerified())
	assert.Equal(t, 2, resp.NextPage, "paginated with a Link header")
	emails, _, err = client.Users.ListEmails(ctx, &gh.ListOptions{Page: 2, PerPage: 1})
	require.NoError(t, err)
	require.Len(t, emails, 1)
	assert.False(t, emails[0].GetVerified(), "the second address is unverified")
	m, _, err := client.Organizations.GetOrgMembership(ctx, "", github.DefaultOrg)
	require.NoError(t, err)
	assert.Equal(t, "active", m.GetState())
	assert.Equal(t, github.DefaultOrg, m.GetOrganization().GetLogin())
	_, _, err = client.Organizations.GetOrgMembership(ctx, "", "someone-elses-org")
	requireGitHubError(t, err, http.StatusNotFound, "Not Found")

	// The outsider signs in too; their membership is only pending.
	v3 := oauth2.GenerateVerifier()
	back = signInAs(t, browser, conf.AuthCodeURL("s3", oauth2.S256ChallengeOption(v3)), github.OutsiderLogin)
	outsiderTok, err := conf.Exchange(ctx, back.Query().Get("code"), oauth2.VerifierOption(v3))
	require.NoError(t, err)
	m, _, err = goGitHub(t, s, conf.Client(ctx, outsiderTok)).Organizations.GetOrgMembership(ctx, "", github.DefaultOrg)
	require.NoError(t, err)
	assert.Equal(t, "pending", m.GetState())

	// A bad token, and none.
	_, _, err = goGitHub(t, s, oauth2.NewClient(ctx, oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "gho_forged"}))).Users.Get(ctx, "")
	requireGitHubError(t, err, http.StatusUnauthorized, "Bad credentials")
	_, _, err = goGitHub(t, s, http.DefaultClient).Users.Get(ctx, "")
	requireGitHubError(t, err, http.StatusUnauthorized, "Requires authentication")

	// A redirect outside the registered callback goes back to the callback
	// with redirect_uri_mismatch; cancelling, with access_denied.
	res, err := browser.Get(oauthConfig(s, "http://evil.example/api/auth/callback/github").AuthCodeURL("s4"))
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusFound, res.StatusCode)
	loc, err := url.Parse(res.Header.Get("Location"))
	require.NoError(t, err)
	assert.Equal(t, github.DefaultCallbackURL, loc.Scheme+"://"+loc.Host+loc.Path)
	assert.Equal(t, "redirect_uri_mismatch", loc.Query().Get("error"))
	assert.Equal(t, "s4", loc.Query().Get("state"))
	back = signInAs(t, browser, conf.AuthCodeURL("s5"), "")
	assert.Equal(t, "access_denied", back.Query().Get("error"))
	assert.Equal(t, "s5", back.Query().Get("state"))
	// An unknown client: GitHub's 404 page.
	bad := *conf
	bad.ClientID = "no-such-client"
	res, err = browser.Get(bad.AuthCodeURL("s6"))
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusNotFound, res.StatusCode)

	// Sign-ins are recorded; no secret is stored in the clear.
	inv := s.Inventory().GitHub
	require.Len(t, inv.SignIns, 3, "two as local-dev, one as the outsider; the cancel signed nobody in")
	assert.Equal(t, github.OutsiderLogin, inv.SignIns[2].Login)
	require.NoError(t, s.GitHub().Save())
	stored, err := os.ReadFile(filepath.Join(s.DataDir(), "github.json"))
	require.NoError(t, err)
	for _, secret := range []string{tok.AccessToken, outsiderTok.AccessToken, github.DefaultOAuthClientSecret, code, verifier} {
		assert.NotContains(t, string(stored), secret)
	}
}

// requireOAuthError asserts x/oauth2 reports GitHub's error code.
func requireOAuthError(t *testing.T, err error, code string) {
	t.Helper()
	var re *oauth2.RetrieveError
	require.True(t, errors.As(err, &re), "want *oauth2.RetrieveError, got %T: %v", err, err)
	assert.Equal(t, code, re.ErrorCode, "%s", re.Body)
	assert.NotEmpty(t, re.ErrorDescription)
	assert.True(t, strings.HasPrefix(re.ErrorURI, "https://docs.github.com/"), re.ErrorURI)
}

// requireGitHubError asserts go-github's error carries GitHub's status and
// message.
func requireGitHubError(t *testing.T, err error, status int, message string) {
	t.Helper()
	var er *gh.ErrorResponse
	require.True(t, errors.As(err, &er), "want *github.ErrorResponse, got %T: %v", err, err)
	assert.Equal(t, status, er.Response.StatusCode)
	assert.Equal(t, message, er.Message)
	assert.True(t, strings.HasPrefix(er.DocumentationURL, "https://docs.github.com/"), er.DocumentationURL)
}

// appKey makes an RSA key pair: the private key as PKCS#8 PEM (what
// upstream's control plane imports), the public key as PKIX PEM.
func appKey(t *testing.T) (private, public []byte) {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(k)
	require.NoError(t, err)
	pub, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
}

// TestGitHubAppInstallationToken mints installation tokens with the
// ghinstallation transport (a JWT signed with the app's private key,
// checked against the public key the app was configured with) and lists,
// reads and pages the installation's repositories and branches through
// go-github; forged, expired and unkeyed JWTs are refused as GitHub
// refuses them.
func TestGitHubAppInstallationToken(t *testing.T) {
	s := start(t, emulator.Options{})
	ctx := context.Background()
	private, public := appKey(t)
	appID, err := strconv.ParseInt(github.DefaultAppID, 10, 64)
	require.NoError(t, err)
	apiBase := s.URL() + github.APIPrefix

	// Before a public key is configured, no JWT verifies.
	tr, err := ghinstallation.New(http.DefaultTransport, appID, github.DefaultInstallationID, private)
	require.NoError(t, err)
	tr.BaseURL = apiBase
	_, _, err = goGitHub(t, s, &http.Client{Transport: tr}).Apps.ListRepos(ctx, nil)
	require.ErrorContains(t, err, "401")

	require.NoError(t, s.GitHub().PutApp(github.App{ID: github.DefaultAppID, PublicKeyPEM: string(public)}))
	tr, err = ghinstallation.New(http.DefaultTransport, appID, github.DefaultInstallationID, private)
	require.NoError(t, err)
	tr.BaseURL = apiBase
	client := goGitHub(t, s, &http.Client{Transport: tr})
	repos, _, err := client.Apps.ListRepos(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, 2, repos.GetTotalCount())
	names := []string{}
	for _, r := range repos.Repositories {
		names = append(names, r.GetFullName())
	}
	assert.Equal(t, []string{"openinspect-local/hello-world", "openinspect-local/docs-site"}, names)
	assert.True(t, repos.Repositories[1].GetPrivate())
	page, resp, err := client.Apps.ListRepos(ctx, &gh.ListOptions{PerPage: 1, Page: 2})
	require.NoError(t, err)
	require.Len(t, page.Repositories, 1)
	assert.Equal(t, "docs-site", page.Repositories[0].GetName())
	assert.Equal(t, 1, resp.PrevPage)

	repo, _, err := client.Repositories.Get(ctx, github.DefaultOrg, "hello-world")
	require.NoError(t, err)
	assert.Equal(t, "main", repo.GetDefaultBranch())
	assert.Equal(t, github.DefaultOrg, repo.GetOwner().GetLogin())
	assert.Equal(t, "Organization", repo.GetOwner().GetType())
	branches, _, err := client.Repositories.ListBranches(ctx, github.DefaultOrg, "hello-world", nil)
	require.NoError(t, err)
	require.Len(t, branches, 2)
	assert.Equal(t, "main", branches[0].GetName())
	assert.Equal(t, "feature/sign-in", branches[1].GetName())
	assert.Len(t, branches[0].GetCommit().GetSHA(), 40)
	_, _, err = client.Repositories.Get(ctx, "someone-else", "private-thing")
	requireGitHubError(t, err, http.StatusNotFound, "Not Found")

	// The token ghinstallation minted: an installation token, an hour long.
	minted, err := tr.Token(ctx)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(minted, "ghs_"))
	exp, _, err := tr.Expiry()
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now().Add(time.Hour), exp, 2*time.Minute)

	// Another installation ID: 404.
	atr, err := ghinstallation.NewAppsTransport(http.DefaultTransport, appID, private)
	require.NoError(t, err)
	atr.BaseURL = apiBase
	_, _, err = goGitHub(t, s, &http.Client{Transport: atr}).Apps.CreateInstallationToken(ctx, 42, nil)
	requireGitHubError(t, err, http.StatusNotFound, "Not Found")

	// A JWT signed with another key, and one that expired.
	otherKey, _ := appKey(t)
	forged, err := ghinstallation.NewAppsTransport(http.DefaultTransport, appID, otherKey)
	require.NoError(t, err)
	forged.BaseURL = apiBase
	_, _, err = goGitHub(t, s, &http.Client{Transport: forged}).Apps.CreateInstallationToken(ctx, github.DefaultInstallationID, nil)
	requireGitHubError(t, err, http.StatusUnauthorized, "A JSON web token could not be decoded")
	expired := signJWT(t, private, map[string]any{"iss": github.DefaultAppID, "iat": time.Now().Add(-20 * time.Minute).Unix(), "exp": time.Now().Add(-10 * time.Minute).Unix()})
	status, body := rawPost(t, apiBase+"/app/installations/"+strconv.FormatInt(github.DefaultInstallationID, 10)+"/access_tokens", "Bearer "+expired)
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.Contains(t, body, `'Expiration time' claim ('exp') must be a numeric value`)
	tooLong := signJWT(t, private, map[string]any{"iss": github.DefaultAppID, "iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()})
	status, body = rawPost(t, apiBase+"/app/installations/"+strconv.FormatInt(github.DefaultInstallationID, 10)+"/access_tokens", "Bearer "+tooLong)
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.Contains(t, body, "is too far in the future")
	// The upstream control plane's own claims (iat 60 s back, exp ten
	// minutes ahead) pass.
	upstreamish := signJWT(t, private, map[string]any{"iss": github.DefaultAppID, "iat": time.Now().Add(-time.Minute).Unix(), "exp": time.Now().Add(10 * time.Minute).Unix()})
	status, body = rawPost(t, apiBase+"/app/installations/"+strconv.FormatInt(github.DefaultInstallationID, 10)+"/access_tokens", "Bearer "+upstreamish)
	assert.Equal(t, http.StatusCreated, status, body)
	var created struct {
		Token     string `json:"token"`
		ExpiresAt string `json:"expires_at"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &created))
	_, err = time.Parse(time.RFC3339, created.ExpiresAt)
	assert.NoError(t, err)

	// A user token cannot list an installation's repositories.
	status, body = rawGet(t, apiBase+"/installation/repositories", "Bearer gho_not-an-installation-token")
	assert.Equal(t, http.StatusUnauthorized, status, body)

	require.NoError(t, s.GitHub().Save())
	stored, err := os.ReadFile(filepath.Join(s.DataDir(), "github.json"))
	require.NoError(t, err)
	assert.NotContains(t, string(stored), minted)
	assert.NotContains(t, string(stored), created.Token)
	assert.Equal(t, 2, s.Inventory().GitHub.InstallationTokens, "ghinstallation's and the raw request's")
}

// signJWT signs claims with RS256, as a GitHub App does.
func signJWT(t *testing.T, privatePEM []byte, claims map[string]any) string {
	t.Helper()
	block, _ := pem.Decode(privatePEM)
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	require.NoError(t, err)
	head := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"RS256","typ":"JWT"}`))
	payload, err := json.Marshal(claims)
	require.NoError(t, err)
	input := head + "." + base64.RawURLEncoding.EncodeToString(payload)
	sum := sha256.Sum256([]byte(input))
	sig, err := rsa.SignPKCS1v15(rand.Reader, k.(*rsa.PrivateKey), crypto.SHA256, sum[:])
	require.NoError(t, err)
	return input + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func rawPost(t *testing.T, u, auth string) (int, string) {
	t.Helper()
	return rawDo(t, http.MethodPost, u, auth)
}

func rawGet(t *testing.T, u, auth string) (int, string) {
	t.Helper()
	return rawDo(t, http.MethodGet, u, auth)
}

func rawDo(t *testing.T, method, u, auth string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", auth)
	req.Header.Set("Accept", "application/vnd.github+json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, string(b)
}
