package engine

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/internal/loopback"
)

const (
	assetSessionRoute = "POST /client/v4/accounts/{account_id}/workers/scripts/{script_name}/assets-upload-session"
	assetUploadRoute  = "POST /client/v4/accounts/{account_id}/workers/assets/upload"
)

// writeSite generates the 200-file assets fixture: pages, styles and a 404 page.
func writeSite(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	for i := range n - 1 {
		sub := filepath.Join(dir, fmt.Sprintf("section-%d", i%10))
		require.NoError(t, os.MkdirAll(sub, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(sub, fmt.Sprintf("page-%03d.html", i)),
			fmt.Appendf(nil, "<!doctype html><title>page %d</title><p>page %d</p>\n", i, i), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "404.html"), []byte("<p>not here</p>\n"), 0o644))
	return dir
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	res, err := loopback.Client(0).Get(url)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, string(body)
}

// TestYAMLWorkerAssets: a worker with 200 assets, a custom domain and
// Workers Logs. The first up uploads all 200 files, attaches the hostname
// and turns the logs on; the second makes zero calls; one changed file
// uploads exactly that file; the worker's URL serves the files (and the 404
// page); removing the domain detaches it; destroy leaves the emulator empty.
func TestYAMLWorkerAssets(t *testing.T) {
	t.Parallel()
	requirePulumi(t)
	emu := startEmulator(t)
	site := writeSite(t, 200)
	pt := newYAMLTest(t, filepath.Join(repoRoot(), "tests", "engine", "testdata", "assets-yaml"), emu)
	pt.SetConfig(t, "siteDir", site)

	up := previewUp(t, pt, func() { emu.resetCounts(t) })
	_, counts := emu.cloudflareCalls(t)
	assert.Equal(t, 1, counts[assetSessionRoute], "%v", counts)
	assert.Equal(t, 20, counts[assetUploadRoute], "200 files in buckets of 10: %v", counts)
	assert.Equal(t, 1, counts[uploadRoute], "%v", counts)
	inv := emu.inventory(t)
	require.Len(t, inv.Workers, 1)
	require.NotNil(t, inv.Workers[0].Assets)
	assert.Equal(t, 200, inv.Workers[0].Assets.Files)
	assert.Equal(t, 200, inv.AssetFiles)
	require.Len(t, inv.Domains, 1, "the custom domain is attached")
	assert.Equal(t, "site.example.com", inv.Domains[0].Hostname)
	assert.Equal(t, inv.Workers[0].Name, inv.Domains[0].Service)
	assert.JSONEq(t, `{"enabled": true, "head_sampling_rate": 1, "logs": {"enabled": true, "invocation_logs": true}}`,
		scriptObservability(t, emu, inv.Workers[0].Name), "Workers Logs as the program states them")

	url := up.Outputs["url"].Value.(string)
	status, body := get(t, url+"/section-3/page-003")
	assert.Equal(t, http.StatusOK, status)
	assert.Contains(t, body, "<p>page 3</p>")
	status, body = get(t, url+"/nowhere")
	assert.Equal(t, http.StatusNotFound, status)
	assert.Contains(t, body, "not here")

	previewUp(t, pt, func() { emu.resetCounts(t) })
	calls, counts := emu.cloudflareCalls(t)
	assert.Zero(t, calls, "an unchanged directory makes no call: %v", counts)

	require.NoError(t, os.WriteFile(filepath.Join(site, "section-5", "page-005.html"), []byte("<p>changed</p>\n"), 0o644))
	previewUp(t, pt, func() { emu.resetCounts(t) })
	_, counts = emu.cloudflareCalls(t)
	assert.Equal(t, 1, counts[assetUploadRoute], "one changed file is one bucket: %v", counts)
	assert.Equal(t, 201, emu.inventory(t).AssetFiles, "holding exactly one new file")
	_, body = get(t, url+"/section-5/page-005")
	assert.Contains(t, body, "changed")

	editProgram(t, pt, func(program string) string {
		return strings.Replace(program, "      domains:\n        - hostname: site.example.com\n          zoneName: example.com\n", "", 1)
	})
	previewUp(t, pt, func() { emu.resetCounts(t) })
	assert.Empty(t, emu.inventory(t).Domains, "the dropped domain is detached")
	_, counts = emu.cloudflareCalls(t)
	assert.Zero(t, counts[assetUploadRoute], "no asset moves with the domain: %v", counts)

	pt.Destroy(t)
	emu.requireEmpty(t)
}

// scriptObservability is the observability block of a script's settings.
func scriptObservability(t *testing.T, emu *emulatorProcess, script string) string {
	t.Helper()
	var settings struct {
		Observability json.RawMessage `json:"observability"`
	}
	emu.scriptSettings(t, script, &settings)
	return string(settings.Observability)
}
