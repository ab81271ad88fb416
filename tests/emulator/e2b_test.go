package emulator_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/e2b"
)

// e2bCall makes one E2B API call with the default key (key "" sends none).
func e2bCall(t *testing.T, s *emulator.Server, key, method, path string, body any) (int, map[string]any, []any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.URL()+e2b.APIPrefix+path, rd)
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var obj map[string]any
	var list []any
	if len(raw) > 0 {
		if raw[0] == '[' {
			require.NoError(t, json.Unmarshal(raw, &list), "%s", raw)
		} else {
			require.NoError(t, json.Unmarshal(raw, &obj), "%s", raw)
		}
	}
	return resp.StatusCode, obj, list
}

// TestE2BTemplateLifecycle walks the routes the SDK and the provider use,
// with the status codes and bodies the SDK's parsers accept, the builds of
// a template among them.
func TestE2BTemplateLifecycle(t *testing.T) {
	s := start(t, emulator.Options{})
	key := e2b.DefaultAPIKey

	status, body, _ := e2bCall(t, s, "", "POST", "/v3/templates", map[string]any{"name": "tpl"})
	assert.Equal(t, http.StatusUnauthorized, status)
	assert.EqualValues(t, 401, body["code"])
	assert.NotEmpty(t, body["message"])

	status, body, _ = e2bCall(t, s, key, "POST", "/v3/templates", map[string]any{"name": "tpl", "memoryMB": 4095})
	assert.Equal(t, http.StatusBadRequest, status, "odd memory is refused")
	assert.Contains(t, body["message"], "memoryMB")

	status, body, _ = e2bCall(t, s, key, "POST", "/v3/templates", map[string]any{"name": "tpl", "cpuCount": 2, "memoryMB": 4096})
	require.Equal(t, http.StatusAccepted, status)
	for _, k := range []string{"templateID", "buildID", "names", "aliases", "tags", "public"} {
		assert.Contains(t, body, k)
	}
	tid, bid := body["templateID"].(string), body["buildID"].(string)

	hash := strings.Repeat("ab", 32)
	status, body, _ = e2bCall(t, s, key, "GET", "/templates/"+tid+"/files/"+hash, nil)
	require.Equal(t, http.StatusCreated, status)
	assert.Equal(t, false, body["present"])
	uploadURL, _ := body["url"].(string)
	u, err := url.Parse(uploadURL)
	require.NoError(t, err)
	assert.Equal(t, strings.TrimPrefix(s.URL(), "http://"), u.Host, "the upload URL is served by the emulator")

	status, body, _ = e2bCall(t, s, key, "GET", "/templates/"+tid+"/builds/"+bid+"/status", nil)
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, "waiting", body["status"], "not started yet")

	// Started without the upload, the build fails and says why.
	steps := []map[string]any{{"type": "COPY", "args": []string{"src", "/app/src"}, "filesHash": hash}}
	status, _, _ = e2bCall(t, s, key, "POST", "/v2/templates/"+tid+"/builds/"+bid, map[string]any{"fromImage": "python:3.12-slim", "steps": steps})
	require.Equal(t, http.StatusAccepted, status)
	require.Eventually(t, func() bool {
		_, body, _ = e2bCall(t, s, key, "GET", "/templates/"+tid+"/builds/"+bid+"/status?logsOffset=0", nil)
		return body["status"] == "error"
	}, 10*time.Second, 50*time.Millisecond)
	reason := body["reason"].(map[string]any)
	assert.Contains(t, reason["message"], "were not uploaded")
	entries := body["logEntries"].([]any)
	require.NotEmpty(t, entries)
	last := entries[len(entries)-1].(map[string]any)
	assert.Equal(t, "error", last["level"])
	_, later, _ := e2bCall(t, s, key, "GET", "/templates/"+tid+"/builds/"+bid+"/status?logsOffset="+strconv.Itoa(len(entries)), nil)
	assert.Empty(t, later["logEntries"], "logsOffset skips what was read")

	// A second build of the name, requested and never started: the
	// template lists both, newest first, by ID or name.
	status, body, _ = e2bCall(t, s, key, "POST", "/v3/templates", map[string]any{"name": "tpl"})
	require.Equal(t, http.StatusAccepted, status)
	require.Equal(t, tid, body["templateID"], "the same template")
	second := body["buildID"].(string)
	for _, idOrName := range []string{tid, "tpl"} {
		status, body, _ = e2bCall(t, s, key, "GET", "/templates/"+idOrName, nil)
		require.Equal(t, http.StatusOK, status, "%v", body)
		assert.Equal(t, tid, body["templateID"])
		assert.Equal(t, []any{"tpl"}, body["names"])
		builds := body["builds"].([]any)
		require.Len(t, builds, 2)
		assert.Equal(t, second, builds[0].(map[string]any)["buildID"], "newest first")
		assert.Equal(t, "waiting", builds[0].(map[string]any)["status"])
		assert.Equal(t, bid, builds[1].(map[string]any)["buildID"])
		assert.Equal(t, "error", builds[1].(map[string]any)["status"])
		assert.Contains(t, builds[1], "finishedAt")
		for _, k := range []string{"createdAt", "updatedAt", "cpuCount", "memoryMB"} {
			assert.Contains(t, builds[0], k)
		}
	}
	_, body, _ = e2bCall(t, s, key, "GET", "/templates/"+tid+"?limit=1", nil)
	assert.Len(t, body["builds"], 1)
	status, _, _ = e2bCall(t, s, key, "GET", "/templates/nothing", nil)
	assert.Equal(t, http.StatusNotFound, status)

	// Sandboxes of the template: listed by metadata, and they block its deletion.
	_, err = s.E2B().CreateSandbox(e2b.SandboxSpec{Template: "tpl", Metadata: map[string]string{"openinspect_installation": "a"}})
	require.NoError(t, err)
	paused, err := s.E2B().CreateSandbox(e2b.SandboxSpec{Template: "tpl", State: "paused", Metadata: map[string]string{"openinspect_installation": "b"}})
	require.NoError(t, err)
	status, _, list := e2bCall(t, s, key, "GET", "/v2/sandboxes?state=running,paused&metadata="+url.QueryEscape("openinspect_installation=b"), nil)
	require.Equal(t, http.StatusOK, status)
	require.Len(t, list, 1)
	assert.Equal(t, paused, list[0].(map[string]any)["sandboxID"])
	for _, k := range []string{"clientID", "cpuCount", "diskSizeMB", "endAt", "envdVersion", "memoryMB", "startedAt", "state", "templateID"} {
		assert.Contains(t, list[0], k)
	}
	status, body, _ = e2bCall(t, s, key, "DELETE", "/templates/tpl", nil)
	assert.Equal(t, http.StatusBadRequest, status, "a paused or running sandbox uses it")
	assert.Contains(t, body["message"], "sandboxes")
	_, _, all := e2bCall(t, s, key, "GET", "/v2/sandboxes?state=running,paused", nil)
	for _, sb := range all {
		status, _, _ = e2bCall(t, s, key, "DELETE", "/sandboxes/"+sb.(map[string]any)["sandboxID"].(string), nil)
		assert.Equal(t, http.StatusNoContent, status)
	}
	status, _, _ = e2bCall(t, s, key, "DELETE", "/sandboxes/"+paused, nil)
	assert.Equal(t, http.StatusNotFound, status)
	assert.Len(t, s.Inventory().E2B.Templates, 1)
	status, _, _ = e2bCall(t, s, key, "DELETE", "/templates/tpl", nil)
	assert.Equal(t, http.StatusNoContent, status)
	status, _, _ = e2bCall(t, s, key, "GET", "/templates/aliases/tpl", nil)
	assert.Equal(t, http.StatusNotFound, status)
	assert.True(t, s.Inventory().E2B.Empty())
}

