package daytonaapi

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
)

// startEmulator runs the in-process emulator with Daytona builds taking
// buildTime.
func startEmulator(t *testing.T, buildTime time.Duration) *emulator.Server {
	t.Helper()
	s, err := emulator.Start(emulator.Options{DaytonaBuildTime: buildTime})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// newTestClient points a client at s with fast polling and retries. The
// SDK reads DAYTONA_* for anything left empty; those are blanked.
func newTestClient(t *testing.T, s *emulator.Server, key string) *Client {
	t.Helper()
	for _, k := range []string{"DAYTONA_API_KEY", "DAYTONA_API_URL", "DAYTONA_JWT_TOKEN", "DAYTONA_ORGANIZATION_ID", "DAYTONA_TARGET", "DAYTONA_OTEL_ENABLED", "DAYTONA_EXPERIMENTAL_OTEL_ENABLED"} {
		t.Setenv(k, "")
	}
	c, err := New(Options{APIKey: key, APIURL: s.DaytonaAPIURL()})
	require.NoError(t, err)
	c.pollEvery, c.retryBase = 20*time.Millisecond, 10*time.Millisecond
	return c
}

// writeRuntime makes a tiny runtime package under dir.
func writeRuntime(t *testing.T, dir string) string {
	t.Helper()
	files := map[string]string{
		"sandbox_runtime/__init__.py":   "",
		"sandbox_runtime/entrypoint.py": "def main():\n    print('ready')\n",
		"sandbox_runtime/util/io.py":    "X = 1\n",
	}
	for p, content := range files {
		full := filepath.Join(dir, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
	}
	return filepath.Join(dir, "sandbox_runtime")
}

func testManifest(t *testing.T) Manifest {
	return Manifest{
		BaseImage:   "python:3.12-slim-bookworm",
		AptPackages: []string{"git", "curl"},
		RunCommands: []string{"npm install -g opencode-ai@1.18.18"},
		PipPackages: []string{"httpx>=0.27", "pydantic"},
		Env:         map[string]string{"SANDBOX_VERSION": "daytona-v6", "GREETING": "hello world"},
		RuntimeDir:  writeRuntime(t, t.TempDir()),
		RuntimePath: "/app/sandbox_runtime",
		Workdir:     "/workspace",
		Entrypoint:  []string{"python", "-m", "sandbox_runtime.entrypoint"},
		CPU:         2, Memory: 4, Disk: 10,
	}
}

type lines struct{ got []string }

func (l *lines) add(line string) { l.got = append(l.got, line) }

func (l *lines) has(prefix string) bool {
	for _, g := range l.got {
		if strings.HasPrefix(g, prefix) {
			return true
		}
	}
	return false
}

func TestNewValidatesWithoutNetwork(t *testing.T) {
	_, err := New(Options{APIURL: "http://127.0.0.1:1/api"})
	assert.EqualError(t, err, "daytona: an API key is required")
	_, err = New(Options{APIKey: "k", APIURL: "ftp://x/api"})
	assert.ErrorContains(t, err, "is not an http(s) URL")
	_, err = New(Options{APIKey: "k", APIURL: "/relative"})
	assert.ErrorContains(t, err, "is not an http(s) URL")
	// An unreachable URL is fine until a call is made.
	c, err := New(Options{APIKey: "k", APIURL: "http://127.0.0.1:1/api/"})
	require.NoError(t, err)
	assert.NotNil(t, c)
	c, err = New(Options{APIKey: "k"})
	require.NoError(t, err)
	assert.Equal(t, DefaultAPIURL, c.api.GetConfig().Servers[0].URL)
}

func TestBuildSnapshot(t *testing.T) {
	s := startEmulator(t, emulator.InstantDaytonaBuilds)
	c := newTestClient(t, s, emulator.DefaultDaytonaAPIKey)
	ctx := context.Background()
	m := testManifest(t)
	var progress lines
	snap, err := c.BuildSnapshot(ctx, "openinspect-base-1", m, progress.add)
	require.NoError(t, err)
	assert.Equal(t, StateActive, snap.State)
	assert.Equal(t, "openinspect-base-1", snap.Name)
	assert.Equal(t, []string{"python", "-m", "sandbox_runtime.entrypoint"}, snap.Entrypoint)
	assert.Equal(t, []int{2, 4, 10}, []int{snap.CPU, snap.Memory, snap.Disk})

	// The build's own lines, one per instruction, in the Dockerfile order
	// the manifest documents, quoted where the shell or Docker needs it.
	want := []string{
		"Creating snapshot openinspect-base-1 (active)",
		"#1 [1/9] FROM python:3.12-slim-bookworm",
		`#2 [2/9] ENV GREETING="hello world"`,
		"#3 [3/9] ENV SANDBOX_VERSION=daytona-v6",
		"#4 [4/9] RUN apt-get update && apt-get install -y git curl && rm -rf /var/lib/apt/lists/*",
		"#5 [5/9] RUN npm install -g opencode-ai@1.18.18",
		"#6 [6/9] RUN pip install 'httpx>=0.27' pydantic",
		"#7 [7/9] COPY " + m.RuntimeDir + " /app/sandbox_runtime",
		"#8 [8/9] WORKDIR /workspace",
		`#9 [9/9] ENTRYPOINT ["python","-m","sandbox_runtime.entrypoint"]`,
		"Created snapshot openinspect-base-1 (active)",
	}
	assert.Equal(t, want, progress.got)

	// The upload went to the emulator's object storage; nothing touched
	// Cloudflare.
	inv := s.Inventory().Daytona
	require.Len(t, inv.Snapshots, 1)
	assert.Len(t, inv.Objects, 1)
	assert.Zero(t, s.CloudflareCalls())

	got, found, err := c.Snapshot(ctx, "openinspect-base-1")
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, snap.ID, got.ID)
	_, found, err = c.Snapshot(ctx, "absent")
	require.NoError(t, err)
	assert.False(t, found)
}

// With the emulator's default build time the SDK polls: pending, then
// active a second later.
func TestBuildSnapshotWaitsForTheBuild(t *testing.T) {
	s := startEmulator(t, 0)
	c := newTestClient(t, s, emulator.DefaultDaytonaAPIKey)
	var progress lines
	snap, err := c.BuildSnapshot(context.Background(), "timed", testManifest(t), progress.add)
	require.NoError(t, err)
	assert.Equal(t, StateActive, snap.State)
	assert.Equal(t, "Creating snapshot timed (pending)", progress.got[0])
	assert.True(t, progress.has("Created snapshot timed (active)"), "%q", progress.got)
}

// An idempotent re-run (after a crash, say) finds the active snapshot and
// neither uploads nor creates anything.
func TestBuildSnapshotIsIdempotent(t *testing.T) {
	s := startEmulator(t, emulator.InstantDaytonaBuilds)
	c := newTestClient(t, s, emulator.DefaultDaytonaAPIKey)
	ctx := context.Background()
	m := testManifest(t)
	first, err := c.BuildSnapshot(ctx, "again", m, nil)
	require.NoError(t, err)
	s.ResetCounts()
	var progress lines
	second, err := c.BuildSnapshot(ctx, "again", m, progress.add)
	require.NoError(t, err)
	assert.Equal(t, first.ID, second.ID)
	assert.Equal(t, []string{"Snapshot again is already active"}, progress.got)
	assert.Equal(t, map[string]int{"GET /daytona/api/snapshots/{idOrName}": 1}, s.Counts())

	// An inactive snapshot is reactivated rather than rebuilt.
	require.NoError(t, s.DeactivateDaytonaSnapshot("", "again"))
	third, err := c.BuildSnapshot(ctx, "again", m, nil)
	require.NoError(t, err)
	assert.Equal(t, first.ID, third.ID)
	assert.Equal(t, StateActive, third.State)
	assert.Equal(t, 1, s.Counts()["POST /daytona/api/snapshots/{id}/activate"])
	assert.Zero(t, s.Counts()["POST /daytona/api/snapshots"])
}

func TestBuildSnapshotFailureSurfacesTheBuildError(t *testing.T) {
	s := startEmulator(t, emulator.InstantDaytonaBuilds)
	c := newTestClient(t, s, emulator.DefaultDaytonaAPIKey)
	ctx := context.Background()
	m := testManifest(t)
	s.FailNextDaytonaBuild("")
	var progress lines
	_, err := c.BuildSnapshot(ctx, "fails", m, progress.add)
	require.Error(t, err)
	reason := `process "/bin/sh -c pip install 'httpx>=0.27' pydantic" did not complete successfully: exit code: 1`
	var be *BuildError
	require.True(t, errors.As(err, &be), "%T: %v", err, err)
	assert.Equal(t, BuildError{Name: "fails", State: StateBuildFailed, Reason: reason}, *be)
	assert.EqualError(t, err, `daytona: building snapshot "fails": `+reason+" (build_failed)")
	assert.Equal(t, "ERROR: "+reason, progress.got[len(progress.got)-1], "the build's log ends with its error")

	// The next run deletes the failed snapshot and builds it again.
	progress = lines{}
	snap, err := c.BuildSnapshot(ctx, "fails", m, progress.add)
	require.NoError(t, err)
	assert.Equal(t, StateActive, snap.State)
	assert.Equal(t, "Deleting snapshot fails, whose last build failed: "+reason, progress.got[0])
	assert.Len(t, s.Inventory().Daytona.Snapshots, 1)
}

// With builds slower than the SDK's poll, a failure also comes through the
// SDK's "Error:" line; the error is the build's reason either way.
func TestBuildSnapshotFailureWhilePolling(t *testing.T) {
	s := startEmulator(t, 1200*time.Millisecond)
	c := newTestClient(t, s, emulator.DefaultDaytonaAPIKey)
	s.FailDaytonaBuilds("slow-fail", "no space left on device")
	var progress lines
	_, err := c.BuildSnapshot(context.Background(), "slow-fail", testManifest(t), progress.add)
	var be *BuildError
	require.True(t, errors.As(err, &be), "%v", err)
	assert.Equal(t, "no space left on device", be.Reason)
	assert.True(t, progress.has("Error: failed to create snapshot slow-fail, reason: no space left on device"), "%q", progress.got)
}

func TestBuildSnapshotHonoursTheDeadline(t *testing.T) {
	s := startEmulator(t, 2*time.Second)
	c := newTestClient(t, s, emulator.DefaultDaytonaAPIKey)
	m := testManifest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.BuildSnapshot(ctx, "slow", m, nil)
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), `daytona: building snapshot "slow"`)
	assert.Less(t, time.Since(start), 1500*time.Millisecond, "returned at the deadline, not at the end of the build")

	// The build went on; the next run waits for it instead of starting over.
	var progress lines
	snap, err := c.BuildSnapshot(context.Background(), "slow", m, progress.add)
	require.NoError(t, err)
	assert.Equal(t, StateActive, snap.State)
	assert.True(t, progress.has("Waiting for the build of snapshot slow already in progress"), "%q", progress.got)
	assert.Equal(t, 1, s.Counts()["POST /daytona/api/snapshots"])
}

