package vercel_test

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/vercel"
)

const project = "prj_openinspect"

// api is one Service on its own core, served over HTTP.
type api struct {
	t    *testing.T
	svc  *vercel.Service
	core *core.Core
	url  string
}

func serve(t *testing.T, dir string, opts vercel.Options) *api {
	t.Helper()
	c := core.New()
	svc, err := vercel.New(opts, dir, c)
	require.NoError(t, err)
	svc.Register()
	c.RegisterAdmin()
	srv := httptest.NewServer(c.Mux())
	t.Cleanup(srv.Close)
	return &api{t: t, svc: svc, core: c, url: srv.URL}
}

// request sends what upstream's client sends: the bearer token and JSON.
func (a *api) request(method, path, token string, body io.Reader, header map[string]string) *http.Response {
	a.t.Helper()
	req, err := http.NewRequest(method, a.url+vercel.APIPrefix+path, body)
	require.NoError(a.t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(a.t, err)
	return resp
}

// call sends a JSON body (nil: none) with the default token and decodes the
// JSON answer.
func (a *api) call(method, path string, body any) (int, map[string]any) {
	a.t.Helper()
	return a.callAs(vercel.DefaultToken, method, path, body)
}

func (a *api) callAs(token, method, path string, body any) (int, map[string]any) {
	a.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		require.NoError(a.t, err)
		rd = bytes.NewReader(raw)
	}
	resp := a.request(method, path, token, rd, nil)
	return decode(a.t, resp)
}

func decode(t *testing.T, resp *http.Response) (int, map[string]any) {
	t.Helper()
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out), "%s", raw)
	return resp.StatusCode, out
}

// errorCode is the code of Vercel's {"error": {code, message}}.
func errorCode(t *testing.T, body map[string]any) string {
	t.Helper()
	e, ok := body["error"].(map[string]any)
	require.True(t, ok, "an error body: %v", body)
	assert.NotEmpty(t, e["message"])
	code, _ := e["code"].(string)
	return code
}

// archive is a real tar.gz: a directory entry and two files.
func archive(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "sandbox-runtime/", Typeflag: tar.TypeDir, Mode: 0o755}))
	for _, name := range core.SortedKeys(files) {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(files[name]))}))
		_, err := tw.Write([]byte(files[name]))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	return buf.Bytes()
}

func (a *api) writeArchive(sessionID, dir string, body []byte) (int, map[string]any) {
	a.t.Helper()
	h := map[string]string{"Content-Type": "application/gzip"}
	if dir != "" {
		h["x-cwd"] = dir
	}
	return decode(a.t, a.request("POST", "/v2/sandboxes/sessions/"+sessionID+"/fs/write", vercel.DefaultToken, bytes.NewReader(body), h))
}

// runAndWait posts a wait:true command and reads its NDJSON answer line by
// line; between the lines it asks inventory whether the command has exited,
// which proves the first line was flushed before the command ended.
func (a *api) runAndWait(sessionID string, args ...string) (lines []map[string]any, exitedAtFirstLine bool) {
	a.t.Helper()
	raw, err := json.Marshal(map[string]any{"command": "bash", "args": args, "env": map[string]string{}, "sudo": false, "wait": true})
	require.NoError(a.t, err)
	resp := a.request("POST", "/v2/sandboxes/sessions/"+sessionID+"/cmd", vercel.DefaultToken, bytes.NewReader(raw), nil)
	defer resp.Body.Close()
	require.Equal(a.t, http.StatusOK, resp.StatusCode)
	assert.Equal(a.t, "application/x-ndjson", resp.Header.Get("Content-Type"))
	rd := bufio.NewReader(resp.Body)
	for {
		l, err := rd.ReadBytes('\n')
		if len(bytes.TrimSpace(l)) > 0 {
			var m map[string]any
			require.NoError(a.t, json.Unmarshal(l, &m), "%s", l)
			lines = append(lines, m)
			if len(lines) == 1 {
				exitedAtFirstLine = a.lastCommand(sessionID).ExitCode != nil
			}
		}
		if err == io.EOF {
			return lines, exitedAtFirstLine
		}
		require.NoError(a.t, err)
	}
}

