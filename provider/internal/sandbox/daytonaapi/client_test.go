package daytonaapi

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/daytona"
)

// startEmulator runs the in-process emulator with Daytona builds taking
// buildTime.
func startEmulator(t *testing.T, buildTime time.Duration) *emulator.Server {
	t.Helper()
	s, err := emulator.Start(emulator.Options{Daytona: daytona.Options{BuildTime: buildTime}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// startInstant is an emulator whose builds finish at once and a client of
// it with the default key, the setup most tests share.
func startInstant(t *testing.T) (*emulator.Server, *Client) {
	t.Helper()
	s := startEmulator(t, daytona.InstantBuilds)
	return s, newTestClient(t, s, daytona.DefaultAPIKey)
}

// newTestClient points a client at s with fast polling and retries. The
// SDK reads DAYTONA_* for anything left empty; those are blanked.
func newTestClient(t *testing.T, s *emulator.Server, key string) *Client {
	t.Helper()
	for _, k := range []string{"DAYTONA_API_KEY", "DAYTONA_API_URL", "DAYTONA_JWT_TOKEN", "DAYTONA_ORGANIZATION_ID", "DAYTONA_TARGET", "DAYTONA_OTEL_ENABLED", "DAYTONA_EXPERIMENTAL_OTEL_ENABLED"} {
		t.Setenv(k, "")
	}
	c, err := New(Options{APIKey: key, APIURL: s.URL() + daytona.APIPrefix})
	require.NoError(t, err)
	c.pollEvery, c.retryBase = 20*time.Millisecond, 10*time.Millisecond
	return c
}

// createSnapshot has the emulator make a snapshot pulled from an image
// (upstream's builder creates snapshots; this client only finds, frees and
// deletes them).
func createSnapshot(t *testing.T, s *emulator.Server, name string) {
	t.Helper()
	req, err := http.NewRequest("POST", s.URL()+daytona.APIPrefix+"/snapshots",
		strings.NewReader(fmt.Sprintf(`{"name":%q,"imageName":"alpine:3.20"}`, name)))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+daytona.DefaultAPIKey)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

type lines struct{ got []string }

func (l *lines) add(line string) { l.got = append(l.got, line) }

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

// ClaimName on a free name makes one look-up and says so.
func TestClaimNameFree(t *testing.T) {
	s, c := startInstant(t)
	var progress lines
	_, exists, err := c.ClaimName(context.Background(), "openinspect-base-1", progress.add)
	require.NoError(t, err)
	assert.False(t, exists)
	assert.Empty(t, progress.got)
	assert.Equal(t, map[string]int{"GET /daytona/api/snapshots/{idOrName}": 1}, s.Counts())
}

// An active snapshot is returned as is; an inactive one is reactivated
// rather than rebuilt.
func TestClaimNameKeepsWhatIsBuilt(t *testing.T) {
	s, c := startInstant(t)
	ctx := context.Background()
	createSnapshot(t, s, "again")
	s.ResetCounts()
	var progress lines
	first, exists, err := c.ClaimName(ctx, "again", progress.add)
	require.NoError(t, err)
	assert.True(t, exists)
	assert.Equal(t, StateActive, first.State)
	assert.Equal(t, []string{"Snapshot again is already active"}, progress.got)
	assert.Equal(t, map[string]int{"GET /daytona/api/snapshots/{idOrName}": 1}, s.Counts())

	require.NoError(t, s.Daytona().DeactivateSnapshot("", "again"))
	again, exists, err := c.ClaimName(ctx, "again", nil)
	require.NoError(t, err)
	assert.True(t, exists)
	assert.Equal(t, first.ID, again.ID)
	assert.Equal(t, StateActive, again.State)
	assert.Equal(t, 1, s.Counts()["POST /daytona/api/snapshots/{id}/activate"])
}

// A failed build under the name is deleted, so the builder can build it
// again; one in progress is waited for.
func TestClaimNameFreesAFailedBuild(t *testing.T) {
	s := startEmulator(t, 200*time.Millisecond)
	c := newTestClient(t, s, daytona.DefaultAPIKey)
	ctx := context.Background()
	s.Daytona().FailNextBuild("no space left on device")
	createSnapshot(t, s, "fails")
	var progress lines
	_, exists, err := c.ClaimName(ctx, "fails", progress.add)
	require.NoError(t, err)
	assert.False(t, exists)
	assert.Equal(t, "Waiting for the build of snapshot fails already in progress (pending)", progress.got[0])
	assert.Contains(t, progress.got, "Snapshot fails is build_failed")
	assert.Equal(t, "Deleting snapshot fails, whose last build failed: no space left on device", progress.got[len(progress.got)-1])
	assert.Empty(t, s.Inventory().Daytona.Snapshots)

	_, _, err = c.ClaimName(ctx, "bad name", nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "invalid snapshot name")
}

func TestDeleteSnapshotWaitsUntilGone(t *testing.T) {
	s, c := startInstant(t)
	ctx := context.Background()
	createSnapshot(t, s, "doomed")
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
	s, c := startInstant(t)
	for i := range 205 {
		createSnapshot(t, s, fmt.Sprintf("s-%03d", i))
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
	s, c := startInstant(t)
	ctx := context.Background()
	mine := map[string]string{"openinspect_framework": "open-inspect", "openinspect_installation": "prod"}
	want := map[string]bool{}
	for i := range 130 {
		labels := map[string]string{"openinspect_session_id": fmt.Sprint(i)}
		maps.Copy(labels, mine)
		id, err := s.Daytona().CreateSandbox(daytona.SandboxSpec{Labels: labels})
		require.NoError(t, err)
		want[id] = true
	}
	_, err := s.Daytona().CreateSandbox(daytona.SandboxSpec{Labels: map[string]string{"openinspect_framework": "open-inspect", "openinspect_installation": "staging"}})
	require.NoError(t, err)
	_, err = s.Daytona().CreateSandbox(daytona.SandboxSpec{OrganizationID: "another-org", Labels: mine})
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
	s := startEmulator(t, daytona.InstantBuilds)
	const key = "dtn_wrong-key-0123456789abcdef"
	c := newTestClient(t, s, key)
	ctx := context.Background()
	_, _, err := c.Snapshot(ctx, "x")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `daytona: reading snapshot "x"`)
	assert.Contains(t, err.Error(), "401")
	_, _, err = c.ClaimName(ctx, "x", nil)
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
	s, c := startInstant(t)
	ctx := context.Background()
	createSnapshot(t, s, "base")

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
}
