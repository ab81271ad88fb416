package sandbox_test

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapitest"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider"
	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
	"github.com/openinspect/pulumi-openinspect/provider/sandbox"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	emudaytona "github.com/openinspect/pulumi-openinspect/tests/emulator/daytona"
	"github.com/openinspect/pulumi-openinspect/tests/providertest"
)

// clock is a settable time source for grace periods.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func snapshotNames(h *providertest.Harness) []string {
	var out []string
	for _, s := range h.Emu.Inventory().Daytona.Snapshots {
		out = append(out, s.Name)
	}
	slices.Sort(out)
	return out
}

// sessionsDB is an installation's D1 database with its recorded sessions.
func sessionsDB(t *testing.T, h *providertest.Harness, sessions ...string) string {
	t.Helper()
	client, dbID := cfapitest.NewDatabase(t, h)
	_, err := client.Query(t.Context(), dbID, "CREATE TABLE sessions (id TEXT PRIMARY KEY)")
	require.NoError(t, err)
	for _, s := range sessions {
		_, err := client.Query(t.Context(), dbID, "INSERT INTO sessions (id) VALUES (?)", s)
		require.NoError(t, err)
	}
	return dbID
}

func sessionSandbox(t *testing.T, h *providertest.Harness, session string) string {
	t.Helper()
	id, err := h.Emu.Daytona().CreateSandbox(emudaytona.SandboxSpec{Labels: map[string]string{
		"openinspect_framework": "open-inspect", "openinspect_session_id": session}})
	require.NoError(t, err)
	return id
}

// daytonaHarness is a provider on the emulator with a Python and the tools
// cache for the builder's environment, and no Daytona settings of its own:
// the resource's inputs carry them, as the component passes them.
func daytonaHarness(t *testing.T, buildTime time.Duration, opts ...provider.Option) *providertest.Harness {
	t.Helper()
	h := providertest.NewHarnessWith(t, emulator.Options{Daytona: emudaytona.Options{BuildTime: buildTime}}, opts...)
	h.EnableModalDeploys(t)
	h.Configure(t, map[string]property.Value{"daytonaApiKey": property.New(property.Null), "daytonaApiUrl": property.New(property.Null)})
	return h
}

// daytonaInputs are a DaytonaSnapshot's inputs on the emulator's Daytona.
func daytonaInputs(t *testing.T, h *providertest.Harness, checkout, prefix string, extra map[string]any) property.Map {
	t.Helper()
	in := map[string]any{"source": checkout, "namePrefix": prefix, "apiUrl": h.Emu.URL() + emudaytona.APIPrefix,
		"apiKey": property.New(emudaytona.DefaultAPIKey).WithSecret(true), "target": "eu"}
	maps.Copy(in, extra)
	return providertest.Props(t, in)
}

