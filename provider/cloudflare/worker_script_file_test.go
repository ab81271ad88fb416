package cloudflare_test

import (
	"os"
	"path/filepath"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/asset"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/providertest"
)

// A bundle given as a file asset (as the installation passes its bundles)
// reaches Cloudflare byte for byte, streamed from the file; a change to the
// file is a change to the Worker.
func TestWorkerScriptFromFile(t *testing.T) {
	h := providertest.NewHarness(t)
	bundle := filepath.Join(t.TempDir(), "worker.js")
	require.NoError(t, os.WriteFile(bundle, []byte(providertest.FixtureWorker), 0o644))
	u := providertest.URN(cloudflare.WorkerToken, "from-file")
	inputs := func() property.Map {
		a, err := asset.FromPath(bundle)
		require.NoError(t, err)
		return providertest.Props(t, map[string]any{"name": "oi-from-file", "compatibilityDate": "2025-01-01"}).
			Set("script", property.New(a))
	}
	_, _, created := checkedCreate(t, h, u, inputs())
	w, ok := h.Emu.Workers().Worker(emulator.DefaultAccountID, "oi-from-file")
	require.True(t, ok)
	assert.Equal(t, providertest.FixtureWorker, w.Modules["index.js"])

	changed := providertest.FixtureWorker + "\n// changed\n"
	require.NoError(t, os.WriteFile(bundle, []byte(changed), 0o644))
	check, err := h.Server.Check(p.CheckRequest{Urn: u, Inputs: inputs()})
	require.NoError(t, err)
	diff, err := h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: check.Inputs})
	require.NoError(t, err)
	require.True(t, diff.HasChanges)
	_, err = h.Server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: check.Inputs})
	require.NoError(t, err)
	w, _ = h.Emu.Workers().Worker(emulator.DefaultAccountID, "oi-from-file")
	assert.Equal(t, changed, w.Modules["index.js"])
}

// An empty or missing bundle file is refused in Check, naming the field.
func TestWorkerScriptFileProblems(t *testing.T) {
	h := providertest.NewHarness(t)
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.js")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	for path, reason := range map[string]string{empty: "the script asset is empty", filepath.Join(dir, "gone.js"): "gone.js"} {
		inputs := providertest.Props(t, map[string]any{"name": "oi-bad-file", "compatibilityDate": "2025-01-01"}).
			Set("script", property.New(&asset.Asset{Sig: asset.AssetSig, Path: path}))
		check, err := h.Server.Check(p.CheckRequest{Urn: providertest.URN(cloudflare.WorkerToken, "bad"), Inputs: inputs})
		require.NoError(t, err)
		require.Len(t, check.Failures, 1, "%s", path)
		assert.Equal(t, "script", family.FailureField(check.Failures[0]))
		assert.Contains(t, check.Failures[0].Reason, reason)
	}
}