func (a *api) session(id string) vercel.SessionEntry {
	a.t.Helper()
	for _, sb := range a.svc.Inventory().Sandboxes {
		for _, ss := range sb.Sessions {
			if ss.ID == id {
				return ss
			}
		}
	}
	a.t.Fatalf("no session %s in the inventory", id)
	return vercel.SessionEntry{}
}

func (a *api) lastCommand(sessionID string) vercel.CommandEntry {
	a.t.Helper()
	cmds := a.session(sessionID).Commands
	require.NotEmpty(a.t, cmds)
	return cmds[len(cmds)-1]
}

func command(t *testing.T, line map[string]any) map[string]any {
	t.Helper()
	c, ok := line["command"].(map[string]any)
	require.True(t, ok, "a command line: %v", line)
	return c
}

func createBody(name string) map[string]any {
	return map[string]any{"projectId": project, "name": name, "runtime": "node24", "timeout": 1800000, "ports": []int{},
		"tags": map[string]string{"openinspect_installation": "demo", "openinspect_role": "base"}}
}

// TestSandboxLifecycle walks what upstream's base-snapshot builder does and
// what teardown does after it: create, a command, fs/write of a real
// tar.gz, the bootstrap command (NDJSON, read line by line), snapshot
// (which stops the session), list by name, a new session of the stopped
// sandbox from the snapshot, the 409 while it runs, lists and deletes;
// every call counted.
func TestSandboxLifecycle(t *testing.T) {
	a := serve(t, t.TempDir(), vercel.Options{CommandTime: time.Second})

	status, created := a.call("POST", "/v2/sandboxes?teamId="+vercel.DefaultTeamID, createBody("openinspect-base-0123456789abcdef"))
	require.Equal(t, http.StatusOK, status, "%v", created)
	sb := created["sandbox"].(map[string]any)
	sess := created["session"].(map[string]any)
	assert.Equal(t, "openinspect-base-0123456789abcdef", sb["name"])
	assert.Equal(t, "running", sb["status"])
	assert.Equal(t, sess["id"], sb["currentSessionId"])
	assert.NotContains(t, sb, "currentSnapshotId", "a sandbox not made from a snapshot names none")
	assert.IsType(t, float64(0), sb["createdAt"], "createdAt is milliseconds, a number")
	assert.Equal(t, "running", sess["status"])
	assert.Equal(t, "/vercel/sandbox", sess["cwd"])
	assert.EqualValues(t, 1800000, sess["timeout"])
	assert.IsType(t, float64(0), sess["createdAt"])
	assert.Equal(t, []any{}, created["routes"])
	sid := sess["id"].(string)

	lines, exited := a.runAndWait(sid, "-lc", "mkdir -p /vercel/sandbox/openinspect")
	require.Len(t, lines, 2)
	first, last := command(t, lines[0]), command(t, lines[1])
	assert.True(t, strings.HasPrefix(first["id"].(string), "cmd_"), "%v", first)
	assert.Nil(t, first["exitCode"])
	assert.Contains(t, first, "exitCode", "the first line carries exitCode: null")
	assert.False(t, exited, "the first line arrives while the command still runs")
	assert.Equal(t, first["id"], last["id"])
	assert.EqualValues(t, 0, last["exitCode"])

	tgz := archive(t, map[string]string{"sandbox-runtime/pyproject.toml": "[project]\n", "sandbox-runtime/src/main.py": "print()\n"})
	status, body := a.writeArchive(sid, "/vercel/sandbox/openinspect", tgz)
	require.Equal(t, http.StatusOK, status, "%v", body)
	assert.Empty(t, body)
	lines, _ = a.runAndWait(sid, "-lc", "python3 -m pip install /vercel/sandbox/openinspect/sandbox-runtime")
	assert.EqualValues(t, 0, command(t, lines[len(lines)-1])["exitCode"])

	ss := a.session(sid)
	assert.Equal(t, []string{"/vercel/sandbox/openinspect/sandbox-runtime/pyproject.toml", "/vercel/sandbox/openinspect/sandbox-runtime/src/main.py"}, ss.Files)
	require.Len(t, ss.Commands, 2)
	assert.Equal(t, "bash -lc mkdir -p /vercel/sandbox/openinspect", ss.Commands[0].Line)
	assert.Empty(t, ss.FailReason)

	status, body = a.call("POST", "/v2/sandboxes/sessions/"+sid+"/snapshot", map[string]any{"expiration": 0})
	require.Equal(t, http.StatusOK, status, "%v", body)
	snap := body["snapshot"].(map[string]any)
	snapID := snap["id"].(string)
	assert.True(t, strings.HasPrefix(snapID, "snap_"))
	assert.Equal(t, "created", snap["status"])
	assert.IsType(t, float64(0), snap["createdAt"])
	assert.Equal(t, "stopped", body["session"].(map[string]any)["status"], "snapshotting stops the session")

	status, body = a.call("POST", "/v2/sandboxes/sessions/"+sid+"/cmd", map[string]any{"command": "true", "args": []string{}, "env": map[string]string{}, "sudo": false})
	assert.Equal(t, http.StatusGone, status, "a stopped session runs nothing")
	assert.Equal(t, "sandbox_stopped", errorCode(t, body))
	for range 2 {
		status, body = a.call("POST", "/v2/sandboxes/sessions/"+sid+"/stop", nil)
		require.Equal(t, http.StatusOK, status, "stop is idempotent: %v", body)
		assert.Equal(t, "stopped", body["session"].(map[string]any)["status"])
	}

	status, body = a.call("GET", "/v2/sandboxes/snapshots?project="+project+"&name=openinspect-base-0123456789abcdef", nil)
	require.Equal(t, http.StatusOK, status, "%v", body)
	list := body["snapshots"].([]any)
	require.Len(t, list, 1)
	entry := list[0].(map[string]any)
	assert.Equal(t, snapID, entry["id"])
	assert.Equal(t, sid, entry["sourceSessionId"])
	assert.Equal(t, "created", entry["status"])
	assert.NotEmpty(t, entry["region"], "the client's list schema requires a region")
	assert.EqualValues(t, len("[project]\n")+len("print()\n"), entry["sizeBytes"])
	assert.NotContains(t, entry, "expiresAt", "expiration 0 never expires")
	for _, k := range []string{"createdAt", "updatedAt"} {
		assert.IsType(t, float64(0), entry[k], k)
	}
	status, body = a.call("GET", "/v2/sandboxes/snapshots?project="+project+"&name=another", nil)
	require.Equal(t, http.StatusOK, status)
	assert.Empty(t, body["snapshots"], "name filters by the sandbox snapshotted")

	// The stopped sandbox's name starts a new session, here from the snapshot.
	req := createBody("openinspect-base-0123456789abcdef")
	req["source"] = map[string]any{"type": "snapshot", "snapshotId": snapID}
	status, body = a.call("POST", "/v2/sandboxes", req)
	require.Equal(t, http.StatusOK, status, "%v", body)
	sid2 := body["session"].(map[string]any)["id"].(string)
	assert.NotEqual(t, sid, sid2)
	assert.Equal(t, snapID, body["sandbox"].(map[string]any)["currentSnapshotId"])
	status, body = a.call("POST", "/v2/sandboxes", createBody("openinspect-base-0123456789abcdef"))
	assert.Equal(t, http.StatusConflict, status, "a running sandbox's name is taken")
	assert.Equal(t, "sandbox_exists", errorCode(t, body))
	inv := a.svc.Inventory()
	require.Len(t, inv.Sandboxes, 1)
	assert.Equal(t, []string{sid, sid2}, []string{inv.Sandboxes[0].Sessions[0].ID, inv.Sandboxes[0].Sessions[1].ID})
	assert.Equal(t, snapID, inv.Sandboxes[0].Sessions[1].SourceSnapshotID)
	assert.Equal(t, "running", inv.Sandboxes[0].Status)
	require.Len(t, inv.Snapshots, 1)
	assert.Equal(t, "openinspect-base-0123456789abcdef", inv.Snapshots[0].SandboxName)

	withPort := createBody("unrelated")
	withPort["ports"] = []int{3000}
	status, body = a.call("POST", "/v2/sandboxes", withPort)
	require.Equal(t, http.StatusOK, status, "%v", body)
	routes := body["routes"].([]any)
	require.Len(t, routes, 1, "one route per port")
	rt := routes[0].(map[string]any)
	assert.EqualValues(t, 3000, rt["port"])
	assert.Regexp(t, `^[a-z0-9-]+$`, rt["subdomain"], "a DNS label")
	assert.Equal(t, "https://"+rt["subdomain"].(string)+".vercel.run", rt["url"])
	status, body = a.call("GET", "/v2/sandboxes?project="+project+"&namePrefix=openinspect-base-", nil)
	require.Equal(t, http.StatusOK, status)
	sandboxes := body["sandboxes"].([]any)
	require.Len(t, sandboxes, 1, "namePrefix filters")
	listed := sandboxes[0].(map[string]any)
	assert.Equal(t, sid2, listed["currentSessionId"])
	assert.Equal(t, map[string]any{"openinspect_installation": "demo", "openinspect_role": "base"}, listed["tags"])

	status, body = a.call("DELETE", "/v2/sandboxes/snapshots/"+snapID, nil)
	require.Equal(t, http.StatusOK, status, "%v", body)
	assert.Equal(t, "deleted", body["snapshot"].(map[string]any)["status"])
	status, _ = a.call("DELETE", "/v2/sandboxes/snapshots/"+snapID, nil)
	assert.Equal(t, http.StatusNotFound, status)
	status, body = a.call("GET", "/v2/sandboxes/snapshots?project="+project, nil)
	require.Equal(t, http.StatusOK, status)
	assert.Empty(t, body["snapshots"], "deleted snapshots are not listed")
	for _, name := range []string{"openinspect-base-0123456789abcdef", "unrelated"} {
		status, body = a.call("DELETE", "/v2/sandboxes/"+name+"?project="+project, nil)
		require.Equal(t, http.StatusOK, status, "%v", body)
		assert.Equal(t, "stopped", body["sandbox"].(map[string]any)["status"], "deleting stops the session")
	}
	status, _ = a.call("DELETE", "/v2/sandboxes/unrelated?project="+project, nil)
	assert.Equal(t, http.StatusNotFound, status)
	status, _ = a.call("POST", "/v2/sandboxes/sessions/"+sid2+"/stop", nil)
	assert.Equal(t, http.StatusNotFound, status, "a deleted sandbox's sessions are gone")
	assert.True(t, a.svc.Inventory().Empty(), "%+v", a.svc.Inventory())
	assert.Equal(t, 21, a.svc.Calls(), "every call, refused ones too")
}

