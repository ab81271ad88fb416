package emulator_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cloudflare/cloudflare-go/v4"
	"github.com/cloudflare/cloudflare-go/v4/d1"
	"github.com/cloudflare/cloudflare-go/v4/option"
	"github.com/cloudflare/cloudflare-go/v4/workers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/internal/loopback"
	"github.com/openinspect/pulumi-openinspect/internal/reporoot"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/serviceauth"
)

const (
	cpName      = "open-inspect-control-plane-demo"
	slackKey    = "slack-bot-shared-secret-0123456789abcdef0123456789abcdef0123456789"
	webKey      = "web-shared-secret-0123456789abcdef0123456789abcdef0123456789abcdef"
	unauthBody  = `{"error":"Unauthorized"}`
	cpPutKey    = "PUT /__workers/{script_name}/secrets"
	cpGetKey    = "GET /__workers/{script_name}/secrets"
	cpDeletePre = "DELETE /__workers/{script_name}/secrets/" // + the key, as requested
	cpHealthKey = "GET /__workers/{script_name}/health"
	cpNopeKey   = "GET /__workers/{script_name}/nope"
)

// encKey is a usable REPO_SECRETS_ENCRYPTION_KEY: 32 random-looking bytes in
// base64, like `openssl rand -base64 32`.
var encKey = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x5a, 0xa5, 0x3c, 0xc3}, 8))

// sig is a request's signature (package sig1), with what a case tampers with.

type sig struct {
	service string
	key     string
	at      time.Time
	nonce   string
	// path and query are what gets signed; empty path means the request's
	// own control-plane path, query "" an empty canonical query.
	path, query string
	// body, when non-nil, is signed instead of the body sent.
	body  []byte
	actor string
	// method, when set, is signed instead of the request's method.
	method string
}

func (g sig) header(method, path string, body []byte) string {
	if g.path != "" {
		path = g.path
	}
	if g.method != "" {
		method = g.method
	}
	if g.body != nil {
		body = g.body
	}
	return serviceauth.Header(serviceauth.Request{Service: g.service, Key: g.key, At: g.at, Nonce: g.nonce,
		Method: method, Path: path, Query: g.query, Body: body, Actor: g.actor})
}

// cpResp is one answer of the control plane.
type cpResp struct {
	status int
	body   string
	header http.Header
}

// cpCall sends method cpPath (the control plane's own path, query included)
// to the script, signed by g unless g is nil; headers are extra or override
// the signed ones (an empty value deletes).
func cpCall(t *testing.T, s *emulator.Server, script, method, cpPath, body string, g *sig, headers map[string]string) cpResp {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.Workers().WorkerURL(script)+cpPath, rd)
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if g != nil {
		path, _, _ := strings.Cut(cpPath, "?")
		req.Header.Set("X-OpenInspect-Service", g.service)
		req.Header.Set("X-OpenInspect-Service-Signature", g.header(method, path, []byte(body)))
		if g.actor != "" {
			req.Header.Set("X-OpenInspect-Actor", g.actor)
		}
	}
	for k, v := range headers {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := loopback.Client(0).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return cpResp{resp.StatusCode, string(b), resp.Header}
}

func slack() *sig { return &sig{service: "slack-bot", key: slackKey} }

// cpBindings is a control plane's bindings as the provider uploads them:
// the D1 database as DB, the encryption key and the service keys.
func cpBindings(dbID string, extra ...M) []M {
	b := []M{
		{"type": "d1", "name": "DB", "id": dbID},
		{"type": "secret_text", "name": "REPO_SECRETS_ENCRYPTION_KEY", "text": encKey},
		{"type": "secret_text", "name": "SERVICE_AUTH_SECRET_SLACK_BOT", "text": slackKey},
		{"type": "secret_text", "name": "SERVICE_AUTH_SECRET_WEB", "text": webKey},
		{"type": "plain_text", "name": "DEPLOYMENT_NAME", "text": "demo"},
	}
	return append(b, extra...)
}

// fixtureFile reads a file of the fixture checkout (tests/fixtures/upstream).
func fixtureFile(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(reporoot.Dir(), "tests", "fixtures", "upstream", filepath.FromSlash(rel)))
	require.NoError(t, err)
	return string(b)
}

