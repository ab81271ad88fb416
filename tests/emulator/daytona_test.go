package emulator_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/daytonaio/daytona/libs/sdk-go/pkg/daytona"
	dterrors "github.com/daytonaio/daytona/libs/sdk-go/pkg/errors"
	"github.com/daytonaio/daytona/libs/sdk-go/pkg/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	emudaytona "github.com/openinspect/pulumi-openinspect/tests/emulator/daytona"
)

// newDaytona is the official SDK pointed at s. The SDK falls back to
// DAYTONA_* variables for every field left empty; those are blanked so a
// developer's own settings cannot leak in (the SDK treats "" as unset).
func newDaytona(t *testing.T, s *emulator.Server, key string) *daytona.Client {
	t.Helper()
	for _, k := range []string{"DAYTONA_JWT_TOKEN", "DAYTONA_ORGANIZATION_ID", "DAYTONA_TARGET", "DAYTONA_OTEL_ENABLED", "DAYTONA_EXPERIMENTAL_OTEL_ENABLED"} {
		t.Setenv(k, "")
	}
	c, err := daytona.NewClientWithConfig(&types.DaytonaConfig{APIKey: key, APIUrl: s.URL() + emudaytona.APIPrefix})
	require.NoError(t, err)
	return c
}

// runtimeDir writes a tiny runtime package to copy into an image.
func runtimeDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "sandbox_runtime")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "pkg"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "entrypoint.py"), []byte("print('hello')\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pkg", "__init__.py"), nil, 0o644))
	return dir
}

// drain collects a build's log channel.
func drain(ch <-chan string) []string {
	var lines []string
	for l := range ch {
		lines = append(lines, l)
	}
	return lines
}

func testImage(dir string) *daytona.DockerImage {
	return daytona.Base("python:3.12-slim-bookworm").
		AptGet([]string{"git"}).
		PipInstall([]string{"httpx"}).
		Env("SANDBOX_VERSION", "v1").
		AddLocalDir(dir, "/app/sandbox_runtime").
		Workdir("/workspace").
		Entrypoint([]string{"python", "-m", "sandbox_runtime.entrypoint"})
}

