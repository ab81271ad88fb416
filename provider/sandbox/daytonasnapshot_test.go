package sandbox_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider"
	"github.com/openinspect/pulumi-openinspect/provider/internal/providertest"
	"github.com/openinspect/pulumi-openinspect/provider/sandbox"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
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
	client, dbID := h.NewDatabase(t)
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
	id, err := h.Emu.CreateDaytonaSandbox(emulator.DaytonaSandboxSpec{Labels: map[string]string{
		"openinspect_framework": "open-inspect", "openinspect_session_id": session}})
	require.NoError(t, err)
	return id
}

// TestDaytonaSnapshotLifecycle builds the digest-named snapshot, keeps the
// old one through its grace period when the runtime changes, collects it
// afterwards, and on delete removes only this installation's sandboxes.
func TestDaytonaSnapshotLifecycle(t *testing.T) {
	clk := &clock{now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	h := providertest.NewHarnessWith(t, emulator.Options{DaytonaBuildTime: 50 * time.Millisecond},
		provider.WithDaytonaSnapshot(&sandbox.DaytonaSnapshot{Now: clk.Now}))
	checkout := checkoutCopy(t)
	dbID := sessionsDB(t, h, "s-mine")
	u := providertest.URN(sandbox.DaytonaSnapshotToken, "base")
	inputs := providertest.Props(t, map[string]any{"source": checkout, "namePrefix": "oi-prod-base", "d1DatabaseId": dbID})

	check, err := h.Server.Check(p.CheckRequest{Urn: u, Inputs: inputs})
	require.NoError(t, err)
	require.Empty(t, check.Failures)
	// A preview names the snapshot without a call.
	preview, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs, DryRun: true})
	require.NoError(t, err)
	name := preview.Properties.Get("name").AsString()
	assert.Regexp(t, `^oi-prod-base-[0-9a-f]{12}$`, name)
	assert.Zero(t, h.Emu.DaytonaCalls())

	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs})
	require.NoError(t, err)
	state := created.Properties
	assert.Equal(t, name, state.Get("name").AsString(), "the preview's name is the built one")
	assert.Equal(t, "active", state.Get("state").AsString())
	assert.Equal(t, []string{name}, snapshotNames(h))

	h.Emu.ResetCounts()
	diff, err := h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: state, Inputs: inputs})
	require.NoError(t, err)
	assert.False(t, diff.HasChanges, "%v", diff.DetailedDiff)
	assert.Zero(t, h.Emu.DaytonaCalls())

	// A changed runtime builds a second snapshot; the first stays.
	entry := filepath.Join(checkout, "packages", "sandbox-runtime", "src", "sandbox_runtime", "entrypoint.py")
	b, err := os.ReadFile(entry)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(entry, append(b, []byte("\n# v2\n")...), 0o644))
	diff, err = h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: state, Inputs: inputs})
	require.NoError(t, err)
	assert.Equal(t, map[string]p.PropertyDiff{"source": {Kind: p.Update, InputDiff: true}}, diff.DetailedDiff)
	updated, err := h.Server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: state, Inputs: inputs})
	require.NoError(t, err)
	state = updated.Properties
	second := state.Get("name").AsString()
	assert.NotEqual(t, name, second)
	assert.ElementsMatch(t, []string{name, second}, snapshotNames(h), "the old snapshot survives the rebuild")
	superseded := state.Get("superseded").AsArray().AsSlice()
	require.Len(t, superseded, 1)
	assert.Equal(t, name, superseded[0].AsMap().Get("name").AsString())

	// Within the grace period nothing changes; after it, the next up collects.
	clk.advance(23 * time.Hour)
	diff, err = h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: state, Inputs: inputs})
	require.NoError(t, err)
	assert.False(t, diff.HasChanges)
	clk.advance(2 * time.Hour)
	diff, err = h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: state, Inputs: inputs})
	require.NoError(t, err)
	assert.Contains(t, diff.DetailedDiff, "superseded")
	updated, err = h.Server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: state, Inputs: inputs})
	require.NoError(t, err)
	state = updated.Properties
	assert.Equal(t, []string{second}, snapshotNames(h))
	assert.Zero(t, state.Get("superseded").AsArray().Len())

	// Teardown: only the sandbox of a session this installation recorded.
	mine := sessionSandbox(t, h, "s-mine")
	theirs := sessionSandbox(t, h, "s-theirs")
	require.NoError(t, h.Server.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: state}))
	var left []string
	for _, sb := range h.Emu.Inventory().Daytona.Sandboxes {
		left = append(left, sb.ID)
	}
	assert.NotContains(t, left, mine)
	assert.Contains(t, left, theirs, "another installation's sandbox survives")
	assert.Empty(t, snapshotNames(h))
}

// TestDaytonaSnapshotFailedBuildIsFinishedLater keeps a failed build in
// state with the build's own error, and the next up builds it.
func TestDaytonaSnapshotFailedBuildIsFinishedLater(t *testing.T) {
	h := providertest.NewHarnessWith(t, emulator.Options{DaytonaBuildTime: emulator.InstantDaytonaBuilds})
	u := providertest.URN(sandbox.DaytonaSnapshotToken, "base")
	inputs := providertest.Props(t, map[string]any{"source": checkoutCopy(t), "namePrefix": "oi-fail-base"})
	h.Emu.FailNextDaytonaBuild("npm ERR! 404 opencode-ai not found")
	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "opencode-ai not found")
	require.NotEmpty(t, created.ID, "the failed build is recorded")
	state := created.Properties
	assert.NotEqual(t, "active", state.Get("state").AsString())

	diff, err := h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: state, Inputs: inputs})
	require.NoError(t, err)
	assert.True(t, diff.HasChanges)
	updated, err := h.Server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: state, Inputs: inputs})
	require.NoError(t, err)
	assert.Equal(t, "active", updated.Properties.Get("state").AsString())
	assert.Len(t, snapshotNames(h), 1)
}

// TestDaytonaSnapshotRefusesAnotherAPI guards against a provider pointed at
// another Daytona.
func TestDaytonaSnapshotRefusesAnotherAPI(t *testing.T) {
	h := providertest.NewHarnessWith(t, emulator.Options{DaytonaBuildTime: emulator.InstantDaytonaBuilds})
	u := providertest.URN(sandbox.DaytonaSnapshotToken, "base")
	inputs := providertest.Props(t, map[string]any{"source": checkoutCopy(t), "namePrefix": "oi-guard-base"})
	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs})
	require.NoError(t, err)
	other := h.AnotherServer(t, map[string]property.Value{"daytonaApiUrl": property.New("https://daytona.example.com/api")})
	err = other.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: created.Properties})
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "openinspect:daytonaApiUrl"), err.Error())
	assert.Len(t, snapshotNames(h), 1)
}
