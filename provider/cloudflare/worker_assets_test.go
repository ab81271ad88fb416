package cloudflare_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/internal/loopback"
	"github.com/openinspect/pulumi-openinspect/provider"
	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/assets"
	"github.com/openinspect/pulumi-openinspect/tests/providertest"
)

const (
	sessionKey      = "POST /client/v4/accounts/{account_id}/workers/scripts/{script_name}/assets-upload-session"
	assetsUploadKey = "POST /client/v4/accounts/{account_id}/workers/assets/upload"
)

func assetTree(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	for i := range n {
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("page-%03d.html", i)), fmt.Appendf(nil, "<p>page %d</p>", i), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "_headers"), []byte("/*\n  X-Frame-Options: DENY\n"), 0o644))
	return dir
}

func assetWorker(t *testing.T, dir string) map[string]any {
	t.Helper()
	return map[string]any{
		"name": "oi-assets", "content": providertest.FixtureWorker,
		"assets": map[string]any{"directory": dir, "binding": "ASSETS", "notFoundHandling": "404-page"},
	}
}

// TestWorkerAssetsLifecycle: create uploads every file, an unchanged
// directory is no change and no call, one changed file uploads one file,
// refresh notices an upload made elsewhere, delete removes the script.
func TestWorkerAssetsLifecycle(t *testing.T) {
	h := providertest.NewHarness(t)
	u := providertest.URN(cloudflare.WorkerToken, "site")
	dir := assetTree(t, 25)
	inputs := checked(t, h, u, providertest.Props(t, assetWorker(t, dir)))

	h.Emu.ResetCounts()
	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs})
	require.NoError(t, err)
	counts := h.Emu.Counts()
	assert.Equal(t, 1, counts[sessionKey])
	assert.Equal(t, 3, counts[assetsUploadKey], "25 files in buckets of 10")
	assert.Equal(t, 1, counts[uploadKey])
	assert.Equal(t, 25, h.Emu.Assets().Blobs(emulator.DefaultAccountID))
	entry := workerEntry(t, h, "oi-assets")
	require.NotNil(t, entry.Assets)
	assert.Equal(t, 25, entry.Assets.Files, "_headers is configuration, not an asset")
	assert.Contains(t, string(entry.Assets.Config), "X-Frame-Options")
	assert.Contains(t, string(entry.Assets.Config), `"not_found_handling":"404-page"`)
	assert.Equal(t, 25, created.Properties.Get("assetsManifest").AsMap().Len())
	res, err := loopback.Client(0).Get(h.Emu.Workers().WorkerURL("oi-assets") + "/page-001")
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, "<p>page 1</p>", string(body), "/page-001 serves page-001.html")
	assert.Equal(t, "DENY", res.Header.Get("X-Frame-Options"), "_headers applies")
	assert.Equal(t, "text/html; charset=utf-8", res.Header.Get("Content-Type"))

	// Unchanged: no diff, no call.
	h.Emu.ResetCounts()
	diff, err := h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: inputs})
	require.NoError(t, err)
	assert.False(t, diff.HasChanges, "%v", diff.DetailedDiff)
	updated, err := h.Server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: inputs})
	require.NoError(t, err)
	assert.Zero(t, h.Emu.CloudflareCalls(), "an unchanged directory uploads nothing, not even the script")

	// One file changed: one session, one bucket with one file, one script upload.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "page-007.html"), []byte("<p>changed</p>"), 0o644))
	diff, err = h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: updated.Properties, Inputs: inputs})
	require.NoError(t, err)
	assert.True(t, diff.HasChanges)
	assert.Contains(t, diff.DetailedDiff, "assets.directory")
	h.Emu.ResetCounts()
	updated, err = h.Server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: updated.Properties, Inputs: inputs})
	require.NoError(t, err)
	counts = h.Emu.Counts()
	assert.Equal(t, map[string]int{sessionKey: 1, assetsUploadKey: 1, uploadKey: 1}, nonZero(counts))
	assert.Equal(t, 26, h.Emu.Assets().Blobs(emulator.DefaultAccountID), "one new file stored")

	// Refresh after another tool re-uploaded the script: the next up uploads again.
	other := checked(t, h, u, providertest.Props(t, map[string]any{"name": "oi-assets", "content": providertest.FixtureWorker + "\n// elsewhere"}))
	_, err = h.Server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: updated.Properties, Inputs: other})
	require.NoError(t, err)
	read, err := h.Server.Read(p.ReadRequest{ID: created.ID, Urn: u, Properties: updated.Properties, Inputs: inputs})
	require.NoError(t, err)
	diff, err = h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: read.Properties, Inputs: inputs})
	require.NoError(t, err)
	assert.True(t, diff.HasChanges, "drift is shown")
	h.Emu.ResetCounts()
	restored, err := h.Server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: read.Properties, Inputs: inputs})
	require.NoError(t, err)
	assert.Zero(t, h.Emu.Counts()[assetsUploadKey], "the account still holds every file")
	assert.Equal(t, 1, h.Emu.Counts()[uploadKey])
	require.NotNil(t, workerEntry(t, h, "oi-assets").Assets)

	require.NoError(t, h.Server.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: restored.Properties}))
	_, ok := h.Emu.Workers().Worker(emulator.DefaultAccountID, "oi-assets")
	assert.False(t, ok)
}

