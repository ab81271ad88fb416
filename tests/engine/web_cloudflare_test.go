package engine

import (
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pulumi/providertest/pulumitest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/internal/loopback"
	"github.com/openinspect/pulumi-openinspect/provider/installation/webbuild"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
)

const (
	webScript          = "open-inspect-web-engine"
	controlPlaneScript = "open-inspect-control-plane-engine"
)

// fixtureWebBuild is the fixture checkout's placeholder OpenNext build.
func fixtureWebBuild() string {
	return filepath.Join(repoRoot(), "tests", "fixtures", "upstream", "packages", "web", ".open-next")
}

// webAssetContents are the contents (SHA-256 and extension, what tells one
// uploaded asset from another) of the fixture's assets rendered with these
// values, written here with webbuild directly: the assets hold no key, so
// any keys give the same ones.
func webAssetContents(t *testing.T, values webbuild.Values) map[string]bool {
	t.Helper()
	keys, err := webbuild.GenerateSecrets(rand.Reader)
	require.NoError(t, err)
	out := t.TempDir()
	res, err := webbuild.Render(os.DirFS(fixtureWebBuild()), webbuild.Installation{Values: values, Secrets: keys}, webbuild.Dir(out))
	require.NoError(t, err)
	contents := map[string]bool{}
	for _, f := range res.Files {
		if strings.HasPrefix(f.Path, res.Assets+"/") {
			contents[f.SHA256+path.Ext(f.Path)] = true
		}
	}
	require.NotEmpty(t, contents)
	return contents
}

func webWorker(t *testing.T, inv emulator.Inventory) emulator.WorkerEntry {
	t.Helper()
	for _, w := range inv.Workers {
		if w.Name == webScript {
			return w
		}
	}
	t.Fatalf("no worker %s in the emulator: %+v", webScript, inv.Workers)
	return emulator.WorkerEntry{}
}

// renderedKeys reads the server-actions key and the preview-mode signing
// key out of the one rendered web module under the provider's cache.
func renderedKeys(t *testing.T, cacheDir string) [2]string {
	t.Helper()
	modules, err := filepath.Glob(filepath.Join(cacheDir, "web", "*", "worker.js"))
	require.NoError(t, err)
	require.Len(t, modules, 1, "one rendering of the web")
	raw, err := os.ReadFile(modules[0])
	require.NoError(t, err)
	var keys [2]string
	for i, re := range []*regexp.Regexp{
		regexp.MustCompile(`encryptionKey\\": \\"([A-Za-z0-9+/]{43}=)`),
		regexp.MustCompile(`"previewModeSigningKey": "([0-9a-f]{64})"`),
	} {
		m := re.FindSubmatch(raw)
		require.NotNil(t, m, "%s in %s", re, modules[0])
		keys[i] = string(m[1])
	}
	return keys
}

// scriptTags are the src of every <script> in a page.
var scriptTags = regexp.MustCompile(`<script src="([^"]+)"`)

