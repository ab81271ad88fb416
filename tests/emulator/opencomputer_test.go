package emulator_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/opencomputer"
)

// ocEvent is one server-sent event.
type ocEvent struct {
	name string
	data map[string]any
}

// ocCreate posts a snapshot as the SDK does (Accept: text/event-stream) and
// reads the event stream.
func ocCreate(t *testing.T, s *emulator.Server, name string, image map[string]any) (int, []ocEvent) {
	t.Helper()
	raw, err := json.Marshal(map[string]any{"name": name, "image": image})
	require.NoError(t, err)
	req, err := http.NewRequest("POST", s.URL()+opencomputer.APIPrefix+"/snapshots", bytes.NewReader(raw))
	require.NoError(t, err)
	req.Header.Set("X-API-Key", opencomputer.DefaultAPIKey)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, nil
	}
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	var events []ocEvent
	var ev ocEvent
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			ev.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev.data))
		case line == "" && ev.name != "":
			events = append(events, ev)
			ev = ocEvent{}
		}
	}
	require.NoError(t, sc.Err())
	return resp.StatusCode, events
}

func ocCall(t *testing.T, s *emulator.Server, key, method, path string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, s.URL()+opencomputer.APIPrefix+path, nil)
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, err = buf.ReadFrom(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, buf.Bytes()
}

var ocImage = map[string]any{"base": "base", "steps": []any{
	map[string]any{"type": "apt_install", "args": map[string]any{"packages": []string{"curl", "git"}}},
	map[string]any{"type": "add_dir", "args": map[string]any{"path": "/app/sandbox_runtime", "files": []any{
		map[string]any{"path": "entrypoint.py", "content": "cHJpbnQoKQ==", "encoding": "base64"}}}},
	map[string]any{"type": "env", "args": map[string]any{"vars": map[string]string{"PYTHONPATH": "/app"}}},
	map[string]any{"type": "workdir", "args": map[string]any{"path": "/workspace"}},
}}

// TestOpenComputerSnapshotLifecycle walks the routes as the SDK and
// upstream's builder call them: the build streamed as build_log events and
// a result, a duplicate name refused, a building snapshot not yet readable,
// list, delete; a failed build reported as an error event, whose name can
// be built again; every call counted.
func TestOpenComputerSnapshotLifecycle(t *testing.T) {
	s := start(t, emulator.Options{OpenComputer: opencomputer.Options{BuildTime: 200 * time.Millisecond}})
	key := opencomputer.DefaultAPIKey

	status, _ := ocCall(t, s, "", "GET", "/snapshots")
	assert.Equal(t, http.StatusUnauthorized, status)

	// While the build runs, the snapshot is not readable yet.
	done := make(chan []ocEvent)
	go func() {
		_, events := ocCreate(t, s, "openinspect-runtime-0123456789abcdef", ocImage)
		done <- events
	}()
	require.Eventually(t, func() bool {
		inv := s.Inventory().OpenComputer
		return len(inv.Snapshots) == 1 && inv.Snapshots[0].Status == "building"
	}, 5*time.Second, 10*time.Millisecond)
	status, _ = ocCall(t, s, key, "GET", "/snapshots/openinspect-runtime-0123456789abcdef")
	assert.Equal(t, http.StatusNotFound, status, "a building snapshot is not readable")
	events := <-done
	require.Len(t, events, 5, "%v", events)
	for i, ev := range events[:4] {
		assert.Equal(t, "build_log", ev.name)
		assert.EqualValues(t, i, ev.data["step"])
	}
	result := events[4]
	require.Equal(t, "result", result.name)
	assert.Equal(t, "ready", result.data["status"])
	assert.Equal(t, "openinspect-runtime-0123456789abcdef", result.data["name"])
	assert.Equal(t, opencomputer.DefaultOrgID, result.data["orgId"])
	for _, k := range []string{"id", "contentHash", "checkpointId", "createdAt", "lastUsedAt", "manifest"} {
		assert.NotEmpty(t, result.data[k], k)
	}

	status, _ = ocCreate(t, s, "openinspect-runtime-0123456789abcdef", ocImage)
	assert.Equal(t, http.StatusConflict, status, "names are unique per org")
	status, body := ocCall(t, s, key, "GET", "/snapshots")
	require.Equal(t, http.StatusOK, status)
	var list []map[string]any
	require.NoError(t, json.Unmarshal(body, &list))
	require.Len(t, list, 1)
	assert.Equal(t, result.data["contentHash"], list[0]["contentHash"])

	inv := s.Inventory().OpenComputer.Snapshots[0]
	assert.Equal(t, []string{"apt_install curl git", "add_dir /app/sandbox_runtime (1 files)", "env PYTHONPATH", "workdir /workspace"}, inv.Steps)
	assert.Equal(t, []string{"/app/sandbox_runtime/entrypoint.py"}, inv.Files)

	// A failed build: an error event, the name free to build again.
	s.OpenComputer().FailNextBuild("apt_install: exit status 100")
	_, events = ocCreate(t, s, "second", ocImage)
	require.NotEmpty(t, events)
	last := events[len(events)-1]
	assert.Equal(t, "error", last.name)
	assert.Equal(t, "apt_install: exit status 100", last.data["error"])
	_, events = ocCreate(t, s, "second", ocImage)
	assert.Equal(t, "result", events[len(events)-1].name, "a failed snapshot's name can be built again")

	status, _ = ocCall(t, s, key, "DELETE", "/snapshots/second")
	assert.Equal(t, http.StatusNoContent, status)
	status, _ = ocCall(t, s, key, "DELETE", "/snapshots/second")
	assert.Equal(t, http.StatusNotFound, status)
	assert.Equal(t, 9, s.OpenComputer().Calls())
}