func TestDaytonaSnapshotBuildThroughSDK(t *testing.T) {
	s := start(t, emulator.Options{Daytona: emudaytona.Options{BuildTime: emudaytona.InstantBuilds}})
	c := newDaytona(t, s, emudaytona.DefaultAPIKey)
	ctx := context.Background()
	dir := runtimeDir(t)

	snap, logs, err := c.Snapshot.Create(ctx, &types.CreateSnapshotParams{Name: "base-1", Image: testImage(dir),
		Resources: &types.Resources{CPU: 2, Memory: 4, Disk: 10}})
	require.NoError(t, err)
	assert.Equal(t, "active", snap.State, "an instant build is done when POST answers")
	lines := drain(logs)
	require.Len(t, lines, 9, "%q", lines)
	assert.Equal(t, "Creating snapshot base-1 (active)", lines[0])
	assert.Equal(t, "#1 [1/7] FROM python:3.12-slim-bookworm", lines[1])
	assert.Equal(t, "#5 [5/7] COPY "+dir+" /app/sandbox_runtime", lines[5])
	assert.Equal(t, "Created snapshot base-1 (active)", lines[8])

	got, err := c.Snapshot.Get(ctx, "base-1")
	require.NoError(t, err)
	assert.Equal(t, snap.ID, got.ID)
	assert.Equal(t, "active", got.State)
	assert.Equal(t, []string{"python", "-m", "sandbox_runtime.entrypoint"}, got.Entrypoint, "taken from the Dockerfile")
	assert.Equal(t, []int{2, 4, 10}, []int{got.CPU, got.Memory, got.Disk})
	assert.Nil(t, got.ErrorReason)
	require.NotNil(t, got.Size)

	counts := s.Counts()
	assert.Equal(t, 1, counts["GET /daytona/api/object-storage/push-access"])
	assert.Equal(t, 1, counts["GET /daytona/s3/{bucket}"], "ListObjectsV2 to see whether the context is there")
	assert.Equal(t, 1, counts["PUT /daytona/s3/{bucket}/{key...}"])
	assert.Equal(t, 1, counts["POST /daytona/api/snapshots"])
	assert.Equal(t, 1, counts["GET /daytona/api/snapshots/{id}/build-logs"])
	assert.Zero(t, s.CloudflareCalls())
	assert.Equal(t, 6, s.Daytona().Calls())

	inv := s.Inventory()
	require.Len(t, inv.Daytona.Snapshots, 1)
	entry := inv.Daytona.Snapshots[0]
	assert.Equal(t, emudaytona.SnapshotEntry{OrganizationID: emudaytona.DefaultOrganizationID, ID: snap.ID, Name: "base-1", State: "active"},
		emudaytona.SnapshotEntry{OrganizationID: entry.OrganizationID, ID: entry.ID, Name: entry.Name, State: entry.State})
	// What the build was asked to do: the SDK's Dockerfile and its one context.
	assert.True(t, strings.HasPrefix(entry.Dockerfile, "FROM python:3.12-slim-bookworm\n"), entry.Dockerfile)
	assert.Contains(t, entry.Dockerfile, "ENTRYPOINT [\"python\",\"-m\",\"sandbox_runtime.entrypoint\"]")
	require.Len(t, entry.ContextHashes, 1)
	require.Len(t, inv.Daytona.Objects, 1)
	assert.Equal(t, emudaytona.DefaultOrganizationID+"/"+entry.ContextHashes[0]+"/context.tar", inv.Daytona.Objects[0].Key, "content-addressed by the context hash")
	assert.True(t, strings.HasPrefix(inv.Daytona.Objects[0].Key, emudaytona.DefaultOrganizationID+"/"), inv.Daytona.Objects[0].Key)
	assert.False(t, inv.Empty())

	// The same context again is found by hash and not uploaded twice; the
	// name is taken.
	s.ResetCounts()
	_, _, err = c.Snapshot.Create(ctx, &types.CreateSnapshotParams{Name: "base-1", Image: testImage(dir)})
	requireDaytonaStatus(t, err, http.StatusConflict)
	assert.Zero(t, s.Counts()["PUT /daytona/s3/{bucket}/{key...}"])
	_, logs, err = c.Snapshot.Create(ctx, &types.CreateSnapshotParams{Name: "base-2", Image: testImage(dir)})
	require.NoError(t, err)
	drain(logs)
	assert.Zero(t, s.Counts()["PUT /daytona/s3/{bucket}/{key...}"])
}

// requireDaytonaStatus asserts err is one of the SDK's errors with status.
func requireDaytonaStatus(t *testing.T, err error, status int) {
	t.Helper()
	require.Error(t, err)
	if _, ok := errors.AsType[*dterrors.DaytonaNotFoundError](err); ok {
		require.Equal(t, status, http.StatusNotFound, "%v", err)
		return
	}
	var de *dterrors.DaytonaError
	require.True(t, errors.As(err, &de), "%T: %v", err, err)
	require.Equal(t, status, de.StatusCode, "%v", err)
}