func TestBuildSnapshotRefusesBadInput(t *testing.T) {
	s := startEmulator(t, emulator.InstantDaytonaBuilds)
	c := newTestClient(t, s, emulator.DefaultDaytonaAPIKey)
	ctx := context.Background()
	_, err := c.BuildSnapshot(ctx, "bad name", testManifest(t), nil)
	assert.ErrorContains(t, err, `daytona: building snapshot "bad name": invalid snapshot name`)
	m := testManifest(t)
	m.RunCommands = []string{"echo a\necho b"}
	_, err = c.BuildSnapshot(ctx, "x", m, nil)
	assert.ErrorContains(t, err, "run command")
	m = testManifest(t)
	m.RuntimePath = ""
	_, err = c.BuildSnapshot(ctx, "x", m, nil)
	assert.ErrorContains(t, err, "runtimeDir and runtimePath go together")
	m = testManifest(t)
	spaced := filepath.Join(t.TempDir(), "with space")
	m.RuntimeDir = writeRuntime(t, spaced)
	_, err = c.BuildSnapshot(ctx, "x", m, nil)
	assert.ErrorContains(t, err, "contains whitespace")
	assert.Zero(t, s.DaytonaCalls(), "refused before any call")
}

func TestDeleteSnapshotWaitsUntilGone(t *testing.T) {
	s := startEmulator(t, emulator.InstantDaytonaBuilds)
	c := newTestClient(t, s, emulator.DefaultDaytonaAPIKey)
	ctx := context.Background()
	_, err := c.BuildSnapshot(ctx, "doomed", testManifest(t), nil)
	require.NoError(t, err)
	s.ResetCounts()
	require.NoError(t, c.DeleteSnapshot(ctx, "doomed"))
	assert.Equal(t, 1, s.Counts()["DELETE /daytona/api/snapshots/{id}"])
	assert.Equal(t, 3, s.Counts()["GET /daytona/api/snapshots/{idOrName}"], "look up, see it removing, see it gone")
	assert.Empty(t, s.Inventory().Daytona.Snapshots)
	_, found, err := c.Snapshot(ctx, "doomed")
	require.NoError(t, err)
	assert.False(t, found)
	require.NoError(t, c.DeleteSnapshot(ctx, "doomed"), "missing is not an error")
}

