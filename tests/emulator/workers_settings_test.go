package emulator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"testing"

	"github.com/cloudflare/cloudflare-go/v4"
	"github.com/cloudflare/cloudflare-go/v4/workers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
)

// withSettings is meta() plus the given setting keys.
func withSettings(settings M, bindings ...M) M {
	m := meta(bindings...)
	for k, v := range settings {
		m[k] = v
	}
	return m
}

// Upload metadata settings come back from GET settings in the upload's
// shapes, and the list and upload answers carry the optional fields.
func TestWorkerSettingsFromUpload(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	obs := M{"enabled": true, "head_sampling_rate": 1, "logs": M{"enabled": true, "invocation_logs": true, "head_sampling_rate": 0.5}}
	res := mustUpload(t, c, "app", withSettings(M{
		"observability": obs, "placement": M{"mode": "smart"}, "limits": M{"cpu_ms": 50},
		"tail_consumers": []M{{"service": "tailer"}}, "logpush": true, "tags": []string{"team:web", "env:prod"},
	}))
	var up M
	require.NoError(t, json.Unmarshal([]byte(res.JSON.RawJSON()), &up))
	assert.Equal(t, M{"mode": "smart"}, up["placement"])
	assert.Equal(t, "smart", up["placement_mode"])
	assert.Equal(t, true, up["logpush"])
	assert.Equal(t, []any{M{"service": "tailer"}}, up["tail_consumers"])

	got := settingsJSON(t, c, "app")
	assert.Equal(t, obs["enabled"], got["observability"].(M)["enabled"])
	assert.Equal(t, M{"enabled": true, "invocation_logs": true, "head_sampling_rate": 0.5}, got["observability"].(M)["logs"])
	assert.Equal(t, 1.0, got["observability"].(M)["head_sampling_rate"])
	assert.Equal(t, M{"mode": "smart"}, got["placement"])
	assert.Equal(t, M{"cpu_ms": 50.0}, got["limits"])
	assert.Equal(t, []any{M{"service": "tailer"}}, got["tail_consumers"])
	assert.Equal(t, true, got["logpush"])
	assert.Equal(t, []any{"team:web", "env:prod"}, got["tags"])

	// The typed SDK reads the same values.
	typed, err := c.Workers.Scripts.ScriptAndVersionSettings.Get(context.Background(), "app",
		workers.ScriptScriptAndVersionSettingGetParams{AccountID: cloudflare.F(acct)})
	require.NoError(t, err)
	assert.EqualValues(t, 50, typed.Limits.CPUMs)
	assert.EqualValues(t, "smart", typed.Placement.Mode)
	assert.True(t, typed.Observability.Logs.InvocationLogs)

	// The list carries tags, handlers, compatibility and placement.
	status, env := api(t, s, http.MethodGet, scriptsPath[:len(scriptsPath)-1], "", nil)
	require.Equal(t, http.StatusOK, status)
	var list []M
	env.into(t, &list)
	require.Len(t, list, 1)
	for _, key := range []string{"id", "tag", "etag", "handlers", "compatibility_date", "compatibility_flags", "tags",
		"placement", "placement_mode", "tail_consumers", "logpush", "observability", "last_deployed_from", "has_assets", "usage_model"} {
		assert.Contains(t, list[0], key)
	}
	assert.Equal(t, []any{"fetch"}, list[0]["handlers"])
	assert.Equal(t, "2025-01-01", list[0]["compatibility_date"])
	assert.Equal(t, []any{"team:web", "env:prod"}, list[0]["tags"])

	// The version records its limits and placement.
	var versions struct{ Items []M }
	_, env = api(t, s, http.MethodGet, scriptsPath+"app/versions", "", nil)
	env.into(t, &versions)
	var v struct {
		Resources struct {
			Script struct {
				PlacementMode string `json:"placement_mode"`
			}
			ScriptRuntime struct{ Limits map[string]int } `json:"script_runtime"`
		}
	}
	_, env = api(t, s, http.MethodGet, scriptsPath+"app/versions/"+versions.Items[0]["id"].(string), "", nil)
	env.into(t, &v)
	assert.Equal(t, "smart", v.Resources.Script.PlacementMode)
	assert.Equal(t, 50, v.Resources.ScriptRuntime.Limits["cpu_ms"])
}