// With a build slower than the SDK's one-second poll the SDK sees pending,
// then building, and follows the log stream while the build runs. A build
// arranged to fail ends with the SDK's own "Error:" line.
func TestDaytonaBuildStreamsLogsWhileBuilding(t *testing.T) {
	s := start(t, emulator.Options{Daytona: emudaytona.Options{BuildTime: 2400 * time.Millisecond}})
	c := newDaytona(t, s, emudaytona.DefaultAPIKey)
	ctx := context.Background()
	dir := runtimeDir(t)
	s.Daytona().FailBuilds("broken", "")

	type result struct {
		lines []string
		err   error
	}
	run := func(name string) <-chan result {
		out := make(chan result, 1)
		go func() {
			snap, logs, err := c.Snapshot.Create(ctx, &types.CreateSnapshotParams{Name: name, Image: testImage(dir)})
			if err != nil {
				out <- result{err: err}
				return
			}
			if snap.State != "pending" {
				out <- result{err: errors.New("POST answered " + snap.State)}
				return
			}
			out <- result{lines: drain(logs)}
		}()
		return out
	}
	okRun, badRun := run("streamed"), run("broken")
	ok, bad := <-okRun, <-badRun
	require.NoError(t, ok.err)
	require.NoError(t, bad.err)

	assert.Equal(t, []string{
		"Creating snapshot streamed (pending)",
		"Creating snapshot streamed (building)",
		"#1 [1/7] FROM python:3.12-slim-bookworm",
		"#2 [2/7] RUN apt-get update && apt-get install -y git && rm -rf /var/lib/apt/lists/*",
		"#3 [3/7] RUN pip install httpx",
		"#4 [4/7] ENV SANDBOX_VERSION=v1",
		"#5 [5/7] COPY " + dir + " /app/sandbox_runtime",
		"#6 [6/7] WORKDIR /workspace",
		`#7 [7/7] ENTRYPOINT ["python","-m","sandbox_runtime.entrypoint"]`,
		"Creating snapshot streamed (active)",
		"Created snapshot streamed (active)",
	}, ok.lines)

	reason := `process "/bin/sh -c pip install httpx" did not complete successfully: exit code: 1`
	require.NotEmpty(t, bad.lines)
	assert.Equal(t, "ERROR: "+reason, bad.lines[len(bad.lines)-3], "%q", bad.lines)
	assert.Equal(t, "Creating snapshot broken (build_failed)", bad.lines[len(bad.lines)-2])
	assert.Equal(t, "Error: failed to create snapshot broken, reason: "+reason, bad.lines[len(bad.lines)-1])
	got, err := c.Snapshot.Get(ctx, "broken")
	require.NoError(t, err)
	assert.Equal(t, "build_failed", got.State)
	require.NotNil(t, got.ErrorReason)
	assert.Equal(t, reason, *got.ErrorReason)
}

// rawDaytona sends a request to the Daytona API with the default key.
func rawDaytona(t *testing.T, s *emulator.Server, method, path, body string) (*http.Response, string) {
	t.Helper()
	return do(t, method, s.URL()+emudaytona.APIPrefix+path, "Bearer "+emudaytona.DefaultAPIKey, body)
}

func TestDaytonaBuildFailsLikeABuild(t *testing.T) {
	s := start(t, emulator.Options{Daytona: emudaytona.Options{BuildTime: emudaytona.InstantBuilds}})
	cases := []struct {
		name, body, reason, lastLog string
	}{
		{"no-context", `{"name":"no-context","buildInfo":{"dockerfileContent":"FROM alpine:3.20\nCOPY /x /y","contextHashes":["0123abcd"]}}`,
			"failed to get build context 0123abcd: no object under " + emudaytona.DefaultOrganizationID + "/0123abcd/ in bucket daytona-volume-builds", ""},
		{"copy-missing", `{"name":"copy-missing","buildInfo":{"dockerfileContent":"FROM alpine:3.20\nCOPY /nowhere /app"}}`,
			`failed to compute cache key: "/nowhere" not found in the build context`, "#2 [2/2] COPY /nowhere /app"},
		{"bad-syntax", `{"name":"bad-syntax","buildInfo":{"dockerfileContent":"FROM alpine:3.20\n\nFROBNICATE x"}}`,
			"dockerfile parse error on line 3: unknown instruction: FROBNICATE", ""},
		{"no-from", `{"name":"no-from","buildInfo":{"dockerfileContent":"RUN true"}}`,
			"failed to solve: no build stage in current context", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := rawDaytona(t, s, "POST", "/snapshots", tc.body)
			require.Equal(t, http.StatusOK, resp.StatusCode, body)
			var snap map[string]any
			require.NoError(t, json.Unmarshal([]byte(body), &snap))
			assert.Equal(t, "build_failed", snap["state"])
			assert.Equal(t, tc.reason, snap["errorReason"])
			assert.Nil(t, snap["size"])

			resp, logs := rawDaytona(t, s, "GET", "/snapshots/"+snap["id"].(string)+"/build-logs", "")
			require.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Equal(t, "text/plain; charset=utf-8", resp.Header.Get("Content-Type"))
			lines := strings.Split(strings.TrimSuffix(logs, "\n"), "\n")
			assert.Equal(t, "ERROR: "+tc.reason, lines[len(lines)-1])
			if tc.lastLog != "" {
				assert.Equal(t, tc.lastLog, lines[len(lines)-2])
			}
		})
	}

	// The next-build failure is consumed by one build.
	s.Daytona().FailNextBuild("disk full")
	resp, body := rawDaytona(t, s, "POST", "/snapshots", `{"name":"one","buildInfo":{"dockerfileContent":"FROM alpine:3.20\nRUN make"}}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, body, `"errorReason":"disk full"`)
	resp, body = rawDaytona(t, s, "POST", "/snapshots", `{"name":"two","buildInfo":{"dockerfileContent":"FROM alpine:3.20\nRUN make"}}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, body, `"state":"active"`)
	assert.Contains(t, body, `"entrypoint":["sleep","infinity"]`, "a Dockerfile without ENTRYPOINT")
}

