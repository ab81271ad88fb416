package sandbox_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider"
	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
	"github.com/openinspect/pulumi-openinspect/provider/sandbox"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	emuvercel "github.com/openinspect/pulumi-openinspect/tests/emulator/vercel"
	"github.com/openinspect/pulumi-openinspect/tests/providertest"
)

// vercelBuilds are the sandbox names of the project's created snapshots.
func vercelBuilds(h *providertest.Harness, project string) []string {
	var out []string
	for _, s := range h.Emu.Inventory().Vercel.Snapshots {
		if s.Project == project && s.Status == "created" && !slices.Contains(out, s.SandboxName) {
			out = append(out, s.SandboxName)
		}
	}
	return out
}

// TestVercelSnapshotLifecycle runs the fixture builder (shaped like
// upstream's, bundled by its package's own esbuild script and run with
// Node) through the resource: a preview names the build sandbox without a
// call, up builds the snapshot (the runtime uploaded as a tar.gz, the
// bootstrap run, the snapshot taken and never expiring), an unchanged diff
// makes no call, a changed runtime builds a second one while the first
// survives its grace period, a failed build fails with the builder's own
// message and the next update retries it, and two installations in one
// project are deleted one at a time, each leaving the other's.
func TestVercelSnapshotLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("installs esbuild and zod from npm on a cold cache; -short skips it")
	}
	clk := &clock{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	images := &sandbox.VercelSnapshot{}
	images.Now = clk.Now // the shared image lifecycle's clock
	h := providertest.NewHarnessWith(t, emulator.Options{Vercel: emuvercel.Options{CommandTime: 20 * time.Millisecond}},
		provider.WithVercelSnapshot(images))
	checkout := fixturePackages(t, "control-plane", "sandbox-runtime") // the control plane holds the Vercel builder
	const project = "prj_openinspect_test"
	u := providertest.URN(sandbox.VercelSnapshotToken, "sandbox-base")
	inputsFor := func(prefix string) property.Map {
		return providertest.Props(t, map[string]any{"source": checkout, "namePrefix": prefix,
			"apiUrl": h.Emu.URL() + emuvercel.APIPrefix, "token": emuvercel.DefaultToken, "projectId": project})
	}
	inputs := inputsFor("oi-a-sandbox-base")
	check, err := h.Server.Check(p.CheckRequest{Urn: u, Inputs: inputs})
	require.NoError(t, err)
	require.Empty(t, check.Failures)

	preview, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs, DryRun: true})
	require.NoError(t, err)
	name := preview.Properties.Get("name").AsString()
	assert.Regexp(t, `^oi-a-sandbox-base-[0-9a-f]{16}$`, name)
	assert.Zero(t, h.Emu.Vercel().Calls(), "a preview names the build sandbox without a call")

	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs})
	require.NoError(t, err)
	state := created.Properties
	assert.Equal(t, name, state.Get("name").AsString(), "the preview's name is the built one")
	assert.Equal(t, "created", state.Get("status").AsString())
	assert.True(t, state.Get("built").AsBool())
	inv := h.Emu.Inventory().Vercel
	require.Len(t, inv.Snapshots, 1)
	snap := inv.Snapshots[0]
	assert.Equal(t, snap.ID, state.Get("vercelSnapshotId").AsString(), "the ID the builder wrote to --output")
	assert.Equal(t, name, snap.SandboxName)
	assert.Zero(t, snap.ExpiresAt, "upstream's base snapshot never expires")
	require.Len(t, inv.Sandboxes, 1)
	sb := inv.Sandboxes[0]
	assert.Equal(t, "node24", sb.Runtime)
	assert.Equal(t, "open-inspect", sb.Tags["openinspect_framework"])
	require.NotEmpty(t, sb.Sessions)
	session := sb.Sessions[len(sb.Sessions)-1]
	assert.Contains(t, session.Files, "/tmp/open-inspect-runtime/packages/sandbox-runtime/src/sandbox_runtime/entrypoint.py",
		"the runtime was uploaded as a tar.gz: %v", session.Files)
	assert.Len(t, session.Commands, 2, "the directory preparation, then the bootstrap")

	imageCase{h: h, id: created.ID, urn: u, state: state, inputs: inputs}.assertIdleDiff(t, h.Emu.Vercel().Calls)

	// A changed runtime: the first build fails with the builder's message.
	imageCase{h: h, id: created.ID, urn: u, state: state, inputs: inputs}.changeRuntime(t, checkout)
	h.Emu.Vercel().FailNextBuild("pip: no matching distribution (arranged by the test)")
	failed, err := h.Server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: state, Inputs: inputs})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "vercel: node vercel-base-snapshot failed")
	assert.Contains(t, err.Error(), "Vercel base runtime bootstrap failed with exit code 1")
	assert.NotContains(t, err.Error(), emuvercel.DefaultToken)
	state = failed.Properties
	assert.Equal(t, "failed", state.Get("status").AsString())

	updated, err := h.Server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: state, Inputs: inputs})
	require.NoError(t, err)
	state = updated.Properties
	second := state.Get("name").AsString()
	assert.NotEqual(t, name, second)
	assert.Equal(t, "created", state.Get("status").AsString())
	assert.ElementsMatch(t, []string{name, second}, vercelBuilds(h, project), "the old snapshot survives the rebuild")
	superseded := state.Get("superseded").AsArray().AsSlice()
	require.Len(t, superseded, 1)
	assert.Equal(t, name, superseded[0].AsMap().Get("name").AsString())

	clk.advance(25 * time.Hour)
	diff, err := h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: state, Inputs: inputs})
	require.NoError(t, err)
	assert.Contains(t, diff.DetailedDiff, "superseded")
	updated, err = h.Server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: state, Inputs: inputs})
	require.NoError(t, err)
	stateA := updated.Properties
	assert.Equal(t, []string{second}, vercelBuilds(h, project))

	other, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputsFor("oi-b-sandbox-base")})
	require.NoError(t, err)
	stateB := other.Properties
	require.Len(t, vercelBuilds(h, project), 2)
	require.NoError(t, h.Server.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: stateA}))
	assert.Equal(t, []string{stateB.Get("name").AsString()}, vercelBuilds(h, project), "only a's snapshots are deleted")
	var sandboxes []string
	for _, sb := range h.Emu.Inventory().Vercel.Sandboxes {
		sandboxes = append(sandboxes, sb.Name)
	}
	assert.Equal(t, []string{stateB.Get("name").AsString()}, sandboxes, "a's build sandboxes are deleted, b's stays")
	require.NoError(t, h.Server.Delete(p.DeleteRequest{ID: other.ID, Urn: u, Properties: stateB}))
	assert.True(t, h.Emu.Inventory().Vercel.Empty(), "%+v", h.Emu.Inventory().Vercel)
}