func TestSnapshotsListsAllPages(t *testing.T) {
	s := startEmulator(t, emulator.InstantDaytonaBuilds)
	c := newTestClient(t, s, emulator.DefaultDaytonaAPIKey)
	for i := range 205 {
		req, err := http.NewRequest("POST", s.DaytonaAPIURL()+"/snapshots",
			strings.NewReader(fmt.Sprintf(`{"name":"s-%03d","imageName":"alpine:3.20"}`, i)))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+emulator.DefaultDaytonaAPIKey)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	s.ResetCounts()
	all, err := c.Snapshots(context.Background())
	require.NoError(t, err)
	assert.Len(t, all, 205)
	names := map[string]bool{}
	for _, sn := range all {
		names[sn.Name] = true
	}
	assert.Len(t, names, 205)
	assert.Equal(t, 3, s.Counts()["GET /daytona/api/snapshots"])
}

func TestSandboxesAcrossPagesAndDelete(t *testing.T) {
	s := startEmulator(t, emulator.InstantDaytonaBuilds)
	c := newTestClient(t, s, emulator.DefaultDaytonaAPIKey)
	ctx := context.Background()
	mine := map[string]string{"openinspect_framework": "open-inspect", "openinspect_installation": "prod"}
	want := map[string]bool{}
	for i := range 130 {
		labels := map[string]string{"openinspect_session_id": fmt.Sprint(i)}
		maps.Copy(labels, mine)
		id, err := s.CreateDaytonaSandbox(emulator.DaytonaSandboxSpec{Labels: labels})
		require.NoError(t, err)
		want[id] = true
	}
	_, err := s.CreateDaytonaSandbox(emulator.DaytonaSandboxSpec{Labels: map[string]string{"openinspect_framework": "open-inspect", "openinspect_installation": "staging"}})
	require.NoError(t, err)
	_, err = s.CreateDaytonaSandbox(emulator.DaytonaSandboxSpec{OrganizationID: "another-org", Labels: mine})
	require.NoError(t, err)

	got, err := c.Sandboxes(ctx, mine)
	require.NoError(t, err)
	require.Len(t, got, 130)
	for _, sb := range got {
		assert.True(t, want[sb.ID], sb.ID)
		assert.Equal(t, "started", sb.State)
		assert.Equal(t, "prod", sb.Labels["openinspect_installation"])
		assert.NotEmpty(t, sb.Labels["openinspect_session_id"])
	}
	assert.Equal(t, 2, s.Counts()["GET /daytona/api/sandbox/paginated"])

	require.NoError(t, c.DeleteSandbox(ctx, got[0].ID))
	require.NoError(t, c.DeleteSandbox(ctx, got[0].ID), "missing is not an error")
	got, err = c.Sandboxes(ctx, mine)
	require.NoError(t, err)
	assert.Len(t, got, 129)

	_, err = c.Sandboxes(ctx, nil)
	assert.EqualError(t, err, "daytona: listing sandboxes: at least one label is required")
}

