package emulator_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/cloudflare/cloudflare-go/v4"
	"github.com/cloudflare/cloudflare-go/v4/accounts"
	"github.com/cloudflare/cloudflare-go/v4/d1"
	"github.com/cloudflare/cloudflare-go/v4/kv"
	"github.com/cloudflare/cloudflare-go/v4/r2"
	"github.com/cloudflare/cloudflare-go/v4/workers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/internal/loopback"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
)

// api sends a request with the default token and decodes the envelope.
func api(t *testing.T, s *emulator.Server, method, path, contentType string, body []byte) (int, envelopeOf) {
	t.Helper()
	req, err := http.NewRequest(method, s.CloudflareBaseURL()+strings.TrimPrefix(path, "/"), bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+emulator.DefaultToken)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var env envelopeOf
	require.NoError(t, json.Unmarshal(raw, &env), "%s", raw)
	return resp.StatusCode, env
}

type envelopeOf struct {
	Success bool            `json:"success"`
	Errors  []M             `json:"errors"`
	Result  json.RawMessage `json:"result"`
}

func (e envelopeOf) code() float64 {
	if len(e.Errors) == 0 {
		return 0
	}
	return e.Errors[0]["code"].(float64)
}

func (e envelopeOf) into(t *testing.T, v any) {
	t.Helper()
	require.NoError(t, json.Unmarshal(e.Result, v), "%s", e.Result)
}