func TestWorkerAssetsOnly(t *testing.T) {
	h := providertest.NewHarness(t)
	u := providertest.URN(cloudflare.WorkerToken, "static")
	dir := assetTree(t, 3)
	inputs := checked(t, h, u, providertest.Props(t, map[string]any{"name": "oi-static", "assets": map[string]any{"directory": dir}}))
	_, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs})
	require.NoError(t, err)
	entry := workerEntry(t, h, "oi-static")
	require.NotNil(t, entry.Assets)
	assert.Equal(t, 3, entry.Assets.Files)
}

func TestWorkerAssetsExpiredSessionResumes(t *testing.T) {
	h := providertest.NewHarnessWith(t, emulator.Options{Assets: assets.Options{SessionLifetime: time.Nanosecond}})
	u := providertest.URN(cloudflare.WorkerToken, "site")
	inputs := checked(t, h, u, providertest.Props(t, assetWorker(t, assetTree(t, 2))))
	_, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs})
	require.Error(t, err, "every session token is already expired")
	assert.Contains(t, err.Error(), "no completion token after 4 upload sessions")
	assert.Equal(t, 4, h.Emu.Counts()[sessionKey], "each expired session was replaced by a new one")
}

func workerEntry(t *testing.T, h *providertest.Harness, name string) emulator.WorkerEntry {
	t.Helper()
	for _, w := range h.Emu.Inventory().Workers {
		if w.Name == name {
			return w
		}
	}
	t.Fatalf("no worker %s in the inventory", name)
	return emulator.WorkerEntry{}
}

func nonZero(counts map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range counts {
		if v > 0 {
			out[k] = v
		}
	}
	return out
}

// A Worker with static assets whose service target does not exist yet (the
// web UI, created beside the control plane it binds): it is uploaded
// without the binding and its files sent once; when the target appears, the
// upload with the binding takes a new assets session, since the first
// upload used the completion token up.
func TestWorkerWithAssetsBindsATargetCreatedLater(t *testing.T) {
	h := providertest.NewHarness(t, provider.WithWorker(&cloudflare.Worker{
		ServiceTargetWait: time.Minute, ServiceTargetPoll: 20 * time.Millisecond}))
	web := assetWorker(t, assetTree(t, 3))
	web["services"] = []any{map[string]any{"binding": "CONTROL_PLANE", "service": "oi-later-target"}}
	u := providertest.URN(cloudflare.WorkerToken, "web")
	inputs := checked(t, h, u, providertest.Props(t, web))
	h.Emu.ResetCounts()
	done := make(chan error, 1)
	go func() {
		_, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs})
		done <- err
	}()
	require.Eventually(t, func() bool { _, ok := h.Emu.Workers().Worker(emulator.DefaultAccountID, "oi-assets"); return ok },
		30*time.Second, 20*time.Millisecond, "uploaded without the binding while the target is missing")
	_, err := h.Server.Create(p.CreateRequest{Urn: providertest.URN(cloudflare.WorkerToken, "target"),
		Properties: providertest.Props(t, map[string]any{"name": "oi-later-target", "content": providertest.FixtureWorker})})
	require.NoError(t, err)
	require.NoError(t, <-done)

	counts := h.Emu.Counts()
	assert.Equal(t, 4, counts[uploadKey], "the web refused for the missing target, without the binding, the target, the web with it")
	assert.Equal(t, 2, counts[sessionKey], "a second session for the second upload's token")
	assert.Equal(t, 1, counts[assetsUploadKey], "the files are sent once")
	w, ok := h.Emu.Workers().Worker(emulator.DefaultAccountID, "oi-assets")
	require.True(t, ok)
	var services []string
	for _, b := range w.Bindings {
		if b.Type == "service" {
			services = append(services, b.Service)
		}
	}
	assert.Equal(t, []string{"oi-later-target"}, services)
	assert.NotNil(t, workerEntry(t, h, "oi-assets").Assets, "the assets stay bound")
}