// controlPlaneJS is the fixture control plane, the script these tests run in
// workerd: the emulator has no control plane of its own.
func controlPlaneJS(t *testing.T) mod {
	return mod{"index.js", "application/javascript+module", fixtureFile(t, "packages/control-plane/dist/index.js")}
}

// migrateFixture applies the fixture's D1 migrations to the database, as the
// provider's D1Migrations does, so the tables the control plane uses exist.
func migrateFixture(t *testing.T, c *cloudflare.Client, dbID string) {
	t.Helper()
	dir := filepath.Join(reporoot.Dir(), "tests", "fixtures", "upstream", "terraform", "d1", "migrations")
	files, err := filepath.Glob(filepath.Join(dir, "*.sql"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		query(t, c, dbID, fixtureFile(t, "terraform/d1/migrations/"+filepath.Base(f)))
	}
}

// uploadIn uploads the fixture control plane to any account.
func uploadIn(t *testing.T, c *cloudflare.Client, account, name string, bindings []M) {
	t.Helper()
	ct, body := multipartBody(t, M{"main_module": "index.js", "compatibility_date": "2024-09-23",
		"compatibility_flags": []string{"nodejs_compat"}, "bindings": bindings}, controlPlaneJS(t))
	_, err := c.Workers.Scripts.Update(context.Background(), name, workers.ScriptUpdateParams{AccountID: cloudflare.F(account)},
		option.WithRequestBody(ct, body))
	require.NoError(t, err)
}

// startCP starts an emulator with a control plane uploaded as cpName.
func startCP(t *testing.T, opts emulator.Options) (*emulator.Server, *cloudflare.Client, string) {
	t.Helper()
	s := start(t, opts)
	c := newClient(s)
	db := createDB(t, c, "open-inspect-demo")
	migrateFixture(t, c, db.UUID)
	uploadIn(t, c, acct, cpName, cpBindings(db.UUID))
	return s, c, db.UUID
}

func TestControlPlaneHealth(t *testing.T) {
	s, _, _ := startCP(t, emulator.Options{})
	r := cpCall(t, s, cpName, http.MethodGet, "/health", "", nil, map[string]string{"x-trace-id": "trace-123"})
	assert.Equal(t, http.StatusOK, r.status)
	assert.Equal(t, `{"status":"healthy","service":"open-inspect-control-plane"}`, r.body, "exact bytes, no trailing newline")
	assert.Equal(t, "application/json", r.header.Get("Content-Type"))
	assert.Equal(t, "*", r.header.Get("Access-Control-Allow-Origin"))
	assert.Equal(t, "trace-123", r.header.Get("x-trace-id"))
	assert.Len(t, r.header.Get("x-request-id"), 8)
	assert.Equal(t, "http://"+cpName+".workers.localhost:"+port(t, s), s.Workers().WorkerURL(cpName))

	// HEAD is not GET for upstream's router; other paths are upstream's 404.
	assert.Equal(t, http.StatusNotFound, cpCall(t, s, cpName, http.MethodHead, "/health", "", nil, nil).status)
	r = cpCall(t, s, cpName, http.MethodGet, "/sessions/x/y", "", slack(), nil)
	assert.Equal(t, http.StatusNotFound, r.status)
	assert.Equal(t, `{"error":"Not found"}`, r.body)
	r = cpCall(t, s, cpName, http.MethodOptions, "/secrets", "", nil, nil)
	assert.Equal(t, http.StatusOK, r.status)
	assert.Equal(t, "", r.body)
	assert.Equal(t, "GET, POST, PUT, PATCH, DELETE, OPTIONS", r.header.Get("Access-Control-Allow-Methods"))
}

func TestControlPlaneSecretsLifecycle(t *testing.T) {
	s, c, _ := startCP(t, emulator.Options{})
	cfBefore := s.CloudflareCalls()

	vals, ok := s.Workers().AppSecrets(acct, cpName)
	require.True(t, ok)
	assert.Empty(t, vals)

	r := cpCall(t, s, cpName, http.MethodPut, "/secrets", `{"secrets":{"ANTHROPIC_API_KEY":"sk-ant-1","lower_case":"v2"}}`, slack(), nil)
	require.Equal(t, http.StatusOK, r.status, r.body)
	assert.Equal(t, `{"status":"updated","keys":["ANTHROPIC_API_KEY","LOWER_CASE"],"created":2,"updated":0}`, r.body)
	vals, _ = s.Workers().AppSecrets(acct, cpName)
	assert.Equal(t, map[string]string{"ANTHROPIC_API_KEY": "sk-ant-1", "LOWER_CASE": "v2"}, vals, "keys are stored upper-cased")

	r = cpCall(t, s, cpName, http.MethodPut, "/secrets", `{"secrets":{"ANTHROPIC_API_KEY":"sk-ant-2","NEW_ONE":"n"}}`, slack(), nil)
	require.Equal(t, http.StatusOK, r.status, r.body)
	assert.Equal(t, `{"status":"updated","keys":["ANTHROPIC_API_KEY","NEW_ONE"],"created":1,"updated":1}`, r.body)

	// The list has keys and timestamps, never values.
	r = cpCall(t, s, cpName, http.MethodGet, "/secrets", "", slack(), nil)
	require.Equal(t, http.StatusOK, r.status, r.body)
	for _, v := range []string{"sk-ant-1", "sk-ant-2", "v2", `"n"`} {
		assert.NotContains(t, r.body, v)
	}
	var list struct {
		Secrets []struct {
			Key       string `json:"key"`
			CreatedAt int64  `json:"createdAt"`
			UpdatedAt int64  `json:"updatedAt"`
		} `json:"secrets"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.body), &list))
	require.Len(t, list.Secrets, 3)
	assert.Equal(t, []string{"ANTHROPIC_API_KEY", "LOWER_CASE", "NEW_ONE"},
		[]string{list.Secrets[0].Key, list.Secrets[1].Key, list.Secrets[2].Key}, "sorted by key")
	for _, e := range list.Secrets {
		assert.InDelta(t, time.Now().UnixMilli(), e.CreatedAt, 60_000)
		assert.GreaterOrEqual(t, e.UpdatedAt, e.CreatedAt)
	}
	var raw map[string][]map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.body), &raw))
	assert.Len(t, raw["secrets"][0], 3, "exactly key, createdAt, updatedAt")

	// An actor of the service's own namespace is fine.
	g := slack()
	g.actor = "slack:U0123456"
	assert.Equal(t, http.StatusOK, cpCall(t, s, cpName, http.MethodGet, "/secrets", "", g, nil).status)

	// DELETE takes the key case-insensitively and answers the stored name.
	r = cpCall(t, s, cpName, http.MethodDelete, "/secrets/lower_case", "", slack(), nil)
	require.Equal(t, http.StatusOK, r.status, r.body)
	assert.Equal(t, `{"status":"deleted","key":"LOWER_CASE"}`, r.body)
	r = cpCall(t, s, cpName, http.MethodDelete, "/secrets/LOWER_CASE", "", slack(), nil)
	assert.Equal(t, http.StatusNotFound, r.status)
	assert.Equal(t, `{"error":"Secret not found"}`, r.body)
	vals, _ = s.Workers().AppSecrets(acct, cpName)
	assert.Equal(t, map[string]string{"ANTHROPIC_API_KEY": "sk-ant-2", "NEW_ONE": "n"}, vals)

	// An empty object is a valid no-op.
	r = cpCall(t, s, cpName, http.MethodPut, "/secrets", `{"secrets":{}}`, slack(), nil)
	assert.Equal(t, `{"status":"updated","keys":[],"created":0,"updated":0}`, r.body)

	counts := s.Counts()
	assert.Equal(t, 3, counts[cpPutKey])
	assert.Equal(t, 2, counts[cpGetKey])
	assert.Equal(t, 2, countPrefix(counts, cpDeletePre))
	assert.Equal(t, cfBefore, s.CloudflareCalls(), "control-plane calls are not Cloudflare calls")

	inv := s.Inventory()
	require.Len(t, inv.Workers, 1)
	assert.Equal(t, 2, inv.Workers[0].AppSecrets)

	// A redeploy of the control plane keeps the store.
	db, err := c.D1.Database.List(context.Background(), d1.DatabaseListParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	uploadIn(t, c, acct, cpName, cpBindings(db.Result[0].UUID, M{"type": "plain_text", "name": "APP_NAME", "text": "x"}))
	vals, _ = s.Workers().AppSecrets(acct, cpName)
	assert.Len(t, vals, 2)
}

func TestControlPlaneRejectsBadSignatures(t *testing.T) {
	s, _, _ := startCP(t, emulator.Options{})
	const body = `{"secrets":{"SHOULD_NOT_LAND":"x"}}`
	now := time.Now()
	cases := []struct {
		name    string
		method  string
		path    string
		body    string
		sig     *sig
		headers map[string]string
		status  int
		want    string
	}{
		{name: "no auth headers at all", sig: nil, status: 401},
		{name: "signature without service header", sig: slack(), headers: map[string]string{"X-OpenInspect-Service": ""}, status: 401},
		{name: "service header without signature", sig: slack(), headers: map[string]string{"X-OpenInspect-Service-Signature": ""}, status: 401},
		{name: "unknown service", sig: &sig{service: "discord-bot", key: slackKey}, status: 401},
		{name: "service name in another case", sig: &sig{service: "Slack-Bot", key: slackKey}, status: 401},
		{name: "wrong key", sig: &sig{service: "slack-bot", key: slackKey + "x"}, status: 401},
		{name: "key of another service", sig: &sig{service: "slack-bot", key: webKey}, status: 401},
		{name: "body differs from the signed one", sig: &sig{service: "slack-bot", key: slackKey, body: []byte(`{"secrets":{}}`)}, status: 401},
		{name: "path differs from the signed one", method: "DELETE", path: "/secrets/SHOULD_NOT_LAND",
			sig: &sig{service: "slack-bot", key: slackKey, path: "/secrets/OTHER"}, status: 401},
		{name: "signed with the emulator prefix", sig: &sig{service: "slack-bot", key: slackKey, path: "/__workers/" + cpName + "/secrets"}, status: 401},
		{name: "signed as another method", sig: &sig{service: "slack-bot", key: slackKey, method: http.MethodGet}, status: 401},
		{name: "query not signed", path: "/secrets?b=2&a=1", sig: slack(), status: 401},
		{name: "query signed in wire order", path: "/secrets?b=2&a=1", sig: &sig{service: "slack-bot", key: slackKey, query: "b=2&a=1"}, status: 401},
		{name: "expired: 6 minutes old", sig: &sig{service: "slack-bot", key: slackKey, at: now.Add(-6 * time.Minute)}, status: 401},
		{name: "from the future: 6 minutes ahead", sig: &sig{service: "slack-bot", key: slackKey, at: now.Add(6 * time.Minute)}, status: 401},
		{name: "upper-case nonce", sig: &sig{service: "slack-bot", key: slackKey, nonce: "ABCDEF"}, status: 401},
		{name: "65-digit nonce", sig: &sig{service: "slack-bot", key: slackKey, nonce: strings.Repeat("a", 65)}, status: 401},
		{name: "actor of another namespace", sig: &sig{service: "slack-bot", key: slackKey, actor: "github:1"}, status: 401},
		{name: "actor without namespace", sig: &sig{service: "slack-bot", key: slackKey, actor: "U123"}, status: 401},
		{name: "actor changed after signing", sig: &sig{service: "slack-bot", key: slackKey, actor: "slack:U1"},
			headers: map[string]string{"X-OpenInspect-Actor": "slack:U2"}, status: 401},
		{name: "web needs a browser session", sig: &sig{service: "web", key: webKey}, status: 401},
		{name: "service whose key is not bound", sig: &sig{service: "github-bot", key: "anything"}, status: 500,
			want: `{"error":"Service authentication not configured"}`},
		{name: "malformed header", sig: slack(), headers: map[string]string{"X-OpenInspect-Service-Signature": "sig2.1.ab.cd"}, status: 401},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			method, path, b := tc.method, tc.path, body
			if method == "" {
				method = http.MethodPut
			}
			if path == "" {
				path = "/secrets"
			}
			if method == http.MethodDelete {
				b = ""
			}
			r := cpCall(t, s, cpName, method, path, b, tc.sig, tc.headers)
			assert.Equal(t, tc.status, r.status, r.body)
			want := tc.want
			if want == "" {
				want = unauthBody
			}
			assert.Equal(t, want, r.body)
			assert.Equal(t, "*", r.header.Get("Access-Control-Allow-Origin"))
		})
	}
	vals, _ := s.Workers().AppSecrets(acct, cpName)
	assert.Empty(t, vals, "no rejected request wrote anything")
	assert.Equal(t, len(cases), s.Counts()[cpPutKey]+countPrefix(s.Counts(), cpDeletePre), "rejected requests are counted too")
}

func TestControlPlaneAcceptsCanonicalQueryAndClockSkew(t *testing.T) {
	s, _, _ := startCP(t, emulator.Options{})
	// The wire order is b, a; the signature covers the sorted form.
	g := &sig{service: "slack-bot", key: slackKey, query: "a=1&b=2"}
	r := cpCall(t, s, cpName, http.MethodGet, "/secrets?b=2&a=1", "", g, nil)
	assert.Equal(t, http.StatusOK, r.status, r.body)
	// Decoded, then re-encoded like encodeURIComponent: '+' is a space (%20).
	g = &sig{service: "slack-bot", key: slackKey, query: "note=a%20b&q=x%2Fy"}
	r = cpCall(t, s, cpName, http.MethodGet, "/secrets?q=x/y&note=a+b", "", g, nil)
	assert.Equal(t, http.StatusOK, r.status, r.body)

	for _, skew := range []time.Duration{-4*time.Minute - 50*time.Second, 4*time.Minute + 50*time.Second} {
		g = &sig{service: "slack-bot", key: slackKey, at: time.Now().Add(skew)}
		assert.Equal(t, http.StatusOK, cpCall(t, s, cpName, http.MethodGet, "/secrets", "", g, nil).status, "skew %v", skew)
	}
}

func TestControlPlaneAcceptsReusedNonce(t *testing.T) {
	// Upstream only logs a reused nonce; within the validity window a replay
	// of the very same request succeeds.
	s, _, _ := startCP(t, emulator.Options{})
	g := &sig{service: "slack-bot", key: slackKey, nonce: "00ff00ff", at: time.Now()}
	h := map[string]string{"X-OpenInspect-Service-Signature": g.header(http.MethodPut, "/secrets", []byte(`{"secrets":{"A":"1"}}`))}
	for range 2 {
		r := cpCall(t, s, cpName, http.MethodPut, "/secrets", `{"secrets":{"A":"1"}}`, g, h)
		assert.Equal(t, http.StatusOK, r.status, r.body)
	}
	vals, _ := s.Workers().AppSecrets(acct, cpName)
	assert.Equal(t, map[string]string{"A": "1"}, vals)
}

func TestControlPlaneSecretValidation(t *testing.T) {
	s, _, _ := startCP(t, emulator.Options{})
	many := map[string]string{}
	for i := range 51 {
		many[fmt.Sprintf("K%02d", i)] = "v"
	}
	manyJSON, _ := json.Marshal(map[string]any{"secrets": many})
	big := strings.Repeat("x", 16000)
	cases := []struct{ name, body, want string }{
		{"invalid JSON", `{"secrets":`, "Invalid JSON body"},
		{"empty body", ``, "Invalid JSON body"},
		{"no secrets", `{}`, "Request body must include secrets object"},
		{"secrets null", `{"secrets":null}`, "Request body must include secrets object"},
		{"secrets a string", `{"secrets":"A=1"}`, "Request body must include secrets object"},
		{"body an array", `[{"secrets":{"A":"1"}}]`, "Request body must include secrets object"},
		{"secrets an array", `{"secrets":["v"]}`, "Key must match [A-Za-z_][A-Za-z0-9_]*"},
		{"reserved key", `{"secrets":{"path":"/bin"}}`, "Key 'PATH' is reserved"},
		{"key with a dash", `{"secrets":{"MY-KEY":"v"}}`, "Key must match [A-Za-z_][A-Za-z0-9_]*"},
		{"key starting with a digit", `{"secrets":{"1KEY":"v"}}`, "Key must match [A-Za-z_][A-Za-z0-9_]*"},
		{"empty key", `{"secrets":{"":"v"}}`, "Key too long or empty"},
		{"key too long", `{"secrets":{"` + strings.Repeat("K", 257) + `":"v"}}`, "Key too long or empty"},
		{"number value", `{"secrets":{"A":1}}`, "Value must be a string"},
		{"null value", `{"secrets":{"A":null}}`, "Value must be a string"},
		{"value too large", `{"secrets":{"A":"` + strings.Repeat("x", 16385) + `"}}`, "Value exceeds 16384 bytes"},
		{"same key twice after upper-casing", `{"secrets":{"foo":"1","FOO":"2"}}`, "Duplicate secret key 'FOO' after normalization"},
		{"total too large", `{"secrets":{"A":"` + big + `","B":"` + big + `","C":"` + big + `","D":"` + big + `","E":"` + big + `"}}`,
			"Total secret size exceeds 65536 bytes"},
		{"too many keys", string(manyJSON), "Global secrets would exceed 50 secrets limit (current: 0, adding: 51)"},
		// Integer-like keys come first in JavaScript's property order, so
		// that error wins over the reserved key listed before it.
		{"property order", `{"secrets":{"HOME":"h","7":"x"}}`, "Key must match [A-Za-z_][A-Za-z0-9_]*"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := cpCall(t, s, cpName, http.MethodPut, "/secrets", tc.body, slack(), nil)
			assert.Equal(t, http.StatusBadRequest, r.status)
			assert.Equal(t, `{"error":`+mustJSON(t, tc.want)+`}`, r.body)
		})
	}
	// Limits hold exactly at the boundary.
	r := cpCall(t, s, cpName, http.MethodPut, "/secrets", `{"secrets":{"A":"`+strings.Repeat("x", 16384)+`","`+strings.Repeat("K", 256)+`":"v"}}`, slack(), nil)
	assert.Equal(t, http.StatusOK, r.status, r.body)

	r = cpCall(t, s, cpName, http.MethodDelete, "/secrets/MY-KEY", "", slack(), nil)
	assert.Equal(t, http.StatusBadRequest, r.status)
	assert.Equal(t, `{"error":"Key must match [A-Za-z_][A-Za-z0-9_]*"}`, r.body)
	r = cpCall(t, s, cpName, http.MethodDelete, "/secrets/HOME", "", slack(), nil)
	assert.Equal(t, `{"error":"Key 'HOME' is reserved"}`, r.body)
	vals, _ := s.Workers().AppSecrets(acct, cpName)
	assert.Len(t, vals, 2, "only the boundary write landed")
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

func TestControlPlaneDeploymentConfiguration(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	db := createDB(t, c, "open-inspect-demo")
	migrateFixture(t, c, db.UUID)
	without := func(name string) []M {
		var out []M
		for _, b := range cpBindings(db.UUID) {
			if b["name"] != name {
				out = append(out, b)
			}
		}
		return out
	}
	put := func(script, body string) cpResp {
		return cpCall(t, s, script, http.MethodPut, "/secrets", body, slack(), nil)
	}

	// No DB binding: the worker refuses everything, /health included.
	uploadIn(t, c, acct, "cp-no-db", without("DB"))
	r := cpCall(t, s, "cp-no-db", http.MethodGet, "/health", "", nil, nil)
	assert.Equal(t, http.StatusServiceUnavailable, r.status)
	assert.Equal(t, `{"error":"Database not configured"}`, r.body)

	// No REPO_SECRETS_ENCRYPTION_KEY: healthy, but the secrets API is 500.
	uploadIn(t, c, acct, "cp-no-enc", without("REPO_SECRETS_ENCRYPTION_KEY"))
	assert.Equal(t, http.StatusOK, cpCall(t, s, "cp-no-enc", http.MethodGet, "/health", "", nil, nil).status)
	for _, r := range []cpResp{put("cp-no-enc", `{"secrets":{"A":"1"}}`), cpCall(t, s, "cp-no-enc", http.MethodGet, "/secrets", "", slack(), nil)} {
		assert.Equal(t, http.StatusInternalServerError, r.status)
		assert.Equal(t, `{"error":"REPO_SECRETS_ENCRYPTION_KEY not configured"}`, r.body)
	}

	// A key AES-GCM cannot import fails the write (nothing to encrypt is fine).
	uploadIn(t, c, acct, "cp-bad-enc", append(without("REPO_SECRETS_ENCRYPTION_KEY"),
		M{"type": "secret_text", "name": "REPO_SECRETS_ENCRYPTION_KEY", "text": "not-base64-32-bytes"}))
	r = put("cp-bad-enc", `{"secrets":{"A":"1"}}`)
	assert.Equal(t, http.StatusServiceUnavailable, r.status)
	assert.Equal(t, `{"error":"Secrets storage unavailable"}`, r.body)
	assert.Equal(t, http.StatusOK, put("cp-bad-enc", `{"secrets":{}}`).status)

	// The secrets routes are GitHub-only upstream.
	uploadIn(t, c, acct, "cp-gitlab", cpBindings(db.UUID, M{"type": "plain_text", "name": "SCM_PROVIDER", "text": " GitLab "}))
	r = put("cp-gitlab", `{"secrets":{"A":"1"}}`)
	assert.Equal(t, http.StatusNotImplemented, r.status)
	assert.Equal(t, `{"error":"SCM provider 'gitlab' is not implemented in this deployment."}`, r.body)
	assert.Equal(t, http.StatusOK, cpCall(t, s, "cp-gitlab", http.MethodGet, "/health", "", nil, nil).status)
	uploadIn(t, c, acct, "cp-svn", cpBindings(db.UUID, M{"type": "plain_text", "name": "SCM_PROVIDER", "text": "svn"}))
	r = cpCall(t, s, "cp-svn", http.MethodGet, "/health", "", nil, nil)
	assert.Equal(t, http.StatusInternalServerError, r.status)
	assert.Equal(t, `{"error":"Invalid SCM_PROVIDER value 'svn'. Supported values: github, bitbucket, gitlab."}`, r.body)

	// A body over 16 MiB is refused before the signature is checked.
	uploadIn(t, c, acct, "cp-big", cpBindings(db.UUID))
	g := slack()
	g.body = []byte("{}")
	r = cpCall(t, s, "cp-big", http.MethodPut, "/secrets", strings.Repeat(" ", 16<<20+1), g, nil)
	assert.Equal(t, http.StatusRequestEntityTooLarge, r.status)
	assert.Equal(t, `{"error":"Request body too large"}`, r.body)
}

// Every script runs its own code: one that is no control plane answers what
// it answers, a missing one is 404 naming it, and a name in two accounts
// cannot be told apart under /__workers/.
func TestWorkersServeTheirOwnCode(t *testing.T) {
	s := start(t, emulator.Options{Tokens: map[string]string{
		emulator.DefaultToken: acct, "other-token": "1111111111111111aaaaaaaaaaaaaaaa",
	}})
	c := newClient(s)
	mustUpload(t, c, "slack-bot", meta(M{"type": "secret_text", "name": "SERVICE_AUTH_SECRET", "text": slackKey}), indexJS)
	r := cpCall(t, s, "slack-bot", http.MethodGet, "/health", "", nil, nil)
	assert.Equal(t, http.StatusOK, r.status)
	assert.Equal(t, "ok", r.body)
	_, ok := s.Workers().AppSecrets(acct, "slack-bot")
	assert.False(t, ok, "no DB binding: no secrets store")

	r = cpCall(t, s, "missing", http.MethodGet, "/health", "", nil, nil)
	assert.Equal(t, http.StatusNotFound, r.status)
	assert.JSONEq(t, `{"error":"no worker script named \"missing\""}`, r.body)

	mustUpload(t, c, "twin", meta(), indexJS)
	other := newClient(s, option.WithAPIToken("other-token"))
	ct, body := multipartBody(t, meta(), indexJS)
	_, err := other.Workers.Scripts.Update(context.Background(), "twin", workers.ScriptUpdateParams{AccountID: cloudflare.F("1111111111111111aaaaaaaaaaaaaaaa")},
		option.WithRequestBody(ct, body))
	require.NoError(t, err)
	r = cpCall(t, s, "twin", http.MethodGet, "/health", "", nil, nil)
	assert.Equal(t, http.StatusConflict, r.status)
	assert.Contains(t, r.body, "more than one account")
	assert.Equal(t, 0, s.Counts()["UNMATCHED"])
}

func countPrefix(counts map[string]int, prefix string) int {
	n := 0
	for k, v := range counts {
		if strings.HasPrefix(k, prefix) {
			n += v
		}
	}
	return n
}

// The secrets live in the D1 database the control plane binds: the script
// deleted, nothing answers for them; uploaded again, they are there.
func TestControlPlaneStoreLivesInTheDatabase(t *testing.T) {
	s, c, dbID := startCP(t, emulator.Options{})
	r := cpCall(t, s, cpName, http.MethodPut, "/secrets", `{"secrets":{"A":"1"}}`, slack(), nil)
	require.Equal(t, http.StatusOK, r.status, r.body)

	_, err := c.Workers.Scripts.Delete(context.Background(), cpName, workers.ScriptDeleteParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	_, ok := s.Workers().AppSecrets(acct, cpName)
	assert.False(t, ok)
	assert.Equal(t, http.StatusNotFound, cpCall(t, s, cpName, http.MethodGet, "/secrets", "", slack(), nil).status)

	// The store is the database's, as upstream's is: a script uploaded
	// again on it finds what was stored.
	uploadIn(t, c, acct, cpName, cpBindings(dbID))
	vals, ok := s.Workers().AppSecrets(acct, cpName)
	assert.True(t, ok)
	assert.Equal(t, map[string]string{"A": "1"}, vals)

	// WipeAppSecrets simulates a store emptied behind the provider's back.
	cpCall(t, s, cpName, http.MethodPut, "/secrets", `{"secrets":{"B":"2"}}`, slack(), nil)
	s.Workers().WipeAppSecrets(acct, cpName)
	vals, _ = s.Workers().AppSecrets(acct, cpName)
	assert.Empty(t, vals)
	assert.Equal(t, 0, s.Inventory().Workers[0].AppSecrets)
}

func TestControlPlaneStorePersists(t *testing.T) {
	dir := t.TempDir()
	first, err := emulator.Start(emulator.Options{DataDir: dir})
	require.NoError(t, err)
	c := newClient(first)
	db := createDB(t, c, "open-inspect-demo")
	migrateFixture(t, c, db.UUID)
	uploadIn(t, c, acct, cpName, cpBindings(db.UUID))
	r := cpCall(t, first, cpName, http.MethodPut, "/secrets", `{"secrets":{"A":"1","B":"2"}}`, slack(), nil)
	require.Equal(t, http.StatusOK, r.status, r.body)
	list := cpCall(t, first, cpName, http.MethodGet, "/secrets", "", slack(), nil).body
	inv := first.Inventory()
	require.NoError(t, first.Close())

	second := start(t, emulator.Options{DataDir: dir})
	vals, ok := second.Workers().AppSecrets(acct, cpName)
	require.True(t, ok)
	assert.Equal(t, map[string]string{"A": "1", "B": "2"}, vals)
	assert.Equal(t, list, cpCall(t, second, cpName, http.MethodGet, "/secrets", "", slack(), nil).body, "timestamps survive too")
	assert.Equal(t, inv, second.Inventory())

	second.Workers().WipeAppSecrets(acct, cpName)
	require.NoError(t, second.Close())
	third := start(t, emulator.Options{DataDir: dir})
	vals, _ = third.Workers().AppSecrets(acct, cpName)
	assert.Empty(t, vals, "the wipe is persisted")
}

func TestControlPlaneFaults(t *testing.T) {
	s, _, _ := startCP(t, emulator.Options{})
	// A fault for every Cloudflare route leaves control-plane routes alone.
	s.InjectFault(emulator.Fault{Kind: emulator.FaultServerError, Status: 503})
	s.InjectFault(emulator.Fault{Route: cpPutKey, Kind: emulator.FaultServerError, Status: 502, Times: 1})
	r := cpCall(t, s, cpName, http.MethodPut, "/secrets", `{"secrets":{"A":"1"}}`, slack(), nil)
	assert.Equal(t, http.StatusBadGateway, r.status)
	assert.JSONEq(t, `{"error":"Internal server error"}`, r.body)
	_, ok := s.Workers().AppSecrets(acct, cpName)
	assert.True(t, ok)
	r = cpCall(t, s, cpName, http.MethodPut, "/secrets", `{"secrets":{"A":"1"}}`, slack(), nil)
	assert.Equal(t, http.StatusOK, r.status, r.body)
	assert.Equal(t, 2, s.Counts()[cpPutKey])
	assert.Equal(t, http.StatusOK, cpCall(t, s, cpName, http.MethodGet, "/health", "", nil, nil).status)
	assert.Equal(t, 1, s.Counts()[cpHealthKey])
	cpCall(t, s, cpName, http.MethodGet, "/nope", "", nil, nil)
	assert.Equal(t, 1, s.Counts()[cpNopeKey])

	s.ClearFaults()
	s.InjectFault(emulator.Fault{Route: "GET /__workers/{script_name}/health", Kind: emulator.FaultDropConnection, Times: 1})
	// No keep-alive: the transport retries a GET only on a reused connection.
	tr := loopback.Transport()
	tr.DisableKeepAlives = true
	fresh := &http.Client{Transport: tr}
	_, err := fresh.Get(s.Workers().WorkerURL(cpName) + "/health")
	assert.Error(t, err)
}