// TestRequestErrors: the token, the team, the project and the shape of
// every request are checked, and answered in Vercel's {error: {code,
// message}}; one team sees nothing of another's.
func TestRequestErrors(t *testing.T) {
	a := serve(t, t.TempDir(), vercel.Options{Tokens: map[string]string{"tok-a": "team_a", "tok-b": "team_b"}})

	for _, token := range []string{"", "wrong"} {
		status, body := a.callAs(token, "GET", "/v2/sandboxes?project="+project, nil)
		assert.Equal(t, http.StatusUnauthorized, status, "token %q", token)
		assert.Equal(t, "forbidden", errorCode(t, body))
	}
	status, body := a.callAs("tok-a", "GET", "/v2/sandboxes?project="+project+"&teamId=team_b", nil)
	assert.Equal(t, http.StatusForbidden, status, "a token reaches only its own team")
	assert.Equal(t, "forbidden", errorCode(t, body))

	bad := func(mutate func(map[string]any)) map[string]any {
		b := createBody("sbx")
		mutate(b)
		return b
	}
	for name, req := range map[string]map[string]any{
		"no project": bad(func(b map[string]any) { delete(b, "projectId") }),
		"no name":    bad(func(b map[string]any) { delete(b, "name") }),
		"runtime":    bad(func(b map[string]any) { b["runtime"] = "node18" }),
		"six tags": bad(func(b map[string]any) {
			b["tags"] = map[string]string{"a": "1", "b": "2", "c": "3", "d": "4", "e": "5", "f": "6"}
		}),
		"vcpus":         bad(func(b map[string]any) { b["resources"] = map[string]int{"vcpus": 3} }),
		"timeout":       bad(func(b map[string]any) { b["timeout"] = -1 }),
		"source type":   bad(func(b map[string]any) { b["source"] = map[string]string{"type": "git", "snapshotId": "snap_x"} }),
		"not an object": {"projectId": []int{1}},
	} {
		status, body := a.callAs("tok-a", "POST", "/v2/sandboxes", req)
		assert.Equal(t, http.StatusBadRequest, status, "%s: %v", name, body)
		assert.Equal(t, "bad_request", errorCode(t, body), name)
	}
	status, body = a.callAs("tok-a", "POST", "/v2/sandboxes", bad(func(b map[string]any) {
		b["tags"] = map[string]string{"a": "1", "b": "2", "c": "3", "d": "4", "e": "5"}
	}))
	require.Equal(t, http.StatusOK, status, "five tags are allowed: %v", body)
	sid := body["session"].(map[string]any)["id"].(string)
	status, body = a.callAs("tok-a", "POST", "/v2/sandboxes", bad(func(b map[string]any) {
		b["name"] = "from-missing"
		b["source"] = map[string]string{"type": "snapshot", "snapshotId": "snap_missing"}
	}))
	assert.Equal(t, http.StatusNotFound, status, "%v", body)

	for _, path := range []string{"/v2/sandboxes", "/v2/sandboxes/snapshots", "/v2/sandboxes/sbx"} {
		method := "GET"
		if path == "/v2/sandboxes/sbx" {
			method = "DELETE"
		}
		status, body := a.callAs("tok-a", method, path, nil)
		assert.Equal(t, http.StatusBadRequest, status, "%s %s needs a project: %v", method, path, body)
	}
	for _, q := range []string{"limit=0", "limit=x", "limit=101", "sortOrder=up"} {
		status, _ := a.callAs("tok-a", "GET", "/v2/sandboxes/snapshots?project="+project+"&"+q, nil)
		assert.Equal(t, http.StatusBadRequest, status, q)
	}

	status, body = a.callAs("tok-a", "POST", "/v2/sandboxes/sessions/sbx_sess_missing/cmd", map[string]any{"command": "true"})
	assert.Equal(t, http.StatusNotFound, status)
	assert.Equal(t, "not_found", errorCode(t, body))
	status, _ = a.callAs("tok-a", "POST", "/v2/sandboxes/sessions/"+sid+"/cmd", map[string]any{"args": []string{}})
	assert.Equal(t, http.StatusBadRequest, status, "a command is required")
	status, _ = a.callAs("tok-b", "POST", "/v2/sandboxes/sessions/"+sid+"/cmd", map[string]any{"command": "true"})
	assert.Equal(t, http.StatusNotFound, status, "another team's session does not exist for it")
	status, body = a.callAs("tok-b", "GET", "/v2/sandboxes?project="+project, nil)
	require.Equal(t, http.StatusOK, status)
	assert.Empty(t, body["sandboxes"], "another team lists none of team_a's sandboxes")
	status, _ = a.callAs("tok-b", "DELETE", "/v2/sandboxes/sbx?project="+project, nil)
	assert.Equal(t, http.StatusNotFound, status)

	// fs/write: x-cwd is required, and the body must be a gzip'd tar.
	write := func(dir string, body []byte) int {
		h := map[string]string{"Content-Type": "application/gzip"}
		if dir != "" {
			h["x-cwd"] = dir
		}
		status, _ := decode(t, a.request("POST", "/v2/sandboxes/sessions/"+sid+"/fs/write", "tok-a", bytes.NewReader(body), h))
		return status
	}
	tgz := archive(t, map[string]string{"a.txt": "a"})
	assert.Equal(t, http.StatusBadRequest, write("", tgz), "no x-cwd")
	assert.Equal(t, http.StatusBadRequest, write("/tmp", []byte("plain text")), "not gzip")
	var gzOnly bytes.Buffer
	gz := gzip.NewWriter(&gzOnly)
	_, _ = gz.Write(bytes.Repeat([]byte("not a tar header "), 64))
	require.NoError(t, gz.Close())
	assert.Equal(t, http.StatusBadRequest, write("/tmp", gzOnly.Bytes()), "gzip but not tar")
	assert.Equal(t, http.StatusBadRequest, write("/tmp", tgz[:len(tgz)/2]), "a truncated archive")
	assert.Equal(t, http.StatusOK, write("/tmp", tgz))

	status, _ = a.callAs("tok-a", "POST", "/v2/sandboxes/sessions/"+sid+"/snapshot", map[string]any{"expiration": -5})
	assert.Equal(t, http.StatusBadRequest, status)
	status, _ = a.callAs("tok-a", "DELETE", "/v2/sandboxes/snapshots/snap_missing", nil)
	assert.Equal(t, http.StatusNotFound, status)
	status, body = a.callAs("tok-a", "GET", "/v2/nothing", nil)
	assert.Equal(t, http.StatusNotFound, status)
	assert.Equal(t, "not_found", errorCode(t, body))
}