// TestOpenInspectWebOnCloudflare deploys examples/yaml as it is, the full
// installation with web.platform cloudflare, from the fixture checkout to the
// emulator: the web Worker's assets are uploaded once; GET webUrl returns the
// fixture's prerendered page carrying this installation's WebSocket URL and
// app name, and the chunks it loads are served; the control plane's
// WEB_APP_URL is the web's URL; a second up makes zero calls; changing
// appName redeploys the web and uploads exactly the assets whose content
// changed, none of the others; destroy leaves the emulator empty.
func TestOpenInspectWebOnCloudflare(t *testing.T) {
	t.Parallel()
	requirePulumi(t)
	emu := startEmulator(t)
	pt := newInstallationWithWebTest(t, emu)
	cacheDir := t.TempDir()
	pt.SetConfig(t, "openinspect:cacheDir", cacheDir)

	up := previewUp(t, pt, func() { emu.resetCounts(t) })
	_, counts := emu.cloudflareCalls(t)
	webURL := emu.workerURL(webScript)
	wsURL := workerWebSocket(emu.url, controlPlaneScript)
	assert.Equal(t, webURL, up.Outputs["webUrl"].Value)
	assert.Equal(t, "cloudflare", webPlatform(t, pt))

	values := webbuild.Values{WSURL: wsURL, SandboxProvider: "modal", AppName: "Open-Inspect"}
	first := webAssetContents(t, values)
	inv := emu.inventory(t)
	web := webWorker(t, inv)
	require.NotNil(t, web.Assets)
	assert.Equal(t, len(first), web.Assets.Files, "every asset of the rendered build")
	assert.Equal(t, len(first), inv.AssetFiles, "each asset held once: only the web has assets")
	// The web is created beside the control plane it binds, so its assets
	// go up while the control plane waits for the database and the sandbox.
	// When it is first (as it nearly always is), it is uploaded without
	// that binding, then again with it once the control plane exists, and
	// that upload takes a second session's token (the first used its token
	// up; the files are not sent again).
	assert.Contains(t, []int{1, 2}, counts[assetSessionRoute], "%v", counts)
	// The emulator asks for the files in buckets of 10 (as assets_test.go's
	// 200 files in 20 buckets): one upload request per bucket, none twice.
	assert.Equal(t, (len(first)+9)/10, counts[assetUploadRoute], "%d files in buckets of 10: %v", len(first), counts)
	assert.True(t, web.WorkersDev)

	bindings := emu.workerBindings(t, webScript)
	assert.Equal(t, "service", bindings["CONTROL_PLANE_WORKER"]["type"])
	assert.Equal(t, controlPlaneScript, bindings["CONTROL_PLANE_WORKER"]["service"])
	assert.Equal(t, "secret_text", bindings["SERVICE_AUTH_SECRET"]["type"])
	assert.Equal(t, "assets", bindings["ASSETS"]["type"])
	assert.Equal(t, wsURL, bindings["NEXT_PUBLIC_WS_URL"]["text"])
	assert.Equal(t, emu.workerURL(controlPlaneScript), bindings["CONTROL_PLANE_URL"]["text"])
	assert.Equal(t, webURL, emu.workerBindings(t, controlPlaneScript)["WEB_APP_URL"]["text"],
		"the control plane's web origin is the web Worker's URL")

	// The installation's own Next keys are in the module it uploaded (the
	// fixture's worker inlines them as the real build does), not the
	// build's, and never in the state.
	keys := renderedKeys(t, cacheDir)
	manifest, err := webbuild.ReadManifest(os.DirFS(fixtureWebBuild()))
	require.NoError(t, err)
	assert.NotEqual(t, manifest.BuildSecrets.ServerActionsEncryptionKey, keys[0])
	assert.NotEqual(t, manifest.BuildSecrets.PreviewModeSigningKey, keys[1])
	requireNoPlaintext(t, pt.CurrentStack(), keys[0])
	requireNoPlaintext(t, pt.CurrentStack(), keys[1])

	status, page := get(t, webURL)
	require.Equal(t, http.StatusOK, status, "%s", page)
	assert.Contains(t, page, "<title>Open-Inspect</title>")
	assert.Contains(t, page, `data-ws-url="`+wsURL+`"`, "the browser code connects to this installation's control plane")
	assert.NotContains(t, page, "OIPH_", "no placeholder is left")
	srcs := scriptTags.FindAllStringSubmatch(page, -1)
	require.NotEmpty(t, srcs)
	for _, src := range srcs {
		status, body := get(t, webURL+src[1])
		assert.Equal(t, http.StatusOK, status, "%s: %s", src[1], body)
	}

	previewUp(t, pt, func() { emu.resetCounts(t) })
	calls, counts := emu.cloudflareCalls(t)
	assert.Zero(t, calls, "an unchanged installation makes no call: %v", counts)

	editProgram(t, pt, func(program string) string {
		return strings.Replace(program, componentProperties, componentProperties+"      appName: Acme Inspect\n", 1)
	})
	previewUp(t, pt, func() { emu.resetCounts(t) })
	_, counts = emu.cloudflareCalls(t)
	values.AppName = "Acme Inspect"
	second := webAssetContents(t, values)
	changed := 0
	for c := range second {
		if !first[c] {
			changed++
		}
	}
	require.Positive(t, changed)
	require.Less(t, changed, len(second), "some assets do not hold the app name")
	assert.Equal(t, len(first)+changed, emu.inventory(t).AssetFiles,
		"the account gained exactly the %d assets whose content changed, no unchanged one again", changed)
	// The web is created beside the control plane it binds, so its assets
	// go up while the control plane waits for the database and the sandbox.
	// When it is first (as it nearly always is), it is uploaded without
	// that binding, then again with it once the control plane exists, and
	// that upload takes a second session's token (the first used its token
	// up; the files are not sent again).
	assert.Contains(t, []int{1, 2}, counts[assetSessionRoute], "%v", counts)
	assert.Equal(t, 1, counts[assetUploadRoute], "the changed assets in one bucket: %v", counts)
	assert.Equal(t, 3, counts[uploadRoute], "APP_NAME: the control plane, the Slack bot and the web re-upload: %v", counts)
	_, page = get(t, webURL)
	assert.Contains(t, page, "<title>Acme Inspect</title>")

	pt.Destroy(t)
	emu.requireEmpty(t)
}

