package emulator_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	emuvercel "github.com/openinspect/pulumi-openinspect/tests/emulator/vercel"
)

const vercelProject = "prj_openinspect_demo"

// vercelCall sends what upstream's fetch client sends (bearer token, JSON,
// ?teamId=) to the emulator's Vercel API and decodes the JSON answer; a
// string body goes as it is, with header's extra headers.
func vercelCall(t *testing.T, s *emulator.Server, method, path string, body any, header map[string]string) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		require.NoError(t, err)
		rd = bytes.NewReader(raw)
	}
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	req, err := http.NewRequest(method, s.URL()+emuvercel.APIPrefix+path+sep+"teamId="+emuvercel.DefaultTeamID, rd)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+emuvercel.DefaultToken)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") == "application/x-ndjson" {
		// One command's stream: its lines in order, as {"lines": [...]}.
		var lines []any
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var m map[string]any
			require.NoError(t, json.Unmarshal(sc.Bytes(), &m), "%s", sc.Bytes())
			lines = append(lines, m)
		}
		require.NoError(t, sc.Err())
		return resp.StatusCode, map[string]any{"lines": lines}
	}
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out), "%s", raw)
	return resp.StatusCode, out
}

// vercelArchive is a real tar.gz of files.
func vercelArchive(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, content := range files {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(content))}))
		_, err := tw.Write([]byte(content))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	return buf.Bytes()
}

// vercelBuild does what upstream's base-snapshot builder does, returning the
// session ID, the bootstrap's exit code and the snapshot ID.
func vercelBuild(t *testing.T, s *emulator.Server, name string) (sessionID string, bootstrapExit float64, snapshotID string) {
	t.Helper()
	status, body := vercelCall(t, s, "POST", "/v2/sandboxes", map[string]any{"projectId": vercelProject, "name": name,
		"runtime": "node24", "timeout": 1800000, "ports": []int{}, "tags": map[string]string{"openinspect_role": "base"}}, nil)
	require.Equal(t, http.StatusOK, status, "%v", body)
	sessionID = body["session"].(map[string]any)["id"].(string)
	cmd := "/v2/sandboxes/sessions/" + sessionID + "/cmd"
	status, body = vercelCall(t, s, "POST", cmd, map[string]any{"command": "bash", "args": []string{"-lc", "mkdir -p /vercel/sandbox/oi"},
		"env": map[string]string{}, "sudo": false, "wait": true}, nil)
	require.Equal(t, http.StatusOK, status, "%v", body)
	status, body = vercelCall(t, s, "POST", "/v2/sandboxes/sessions/"+sessionID+"/fs/write",
		vercelArchive(t, map[string]string{"sandbox-runtime/pyproject.toml": "[project]\n"}),
		map[string]string{"Content-Type": "application/gzip", "x-cwd": "/vercel/sandbox/oi"})
	require.Equal(t, http.StatusOK, status, "%v", body)
	status, body = vercelCall(t, s, "POST", cmd, map[string]any{"command": "bash", "args": []string{"-lc", "bootstrap"},
		"env": map[string]string{}, "sudo": false, "wait": true}, nil)
	require.Equal(t, http.StatusOK, status, "%v", body)
	lines := body["lines"].([]any)
	require.Len(t, lines, 2, "the command with a null exit code, then with its exit code")
	first := lines[0].(map[string]any)["command"].(map[string]any)
	assert.Contains(t, first, "exitCode")
	assert.Nil(t, first["exitCode"])
	bootstrapExit = lines[1].(map[string]any)["command"].(map[string]any)["exitCode"].(float64)
	status, body = vercelCall(t, s, "POST", "/v2/sandboxes/sessions/"+sessionID+"/snapshot", map[string]any{"expiration": 0}, nil)
	require.Equal(t, http.StatusOK, status, "%v", body)
	snapshotID = body["snapshot"].(map[string]any)["id"].(string)
	status, _ = vercelCall(t, s, "POST", "/v2/sandboxes/sessions/"+sessionID+"/stop", nil, nil)
	require.Equal(t, http.StatusOK, status)
	return sessionID, bootstrapExit, snapshotID
}