func TestDaytonaSnapshotRequestsAreValidated(t *testing.T) {
	s := start(t, emulator.Options{Daytona: emudaytona.Options{BuildTime: emudaytona.InstantBuilds}})
	for _, tc := range []struct{ body, msg string }{
		{`{"name":"bad name","imageName":"alpine:3.20"}`, "Invalid snapshot name format. May contain letters, digits, dots, colons, and dashes"},
		{`{"name":"img","imageName":"alpine"}`, "Image name must include a tag (e.g., ubuntu:22.04) or digest (@sha256:...)"},
		{`{"name":"img","imageName":"alpine:latest"}`, `Images with tag ":latest" are not allowed`},
		{`{"name":"img"}`, "Must specify an image name"},
	} {
		resp, body := rawDaytona(t, s, "POST", "/snapshots", tc.body)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
		var e map[string]any
		require.NoError(t, json.Unmarshal([]byte(body), &e))
		assert.Equal(t, tc.msg, e["message"])
		assert.Equal(t, 400.0, e["statusCode"])
		assert.Equal(t, "Bad Request", e["error"])
		assert.Equal(t, "/daytona/api/snapshots", e["path"])
	}

	// A pulled image: entrypoint from the request, no build logs.
	resp, body := rawDaytona(t, s, "POST", "/snapshots", `{"name":"img","imageName":"alpine:3.20","entrypoint":["sh"]}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	var snap map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &snap))
	assert.Equal(t, []any{"sh"}, snap["entrypoint"])
	assert.Equal(t, "alpine:3.20", snap["imageName"])
	resp, body = rawDaytona(t, s, "GET", "/snapshots/"+snap["id"].(string)+"/build-logs", "")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Contains(t, body, "has no build info")

	// Keys: missing, unknown, and another organization's view.
	resp, body = do(t, "GET", s.URL()+emudaytona.APIPrefix+"/snapshots/img", "", "")
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Contains(t, body, `"message":"Unauthorized"`)
	c := newDaytona(t, s, "not-a-key")
	_, err := c.Snapshot.Get(context.Background(), "img")
	requireDaytonaStatus(t, err, http.StatusUnauthorized)
	assert.NotContains(t, err.Error(), "not-a-key")

	// Unknown paths answer like NestJS and count as Daytona calls.
	s.ResetCounts()
	resp, body = rawDaytona(t, s, "GET", "/nope", "")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Contains(t, body, `"message":"Cannot GET /api/nope"`)
	assert.Equal(t, 1, s.Daytona().Calls())
}

func TestDaytonaOrganizationsAreSeparate(t *testing.T) {
	s := start(t, emulator.Options{Daytona: emudaytona.Options{BuildTime: emudaytona.InstantBuilds, APIKeys: map[string]string{"key-a": "org-a", "key-b": "org-b"}}})
	ctx := context.Background()
	a, b := newDaytona(t, s, "key-a"), newDaytona(t, s, "key-b")
	_, logs, err := a.Snapshot.Create(ctx, &types.CreateSnapshotParams{Name: "same", Image: "alpine:3.20"})
	require.NoError(t, err)
	drain(logs)
	_, err = b.Snapshot.Get(ctx, "same")
	requireDaytonaStatus(t, err, http.StatusNotFound)
	_, logs, err = b.Snapshot.Create(ctx, &types.CreateSnapshotParams{Name: "same", Image: "alpine:3.20"})
	require.NoError(t, err, "names are unique per organization")
	drain(logs)
	_, err = newDaytona(t, s, emudaytona.DefaultAPIKey).Snapshot.Get(ctx, "same")
	requireDaytonaStatus(t, err, http.StatusUnauthorized)
}

func TestDaytonaSnapshotListAndAsyncDelete(t *testing.T) {
	s := start(t, emulator.Options{Daytona: emudaytona.Options{BuildTime: emudaytona.InstantBuilds}})
	c := newDaytona(t, s, emudaytona.DefaultAPIKey)
	ctx := context.Background()
	for _, n := range []string{"s1", "s2", "s3", "s4", "s5"} {
		_, logs, err := c.Snapshot.Create(ctx, &types.CreateSnapshotParams{Name: n, Image: "alpine:3.20"})
		require.NoError(t, err)
		drain(logs)
	}
	seen := map[string]bool{}
	for page := 1; page <= 3; page++ {
		limit := 2
		res, err := c.Snapshot.List(ctx, &page, &limit)
		require.NoError(t, err)
		assert.Equal(t, 5, res.Total)
		assert.Equal(t, 3, res.TotalPages)
		assert.Equal(t, page, res.Page)
		for _, sn := range res.Items {
			seen[sn.Name] = true
		}
	}
	assert.Len(t, seen, 5)

	sn, err := c.Snapshot.Get(ctx, "s3")
	require.NoError(t, err)
	require.NoError(t, c.Snapshot.Delete(ctx, sn))
	got, err := c.Snapshot.Get(ctx, "s3")
	require.NoError(t, err, "removal is asynchronous")
	assert.Equal(t, "removing", got.State)
	_, err = c.Snapshot.Get(ctx, "s3")
	requireDaytonaStatus(t, err, http.StatusNotFound)
	err = c.Snapshot.Delete(ctx, sn)
	requireDaytonaStatus(t, err, http.StatusNotFound)
	assert.Len(t, s.Inventory().Daytona.Snapshots, 4)

	// Unread, a removal completes after the build time on its own.
	sn, err = c.Snapshot.Get(ctx, "s4")
	require.NoError(t, err)
	require.NoError(t, c.Snapshot.Delete(ctx, sn))
	require.Eventually(t, func() bool { return len(s.Inventory().Daytona.Snapshots) == 3 }, 5*time.Second, 20*time.Millisecond)
}

func TestDaytonaSandboxes(t *testing.T) {
	s := start(t, emulator.Options{Daytona: emudaytona.Options{BuildTime: emudaytona.InstantBuilds}})
	c := newDaytona(t, s, emudaytona.DefaultAPIKey)
	ctx := context.Background()
	_, err := c.Create(ctx, types.SnapshotParams{Snapshot: "missing"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Snapshot missing not found")

	_, logs, err := c.Snapshot.Create(ctx, &types.CreateSnapshotParams{Name: "base", Image: "alpine:3.20", Resources: &types.Resources{CPU: 2}})
	require.NoError(t, err)
	drain(logs)
	mine := map[string]string{"openinspect_framework": "open-inspect"}
	var ids []string
	for i := range 3 {
		labels := map[string]string{"openinspect_framework": "open-inspect", "openinspect_session_id": string(rune('a' + i))}
		sb, err := c.Create(ctx, types.SnapshotParams{Snapshot: "base", SandboxBaseParams: types.SandboxBaseParams{Labels: labels}})
		require.NoError(t, err)
		assert.Equal(t, "started", string(sb.State))
		ids = append(ids, sb.ID)
	}
	other, err := s.Daytona().CreateSandbox(emudaytona.SandboxSpec{Labels: map[string]string{"openinspect_framework": "someone-else"}})
	require.NoError(t, err)

	found := map[string]bool{}
	for page := 1; ; page++ {
		limit := 2
		res, err := c.List(ctx, mine, &page, &limit)
		require.NoError(t, err)
		assert.Equal(t, 3, res.Total)
		for _, sb := range res.Items {
			found[sb.ID] = true
		}
		if page >= res.TotalPages {
			break
		}
	}
	assert.Len(t, found, 3)
	assert.False(t, found[other])

	sb, err := c.Get(ctx, ids[0])
	require.NoError(t, err)
	require.NoError(t, sb.Delete(ctx))
	_, err = c.Get(ctx, ids[0])
	require.Error(t, err)
	res, err := c.List(ctx, mine, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, 2, res.Total)

	// The inventory shows labels; a snapshot no longer active refuses new
	// sandboxes.
	inv := s.Inventory().Daytona
	require.Len(t, inv.Sandboxes, 3)
	require.NoError(t, s.Daytona().DeactivateSnapshot("", "base"))
	_, err = c.Create(ctx, types.SnapshotParams{Snapshot: "base"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Snapshot base is inactive")
}

func TestDaytonaFaults(t *testing.T) {
	s := start(t, emulator.Options{Daytona: emudaytona.Options{BuildTime: emudaytona.InstantBuilds}})
	c := newDaytona(t, s, emudaytona.DefaultAPIKey)
	ctx := context.Background()
	s.InjectFault(emulator.Fault{Route: "GET /daytona/api/snapshots/{idOrName}", Kind: emulator.FaultServerError, Status: 503, Times: 1})
	_, err := c.Snapshot.Get(ctx, "x")
	requireDaytonaStatus(t, err, http.StatusServiceUnavailable)
	_, err = c.Snapshot.Get(ctx, "x")
	requireDaytonaStatus(t, err, http.StatusNotFound)
	assert.Equal(t, 2, s.Counts()["GET /daytona/api/snapshots/{idOrName}"], "faulted requests are counted too")

	// Faults on the object storage answer in S3's format; aws-sdk-go-v2
	// retries an InternalError, so one fault costs one more upload.
	s.InjectFault(emulator.Fault{Route: "PUT /daytona/s3/{bucket}/{key...}", Kind: emulator.FaultServerError, Times: 1})
	_, logs, err := c.Snapshot.Create(ctx, &types.CreateSnapshotParams{Name: "ctx", Image: testImage(runtimeDir(t))})
	require.NoError(t, err)
	drain(logs)
	assert.Equal(t, 2, s.Counts()["PUT /daytona/s3/{bucket}/{key...}"])

	// A route outside the known prefixes is refused.
	resp, body := do(t, "POST", s.URL()+"/__emulator/faults", "", `{"kind":"drop","route":"/elsewhere"}`)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
}

func TestDaytonaObjectStorageChecks(t *testing.T) {
	s := start(t, emulator.Options{})
	resp, body := rawDaytona(t, s, "GET", "/object-storage/push-access", "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var creds map[string]string
	require.NoError(t, json.Unmarshal([]byte(body), &creds))
	assert.Equal(t, s.URL()+"/daytona/s3", creds["storageUrl"])
	assert.Equal(t, "daytona-volume-builds", creds["bucket"])
	assert.Equal(t, emudaytona.DefaultOrganizationID, creds["organizationId"])

	sig := func(ak string) string {
		return "AWS4-HMAC-SHA256 Credential=" + ak + "/20250101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=00"
	}
	bucket := creds["storageUrl"] + "/daytona-volume-builds/"
	own := emudaytona.DefaultOrganizationID + "/h/context.tar"
	resp, body = do(t, "PUT", bucket+own, sig("AKIAUNKNOWN"), "x")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Contains(t, body, "<Code>InvalidAccessKeyId</Code>")
	resp, body = do(t, "PUT", bucket+"other-org/h/context.tar", sig(creds["accessKey"]), "x")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Contains(t, body, "<Code>AccessDenied</Code>")
	resp, body = do(t, "PUT", creds["storageUrl"]+"/elsewhere/"+own, sig(creds["accessKey"]), "x")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Contains(t, body, "<Code>NoSuchBucket</Code>")

	// A body that is not a tar is stored, and fails the build using it.
	resp, _ = do(t, "PUT", bucket+own, sig(creds["accessKey"]), "not a tar")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp, body = do(t, "GET", strings.TrimSuffix(bucket, "/")+"?list-type=2&prefix="+url.QueryEscape(emudaytona.DefaultOrganizationID+"/h/"), sig(creds["accessKey"]), "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, body, "<Key>"+own+"</Key>")
	assert.Contains(t, body, "<KeyCount>1</KeyCount>")
	resp, body = rawDaytona(t, s, "POST", "/snapshots", `{"name":"t","buildInfo":{"dockerfileContent":"FROM alpine:3.20","contextHashes":["h"]}}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Eventually(t, func() bool {
		_, body = rawDaytona(t, s, "GET", "/snapshots/t", "")
		return strings.Contains(body, `"state":"build_failed"`)
	}, 5*time.Second, 20*time.Millisecond)
	assert.Contains(t, body, "failed to extract build context h: not a tar archive")
}

func TestDaytonaAdminRoutes(t *testing.T) {
	s := start(t, emulator.Options{Daytona: emudaytona.Options{BuildTime: emudaytona.InstantBuilds}})
	resp, body := do(t, "POST", s.URL()+"/__emulator/daytona/sandboxes", "", `{"labels":{"k":"v"}}`)
	require.Equal(t, http.StatusCreated, resp.StatusCode, body)
	resp, body = rawDaytona(t, s, "GET", "/sandbox/paginated?labels="+url.QueryEscape(`{"k":"v"}`), "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, body, `"total":1`)

	resp, _ = do(t, "POST", s.URL()+"/__emulator/daytona/build-failures", "", `{"name":"doomed","reason":"nope"}`)
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	for range 2 {
		_, body = rawDaytona(t, s, "POST", "/snapshots", `{"name":"doomed","imageName":"alpine:3.20"}`)
		assert.Contains(t, body, `"errorReason":"nope"`)
		_, _ = rawDaytona(t, s, "DELETE", "/snapshots/doomed", "")
		_, _ = rawDaytona(t, s, "GET", "/snapshots/doomed", "")
	}
	resp, _ = do(t, "DELETE", s.URL()+"/__emulator/daytona/build-failures", "", "")
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	_, body = rawDaytona(t, s, "POST", "/snapshots", `{"name":"fine","imageName":"alpine:3.20"}`)
	assert.Contains(t, body, `"state":"active"`)

	resp, _ = do(t, "POST", s.URL()+"/__emulator/daytona/snapshots/fine/deactivate", "", "")
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	_, body = rawDaytona(t, s, "GET", "/snapshots/fine", "")
	assert.Contains(t, body, `"state":"inactive"`)
	resp, _ = do(t, "POST", s.URL()+"/__emulator/daytona/snapshots/absent/deactivate", "", "")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	for k := range s.Counts() {
		assert.NotContains(t, k, "__emulator", "admin calls are not counted")
	}
}

func TestDaytonaStateSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	first, err := emulator.Start(emulator.Options{DataDir: dir, Daytona: emudaytona.Options{BuildTime: emudaytona.InstantBuilds}})
	require.NoError(t, err)
	c := newDaytona(t, first, emudaytona.DefaultAPIKey)
	_, logs, err := c.Snapshot.Create(ctx, &types.CreateSnapshotParams{Name: "kept", Image: testImage(runtimeDir(t))})
	require.NoError(t, err)
	drain(logs)
	_, err = first.Daytona().CreateSandbox(emudaytona.SandboxSpec{Snapshot: "kept", Labels: map[string]string{"a": "b"}})
	require.NoError(t, err)
	before := first.Inventory()
	require.NoError(t, first.Close())
	_, err = os.Stat(filepath.Join(dir, "daytona.json"))
	require.NoError(t, err)

	second := start(t, emulator.Options{DataDir: dir})
	assert.Equal(t, before.Daytona, second.Inventory().Daytona)
	c = newDaytona(t, second, emudaytona.DefaultAPIKey)
	got, err := c.Snapshot.Get(ctx, "kept")
	require.NoError(t, err)
	assert.Equal(t, "active", got.State)
	res, err := c.List(ctx, map[string]string{"a": "b"}, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, 1, res.Total)

	// A corrupt file fails New loudly rather than being overwritten.
	require.NoError(t, second.Close())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "daytona.json"), []byte("{"), 0o600))
	_, err = emulator.New(emulator.Options{DataDir: dir})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "daytona.json")
}