func daytonaSnapshot(t *testing.T, h *providertest.Harness, name string) emudaytona.SnapshotEntry {
	t.Helper()
	for _, s := range h.Emu.Inventory().Daytona.Snapshots {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no Daytona snapshot %s in %v", name, snapshotNames(h))
	return emudaytona.SnapshotEntry{}
}

// TestDaytonaSnapshotLifecycle builds the digest-named snapshot with the
// fixture's builder (python -m src.bootstrap, the pinned SDK) from the
// resource's own credentials, keeps the old one through its grace period
// when the runtime changes, collects it afterwards, and deletes two
// installations in one organization one at a time, each removing only its
// own snapshots and sandboxes.
func TestDaytonaSnapshotLifecycle(t *testing.T) {
	clk := &clock{now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	images := &sandbox.DaytonaSnapshot{}
	images.Now = clk.Now // the shared image lifecycle's clock
	h := daytonaHarness(t, 50*time.Millisecond, provider.WithDaytonaSnapshot(images))
	checkout := fixturePackages(t, "daytona-infra", "sandbox-runtime")
	dbID := sessionsDB(t, h, "s-mine")
	u := providertest.URN(sandbox.DaytonaSnapshotToken, "base")
	inputs := daytonaInputs(t, h, checkout, "oi-prod-base", map[string]any{"d1DatabaseId": dbID})

	check, err := h.Server.Check(p.CheckRequest{Urn: u, Inputs: inputs})
	require.NoError(t, err)
	require.Empty(t, check.Failures)
	// A preview names the snapshot without a call.
	preview, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs, DryRun: true})
	require.NoError(t, err)
	name := preview.Properties.Get("name").AsString()
	assert.Regexp(t, `^oi-prod-base-[0-9a-f]{12}$`, name)
	assert.Zero(t, h.Emu.Daytona().Calls())

	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs})
	require.NoError(t, err)
	state := created.Properties
	assert.Equal(t, name, state.Get("name").AsString(), "the preview's name is the built one")
	assert.Equal(t, "active", state.Get("state").AsString())
	assert.Equal(t, h.Emu.URL()+emudaytona.APIPrefix, state.Get("snapshotApiUrl").AsString())
	assert.Equal(t, []string{name}, snapshotNames(h))
	built := daytonaSnapshot(t, h, name)
	assert.Equal(t, "eu", built.RegionID, "the target reaches the builder")
	assert.Contains(t, built.Dockerfile, "FROM python:3.12-slim-bookworm\n", "the fixture builder's image")
	assert.Contains(t, built.Dockerfile, `ENTRYPOINT ["python", "-m", "sandbox_runtime.entrypoint"]`)
	require.Len(t, built.ContextHashes, 1, "the runtime directory, uploaded once")
	assert.Len(t, h.Emu.Inventory().Daytona.Objects, 1)
	assert.True(t, state.Get("apiKey").Secret(), "the key is a secret in state")
	for _, key := range []string{"name", "digest", "state", "snapshotId", "snapshotApiUrl"} {
		assert.False(t, state.Get(key).Secret(), "%s says which snapshot runs: not hidden by the secret key beside it", key)
	}

	imageCase{h: h, id: created.ID, urn: u, state: state, inputs: inputs}.assertIdleDiff(t, h.Emu.Daytona().Calls)

	// A second installation in the same organization.
	other := daytonaInputs(t, h, fixturePackages(t, "daytona-infra", "sandbox-runtime"), "oi-staging-base", nil)
	otherU := providertest.URN(sandbox.DaytonaSnapshotToken, "other")
	otherCreated, err := h.Server.Create(p.CreateRequest{Urn: otherU, Properties: other})
	require.NoError(t, err)
	theirs := otherCreated.Properties.Get("name").AsString()

	// A changed runtime builds a second snapshot; the first stays.
	imageCase{h: h, id: created.ID, urn: u, state: state, inputs: inputs}.changeRuntime(t, checkout)
	updated, err := h.Server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: state, Inputs: inputs})
	require.NoError(t, err)
	state = updated.Properties
	second := state.Get("name").AsString()
	assert.NotEqual(t, name, second)
	assert.ElementsMatch(t, []string{name, second, theirs}, snapshotNames(h), "the old snapshot survives the rebuild")
	superseded := state.Get("superseded").AsArray().AsSlice()
	require.Len(t, superseded, 1)
	assert.Equal(t, name, superseded[0].AsMap().Get("name").AsString())

	// Within the grace period nothing changes; after it, the next up collects.
	clk.advance(23 * time.Hour)
	diff, err := h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: state, Inputs: inputs})
	require.NoError(t, err)
	assert.False(t, diff.HasChanges)
	clk.advance(2 * time.Hour)
	diff, err = h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: state, Inputs: inputs})
	require.NoError(t, err)
	assert.Contains(t, diff.DetailedDiff, "superseded")
	updated, err = h.Server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: state, Inputs: inputs})
	require.NoError(t, err)
	state = updated.Properties
	assert.ElementsMatch(t, []string{second, theirs}, snapshotNames(h))
	assert.Zero(t, state.Get("superseded").AsArray().Len())

	// Teardown, one installation at a time: only the sandbox of a session
	// this installation recorded, and only its snapshots.
	mine := sessionSandbox(t, h, "s-mine")
	stranger := sessionSandbox(t, h, "s-theirs")
	require.NoError(t, h.Server.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: state}))
	var left []string
	for _, sb := range h.Emu.Inventory().Daytona.Sandboxes {
		left = append(left, sb.ID)
	}
	assert.NotContains(t, left, mine)
	assert.Contains(t, left, stranger, "another installation's sandbox survives")
	assert.Equal(t, []string{theirs}, snapshotNames(h), "the other installation's snapshot survives")
	require.NoError(t, h.Server.Delete(p.DeleteRequest{ID: otherCreated.ID, Urn: otherU, Properties: otherCreated.Properties}))
	assert.Empty(t, snapshotNames(h))
	// Daytona's API has no call that deletes build contexts: they stay in
	// its object storage. Three: the first runtime, the changed one, and the
	// other installation's (its checkout's path is part of the context).
	assert.Len(t, h.Emu.Inventory().Daytona.Objects, 3)
}

