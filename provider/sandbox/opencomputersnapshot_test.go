package sandbox_test

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	"github.com/openinspect/pulumi-openinspect/tests/emulator/opencomputer"
	"github.com/openinspect/pulumi-openinspect/tests/providertest"
)

// fixturePackages copies the named fixture packages into a checkout of
// their own, so a test can change them.
func fixturePackages(t *testing.T, pkgs ...string) string {
	t.Helper()
	src := filepath.Join(providertest.FixtureCheckout(t), "packages")
	root := t.TempDir()
	for _, pkg := range pkgs {
		require.NoError(t, os.CopyFS(filepath.Join(root, "packages", pkg), os.DirFS(filepath.Join(src, pkg))))
	}
	return root
}

func ocSnapshotNames(h *providertest.Harness) []string {
	var out []string
	for _, s := range h.Emu.Inventory().OpenComputer.Snapshots {
		out = append(out, s.Name)
	}
	return out
}

// TestOpenComputerSnapshotLifecycle runs upstream's builder shape (the
// fixture, bundled and run with the pinned SDK) through the resource: a
// preview names the snapshot without a call, up builds it, an unchanged
// diff makes no call, a changed runtime builds a second one while the first
// survives its grace period, a failed build fails with the builder's
// message and the next update retries it, and two installations in one org
// are deleted one at a time, each leaving the other's snapshots.
func TestOpenComputerSnapshotLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("installs @opencomputer/sdk and esbuild from npm on a cold cache; -short skips it")
	}
	clk := &clock{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	images := &sandbox.OpenComputerSnapshot{}
	images.Now = clk.Now // the shared image lifecycle's clock
	h := providertest.NewHarnessWith(t, emulator.Options{OpenComputer: opencomputer.Options{BuildTime: 50 * time.Millisecond}},
		provider.WithOpenComputerSnapshot(images))
	checkout := fixturePackages(t, "opencomputer-infra", "sandbox-runtime")
	u := providertest.URN(sandbox.OpenComputerSnapshotToken, "sandbox")
	inputsFor := func(prefix string) property.Map {
		return providertest.Props(t, map[string]any{"source": checkout, "namePrefix": prefix,
			"apiUrl": h.Emu.URL() + opencomputer.APIPrefix, "apiKey": opencomputer.DefaultAPIKey, "builderMemoryMb": 4096})
	}
	inputs := inputsFor("oi-a-sandbox")
	check, err := h.Server.Check(p.CheckRequest{Urn: u, Inputs: inputs})
	require.NoError(t, err)
	require.Empty(t, check.Failures)

	preview, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs, DryRun: true})
	require.NoError(t, err)
	name := preview.Properties.Get("name").AsString()
	assert.Regexp(t, `^oi-a-sandbox-[0-9a-f]{16}$`, name)
	assert.Zero(t, h.Emu.OpenComputer().Calls(), "a preview names the snapshot without a call")

	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs})
	require.NoError(t, err)
	state := created.Properties
	assert.Equal(t, name, state.Get("name").AsString(), "the preview's name is the built one")
	assert.Equal(t, "ready", state.Get("status").AsString())
	assert.True(t, state.Get("built").AsBool())
	assert.NotEmpty(t, state.Get("contentHash").AsString())
	snaps := h.Emu.Inventory().OpenComputer.Snapshots
	require.Len(t, snaps, 1)
	assert.Equal(t, 4096, snaps[0].BuilderMemoryMB)
	assert.Contains(t, snaps[0].Files, "/home/sandbox/app/sandbox_runtime/entrypoint.py", "the builder inlined the runtime")

	imageCase{h: h, id: created.ID, urn: u, state: state, inputs: inputs}.assertIdleDiff(t, h.Emu.OpenComputer().Calls)

	// A changed runtime builds a second snapshot; the first stays.
	imageCase{h: h, id: created.ID, urn: u, state: state, inputs: inputs}.changeRuntime(t, checkout)

	// The build fails first: the builder's own message, nothing superseded
	// yet, and the next update builds it.
	h.Emu.OpenComputer().FailNextBuild("step 3: pip exited with status 1")
	failed, err := h.Server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: state, Inputs: inputs})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "opencomputer: node build-template failed")
	assert.Contains(t, err.Error(), "pip exited with status 1")
	assert.NotContains(t, err.Error(), opencomputer.DefaultAPIKey)
	state = failed.Properties
	assert.Equal(t, "failed", state.Get("status").AsString())
	diff, err := h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: state, Inputs: inputs})
	require.NoError(t, err)
	assert.True(t, diff.HasChanges, "a failed build is retried")
	updated, err := h.Server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: state, Inputs: inputs})
	require.NoError(t, err)
	state = updated.Properties
	second := state.Get("name").AsString()
	assert.NotEqual(t, name, second)
	assert.Equal(t, "ready", state.Get("status").AsString())
	assert.ElementsMatch(t, []string{name, second}, ocSnapshotNames(h), "the old snapshot survives the rebuild")
	superseded := state.Get("superseded").AsArray().AsSlice()
	require.Len(t, superseded, 1)
	assert.Equal(t, name, superseded[0].AsMap().Get("name").AsString())

	// After the grace period the next up deletes the old one.
	clk.advance(25 * time.Hour)
	diff, err = h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: state, Inputs: inputs})
	require.NoError(t, err)
	assert.Contains(t, diff.DetailedDiff, "superseded")
	updated, err = h.Server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: state, Inputs: inputs})
	require.NoError(t, err)
	stateA := updated.Properties
	assert.Equal(t, []string{second}, ocSnapshotNames(h))

	// A second installation in the same org, then teardown one at a time.
	other, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputsFor("oi-b-sandbox")})
	require.NoError(t, err)
	stateB := other.Properties
	require.Len(t, ocSnapshotNames(h), 2)
	require.NoError(t, h.Server.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: stateA}))
	assert.Equal(t, []string{stateB.Get("name").AsString()}, ocSnapshotNames(h), "only a's snapshot is deleted")
	require.NoError(t, h.Server.Delete(p.DeleteRequest{ID: other.ID, Urn: u, Properties: stateB}))
	assert.Empty(t, ocSnapshotNames(h))
}