// TestArrangedBuildFailure: a failure arranged over the admin route fails
// the first command after an fs/write (the bootstrap) with exit code 1 and
// leaves its reason on the session; commands before the write, and after
// the bootstrap, exit 0. A "next" failure is used up by one bootstrap.
func TestArrangedBuildFailure(t *testing.T) {
	a := serve(t, t.TempDir(), vercel.Options{CommandTime: 10 * time.Millisecond})
	resp, err := http.Post(a.url+"/__emulator/vercel/build-failures", "application/json",
		strings.NewReader(`{"name": "openinspect-base-failing", "reason": "pip install: exit status 1"}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)

	status, body := a.call("POST", "/v2/sandboxes", createBody("openinspect-base-failing"))
	require.Equal(t, http.StatusOK, status, "%v", body)
	sid := body["session"].(map[string]any)["id"].(string)
	lines, _ := a.runAndWait(sid, "-lc", "mkdir -p /x")
	assert.EqualValues(t, 0, command(t, lines[len(lines)-1])["exitCode"], "a command before any fs/write is not the bootstrap")
	status, _ = a.writeArchive(sid, "/x", archive(t, map[string]string{"f": "1"}))
	require.Equal(t, http.StatusOK, status)
	lines, _ = a.runAndWait(sid, "-lc", "bootstrap")
	assert.EqualValues(t, 1, command(t, lines[len(lines)-1])["exitCode"], "the bootstrap fails as arranged")
	lines, _ = a.runAndWait(sid, "-lc", "echo after")
	assert.EqualValues(t, 0, command(t, lines[len(lines)-1])["exitCode"])
	ss := a.session(sid)
	assert.Equal(t, "pip install: exit status 1", ss.FailReason)
	codes := []int{}
	for _, c := range ss.Commands {
		require.NotNil(t, c.ExitCode)
		codes = append(codes, *c.ExitCode)
	}
	assert.Equal(t, []int{0, 1, 0}, codes)

	// Without wait the answer is plain JSON and the exit code comes later,
	// in the inventory.
	a.svc.FailNextBuild("")
	status, body = a.call("POST", "/v2/sandboxes", createBody("other"))
	require.Equal(t, http.StatusOK, status)
	other := body["session"].(map[string]any)["id"].(string)
	status, _ = a.writeArchive(other, "/x", archive(t, map[string]string{"f": "1"}))
	require.Equal(t, http.StatusOK, status)
	status, body = a.call("POST", "/v2/sandboxes/sessions/"+other+"/cmd", map[string]any{"command": "bootstrap", "args": []string{"--all"}})
	require.Equal(t, http.StatusOK, status)
	c := command(t, body)
	assert.Contains(t, c, "exitCode")
	assert.Nil(t, c["exitCode"])
	require.Eventually(t, func() bool { return a.lastCommand(other).ExitCode != nil }, 5*time.Second, 5*time.Millisecond)
	assert.Equal(t, 1, *a.lastCommand(other).ExitCode)
	assert.Equal(t, "bootstrap --all", a.lastCommand(other).Line)
	assert.Equal(t, "bootstrap command failed: exit status 1", a.session(other).FailReason, "an empty reason reads as the default")

	status, _ = a.writeArchive(other, "/x", archive(t, map[string]string{"f": "1"}))
	require.Equal(t, http.StatusOK, status)
	lines, _ = a.runAndWait(other, "-lc", "bootstrap again")
	assert.EqualValues(t, 0, command(t, lines[len(lines)-1])["exitCode"], "a next failure is used up by one bootstrap")
}

// TestSnapshotListOrderAndAdmin: snapshots made directly over the admin
// route list with the session-made ones, newest first unless asc, limit
// cuts; the state survives a restart.
func TestSnapshotListOrderAndStateSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	a := serve(t, dir, vercel.Options{})
	var ids []string
	for range 3 {
		resp, err := http.Post(a.url+"/__emulator/vercel/snapshots", "application/json",
			strings.NewReader(`{"project": "`+project+`", "sandboxName": "openinspect-base-old"}`))
		require.NoError(t, err)
		status, body := decode(t, resp)
		require.Equal(t, http.StatusCreated, status, "%v", body)
		ids = append(ids, body["id"].(string))
	}
	resp, err := http.Post(a.url+"/__emulator/vercel/snapshots", "application/json", strings.NewReader(`{"project": "`+project+`"}`))
	require.NoError(t, err)
	status, _ := decode(t, resp)
	assert.Equal(t, http.StatusBadRequest, status, "a sandbox name is required")

	listIDs := func(a *api, query string) []string {
		status, body := a.call("GET", "/v2/sandboxes/snapshots?project="+project+"&"+query, nil)
		require.Equal(t, http.StatusOK, status, "%v", body)
		out := []string{}
		for _, s := range body["snapshots"].([]any) {
			out = append(out, s.(map[string]any)["id"].(string))
		}
		return out
	}
	assert.Equal(t, []string{ids[2], ids[1], ids[0]}, listIDs(a, "name=openinspect-base-old"))
	assert.Equal(t, []string{ids[0], ids[1]}, listIDs(a, "name=openinspect-base-old&sortOrder=asc&limit=2"))
	assert.Empty(t, listIDs(a, "name=openinspect-base-new"))

	status, body := a.call("POST", "/v2/sandboxes", createBody("openinspect-base-new"))
	require.Equal(t, http.StatusOK, status)
	sid := body["session"].(map[string]any)["id"].(string)
	status, _ = a.writeArchive(sid, "/vercel/sandbox", archive(t, map[string]string{"f.txt": "12345"}))
	require.Equal(t, http.StatusOK, status)
	status, body = a.call("POST", "/v2/sandboxes/sessions/"+sid+"/snapshot", map[string]any{"expiration": 86400000})
	require.Equal(t, http.StatusOK, status)
	newID := body["snapshot"].(map[string]any)["id"].(string)
	status, body = a.call("GET", "/v2/sandboxes/snapshots?project="+project+"&name=openinspect-base-new", nil)
	require.Equal(t, http.StatusOK, status)
	entry := body["snapshots"].([]any)[0].(map[string]any)
	assert.InDelta(t, entry["createdAt"].(float64)+86400000, entry["expiresAt"], 0.5, "expiresAt is createdAt plus the expiration")
	assert.Equal(t, []string{newID, ids[2], ids[1], ids[0]}, listIDs(a, ""))

	before := a.svc.Inventory()
	require.Len(t, before.Snapshots, 4)
	assert.Equal(t, int64(5), before.Snapshots[3].SizeBytes)
	b := serve(t, dir, vercel.Options{})
	assert.Equal(t, before, b.svc.Inventory(), "vercel.json carries everything")
	assert.Equal(t, []string{newID, ids[2], ids[1], ids[0]}, listIDs(b, ""), "the order survives too")
	status, _ = b.call("POST", "/v2/sandboxes/sessions/"+sid+"/stop", nil)
	assert.Equal(t, http.StatusOK, status, "sessions survive")
}

// TestFaultsAnswerInVercelsShape: an injected server error on a Vercel
// route is counted and answered as {error: {code, message}}.
func TestFaultsAnswerInVercelsShape(t *testing.T) {
	a := serve(t, t.TempDir(), vercel.Options{})
	a.core.InjectFault(core.Fault{Method: "POST", Route: vercel.APIPrefix + "/v2/sandboxes", Kind: core.FaultServerError, Status: 503, Times: 1})
	status, body := a.call("POST", "/v2/sandboxes", createBody("sbx"))
	assert.Equal(t, http.StatusServiceUnavailable, status)
	assert.Equal(t, "internal_server_error", errorCode(t, body))
	status, _ = a.call("POST", "/v2/sandboxes", createBody("sbx"))
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, 2, a.core.Counts()["POST "+vercel.APIPrefix+"/v2/sandboxes"])
}

// TestSessionTimeout: a session past its timeout is stopped, as on Vercel:
// it runs nothing more and its sandbox's name starts a new session instead
// of conflicting.
func TestSessionTimeout(t *testing.T) {
	a := serve(t, t.TempDir(), vercel.Options{})
	req := createBody("short-lived")
	req["timeout"] = 1
	status, body := a.call("POST", "/v2/sandboxes", req)
	require.Equal(t, http.StatusOK, status, "%v", body)
	sid := body["session"].(map[string]any)["id"].(string)
	require.Eventually(t, func() bool { return a.session(sid).Status == "stopped" }, 5*time.Second, time.Millisecond)
	status, _ = a.call("POST", "/v2/sandboxes/sessions/"+sid+"/cmd", map[string]any{"command": "true"})
	assert.Equal(t, http.StatusGone, status)
	status, body = a.call("POST", "/v2/sandboxes", createBody("short-lived"))
	require.Equal(t, http.StatusOK, status, "the timed-out sandbox's name is free: %v", body)
	assert.Len(t, a.svc.Inventory().Sandboxes[0].Sessions, 2)
}

// The admin API adds a project as the user makes the one the sandboxes
// run in: the projects API then answers it by name or ID in the team and
// 404 elsewhere, adding it again keeps it, a name Vercel refuses is 400,
// and none of it counts as an API call.
func TestAdminAddsAProject(t *testing.T) {
	a := serve(t, t.TempDir(), vercel.Options{})
	add := func(body string) (int, map[string]any) {
		resp, err := http.Post(a.url+"/__emulator/vercel/projects", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		return decode(t, resp)
	}
	status, body := add(`{"name": "oi-sandboxes"}`)
	require.Equal(t, http.StatusCreated, status, "%v", body)
	id := body["id"].(string)
	assert.True(t, strings.HasPrefix(id, "prj_"), id)
	status, body = add(`{"name": "oi-sandboxes"}`)
	require.Equal(t, http.StatusCreated, status, "%v", body)
	assert.Equal(t, id, body["id"], "the project of that name is kept")
	status, _ = add(`{"name": "Not A Name"}`)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Empty(t, a.core.Counts(), "admin calls are not API calls")

	for _, idOrName := range []string{id, "oi-sandboxes"} {
		status, body = a.call("GET", "/v9/projects/"+idOrName, nil)
		require.Equal(t, http.StatusOK, status, "%v", body)
		assert.Equal(t, id, body["id"])
	}
	status, body = a.call("GET", "/v9/projects/oi-elsewhere", nil)
	assert.Equal(t, http.StatusNotFound, status, "%v", body)
	status, _ = add(`{"team": "team_other", "name": "oi-elsewhere"}`)
	require.Equal(t, http.StatusCreated, status)
	status, _ = a.call("GET", "/v9/projects/oi-elsewhere", nil)
	assert.Equal(t, http.StatusNotFound, status, "another team's project is not the token's")
}