func TestWrongAPIKeyIsReportedWithoutTheKey(t *testing.T) {
	s := startEmulator(t, emulator.InstantDaytonaBuilds)
	const key = "dtn_wrong-key-0123456789abcdef"
	c := newTestClient(t, s, key)
	ctx := context.Background()
	_, _, err := c.Snapshot(ctx, "x")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `daytona: reading snapshot "x"`)
	assert.Contains(t, err.Error(), "401")
	_, err = c.BuildSnapshot(ctx, "x", testManifest(t), nil)
	require.Error(t, err)
	_, err2 := c.Sandboxes(ctx, map[string]string{"a": "b"})
	require.Error(t, err2)
	assert.Contains(t, err2.Error(), "Unauthorized")
	for _, e := range []error{err, err2} {
		assert.NotContains(t, e.Error(), key)
	}
	assert.Equal(t, 2, s.Counts()["GET /daytona/api/snapshots/{idOrName}"], "a 401 is not retried: one call each")
}

func TestServerErrorsAreRetriedThenReported(t *testing.T) {
	s := startEmulator(t, emulator.InstantDaytonaBuilds)
	c := newTestClient(t, s, emulator.DefaultDaytonaAPIKey)
	ctx := context.Background()
	_, err := c.BuildSnapshot(ctx, "base", testManifest(t), nil)
	require.NoError(t, err)

	// One 502: retried, the caller never sees it.
	s.ResetCounts()
	s.InjectFault(emulator.Fault{Route: "GET /daytona/api/snapshots/{idOrName}", Kind: emulator.FaultServerError, Status: 502, Times: 1})
	_, found, err := c.Snapshot(ctx, "base")
	require.NoError(t, err)
	assert.True(t, found)
	assert.Equal(t, 2, s.Counts()["GET /daytona/api/snapshots/{idOrName}"])

	// A lasting 500: reported after the retries, naming the operation.
	s.ResetCounts()
	s.InjectFault(emulator.Fault{Route: "GET /daytona/api/sandbox/paginated", Kind: emulator.FaultServerError})
	_, err = c.Sandboxes(ctx, map[string]string{"a": "b"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "daytona: listing sandboxes labelled a (page 1)")
	assert.Contains(t, err.Error(), "status 500")
	assert.Equal(t, 4, s.Counts()["GET /daytona/api/sandbox/paginated"])
	s.ClearFaults()

	// A 500 on create is not retried (the POST may have landed); the error
	// says so and a re-run picks the snapshot up.
	s.InjectFault(emulator.Fault{Route: "POST /daytona/api/snapshots", Kind: emulator.FaultServerError, Times: 1})
	_, err = c.BuildSnapshot(ctx, "other", testManifest(t), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `daytona: building snapshot "other"`)
	assert.Contains(t, err.Error(), "500")
	snap, err := c.BuildSnapshot(ctx, "other", testManifest(t), nil)
	require.NoError(t, err)
	assert.Equal(t, StateActive, snap.State)
}

// Two runs racing: another client creates the snapshot between this
// client's look-up and its create. The 409 sends it back to the look-up,
// which finds the other build and returns it.
func TestBuildSnapshotRacingAnotherClient(t *testing.T) {
	emu, err := emulator.New(emulator.Options{DaytonaBuildTime: emulator.InstantDaytonaBuilds})
	require.NoError(t, err)
	t.Cleanup(func() { _ = emu.Close() })
	raced := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/daytona/api/snapshots" && !raced {
			raced = true
			other := httptest.NewRequest(http.MethodPost, "/daytona/api/snapshots", strings.NewReader(`{"name":"race","imageName":"alpine:3.20"}`))
			other.Header.Set("Authorization", "Bearer "+emulator.DefaultDaytonaAPIKey)
			rec := httptest.NewRecorder()
			emu.Handler().ServeHTTP(rec, other)
			assert.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		}
		emu.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	for _, k := range []string{"DAYTONA_JWT_TOKEN", "DAYTONA_ORGANIZATION_ID", "DAYTONA_TARGET", "DAYTONA_OTEL_ENABLED", "DAYTONA_EXPERIMENTAL_OTEL_ENABLED"} {
		t.Setenv(k, "")
	}
	c, err := New(Options{APIKey: emulator.DefaultDaytonaAPIKey, APIURL: srv.URL + "/daytona/api"})
	require.NoError(t, err)
	c.pollEvery = 20 * time.Millisecond
	var progress lines
	snap, err := c.BuildSnapshot(context.Background(), "race", testManifest(t), progress.add)
	require.NoError(t, err)
	assert.Equal(t, "alpine:3.20", snap.ImageName, "the other client's snapshot")
	assert.Equal(t, []string{"Snapshot race was created by someone else meanwhile", "Snapshot race is already active"}, progress.got)
}