// A given template builds nothing and is never deleted; a missing one is
// refused by name.
func TestOpenComputerSnapshotTemplateOverride(t *testing.T) {
	h := providertest.NewHarnessWith(t, emulator.Options{})
	u := providertest.URN(sandbox.OpenComputerSnapshotToken, "sandbox")
	inputs := providertest.Props(t, map[string]any{"source": "", "namePrefix": "oi-prod-sandbox",
		"apiUrl": h.Emu.URL() + opencomputer.APIPrefix, "apiKey": opencomputer.DefaultAPIKey, "template": "team-base"})
	check, err := h.Server.Check(p.CheckRequest{Urn: u, Inputs: inputs})
	require.NoError(t, err)
	require.Empty(t, check.Failures)
	_, err = h.Server.Create(p.CreateRequest{Urn: u, Properties: check.Inputs})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `template: OpenComputer has no snapshot "team-base"`)
	assert.Empty(t, ocSnapshotNames(h), "nothing was built")
}

func TestOpenComputerSnapshotCheckNamesTheField(t *testing.T) {
	h := providertest.NewHarnessWith(t, emulator.Options{})
	u := providertest.URN(sandbox.OpenComputerSnapshotToken, "sandbox")
	check, err := h.Server.Check(p.CheckRequest{Urn: u, Inputs: providertest.Props(t, map[string]any{
		"source": t.TempDir(), "namePrefix": "Bad_Prefix", "apiUrl": "https://oc.example", "apiKey": " ", "builderMemoryMb": 100,
	})})
	require.NoError(t, err)
	var fields []string
	for _, f := range check.Failures {
		fields = append(fields, family.FailureField(f))
	}
	slices.Sort(fields)
	assert.Equal(t, []string{"apiKey", "apiUrl", "builderMemoryMb", "namePrefix", "source"}, fields, "%v", check.Failures)
	assert.Zero(t, h.Emu.OpenComputer().Calls())
}