// The real SDK (@opencomputer/sdk 0.12.4, as .ci/node-tools.sh installs it;
// imported as upstream's builder imports it, from its node entry point)
// builds, reads, lists and deletes a snapshot, and starts, hibernates,
// wakes and kills a sandbox of it, against the emulator, its
// build logs arriving through its own SSE parser, and reports a failed
// build with the emulator's reason.
func TestOpenComputerSDKAgainstTheEmulator(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not on PATH: the OpenComputer SDK test needs Node.js and npm for .ci/node-tools.sh", tool)
		}
	}
	out, err := exec.CommandContext(ctx, "bash", filepath.Join("..", "..", ".ci", "node-tools.sh")).Output()
	require.NoError(t, err, "%s", out)
	deps := strings.TrimSpace(string(out))
	dir := t.TempDir()
	require.NoError(t, os.Symlink(filepath.Join(deps, "node_modules"), filepath.Join(dir, "node_modules")))
	script := `import { Image, Snapshots } from "@opencomputer/sdk/node";
import { Sandbox } from "@opencomputer/sdk";
const opts = { apiUrl: process.env.OC_URL, apiKey: process.env.OC_KEY };
const snaps = new Snapshots(opts);
const logs = [];
const image = Image.base().aptInstall(["curl"]).addFile("/app/hello.txt", "hi").env({ A: "1" }).workdir("/app");
const made = await snaps.create({ name: "sdk-snap", image, onBuildLogs: (l) => logs.push(l) });
const got = await snaps.get("sdk-snap");
const list = await snaps.list();
const sb = await Sandbox.create({ ...opts, snapshot: "sdk-snap", metadata: { openinspect_session_id: "s1" }, envs: { TOKEN: "hidden" } });
const running = await sb.isRunning();
await sb.hibernate();
const asleep = await sb.isRunning();
await sb.wake();
const awake = await sb.isRunning();
await sb.kill();
let gone = "";
try { await Sandbox.connect(sb.sandboxId, opts); } catch (e) { gone = e.message; }
let noSnap = "";
try { await Sandbox.create({ ...opts, snapshot: "nowhere" }); } catch (e) { noSnap = e.message; }
const sandbox = { id: sb.sandboxId, running, asleep, awake, gone, noSnap, status: sb.status };
let failed = "";
try { await snaps.create({ name: "sdk-fail", image }); } catch (e) { failed = e.message; }
await snaps.delete("sdk-snap");
console.log(JSON.stringify({ made, got, list: list.map((s) => s.name), logs, failed, key: image.cacheKey(), sandbox }));
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "run.mjs"), []byte(script), 0o644))
	s := start(t, emulator.Options{OpenComputer: opencomputer.Options{BuildTime: 50 * time.Millisecond}})
	arranged, err := http.Post(s.URL()+"/__emulator/opencomputer/build-failures", "application/json",
		strings.NewReader(`{"name":"sdk-fail","reason":"run: exit status 2"}`))
	require.NoError(t, err)
	arranged.Body.Close()
	require.Equal(t, http.StatusNoContent, arranged.StatusCode)
	cmd := exec.CommandContext(ctx, "node", "run.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "OC_URL="+strings.TrimSuffix(s.URL()+opencomputer.APIPrefix, "/api"), "OC_KEY="+opencomputer.DefaultAPIKey)
	raw, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", raw)
	var res struct {
		Made   map[string]any `json:"made"`
		Got    map[string]any `json:"got"`
		List   []string       `json:"list"`
		Logs   []string       `json:"logs"`
		Failed string         `json:"failed"`
		Key    string         `json:"key"`
		Box    struct {
			ID                     string
			Running, Asleep, Awake bool
			Gone, NoSnap, Status   string
		} `json:"sandbox"`
	}
	require.NoError(t, json.Unmarshal(raw, &res), "%s", raw)
	assert.Equal(t, "ready", res.Made["status"])
	assert.Equal(t, res.Key, res.Made["contentHash"], "the content hash is the SDK's own cacheKey")
	assert.Equal(t, res.Made["id"], res.Got["id"])
	assert.Equal(t, []string{"sdk-snap"}, res.List)
	assert.Len(t, res.Logs, 4)
	assert.Equal(t, "Build failed: run: exit status 2", res.Failed)
	// A sandbox of the snapshot: started through the SDK's stream, hibernated,
	// woken and killed; a snapshot that does not exist starts nothing.
	assert.NotEmpty(t, res.Box.ID)
	assert.True(t, res.Box.Running)
	assert.False(t, res.Box.Asleep, "hibernated")
	assert.True(t, res.Box.Awake)
	assert.Equal(t, "stopped", res.Box.Status)
	assert.Contains(t, res.Box.Gone, ": 404")
	assert.Contains(t, res.Box.NoSnap, "404")
	assert.Empty(t, s.Inventory().OpenComputer.Sandboxes)
	assert.Equal(t, 1, s.Counts()["DELETE "+opencomputer.APIPrefix+"/sandboxes/{id}"])
	snaps := s.Inventory().OpenComputer.Snapshots
	require.Len(t, snaps, 1, "sdk-snap was deleted; the failed one is recorded")
	assert.Equal(t, "failed", snaps[0].Status)
}

// ocJSON makes one call with a JSON body and decodes the JSON answer.
func ocJSON(t *testing.T, s *emulator.Server, key, method, path string, body any, out any) int {
	t.Helper()
	raw, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequest(method, s.URL()+opencomputer.APIPrefix+path, bytes.NewReader(raw))
	require.NoError(t, err)
	req.Header.Set("X-API-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	if out != nil && resp.StatusCode < 300 && resp.StatusCode != http.StatusNoContent {
		require.NoError(t, json.NewDecoder(resp.Body).Decode(out))
	}
	return resp.StatusCode
}

// TestOpenComputerSandboxRoutes: sandboxes as upstream's control plane
// starts them (JSON, not a stream: {templateID "base", snapshot, envs,
// metadata, timeout}), the list of running ones only and at most 100, each
// org seeing its own, env values never kept.
func TestOpenComputerSandboxRoutes(t *testing.T) {
	const otherKey = "oc_other_org"
	s := start(t, emulator.Options{OpenComputer: opencomputer.Options{BuildTime: time.Millisecond,
		APIKeys: map[string]string{opencomputer.DefaultAPIKey: opencomputer.DefaultOrgID, otherKey: "org-other"}}})
	key := opencomputer.DefaultAPIKey
	status, _ := ocCreate(t, s, "snap", ocImage)
	require.Equal(t, http.StatusOK, status)

	var sb map[string]any
	status = ocJSON(t, s, key, "POST", "/sandboxes", map[string]any{"templateID": "base", "snapshot": "snap",
		"envs": map[string]string{"SANDBOX_AUTH_TOKEN": "never-kept"}, "metadata": map[string]string{"openinspect_session_id": "s1"}, "timeout": 1800}, &sb)
	require.Equal(t, http.StatusCreated, status)
	id, _ := sb["sandboxID"].(string)
	require.NotEmpty(t, id)
	assert.Equal(t, "running", sb["status"])
	assert.NotEmpty(t, sb["sandboxDomain"])
	assert.Equal(t, http.StatusNotFound, ocJSON(t, s, key, "POST", "/sandboxes", map[string]any{"snapshot": "nowhere"}, nil))
	assert.Equal(t, http.StatusBadRequest, ocJSON(t, s, key, "POST", "/sandboxes", map[string]any{"timeout": -1}, nil))

	var got map[string]any
	assert.Equal(t, http.StatusOK, ocJSON(t, s, key, "GET", "/sandboxes/"+id, nil, &got))
	assert.Equal(t, map[string]any{"openinspect_session_id": "s1"}, got["metadata"])
	assert.Equal(t, http.StatusNotFound, ocJSON(t, s, otherKey, "GET", "/sandboxes/"+id, nil, nil), "another org's sandbox")
	assert.Equal(t, http.StatusNoContent, ocJSON(t, s, key, "POST", "/sandboxes/"+id+"/timeout", map[string]any{"timeout": 60}, nil))
	assert.Equal(t, http.StatusBadRequest, ocJSON(t, s, key, "POST", "/sandboxes/"+id+"/timeout", map[string]any{}, nil))
	raw, err := json.Marshal(s.Inventory().OpenComputer)
	require.NoError(t, err)
	assert.NotContains(t, string(raw), "never-kept")
	assert.Contains(t, string(raw), "SANDBOX_AUTH_TOKEN")

	// The list holds running sandboxes only, at most 100.
	assert.Equal(t, http.StatusNoContent, ocJSON(t, s, key, "POST", "/sandboxes/"+id+"/hibernate", nil, nil))
	assert.Equal(t, http.StatusConflict, ocJSON(t, s, key, "POST", "/sandboxes/"+id+"/hibernate", nil, nil))
	for i := 0; i < 101; i++ {
		_, err := s.OpenComputer().CreateSandbox(opencomputer.SandboxSpec{Snapshot: "snap"})
		require.NoError(t, err)
	}
	_, err = s.OpenComputer().CreateSandbox(opencomputer.SandboxSpec{OrgID: "org-other"})
	require.NoError(t, err)
	var list []map[string]any
	require.Equal(t, http.StatusOK, ocJSON(t, s, key, "GET", "/sandboxes", nil, &list))
	assert.Len(t, list, 100)
	for _, l := range list {
		assert.NotEqual(t, id, l["sandboxID"], "a hibernated sandbox is not listed")
	}
	var woken map[string]any
	assert.Equal(t, http.StatusOK, ocJSON(t, s, key, "POST", "/sandboxes/"+id+"/wake", map[string]any{"timeout": 0}, &woken))
	assert.Equal(t, "running", woken["status"])
	assert.Equal(t, http.StatusNoContent, ocJSON(t, s, key, "DELETE", "/sandboxes/"+id, nil, nil))
	assert.Equal(t, http.StatusNotFound, ocJSON(t, s, key, "DELETE", "/sandboxes/"+id, nil, nil))
	assert.Len(t, s.Inventory().OpenComputer.Sandboxes, 102)
}