// webPlatform reads the component's webPlatform output (examples/yaml does
// not export it).
func webPlatform(t *testing.T, pt *pulumitest.PulumiTest) string {
	t.Helper()
	state := pt.ExportStack(t)
	var deployment struct {
		Resources []struct {
			Type    string         `json:"type"`
			Outputs map[string]any `json:"outputs"`
		} `json:"resources"`
	}
	require.NoError(t, json.Unmarshal(state.Deployment, &deployment))
	for _, r := range deployment.Resources {
		if r.Type == "openinspect:index:OpenInspect" {
			platform, _ := r.Outputs["webPlatform"].(string)
			return platform
		}
	}
	t.Fatal("no OpenInspect component in the state")
	return ""
}

// cloudflareGet reads one Cloudflare API path from the emulator into out.
func (e *emulatorProcess) cloudflareGet(t *testing.T, apiPath string, out any) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, e.cloudflareBaseURL()+apiPath, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+emulatorToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if resp.StatusCode < 300 && out != nil {
		require.NoError(t, json.Unmarshal(raw, out), "%s", raw)
	}
	return resp.StatusCode
}

// TestOpenInspectWebOnCloudflareCustomDomain: a web.customDomain whose zone
// the account lacks, or outside its zone, is refused before any child is
// touched, also without a preview. With a right one the
// hostname is attached to the web Worker through the emulator's Workers
// custom-domains API, its workers.dev URL is off, and https://<hostname> is
// the webUrl and the control plane's WEB_APP_URL. It needs the emulator's
// zones and domains (every account seeded with the zone example.com).
func TestOpenInspectWebOnCloudflareCustomDomain(t *testing.T) {
	// The preflight's Modal calls, reads all: the token's workspace and the
	// environment looked up (EnvironmentGetOrCreate with no creation type).
	modalLookups := map[string]bool{
		"grpc /modal.client.ModalClient/AuthTokenGet":           true,
		"grpc /modal.client.ModalClient/WorkspaceNameLookup":    true,
		"grpc /modal.client.ModalClient/EnvironmentGetOrCreate": true,
	}
	t.Parallel()
	requirePulumi(t)
	emu := startEmulator(t)
	var zones struct {
		Result []struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"result"`
	}
	status := emu.cloudflareGet(t, "zones?name=example.com", &zones)
	require.True(t, status == http.StatusOK && len(zones.Result) == 1,
		"the emulator serves no zone example.com (GET zones answered %d): this test needs the emulator's zones and "+
			"Workers custom domains (seeded zones), which the emulator gains with the Workers settings/domains work", status)
	zoneID := zones.Result[0].ID

	pt := newInstallationWithWebTest(t, emu)
	pt.SetConfig(t, "openinspect:cacheDir", t.TempDir())
	const hostname = "inspect.example.com"
	program := filepath.Join(pt.WorkingDir(), "Pulumi.yaml")
	raw, err := os.ReadFile(program)
	require.NoError(t, err)
	withDomain := func(hostname, zoneID string) {
		t.Helper()
		edited := strings.Replace(string(raw), webOnCloudflare, webOnCloudflare+
			"        customDomain:\n          hostname: "+hostname+"\n          zoneId: "+zoneID+"\n", 1)
		require.NotEqual(t, string(raw), edited, "the edit changed nothing")
		require.NoError(t, os.WriteFile(program, []byte(edited), 0o644))
	}

	// Without a preview (the Automation API's up is `up --skip-preview`)
	// the zone is still checked before anything is built: the lock every
	// child depends on reads it, so the refusal costs reads only.
	const missingZone = "0123456789abcdef0123456789abcdef"
	for _, tc := range []struct{ hostname, zoneID, want string }{
		{hostname, missingZone, "web.customDomain.zoneId: the account has no zone " + missingZone},
		{"inspect.example.org", zoneID, "web.customDomain: inspect.example.org is not in zone example.com"},
	} {
		withDomain(tc.hostname, tc.zoneID)
		_, err := pt.CurrentStack().Up(t.Context())
		require.Error(t, err)
		assert.Contains(t, err.Error(), tc.want)
		_, counts := emu.cloudflareCalls(t)
		for key := range counts {
			assert.True(t, strings.HasPrefix(key, "GET ") || modalLookups[key],
				"a refused custom domain made %s before refusing: %v", key, counts)
		}
		emu.requireEmpty(t)
	}

	withDomain(hostname, zoneID)
	up := previewUp(t, pt)
	assert.Equal(t, "https://"+hostname, up.Outputs["webUrl"].Value)
	assert.Equal(t, "https://"+hostname, emu.workerBindings(t, controlPlaneScript)["WEB_APP_URL"]["text"],
		"the control plane's web origin is the custom domain")
	assert.False(t, webWorker(t, emu.inventory(t)).WorkersDev, "a custom domain turns workers.dev off")

	var domains struct {
		Result []struct {
			Hostname string `json:"hostname"`
			Service  string `json:"service"`
			ZoneID   string `json:"zone_id"`
		} `json:"result"`
	}
	require.Equal(t, http.StatusOK, emu.cloudflareGet(t, "accounts/"+emulatorAccount+"/workers/domains?service="+webScript, &domains))
	require.Len(t, domains.Result, 1)
	assert.Equal(t, hostname, domains.Result[0].Hostname)
	assert.Equal(t, webScript, domains.Result[0].Service)
	assert.Equal(t, zoneID, domains.Result[0].ZoneID)

	// The web is reached at its hostname (the emulator serves a zone's
	// hostnames by Host) and no longer on its workers.dev host.
	status, page := getAtHost(t, emu.url+"/login", hostname)
	assert.Equal(t, http.StatusOK, status, "%s", page)
	assert.Contains(t, page, "<title>Sign in · Open-Inspect</title>")
	status, page = get(t, emu.workerURL(webScript)+"/login")
	assert.Equal(t, http.StatusNotFound, status, "the web's workers.dev host answers: %s", page)

	previewUp(t, pt, func() { emu.resetCounts(t) })
	calls, counts := emu.cloudflareCalls(t)
	assert.Zero(t, calls, "an unchanged installation makes no call: %v", counts)

	pt.Destroy(t)
	emu.requireEmpty(t)
}

// getAtHost is get with the request's Host set: a zone hostname the
// emulator serves, asked at the emulator's address.
func getAtHost(t *testing.T, url, host string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Host = host
	res, err := loopback.Client(0).Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, string(body)
}