// TestDaytonaObjectStorageMultipart: what the Python SDK's obstore client
// sends for a context: HeadObject (404, then 200 once uploaded) and a
// multipart upload whose parts are joined in order and checked by ETag.
func TestDaytonaObjectStorageMultipart(t *testing.T) {
	s := start(t, emulator.Options{})
	_, body := rawDaytona(t, s, "GET", "/object-storage/push-access", "")
	var creds map[string]string
	require.NoError(t, json.Unmarshal([]byte(body), &creds))
	auth := "AWS4-HMAC-SHA256 Credential=" + creds["accessKey"] + "/20250101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=00"
	object := creds["storageUrl"] + "/daytona-volume-builds/" + emudaytona.DefaultOrganizationID + "/abc/context.tar"

	resp, body := do(t, "HEAD", object, auth, "")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Empty(t, body)

	resp, body = do(t, "POST", object+"?uploads", auth, "")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	var initiated struct {
		UploadID string `xml:"UploadId"`
	}
	require.NoError(t, xml.Unmarshal([]byte(body), &initiated))
	require.NotEmpty(t, initiated.UploadID)

	var archive bytes.Buffer
	tw := tar.NewWriter(&archive)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "work/src/sandbox_runtime/entrypoint.py", Mode: 0o644, Size: 2}))
	_, err := tw.Write([]byte("x\n"))
	require.NoError(t, err)
	require.NoError(t, tw.Close())
	half := archive.Len() / 2
	parts := []string{archive.String()[:half], archive.String()[half:]}
	etags := make([]string, len(parts))
	for i, part := range parts {
		resp, body = do(t, "PUT", fmt.Sprintf("%s?partNumber=%d&uploadId=%s", object, i+1, initiated.UploadID), auth, part)
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
		etags[i] = resp.Header.Get("ETag")
		require.NotEmpty(t, etags[i])
	}
	complete := func(etag2 string) (*http.Response, string) {
		return do(t, "POST", object+"?uploadId="+initiated.UploadID, auth, fmt.Sprintf(
			"<CompleteMultipartUpload><Part><PartNumber>2</PartNumber><ETag>%s</ETag></Part><Part><PartNumber>1</PartNumber><ETag>%s</ETag></Part></CompleteMultipartUpload>",
			etag2, etags[0]))
	}
	resp, body = complete(`"0000"`)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, body, "<Code>InvalidPart</Code>")
	resp, body = complete(etags[1])
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.Contains(t, body, "<ETag>")
	resp, _ = do(t, "HEAD", object, auth, "")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, fmt.Sprint(archive.Len()), resp.Header.Get("Content-Length"), "the parts joined in order")
	objects := s.Inventory().Daytona.Objects
	require.Len(t, objects, 1)
	assert.Equal(t, int64(archive.Len()), objects[0].Size)
	resp, body = complete(etags[1])
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "a completed upload is gone")
	assert.Contains(t, body, "<Code>NoSuchUpload</Code>")
}