// Placement and limits belong to the version, the rest to the script: an
// upload without any of them drops placement and limits and keeps the
// others; a script that never had them reports no placement, limits or
// observability at all (never an empty placement object).
func TestWorkerSettingsVersionAndScriptLevel(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	mustUpload(t, c, "bare", meta())
	bare := settingsJSON(t, c, "bare")
	for _, key := range []string{"placement", "limits", "observability"} {
		assert.NotContains(t, bare, key, "unset %s is left out", key)
	}
	assert.Equal(t, []any{}, bare["tail_consumers"])
	assert.Equal(t, []any{}, bare["tags"])
	assert.Equal(t, false, bare["logpush"])

	mustUpload(t, c, "app", withSettings(M{"observability": M{"enabled": true}, "placement": M{"region": "aws:us-east-1"},
		"limits": M{"cpu_ms": 100}, "logpush": true, "tags": []string{"a"}}))
	assert.Equal(t, M{"region": "aws:us-east-1"}, settingsJSON(t, c, "app")["placement"])
	mustUpload(t, c, "app", meta())
	after := settingsJSON(t, c, "app")
	assert.NotContains(t, after, "placement")
	assert.NotContains(t, after, "limits")
	assert.Equal(t, M{"enabled": true}, after["observability"])
	assert.Equal(t, true, after["logpush"])
	assert.Equal(t, []any{"a"}, after["tags"])

	// Turning observability off is a value, not an absence.
	mustUpload(t, c, "app", withSettings(M{"observability": M{"enabled": false}, "logpush": false, "tail_consumers": []M{}}))
	after = settingsJSON(t, c, "app")
	assert.Equal(t, M{"enabled": false}, after["observability"])
	assert.Equal(t, false, after["logpush"])
}

// Each documented placement form is accepted; anything else is refused
// with 10021 naming the field.
func TestWorkerSettingsValidation(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	for _, ok := range []M{
		{"mode": "smart"}, {"mode": "smart", "hint": "wnam"}, {"region": "gcp:us-east4"}, {"host": "db.example.com:5432"},
		{"hostname": "api.example.com"}, {"mode": "targeted", "region": "aws:eu-west-1"},
	} {
		mustUpload(t, c, "app", withSettings(M{"placement": ok}))
		assert.Equal(t, ok, settingsJSON(t, c, "app")["placement"])
	}
	for _, tc := range []struct {
		settings M
		want     string
	}{
		{M{"placement": M{}}, "placement"},
		{M{"placement": M{"mode": "fast"}}, "placement.mode"},
		{M{"placement": M{"region": "aws:us-east-1", "host": "db:5432"}}, "mutually exclusive"},
		{M{"placement": M{"mode": "smart", "region": "aws:us-east-1"}}, "smart"},
		{M{"placement": M{"zone": "x"}}, "placement"},
		{M{"limits": M{"cpu_ms": 0}}, "limits.cpu_ms"},
		{M{"limits": M{"cpu_ms": 300001}}, "limits.cpu_ms"},
		{M{"observability": M{"enabled": true, "head_sampling_rate": 2}}, "observability.head_sampling_rate"},
		{M{"observability": M{"enabled": true, "logs": M{"enabled": true, "invocation_logs": true, "head_sampling_rate": -1}}}, "observability.logs.head_sampling_rate"},
		{M{"tail_consumers": []M{{"environment": "production"}}}, "tail_consumers[0].service"},
		{M{"logpush": "yes"}, "logpush"},
	} {
		_, err := upload(t, c, "app", withSettings(tc.settings))
		apiErr := requireAPIError(t, err, http.StatusBadRequest, 10021)
		assert.Contains(t, apiErr.Errors[0].Message, tc.want, "%v", tc.settings)
	}
}

// settingsPatch sends PATCH settings the way the API reference describes
// it: multipart/form-data with one "settings" part of JSON.
func settingsPatch(t *testing.T, s *emulator.Server, script string, settings M) (int, envelopeOf) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	w, err := mw.CreateFormField("settings")
	require.NoError(t, err)
	require.NoError(t, json.NewEncoder(w).Encode(settings))
	require.NoError(t, mw.Close())
	return api(t, s, http.MethodPatch, scriptsPath+script+"/settings", mw.FormDataContentType(), buf.Bytes())
}