func jsonBody(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

const scriptsPath = "accounts/" + acct + "/workers/scripts/"

func TestWorkerUploadCreatesVersionAndDeployment(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	res := mustUpload(t, c, "app", meta(M{"type": "plain_text", "name": "MODE", "text": "a"}))
	var raw struct {
		DeploymentID     string `json:"deployment_id"`
		Tag              string `json:"tag"`
		LastDeployedFrom string `json:"last_deployed_from"`
		Handlers         []string
	}
	require.NoError(t, json.Unmarshal([]byte(res.JSON.RawJSON()), &raw))
	d, _ := s.Workers().Worker(acct, "app")
	assert.Equal(t, d.DeployedVersion, raw.DeploymentID, "deployment_id is the deployed version's ID")
	assert.Regexp(t, `^[0-9a-f-]{36}$`, raw.DeploymentID)
	assert.Equal(t, "api", raw.LastDeployedFrom)
	assert.Equal(t, d.Tag, raw.Tag)

	deps, err := c.Workers.Scripts.Deployments.Get(context.Background(), "app", workers.ScriptDeploymentGetParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	require.Len(t, deps.Deployments, 1)
	assert.Equal(t, raw.DeploymentID, deps.Deployments[0].Versions[0].VersionID)
	assert.EqualValues(t, 100, deps.Deployments[0].Versions[0].Percentage)

	mustUpload(t, c, "app", meta(M{"type": "plain_text", "name": "MODE", "text": "b"}, M{"type": "secret_text", "name": "S", "text": "hidden"}))
	deps, err = c.Workers.Scripts.Deployments.Get(context.Background(), "app", workers.ScriptDeploymentGetParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	require.Len(t, deps.Deployments, 2, "newest first")
	d, _ = s.Workers().Worker(acct, "app")
	assert.Equal(t, d.DeployedVersion, deps.Deployments[0].Versions[0].VersionID)

	v, err := c.Workers.Scripts.Versions.Get(context.Background(), "app", d.DeployedVersion, workers.ScriptVersionGetParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	assert.EqualValues(t, 2, v.Number)
	var detail struct {
		Resources struct {
			Bindings      []M `json:"bindings"`
			ScriptRuntime M   `json:"script_runtime"`
			Script        M   `json:"script"`
		} `json:"resources"`
	}
	require.NoError(t, json.Unmarshal([]byte(v.JSON.RawJSON()), &detail))
	assert.Equal(t, []M{{"type": "plain_text", "name": "MODE", "text": "b"}, {"type": "secret_text", "name": "S"}}, detail.Resources.Bindings,
		"secret texts are never returned")
	assert.Equal(t, "2025-01-01", detail.Resources.ScriptRuntime["compatibility_date"])
	assert.Equal(t, []any{"fetch"}, detail.Resources.Script["handlers"])

	status, env := api(t, s, http.MethodGet, "accounts/"+acct+"/workers/services/app", "", nil)
	require.Equal(t, http.StatusOK, status)
	var svc struct {
		DefaultEnvironment struct {
			Environment string `json:"environment"`
			Script      M      `json:"script"`
		} `json:"default_environment"`
	}
	env.into(t, &svc)
	assert.Equal(t, "production", svc.DefaultEnvironment.Environment)
	assert.Equal(t, d.Tag, svc.DefaultEnvironment.Script["tag"])
	assert.Equal(t, "api", svc.DefaultEnvironment.Script["last_deployed_from"])

	status, env = api(t, s, http.MethodGet, "accounts/"+acct+"/workers/services/nope", "", nil)
	assert.Equal(t, http.StatusNotFound, status)
	assert.EqualValues(t, 10090, env.code())
	status, env = api(t, s, http.MethodGet, scriptsPath+"nope/deployments", "", nil)
	assert.Equal(t, http.StatusNotFound, status)
	assert.EqualValues(t, 10007, env.code())
}

func TestWorkerVersionsFlow(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	mustUpload(t, c, "app", meta(M{"type": "plain_text", "name": "MODE", "text": "a"}, M{"type": "plain_text", "name": "KEEP", "text": "k"}))
	first, _ := s.Workers().Worker(acct, "app")

	// A version inheriting KEEP, not deployed yet.
	ct, body := multipartBody(t, meta(M{"type": "plain_text", "name": "MODE", "text": "b"}, M{"type": "inherit", "name": "KEEP"}),
		mod{"index.js", "application/javascript+module", "export default { fetch() { return new Response('v2') } }"})
	status, env := api(t, s, http.MethodPost, scriptsPath+"app/versions?bindings_inherit=strict", ct, body)
	require.Equal(t, http.StatusOK, status, "%+v", env)
	var v struct {
		ID        string `json:"id"`
		Resources struct {
			Bindings []M `json:"bindings"`
		} `json:"resources"`
	}
	env.into(t, &v)
	assert.Equal(t, []M{{"type": "plain_text", "name": "MODE", "text": "b"}, {"type": "plain_text", "name": "KEEP", "text": "k"}}, v.Resources.Bindings)
	d, _ := s.Workers().Worker(acct, "app")
	assert.Equal(t, first.DeployedVersion, d.DeployedVersion, "a version upload deploys nothing")
	assert.Equal(t, "a", d.Vars["MODE"])

	status, env = api(t, s, http.MethodGet, scriptsPath+"app/versions?deployable=true", "", nil)
	require.Equal(t, http.StatusOK, status)
	var list struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}
	env.into(t, &list)
	require.Len(t, list.Items, 2)
	assert.Equal(t, v.ID, list.Items[0].ID, "newest first")

	status, env = api(t, s, http.MethodPost, scriptsPath+"app/deployments", "application/json",
		jsonBody(M{"strategy": "percentage", "versions": []M{{"version_id": v.ID, "percentage": 100}}, "annotations": M{"workers/message": "ship"}}))
	require.Equal(t, http.StatusOK, status, "%+v", env)
	d, _ = s.Workers().Worker(acct, "app")
	assert.Equal(t, v.ID, d.DeployedVersion)
	assert.Equal(t, map[string]string{"MODE": "b", "KEEP": "k"}, d.Vars)
	assert.Contains(t, d.Modules["index.js"], "v2")

	// Shares must add up to 100 and name known versions.
	status, env = api(t, s, http.MethodPost, scriptsPath+"app/deployments", "application/json",
		jsonBody(M{"strategy": "percentage", "versions": []M{{"version_id": v.ID, "percentage": 50}}}))
	assert.Equal(t, http.StatusBadRequest, status)
	assert.EqualValues(t, 10021, env.code())

	// Strict inherit of a binding that does not exist fails; without
	// strict it is dropped.
	ct, body = multipartBody(t, meta(M{"type": "inherit", "name": "GONE"}), indexJS)
	status, env = api(t, s, http.MethodPost, scriptsPath+"app/versions?bindings_inherit=strict", ct, body)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.EqualValues(t, 10057, env.code())
	assert.Contains(t, env.Errors[0]["message"], "inherit binding 'GONE' is invalid")
	ct, body = multipartBody(t, meta(M{"type": "inherit", "name": "GONE"}), indexJS)
	status, _ = api(t, s, http.MethodPut, scriptsPath+"app", ct, body)
	assert.Equal(t, http.StatusOK, status)
	d, _ = s.Workers().Worker(acct, "app")
	assert.Empty(t, d.Bindings)

	// Version uploads need an existing script and carry no migrations.
	ct, body = multipartBody(t, meta(), indexJS)
	status, env = api(t, s, http.MethodPost, scriptsPath+"other/versions", ct, body)
	assert.Equal(t, http.StatusNotFound, status)
	assert.EqualValues(t, 10007, env.code())

	status, env = api(t, s, http.MethodPatch, scriptsPath+"app/script-settings", "application/json",
		jsonBody(M{"logpush": true, "tags": []string{"a"}, "observability": M{"enabled": false}}))
	require.Equal(t, http.StatusOK, status)
	var settings M
	env.into(t, &settings)
	assert.Equal(t, true, settings["logpush"])
	assert.Equal(t, []any{"a"}, settings["tags"])
}

func TestWorkerSecretsAPI(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	ctx := context.Background()
	_, err := c.Workers.Scripts.Secrets.Update(ctx, "app", workers.ScriptSecretUpdateParams{AccountID: cloudflare.F(acct),
		Body: workers.ScriptSecretUpdateParamsBody{Name: cloudflare.F("K"), Text: cloudflare.F("v"), Type: cloudflare.F(workers.ScriptSecretUpdateParamsBodyTypeSecretText)}})
	requireAPIError(t, err, http.StatusNotFound, 10007)

	mustUpload(t, c, "app", meta(M{"type": "plain_text", "name": "MODE", "text": "a"}))
	_, err = c.Workers.Scripts.Secrets.Update(ctx, "app", workers.ScriptSecretUpdateParams{AccountID: cloudflare.F(acct),
		Body: workers.ScriptSecretUpdateParamsBody{Name: cloudflare.F("API_KEY"), Text: cloudflare.F("s1"), Type: cloudflare.F(workers.ScriptSecretUpdateParamsBodyTypeSecretText)}})
	require.NoError(t, err)
	d, _ := s.Workers().Worker(acct, "app")
	assert.Equal(t, map[string]string{"API_KEY": "s1"}, d.Secrets)
	assert.Len(t, d.Versions, 2, "a secret change is a version")

	list, err := c.Workers.Scripts.Secrets.List(ctx, "app", workers.ScriptSecretListParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	require.Len(t, list.Result, 1)
	assert.Equal(t, "API_KEY", list.Result[0].Name)
	assert.NotContains(t, list.JSON.RawJSON(), "s1")

	// A later upload that does not bind API_KEY keeps it; one that binds
	// it replaces it.
	mustUpload(t, c, "app", meta(M{"type": "plain_text", "name": "MODE", "text": "b"}))
	d, _ = s.Workers().Worker(acct, "app")
	assert.Equal(t, map[string]string{"API_KEY": "s1"}, d.Secrets)
	assert.Equal(t, map[string]string{"MODE": "b"}, d.Vars)
	mustUpload(t, c, "app", meta(M{"type": "secret_text", "name": "API_KEY", "text": "s2"}))
	d, _ = s.Workers().Worker(acct, "app")
	assert.Equal(t, map[string]string{"API_KEY": "s2"}, d.Secrets)

	_, err = c.Workers.Scripts.Secrets.Delete(ctx, "app", "API_KEY", workers.ScriptSecretDeleteParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	d, _ = s.Workers().Worker(acct, "app")
	assert.Empty(t, d.Secrets)
	mustUpload(t, c, "app", meta())
	d, _ = s.Workers().Worker(acct, "app")
	assert.Empty(t, d.Secrets, "a deleted secret is not inherited")

	// Secrets only ever sent in uploads are not inherited (the provider's
	// way: it sends its secrets every time).
	mustUpload(t, c, "app", meta(M{"type": "secret_text", "name": "UPLOADED", "text": "x"}))
	mustUpload(t, c, "app", meta())
	d, _ = s.Workers().Worker(acct, "app")
	assert.Empty(t, d.Secrets)

	_, err = c.Workers.Scripts.Secrets.Delete(ctx, "app", "NOPE", workers.ScriptSecretDeleteParams{AccountID: cloudflare.F(acct)})
	requireAPIError(t, err, http.StatusNotFound, 10056)
}

func TestWorkerReferencesAndServiceDelete(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	q := createQueue(t, c, "jobs")
	m := meta(M{"type": "durable_object_namespace", "name": "ROOM", "class_name": "Room"})
	m["migrations"] = M{"new_tag": "v1", "new_sqlite_classes": []string{"Room"}}
	mustUpload(t, c, "core", m)
	mustUpload(t, c, "edge", meta(M{"type": "service", "name": "CORE", "service": "core"},
		M{"type": "durable_object_namespace", "name": "ROOM", "class_name": "Room", "script_name": "core"}))
	m = meta()
	m["tail_consumers"] = []M{{"service": "core"}}
	mustUpload(t, c, "noisy", m)

	status, env := api(t, s, http.MethodGet, scriptsPath+"core/references", "", nil)
	require.Equal(t, http.StatusOK, status)
	var refs struct {
		Services struct {
			Incoming []M `json:"incoming"`
		} `json:"services"`
		DurableObjects []M `json:"durable_objects"`
	}
	env.into(t, &refs)
	require.Len(t, refs.Services.Incoming, 1)
	assert.Equal(t, "edge", refs.Services.Incoming[0]["service"])
	var users []any
	for _, r := range refs.DurableObjects {
		users = append(users, r["service"])
	}
	assert.ElementsMatch(t, []any{"core", "edge"}, users)

	status, env = api(t, s, http.MethodGet, "accounts/"+acct+"/workers/tails/by-consumer/core", "", nil)
	require.Equal(t, http.StatusOK, status)
	var tails []struct {
		Producer M `json:"producer"`
	}
	env.into(t, &tails)
	require.Len(t, tails, 1)
	assert.Equal(t, "noisy", tails[0].Producer["script"])

	status, env = api(t, s, http.MethodDelete, "accounts/"+acct+"/workers/services/core?force=false", "", nil)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.EqualValues(t, 10064, env.code())

	// A queue consumer does not hold a service delete back.
	mustUpload(t, c, "worker", meta())
	status, _ = api(t, s, http.MethodPost, "accounts/"+acct+"/queues/"+q.QueueID+"/consumers", "application/json",
		jsonBody(M{"type": "worker", "script_name": "worker"}))
	require.Equal(t, http.StatusOK, status)
	status, _ = api(t, s, http.MethodDelete, "accounts/"+acct+"/workers/services/worker?force=false", "", nil)
	assert.Equal(t, http.StatusOK, status)
	_, ok := s.Workers().Worker(acct, "worker")
	assert.False(t, ok)
	assert.Empty(t, s.Inventory().Queues[0].Consumers)
	status, env = api(t, s, http.MethodDelete, "accounts/"+acct+"/workers/services/worker", "", nil)
	assert.Equal(t, http.StatusNotFound, status)
	assert.EqualValues(t, 10090, env.code())
}

func TestWorkerHistorySurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	s, err := emulator.Start(emulator.Options{DataDir: dir})
	require.NoError(t, err)
	mustUpload(t, newClient(s), "app", meta(M{"type": "plain_text", "name": "MODE", "text": "a"}))
	mustUpload(t, newClient(s), "app", meta(M{"type": "plain_text", "name": "MODE", "text": "b"}))
	before, _ := s.Workers().Worker(acct, "app")
	require.NoError(t, s.Close())
	s = start(t, emulator.Options{DataDir: dir})
	after, ok := s.Workers().Worker(acct, "app")
	require.True(t, ok)
	assert.Equal(t, before.Versions, after.Versions)
	assert.Equal(t, before.DeployedVersion, after.DeployedVersion)
	assert.Equal(t, before.Tag, after.Tag)
	assert.Equal(t, map[string]string{"MODE": "b"}, after.Vars)
	assert.Equal(t, before.Modules, after.Modules)
}

func TestAccountAndUserRoutes(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	ctx := context.Background()
	accts, err := c.Accounts.List(ctx, accounts.AccountListParams{})
	require.NoError(t, err)
	require.Len(t, accts.Result, 1)
	assert.Equal(t, acct, accts.Result[0].ID)
	status, env := api(t, s, http.MethodGet, "memberships", "", nil)
	require.Equal(t, http.StatusOK, status)
	var ms []struct {
		Account M      `json:"account"`
		Status  string `json:"status"`
	}
	env.into(t, &ms)
	require.Len(t, ms, 1)
	assert.Equal(t, acct, ms[0].Account["id"])
	status, env = api(t, s, http.MethodGet, "user", "", nil)
	require.Equal(t, http.StatusOK, status)
	var u M
	env.into(t, &u)
	assert.NotEmpty(t, u["email"])
	resp, _ := do(t, http.MethodGet, s.CloudflareBaseURL()+"user", "Bearer wrong", "")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
}

func TestD1Import(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	ctx := context.Background()
	db, err := c.D1.Database.New(ctx, d1.DatabaseNewParams{AccountID: cloudflare.F(acct), Name: cloudflare.F("imp")})
	require.NoError(t, err)
	var created M
	require.NoError(t, json.Unmarshal([]byte(db.JSON.RawJSON()), &created))
	assert.Equal(t, "ENAM", created["created_in_region"])

	file := []byte("CREATE TABLE t (v TEXT);\nINSERT INTO t VALUES ('a;b');\nINSERT INTO t VALUES ('c');\n")
	sum := md5.Sum(file)
	etag := hex.EncodeToString(sum[:])
	path := "accounts/" + acct + "/d1/database/" + db.UUID + "/import"
	status, env := api(t, s, http.MethodPost, path, "application/json", jsonBody(M{"action": "init", "etag": etag}))
	require.Equal(t, http.StatusOK, status)
	var init struct {
		UploadURL string `json:"upload_url"`
		Filename  string `json:"filename"`
	}
	env.into(t, &init)
	require.True(t, strings.HasPrefix(init.UploadURL, s.URL()+"/"), init.UploadURL)

	req, err := http.NewRequest(http.MethodPut, init.UploadURL, bytes.NewReader(file))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, `"`+etag+`"`, resp.Header.Get("ETag"))

	status, env = api(t, s, http.MethodPost, path, "application/json", jsonBody(M{"action": "ingest", "filename": init.Filename, "etag": etag}))
	require.Equal(t, http.StatusOK, status)
	var done struct {
		Success bool   `json:"success"`
		Status  string `json:"status"`
		Result  struct {
			NumQueries int `json:"num_queries"`
			Meta       M   `json:"meta"`
		} `json:"result"`
	}
	env.into(t, &done)
	assert.True(t, done.Success)
	assert.Equal(t, "complete", done.Status)
	assert.Equal(t, 3, done.Result.NumQueries)
	assert.EqualValues(t, 2, done.Result.Meta["rows_written"])
	status, env = api(t, s, http.MethodPost, path, "application/json", jsonBody(M{"action": "poll"}))
	require.Equal(t, http.StatusOK, status)
	env.into(t, &done)
	assert.Equal(t, "complete", done.Status)

	res, err := c.D1.Database.Query(ctx, db.UUID, d1.DatabaseQueryParams{AccountID: cloudflare.F(acct), Sql: cloudflare.F("SELECT v FROM t ORDER BY rowid")})
	require.NoError(t, err)
	assert.Equal(t, []any{M{"v": "a;b"}, M{"v": "c"}}, res.Result[0].Results)

	// A failing file is an answer with success false, and nothing of it
	// persists.
	bad := []byte("INSERT INTO t VALUES ('d');\nINSERT INTO missing VALUES (1);\n")
	sum = md5.Sum(bad)
	etag = hex.EncodeToString(sum[:])
	_, env = api(t, s, http.MethodPost, path, "application/json", jsonBody(M{"action": "init", "etag": etag}))
	env.into(t, &init)
	req, _ = http.NewRequest(http.MethodPut, init.UploadURL, bytes.NewReader(bad))
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	status, env = api(t, s, http.MethodPost, path, "application/json", jsonBody(M{"action": "ingest", "filename": init.Filename, "etag": etag}))
	require.Equal(t, http.StatusOK, status)
	var failed struct {
		Success bool   `json:"success"`
		Error   string `json:"error"`
	}
	env.into(t, &failed)
	assert.False(t, failed.Success)
	assert.Contains(t, failed.Error, "no such table: missing")
	res, err = c.D1.Database.Query(ctx, db.UUID, d1.DatabaseQueryParams{AccountID: cloudflare.F(acct), Sql: cloudflare.F("SELECT count(*) AS n FROM t")})
	require.NoError(t, err)
	assert.Equal(t, []any{M{"n": float64(2)}}, res.Result[0].Results)
}

func TestKVBulk(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	ctx := context.Background()
	ns, err := c.KV.Namespaces.New(ctx, kv.NamespaceNewParams{AccountID: cloudflare.F(acct), Title: cloudflare.F("bulk")})
	require.NoError(t, err)
	path := "accounts/" + acct + "/storage/kv/namespaces/" + ns.ID + "/bulk"
	status, env := api(t, s, http.MethodPut, path, "application/json", jsonBody([]M{
		{"key": "a", "value": "1"}, {"key": "b", "value": "Mg==", "base64": true}, {"key": "c", "value": "3", "metadata": M{"x": 1}},
	}))
	require.Equal(t, http.StatusOK, status)
	var out M
	env.into(t, &out)
	assert.EqualValues(t, 3, out["successful_key_count"])
	v, err := c.KV.Namespaces.Values.Get(ctx, ns.ID, "b", kv.NamespaceValueGetParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	b, _ := io.ReadAll(v.Body)
	v.Body.Close()
	assert.Equal(t, "2", string(b))

	status, env = api(t, s, http.MethodPut, path, "application/json", jsonBody([]M{{"key": "d", "value": "4"}, {"key": "", "value": "x"}}))
	assert.Equal(t, http.StatusBadRequest, status, "one bad pair rejects the request")
	assert.EqualValues(t, 10019, env.code())
	assert.Equal(t, 3, s.Inventory().KV[0].Keys)

	status, _ = api(t, s, http.MethodDelete, path, "application/json", jsonBody([]string{"a", "missing"}))
	require.Equal(t, http.StatusOK, status)
	status, _ = api(t, s, http.MethodPost, path+"/delete", "application/json", jsonBody([]string{"c"}))
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, 1, s.Inventory().KV[0].Keys)
}

func TestR2ObjectRoutes(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	_, err := c.R2.Buckets.New(context.Background(), r2.BucketNewParams{AccountID: cloudflare.F(acct), Name: cloudflare.F("files")})
	require.NoError(t, err)
	base := s.CloudflareBaseURL() + "accounts/" + acct + "/r2/buckets/"
	send := func(method, url, body string) (*http.Response, string) {
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+emulator.DefaultToken)
		req.Header.Set("Content-Type", "text/plain")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, _ := send(http.MethodPut, base+"files/objects/a/b.txt", "hello")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp, body := send(http.MethodGet, base+"files/objects/a/b.txt", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "hello", body)
	assert.Equal(t, "text/plain", resp.Header.Get("Content-Type"))
	assert.Equal(t, 1, s.Inventory().R2[0].Objects)
	resp, body = send(http.MethodGet, base+"files/objects/nope", "")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Contains(t, body, "10007")
	resp, body = send(http.MethodPut, base+"nobucket/objects/x", "x")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Contains(t, body, "10006")
	resp, _ = send(http.MethodDelete, base+"files/objects/a/b.txt", "")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, 0, s.Inventory().R2[0].Objects)
}

// splitJS answers its label and a count kept by the Counter Durable Object,
// which both versions of a split deployment share.
func splitJS(label string) string {
	return `export class Counter {
  constructor(state) { this.state = state; }
  async fetch() {
    const n = ((await this.state.storage.get("n")) ?? 0) + 1;
    await this.state.storage.put("n", n);
    return new Response(String(n));
  }
}
export default {
  async fetch(req, env) {
    const r = await env.COUNTER.get(env.COUNTER.idFromName("c")).fetch("http://counter/");
    return new Response("` + label + ` " + (await r.text()));
  },
};`
}

// askVersion requests the script's root with the version overrides header
// naming version (none when "").
func askVersion(t *testing.T, s *emulator.Server, script, version string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.Workers().WorkerURL(script)+"/", nil)
	require.NoError(t, err)
	if version != "" {
		req.Header.Set("Cloudflare-Workers-Version-Overrides", script+`="`+version+`"`)
	}
	resp, err := loopback.Client(0).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
	return string(b)
}

func deploySplit(t *testing.T, s *emulator.Server, script string, shares ...M) (int, envelopeOf) {
	t.Helper()
	return api(t, s, http.MethodPost, scriptsPath+script+"/deployments", "application/json",
		jsonBody(M{"strategy": "percentage", "versions": shares}))
}

// A split deployment runs both versions, their Durable Object bindings
// reaching the script's one namespace, and survives a restart; an earlier
// deployment's version can be deployed again, a superseded version no
// deployment names cannot.
func TestSplitDeploymentServesBothVersions(t *testing.T) {
	dir := t.TempDir()
	s, err := emulator.Start(emulator.Options{DataDir: dir})
	require.NoError(t, err)
	binding := M{"type": "durable_object_namespace", "name": "COUNTER", "class_name": "Counter"}
	m := meta(binding)
	m["migrations"] = M{"new_tag": "v1", "new_sqlite_classes": []string{"Counter"}}
	mustUpload(t, newClient(s), "split", m, mod{"index.js", "application/javascript+module", splitJS("one")})
	one := versionOf(t, s, emulator.DefaultToken, acct, "split")
	ct, body := multipartBody(t, meta(binding), mod{"index.js", "application/javascript+module", splitJS("two")})
	status, env := api(t, s, http.MethodPost, scriptsPath+"split/versions", ct, body)
	require.Equal(t, http.StatusOK, status, "%+v", env)
	var two struct {
		ID string `json:"id"`
	}
	env.into(t, &two)

	status, env = deploySplit(t, s, "split", M{"version_id": one, "percentage": 50}, M{"version_id": two.ID, "percentage": 50})
	require.Equal(t, http.StatusOK, status, "%+v", env)
	assert.Equal(t, "one 1", askVersion(t, s, "split", one))
	assert.Equal(t, "two 2", askVersion(t, s, "split", two.ID), "the other version counts on the same Durable Object")

	require.NoError(t, s.Close())
	s = start(t, emulator.Options{DataDir: dir})
	assert.Equal(t, "two 3", askVersion(t, s, "split", two.ID), "the split and its Durable Object survive a restart")
	seen := map[string]bool{}
	for i := 0; i < 60 && len(seen) < 2; i++ {
		label, _, _ := strings.Cut(askVersion(t, s, "split", ""), " ")
		seen[label] = true
	}
	assert.Equal(t, map[string]bool{"one": true, "two": true}, seen, "both versions serve requests")

	// Deployed on their own in turn: the earlier deployment's version is
	// kept, so it deploys again.
	status, env = deploySplit(t, s, "split", M{"version_id": two.ID, "percentage": 100})
	require.Equal(t, http.StatusOK, status, "%+v", env)
	assert.True(t, strings.HasPrefix(askVersion(t, s, "split", ""), "two "))
	status, env = deploySplit(t, s, "split", M{"version_id": one, "percentage": 100})
	require.Equal(t, http.StatusOK, status, "%+v", env)
	assert.True(t, strings.HasPrefix(askVersion(t, s, "split", ""), "one "))

	// A version never deployed, then superseded by a newer upload: gone.
	ct, body = multipartBody(t, meta(binding), mod{"index.js", "application/javascript+module", splitJS("three")})
	status, env = api(t, s, http.MethodPost, scriptsPath+"split/versions", ct, body)
	require.Equal(t, http.StatusOK, status, "%+v", env)
	var three struct {
		ID string `json:"id"`
	}
	env.into(t, &three)
	mustUpload(t, newClient(s), "split", meta(binding), mod{"index.js", "application/javascript+module", splitJS("four")})
	status, env = deploySplit(t, s, "split", M{"version_id": three.ID, "percentage": 100})
	assert.Equal(t, http.StatusBadRequest, status)
	assert.EqualValues(t, 10021, env.code(), "%+v", env)
}