func TestVercelSnapshotCheckNamesTheField(t *testing.T) {
	h := providertest.NewHarnessWith(t, emulator.Options{})
	u := providertest.URN(sandbox.VercelSnapshotToken, "sandbox-base")
	check, err := h.Server.Check(p.CheckRequest{Urn: u, Inputs: providertest.Props(t, map[string]any{
		"source": t.TempDir(), "namePrefix": "Bad_Prefix", "apiUrl": "ftp://vercel.example", "token": " ",
		"projectId": "", "runtime": "node18",
	})})
	require.NoError(t, err)
	var fields []string
	for _, f := range check.Failures {
		fields = append(fields, family.FailureField(f))
	}
	slices.Sort(fields)
	assert.Equal(t, []string{"apiUrl", "namePrefix", "projectId", "runtime", "source", "token"}, fields, "%v", check.Failures)
	assert.Zero(t, h.Emu.Vercel().Calls())
}

// createVercelSandbox creates a named sandbox of runtime in project through
// the API, with tags (upstream's control plane tags a session's; a build's
// has none).
func createVercelSandbox(t *testing.T, h *providertest.Harness, project, name, runtime string, tags map[string]string) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"projectId": project, "name": name, "runtime": runtime, "tags": tags})
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, h.Emu.URL()+emuvercel.APIPrefix+"/v2/sandboxes", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+emuvercel.DefaultToken)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
}

// A VercelSnapshot using an existing snapshot (snapshotId) builds nothing
// and, on delete, deletes only the sandboxes of the sessions its
// installation's D1 records, found by upstream's openinspect_session_id
// tag, never the snapshot it did not build nor another installation's
// sandboxes in the same project.
func TestVercelSnapshotOverrideDeletesOnlyItsSessionsSandboxes(t *testing.T) {
	h := providertest.NewHarnessWith(t, emulator.Options{})
	const project = "prj_shared"
	dbID := sessionsDB(t, h, "s-mine")
	shared, err := h.Emu.Vercel().CreateSnapshot(emuvercel.DefaultTeamID, project, "someone-elses-build")
	require.NoError(t, err)
	u := providertest.URN(sandbox.VercelSnapshotToken, "sandbox-base")
	inputs := providertest.Props(t, map[string]any{
		"source": filepath.Join("..", "..", "tests", "fixtures", "upstream"), "namePrefix": "oi-a-sandbox-base",
		"apiUrl": h.Emu.URL() + emuvercel.APIPrefix, "token": emuvercel.DefaultToken, "projectId": project,
		"snapshotId": shared, "d1DatabaseId": dbID,
	})
	check, err := h.Server.Check(p.CheckRequest{Urn: u, Inputs: inputs})
	require.NoError(t, err)
	require.Empty(t, check.Failures)
	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: check.Inputs})
	require.NoError(t, err)
	assert.False(t, created.Properties.Get("built").AsBool())

	tagged := func(session string) map[string]string {
		tags := map[string]string{"openinspect_framework": "open-inspect"}
		if session != "" {
			tags["openinspect_session_id"] = session
		}
		return tags
	}
	createVercelSandbox(t, h, project, "sbx-mine", "node24", tagged("s-mine"))
	createVercelSandbox(t, h, project, "sbx-theirs", "node24", tagged("s-theirs"))
	createVercelSandbox(t, h, project, "sbx-untagged", "node24", tagged(""))
	h.Emu.ResetCounts()
	require.NoError(t, h.Server.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: created.Properties}))

	var left []string
	for _, sb := range h.Emu.Inventory().Vercel.Sandboxes {
		left = append(left, sb.Name)
	}
	assert.ElementsMatch(t, []string{"sbx-theirs", "sbx-untagged"}, left,
		"only the sandbox of a session this installation recorded is deleted")
	snaps := h.Emu.Inventory().Vercel.Snapshots
	require.Len(t, snaps, 1)
	assert.Equal(t, shared, snaps[0].ID, "an override's snapshot is never deleted")
	assert.Equal(t, 2, h.Emu.Vercel().Calls(), "one tagged list for the one recorded session, one delete")
}