// TestVercelSandboxLifecycle drives the root emulator's Vercel API the way
// upstream's builder and a provider's teardown do: a build, one failed by
// the admin route's arranged failure, a snapshot made directly, lists by
// name, deletes until the inventory is empty; every call counted as a
// Vercel call and none as a Cloudflare one; faults reach /vercel/ routes.
func TestVercelSandboxLifecycle(t *testing.T) {
	s := start(t, emulator.Options{Vercel: emuvercel.Options{CommandTime: 20 * time.Millisecond}})
	assert.True(t, strings.HasSuffix(s.URL()+emuvercel.APIPrefix, "/vercel/api"), s.URL()+emuvercel.APIPrefix)

	resp, body := do(t, "GET", s.URL()+emuvercel.APIPrefix+"/v2/sandboxes?project="+vercelProject, "Bearer wrong", "")
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Contains(t, body, `"code":"forbidden"`)

	sid, exit, snapID := vercelBuild(t, s, "openinspect-base-aaaaaaaaaaaaaaaa")
	assert.EqualValues(t, 0, exit)

	resp, body = do(t, "POST", s.URL()+"/__emulator/vercel/build-failures", "",
		`{"reason": "pip install: exit status 1", "name": "openinspect-base-bbbbbbbbbbbbbbbb"}`)
	require.Equal(t, http.StatusNoContent, resp.StatusCode, body)
	failedSID, exit, _ := vercelBuild(t, s, "openinspect-base-bbbbbbbbbbbbbbbb")
	assert.EqualValues(t, 1, exit, "the arranged failure fails the bootstrap command")

	inv := s.Inventory().Vercel
	require.Len(t, inv.Sandboxes, 2)
	ok, failed := inv.Sandboxes[0], inv.Sandboxes[1]
	assert.Equal(t, sid, ok.Sessions[0].ID)
	assert.Empty(t, ok.Sessions[0].FailReason)
	assert.Equal(t, []string{"/vercel/sandbox/oi/sandbox-runtime/pyproject.toml"}, ok.Sessions[0].Files)
	assert.Equal(t, "stopped", ok.Status)
	assert.Equal(t, failedSID, failed.Sessions[0].ID)
	assert.Equal(t, "pip install: exit status 1", failed.Sessions[0].FailReason)
	require.Len(t, failed.Sessions[0].Commands, 2)
	assert.Equal(t, "bash -lc bootstrap", failed.Sessions[0].Commands[1].Line)
	assert.Equal(t, 1, *failed.Sessions[0].Commands[1].ExitCode)
	s.Vercel().ClearBuildFailures()
	resp, body = do(t, "GET", s.URL()+"/__emulator/inventory", "", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, body, `"vercel":{"sandboxes":[{"team":"`+emuvercel.DefaultTeamID+`"`, "the admin inventory carries the Vercel side")

	// A snapshot made elsewhere, through the admin route and the forwarder.
	resp, body = do(t, "POST", s.URL()+"/__emulator/vercel/snapshots", "",
		`{"project": "`+vercelProject+`", "sandboxName": "openinspect-base-aaaaaaaaaaaaaaaa"}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode, body)
	var made struct{ ID string }
	require.NoError(t, json.Unmarshal([]byte(body), &made))
	direct, err := s.Vercel().CreateSnapshot("", vercelProject, "elsewhere")
	require.NoError(t, err)

	status, list := vercelCall(t, s, "GET", "/v2/sandboxes/snapshots?project="+vercelProject+"&name=openinspect-base-aaaaaaaaaaaaaaaa", nil, nil)
	require.Equal(t, http.StatusOK, status)
	var ids []string
	for _, sn := range list["snapshots"].([]any) {
		ids = append(ids, sn.(map[string]any)["id"].(string))
	}
	assert.Equal(t, []string{made.ID, snapID}, ids, "newest first, of that sandbox only")

	s.InjectFault(emulator.Fault{Method: "GET", Route: "/vercel/api/v2/sandboxes", Kind: emulator.FaultServerError, Status: 502, Times: 1})
	status, body2 := vercelCall(t, s, "GET", "/v2/sandboxes?project="+vercelProject, nil, nil)
	assert.Equal(t, http.StatusBadGateway, status, "%v", body2)
	status, sandboxes := vercelCall(t, s, "GET", "/v2/sandboxes?project="+vercelProject+"&namePrefix=openinspect-base-", nil, nil)
	require.Equal(t, http.StatusOK, status)
	assert.Len(t, sandboxes["sandboxes"], 2)

	status, all := vercelCall(t, s, "GET", "/v2/sandboxes/snapshots?project="+vercelProject, nil, nil)
	require.Equal(t, http.StatusOK, status)
	require.Len(t, all["snapshots"], 4)
	for _, sn := range all["snapshots"].([]any) {
		status, _ := vercelCall(t, s, "DELETE", "/v2/sandboxes/snapshots/"+sn.(map[string]any)["id"].(string), nil, nil)
		require.Equal(t, http.StatusOK, status)
	}
	status, _ = vercelCall(t, s, "DELETE", "/v2/sandboxes/snapshots/"+direct, nil, nil)
	assert.Equal(t, http.StatusNotFound, status)
	for _, sb := range sandboxes["sandboxes"].([]any) {
		status, _ := vercelCall(t, s, "DELETE", "/v2/sandboxes/"+sb.(map[string]any)["name"].(string)+"?project="+vercelProject, nil, nil)
		require.Equal(t, http.StatusOK, status)
	}
	assert.True(t, s.Inventory().Vercel.Empty(), "%+v", s.Inventory().Vercel)
	assert.True(t, s.Inventory().Empty())
	// 1 refused + 2 builds of 6 calls + 2 lists + the faulted list and the
	// prefix list + the full list + 4 + 1 snapshot deletes + 2 sandbox deletes.
	assert.Equal(t, 1+12+1+2+1+5+2, s.Vercel().Calls())
	assert.Zero(t, s.CloudflareCalls())
}

// TestVercelStateSurvivesRestart: sandboxes, sessions and snapshots are in
// the data directory's vercel.json.
func TestVercelStateSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	first, err := emulator.Start(emulator.Options{DataDir: dir, Vercel: emuvercel.Options{CommandTime: 10 * time.Millisecond}})
	require.NoError(t, err)
	sid, _, snapID := vercelBuild(t, first, "openinspect-base-cccccccccccccccc")
	before := first.Inventory().Vercel
	require.NoError(t, first.Close())

	second := start(t, emulator.Options{DataDir: dir})
	assert.Equal(t, before, second.Inventory().Vercel)
	status, body := vercelCall(t, second, "GET", "/v2/sandboxes/snapshots?project="+vercelProject+"&name=openinspect-base-cccccccccccccccc", nil, nil)
	require.Equal(t, http.StatusOK, status)
	require.Len(t, body["snapshots"], 1)
	got := body["snapshots"].([]any)[0].(map[string]any)
	assert.Equal(t, snapID, got["id"])
	assert.Equal(t, sid, got["sourceSessionId"])
}