// PATCH settings changes script-level settings in place and version-level
// ones through a new deployed version that keeps the code and bindings.
func TestWorkerSettingsPatch(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	mustUpload(t, c, "app", withSettings(M{"observability": M{"enabled": true}}, M{"type": "plain_text", "name": "MODE", "text": "a"}))
	before, _ := s.Workers().Worker(acct, "app")

	status, env := settingsPatch(t, s, "app", M{"observability": M{"enabled": false}, "tags": []string{"patched"}})
	require.Equal(t, http.StatusOK, status, "%v", env.Errors)
	var out M
	env.into(t, &out)
	assert.Equal(t, M{"enabled": false}, out["observability"])
	mid, _ := s.Workers().Worker(acct, "app")
	assert.Equal(t, len(before.Versions), len(mid.Versions), "script-level settings make no version")

	status, env = settingsPatch(t, s, "app", M{"limits": M{"cpu_ms": 250}, "placement": M{"mode": "smart"}})
	require.Equal(t, http.StatusOK, status, "%v", env.Errors)
	after, _ := s.Workers().Worker(acct, "app")
	assert.Len(t, after.Versions, len(before.Versions)+1, "version settings make a version")
	assert.Equal(t, before.Modules, after.Modules)
	assert.Equal(t, map[string]string{"MODE": "a"}, after.Vars)
	got := settingsJSON(t, c, "app")
	assert.Equal(t, M{"cpu_ms": 250.0}, got["limits"])
	assert.Equal(t, M{"mode": "smart"}, got["placement"])
	assert.Equal(t, []any{"patched"}, got["tags"])

	status, env = settingsPatch(t, s, "app", M{"placement": nil})
	require.Equal(t, http.StatusOK, status)
	assert.NotContains(t, settingsJSON(t, c, "app"), "placement", "an explicit null clears placement")

	status, env = settingsPatch(t, s, "app", M{"limits": M{"cpu_ms": -5}})
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, env.Errors[0]["message"], "limits.cpu_ms")
	status, env = settingsPatch(t, s, "app", M{"bindings": []M{{"type": "plain_text", "name": "X", "text": "y"}}})
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, env.Errors[0]["message"], "bindings")
	status, _ = api(t, s, http.MethodPatch, scriptsPath+"app/settings", "application/json", []byte(`{}`))
	assert.Equal(t, http.StatusBadRequest, status, "PATCH settings is multipart")
	status, env = settingsPatch(t, s, "ghost", M{"logpush": true})
	assert.Equal(t, http.StatusNotFound, status)
	assert.EqualValues(t, 10007, env.code())

	// PATCH script-settings (JSON) checks the same forms.
	status, env = api(t, s, http.MethodPatch, scriptsPath+"app/script-settings", "application/json",
		jsonBody(M{"observability": M{"enabled": true, "head_sampling_rate": 3}}))
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, env.Errors[0]["message"], "head_sampling_rate")
}

// keep_bindings keeps both the secrets and the vars of the previous version
// that the upload does not name, by type.
func TestWorkerKeepBindingsVarsAndSecrets(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	mustUpload(t, c, "app", meta(M{"type": "secret_text", "name": "TOKEN", "text": "t1"}, M{"type": "plain_text", "name": "MODE", "text": "a"},
		M{"type": "plain_text", "name": "OTHER", "text": "o"}))
	m := meta(M{"type": "plain_text", "name": "MODE", "text": "b"})
	m["keep_bindings"] = []string{"secret_text", "plain_text"}
	mustUpload(t, c, "app", m)
	d, _ := s.Workers().Worker(acct, "app")
	assert.Equal(t, map[string]string{"TOKEN": "t1"}, d.Secrets)
	assert.Equal(t, map[string]string{"MODE": "b", "OTHER": "o"}, d.Vars, "the upload's MODE wins, OTHER is kept")

	mustUpload(t, c, "app", meta(M{"type": "plain_text", "name": "MODE", "text": "c"}))
	d, _ = s.Workers().Worker(acct, "app")
	assert.Empty(t, d.Secrets, "without keep_bindings the upload replaces every binding")
	assert.Equal(t, map[string]string{"MODE": "c"}, d.Vars)

	m = meta()
	m["keep_bindings"] = []string{"not_a_type"}
	_, err := upload(t, c, "app", m)
	requireAPIError(t, err, http.StatusBadRequest, 10021)
}

// content/v2 answers every module as multipart/form-data with the main
// module named by CF-Entrypoint, outside the envelope.
func TestWorkerContentV2(t *testing.T) {
	s := start(t, emulator.Options{})
	c := newClient(s)
	helper := mod{"lib.js", "application/javascript+module", "export const x = 1;"}
	mustUpload(t, c, "app", meta(), indexJS, helper)

	req, err := http.NewRequest(http.MethodGet, s.CloudflareBaseURL()+scriptsPath+"app/content/v2", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+emulator.DefaultToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "index.js", resp.Header.Get("CF-Entrypoint"))
	mt, params, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	require.NoError(t, err)
	require.Equal(t, "multipart/form-data", mt)
	parts := map[string]string{}
	types := map[string]string{}
	mr := multipart.NewReader(resp.Body, params["boundary"])
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		b, err := io.ReadAll(p)
		require.NoError(t, err)
		parts[p.FormName()] = string(b)
		types[p.FormName()] = p.Header.Get("Content-Type")
	}
	assert.Equal(t, map[string]string{"index.js": indexJS.body, "lib.js": helper.body}, parts)
	assert.Equal(t, "application/javascript+module", types["lib.js"])

	// An unknown version and an unknown script are API errors.
	status, env := api(t, s, http.MethodGet, scriptsPath+"app/content/v2?version=nope", "", nil)
	assert.Equal(t, http.StatusNotFound, status)
	assert.NotZero(t, env.code())
	status, env = api(t, s, http.MethodGet, scriptsPath+"ghost/content/v2", "", nil)
	assert.Equal(t, http.StatusNotFound, status)
	assert.EqualValues(t, 10007, env.code())
}
