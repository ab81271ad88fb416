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
// with the status codes and bodies the SDK's parsers accept.
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