// On delete, an OpenComputerSnapshot deletes the running sandboxes of the
// sessions its installation's D1 records and of the snapshots it built,
// then those snapshots; another installation's sandboxes, and an override
// snapshot, stay.
func TestOpenComputerSnapshotDeletesItsSessionsSandboxes(t *testing.T) {
	h := providertest.NewHarnessWith(t, emulator.Options{OpenComputer: opencomputer.Options{BuildTime: time.Millisecond}})
	oc := h.Emu.OpenComputer()
	sandboxOf := func(snapshot, session string) string {
		md := map[string]string{"openinspect_framework": "open-inspect"}
		if session != "" {
			md["openinspect_session_id"] = session
		}
		id, err := oc.CreateSandbox(opencomputer.SandboxSpec{Snapshot: snapshot, Metadata: md})
		require.NoError(t, err)
		return id
	}
	const built = "oi-a-sandbox-0123456789abcdef"
	fromBuilt := sandboxOf(built, "")
	mine := sandboxOf("shared-base", "s-mine")
	theirs := sandboxOf("shared-base", "s-theirs")
	unlabelled := sandboxOf("shared-base", "")
	u := providertest.URN(sandbox.OpenComputerSnapshotToken, "sandbox")
	state := providertest.Props(t, map[string]any{
		"source": ".", "namePrefix": "oi-a-sandbox", "apiUrl": h.Emu.URL() + opencomputer.APIPrefix,
		"apiKey": opencomputer.DefaultAPIKey, "d1DatabaseId": sessionsDB(t, h, "s-mine"),
		"name": built, "digest": "0123456789abcdef", "snapshotId": "", "contentHash": "", "status": "ready", "built": true,
	})
	require.NoError(t, h.Server.Delete(p.DeleteRequest{ID: "a", Urn: u, Properties: state}))
	var left []string
	for _, sb := range h.Emu.Inventory().OpenComputer.Sandboxes {
		left = append(left, sb.ID)
	}
	assert.NotContains(t, left, mine, "the sandbox of a session this installation recorded is deleted")
	assert.NotContains(t, left, fromBuilt, "a sandbox of the snapshot it built is deleted")
	assert.ElementsMatch(t, []string{theirs, unlabelled}, left, "another installation's sandboxes survive")
}

// A build of the digest name still running (a killed up's: its builder
// died, OpenComputer goes on) is waited for and adopted, not refused as a
// duplicate and not built twice.
func TestOpenComputerSnapshotWaitsForARunningBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("installs @opencomputer/sdk and esbuild from npm on a cold cache; -short skips it")
	}
	h := providertest.NewHarnessWith(t, emulator.Options{OpenComputer: opencomputer.Options{BuildTime: 4 * time.Second}})
	checkout := fixturePackages(t, "opencomputer-infra", "sandbox-runtime")
	u := providertest.URN(sandbox.OpenComputerSnapshotToken, "sandbox")
	inputs := providertest.Props(t, map[string]any{"source": checkout, "namePrefix": "oi-a-sandbox",
		"apiUrl": h.Emu.URL() + opencomputer.APIPrefix, "apiKey": opencomputer.DefaultAPIKey})
	preview, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs, DryRun: true})
	require.NoError(t, err)
	name := preview.Properties.Get("name").AsString()

	// The earlier run's build, started and left running.
	go func() {
		body := strings.NewReader(`{"name":"` + name + `","image":{"base":"base","steps":[{"type":"run","args":{"commands":["true"]}}]}}`)
		req, _ := http.NewRequest("POST", h.Emu.URL()+opencomputer.APIPrefix+"/snapshots", body)
		req.Header.Set("X-API-Key", opencomputer.DefaultAPIKey)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	require.Eventually(t, func() bool {
		snaps := h.Emu.Inventory().OpenComputer.Snapshots
		return len(snaps) == 1 && snaps[0].Status == "building"
	}, 10*time.Second, 20*time.Millisecond)

	createNamed(t, h, u, inputs, name, "ready")
	snaps := h.Emu.Inventory().OpenComputer.Snapshots
	require.Len(t, snaps, 1)
	assert.Equal(t, []string{"run true"}, snaps[0].Steps, "the earlier run's build was adopted")
	assert.Equal(t, 2, h.Emu.Counts()["POST "+opencomputer.APIPrefix+"/snapshots"], "the earlier build and the builder's refused one")
}