// TestDaytonaSnapshotFailedBuildIsRetried fails the build with the
// builder's own message, keeps the failed snapshot in state, and the next
// up deletes it through the API and runs the builder again, uploading no
// new context for the same content.
func TestDaytonaSnapshotFailedBuildIsRetried(t *testing.T) {
	h := daytonaHarness(t, emudaytona.InstantBuilds)
	u := providertest.URN(sandbox.DaytonaSnapshotToken, "base")
	inputs := daytonaInputs(t, h, fixturePackages(t, "daytona-infra", "sandbox-runtime"), "oi-fail-base", nil)
	h.Emu.Daytona().FailNextBuild("npm ERR! 404 opencode-ai not found")
	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "daytona: python -m src.bootstrap failed")
	assert.Contains(t, err.Error(), "npm ERR! 404 opencode-ai not found", "the builder's own message")
	assert.NotContains(t, err.Error(), emudaytona.DefaultAPIKey)
	require.NotEmpty(t, created.ID, "the failed build is recorded")
	state := created.Properties
	assert.Equal(t, "build_failed", state.Get("state").AsString())
	name := state.Get("name").AsString()
	assert.Equal(t, "build_failed", daytonaSnapshot(t, h, name).State, "Daytona keeps the failed snapshot under the name")

	diff, err := h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: state, Inputs: inputs})
	require.NoError(t, err)
	assert.True(t, diff.HasChanges)
	h.Emu.ResetCounts()
	updated, err := h.Server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: state, Inputs: inputs})
	require.NoError(t, err)
	assert.Equal(t, "active", updated.Properties.Get("state").AsString())
	assert.Equal(t, []string{name}, snapshotNames(h))
	counts := h.Emu.Counts()
	assert.Equal(t, 1, counts["DELETE /daytona/api/snapshots/{id}"], "the failed snapshot is deleted first")
	assert.Zero(t, counts["PUT /daytona/s3/{bucket}/{key...}"], "the same context is not uploaded again: %v", counts)
	assert.Len(t, h.Emu.Inventory().Daytona.Objects, 1)
}

// TestDaytonaSnapshotRefusesAnotherAPI guards against a provider pointed at
// another Daytona.
func TestDaytonaSnapshotRefusesAnotherAPI(t *testing.T) {
	h := providertest.NewHarnessWith(t, emulator.Options{Daytona: emudaytona.Options{BuildTime: emudaytona.InstantBuilds}})
	h.EnableModalDeploys(t)
	u := providertest.URN(sandbox.DaytonaSnapshotToken, "base")
	// Credentials from the provider's configuration alone still work.
	inputs := providertest.Props(t, map[string]any{"source": fixturePackages(t, "daytona-infra", "sandbox-runtime"), "namePrefix": "oi-guard-base"})
	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs})
	require.NoError(t, err)
	other := h.AnotherServer(t, map[string]property.Value{"daytonaApiUrl": property.New("https://daytona.example.com/api")})
	err = other.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: created.Properties})
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "openinspect:daytonaApiUrl"), err.Error())
	assert.Len(t, snapshotNames(h), 1)
}

// TestDaytonaSnapshotCheck names each bad field before any call.
func TestDaytonaSnapshotCheck(t *testing.T) {
	h := providertest.NewHarness(t)
	checkout := fixturePackages(t, "sandbox-runtime") // no daytona-infra
	check, err := h.Server.Check(p.CheckRequest{Urn: providertest.URN(sandbox.DaytonaSnapshotToken, "base"), Inputs: providertest.Props(t, map[string]any{
		"source": checkout, "namePrefix": "-bad", "apiUrl": "ftp://daytona", "gracePeriodSeconds": -1})})
	require.NoError(t, err)
	reasons := family.ProblemsByField(check.Failures)
	assert.Contains(t, reasons["source"], "packages/daytona-infra/src/bootstrap.py is missing")
	assert.Contains(t, reasons["namePrefix"], `"-bad"`)
	assert.Contains(t, reasons["apiUrl"], "not an http(s) URL")
	assert.Contains(t, reasons["gracePeriodSeconds"], "must be 0 or more")
	assert.Len(t, reasons, 4)
	assert.Zero(t, h.Emu.Daytona().Calls())
}