// TestE2BCountsAndFaults: E2B calls are counted and take injected faults
// like every other family's.
func TestE2BCountsAndFaults(t *testing.T) {
	s := start(t, emulator.Options{})
	s.InjectFault(emulator.Fault{Route: "POST /e2b/v3/templates", Kind: emulator.FaultServerError, Status: 503, Times: 1})
	status, body, _ := e2bCall(t, s, e2b.DefaultAPIKey, "POST", "/v3/templates", map[string]any{"name": "tpl"})
	assert.Equal(t, http.StatusServiceUnavailable, status)
	assert.EqualValues(t, 503, body["code"])
	status, _, _ = e2bCall(t, s, e2b.DefaultAPIKey, "POST", "/v3/templates", map[string]any{"name": "tpl"})
	assert.Equal(t, http.StatusAccepted, status)
	status, _, _ = e2bCall(t, s, e2b.DefaultAPIKey, "GET", "/nowhere", nil)
	assert.Equal(t, http.StatusNotFound, status)
	assert.Equal(t, 3, s.E2B().Calls())
	assert.Equal(t, 2, s.Counts()["POST /e2b/v3/templates"])
}

// TestE2BSandboxLifecycle walks the sandbox routes upstream's pre-warm and
// control plane call: create from a built template, get, timeout, pause,
// connect (resume and extend), kill, E2B's refusals, and timeouts that
// pause or end a sandbox.
func TestE2BSandboxLifecycle(t *testing.T) {
	const other = "e2b_other_team_key"
	s := start(t, emulator.Options{E2B: e2b.Options{BuildTime: time.Millisecond,
		APIKeys: map[string]string{e2b.DefaultAPIKey: e2b.DefaultTeamID, other: "team-other"}}})
	key := e2b.DefaultAPIKey

	status, body, _ := e2bCall(t, s, key, "POST", "/sandboxes", map[string]any{"templateID": "nowhere"})
	assert.Equal(t, http.StatusNotFound, status)
	assert.EqualValues(t, 404, body["code"])
	assert.Contains(t, body["message"], "nowhere")

	// A template that never built cannot start a sandbox.
	status, _, _ = e2bCall(t, s, key, "POST", "/v3/templates", map[string]any{"name": "unbuilt"})
	require.Equal(t, http.StatusAccepted, status)
	status, body, _ = e2bCall(t, s, key, "POST", "/sandboxes", map[string]any{"templateID": "unbuilt"})
	assert.Equal(t, http.StatusNotFound, status)
	assert.Contains(t, body["message"], "no successful build")

	tid := buildE2BTemplate(t, s, key, "tpl")
	status, body, _ = e2bCall(t, s, key, "POST", "/sandboxes", map[string]any{"templateID": "tpl", "timeout": 86401})
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, body["message"], "timeout")

	status, body, _ = e2bCall(t, s, key, "POST", "/sandboxes", map[string]any{
		"templateID": "tpl", "timeout": 60, "secure": true, "autoPause": true,
		"metadata": map[string]string{"purpose": "template-prewarm"},
		"envVars":  map[string]string{"SANDBOX_AUTH_TOKEN": "not-for-the-inventory"},
	})
	require.Equal(t, http.StatusCreated, status, "%v", body)
	id, _ := body["sandboxID"].(string)
	require.NotEmpty(t, id)
	assert.Equal(t, tid, body["templateID"], "the alias resolves to the template's ID")
	assert.Equal(t, "tpl", body["alias"])
	for _, k := range []string{"clientID", "envdVersion", "envdAccessToken"} {
		assert.Contains(t, body, k)
	}

	status, body, _ = e2bCall(t, s, key, "GET", "/sandboxes/"+id, nil)
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, "running", body["state"])
	assert.Equal(t, map[string]any{"purpose": "template-prewarm"}, body["metadata"])
	started, err := time.Parse(time.RFC3339Nano, body["startedAt"].(string))
	require.NoError(t, err)
	end, err := time.Parse(time.RFC3339Nano, body["endAt"].(string))
	require.NoError(t, err)
	assert.Equal(t, 60*time.Second, end.Sub(started).Round(time.Second))
	raw, err := json.Marshal(s.Inventory().E2B)
	require.NoError(t, err)
	assert.NotContains(t, string(raw), "not-for-the-inventory", "env var values are never kept")

	status, _, _ = e2bCall(t, s, key, "POST", "/sandboxes/"+id+"/timeout", map[string]any{"timeout": 600})
	assert.Equal(t, http.StatusNoContent, status)
	_, body, _ = e2bCall(t, s, key, "GET", "/sandboxes/"+id, nil)
	end, err = time.Parse(time.RFC3339Nano, body["endAt"].(string))
	require.NoError(t, err)
	assert.InDelta(t, 600, time.Until(end).Seconds(), 30)

	status, _, _ = e2bCall(t, s, key, "POST", "/sandboxes/"+id+"/pause", nil)
	assert.Equal(t, http.StatusNoContent, status)
	status, _, _ = e2bCall(t, s, key, "POST", "/sandboxes/"+id+"/pause", nil)
	assert.Equal(t, http.StatusConflict, status, "paused already")
	status, _, _ = e2bCall(t, s, key, "POST", "/sandboxes/"+id+"/timeout", map[string]any{"timeout": 60})
	assert.Equal(t, http.StatusConflict, status, "a paused sandbox has no timeout to set")
	status, body, _ = e2bCall(t, s, key, "POST", "/sandboxes/"+id+"/connect", map[string]any{"timeout": 60})
	assert.Equal(t, http.StatusCreated, status, "connect resumes a paused sandbox")
	assert.Equal(t, id, body["sandboxID"])
	status, _, _ = e2bCall(t, s, key, "POST", "/sandboxes/"+id+"/connect", map[string]any{"timeout": 60})
	assert.Equal(t, http.StatusOK, status, "connect to a running sandbox")

	// Another team sees none of it.
	status, _, _ = e2bCall(t, s, other, "GET", "/sandboxes/"+id, nil)
	assert.Equal(t, http.StatusNotFound, status)

	status, _, _ = e2bCall(t, s, key, "DELETE", "/sandboxes/"+id, nil)
	assert.Equal(t, http.StatusNoContent, status)
	status, _, _ = e2bCall(t, s, key, "GET", "/sandboxes/"+id, nil)
	assert.Equal(t, http.StatusNotFound, status)

	// Timeouts: an autoPause sandbox pauses at its end, another is gone.
	_, pausing, _ := e2bCall(t, s, key, "POST", "/sandboxes", map[string]any{"templateID": "tpl", "timeout": 1, "autoPause": true})
	_, ending, _ := e2bCall(t, s, key, "POST", "/sandboxes", map[string]any{"templateID": "tpl", "timeout": 1})
	require.Eventually(t, func() bool {
		status, _, _ := e2bCall(t, s, key, "GET", "/sandboxes/"+ending["sandboxID"].(string), nil)
		return status == http.StatusNotFound
	}, 10*time.Second, 100*time.Millisecond)
	_, body, _ = e2bCall(t, s, key, "GET", "/sandboxes/"+pausing["sandboxID"].(string), nil)
	assert.Equal(t, "paused", body["state"])
	inv := s.Inventory().E2B
	require.Len(t, inv.Sandboxes, 1)
	assert.Equal(t, "paused", inv.Sandboxes[0].State)
}

// buildE2BTemplate builds name from a bare base image through the API the
// SDK uses and returns its template ID once the build is ready.
func buildE2BTemplate(t *testing.T, s *emulator.Server, key, name string) string {
	t.Helper()
	status, body, _ := e2bCall(t, s, key, "POST", "/v3/templates", map[string]any{"name": name})
	require.Equal(t, http.StatusAccepted, status, "%v", body)
	tid, bid := body["templateID"].(string), body["buildID"].(string)
	status, body, _ = e2bCall(t, s, key, "POST", "/v2/templates/"+tid+"/builds/"+bid, map[string]any{"fromImage": "python:3.12-slim"})
	require.Equal(t, http.StatusAccepted, status, "%v", body)
	require.Eventually(t, func() bool {
		_, body, _ = e2bCall(t, s, key, "GET", "/templates/"+tid+"/builds/"+bid+"/status", nil)
		return body["status"] == "ready"
	}, 10*time.Second, 20*time.Millisecond, "build %s", bid)
	return tid
}
