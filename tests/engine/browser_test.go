package engine

import (
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/browser"
)

// TestBrowserLoadsTheWebUI deploys examples/yaml as it is (the full default
// installation, web.platform cloudflare) from the fixture checkout to the
// emulator, whose workerd runs the deployed workers, then loads webUrl in
// headless Chromium as a person would and checks what they see
// (browser.LoadFixtureWeb): the page styled by its stylesheet from
// /_next/static/ at the web origin's root, hydrated by its client chunks,
// with the "Sign in with GitHub" button the web Worker rendered from the
// control plane's sign-in providers (asked through its CONTROL_PLANE_WORKER
// binding, sig1-signed, answered by the fixture control plane from the
// installation's GitHub OAuth settings), the control plane's WebSocket at
// the URL the provider rendered into the page greeting it with this
// deployment's name and echoing its ping, and no failed request. The
// expectations come from the stack's outputs (webUrl, controlPlaneUrl), not
// from how the emulator spells a Worker's URL. The screenshot is kept under
// the artefacts directory (browser.ArtefactDir).
func TestBrowserLoadsTheWebUI(t *testing.T) {
	t.Parallel()
	requirePulumi(t)
	// The web UI on a loopback port of its own, as make demo serves it: the
	// control plane accepts no other http origin as WEB_APP_URL, and without
	// it the page would say sign-in is unavailable.
	emu := startEmulatorWith(t, os.Stderr, "-local-origin", webScript+"=127.0.0.1:0")
	var origins map[string]string
	emu.admin(t, http.MethodGet, "local-origins", &origins)
	require.NotEmpty(t, origins[webScript], "the emulator's local origins: %v", origins)
	pt := newInstallationWithWebTest(t, emu)
	pt.SetConfig(t, "webAppUrl", origins[webScript])
	pt.SetConfig(t, "openinspect:cacheDir", t.TempDir())
	up := previewUp(t, pt)

	webURL, _ := up.Outputs["webUrl"].Value.(string)
	controlPlaneURL, _ := up.Outputs["controlPlaneUrl"].Value.(string)
	require.Equal(t, origins[webScript], webURL, "the stack's webUrl is the web UI's own origin")
	require.True(t, strings.HasPrefix(controlPlaneURL, "http://"), "the stack's controlPlaneUrl: %q", controlPlaneURL)
	wsURL := "ws://" + strings.TrimPrefix(controlPlaneURL, "http://")

	page := browser.LoadFixtureWeb(t, webURL, browser.ArtefactPath(t, "web-ui.png"), "engine")

	assert.Contains(t, page.DOM, "<title>Open-Inspect</title>", "the web Worker's page, rendered for this installation")
	assert.Equal(t, []string{wsURL + "/fixture/ws"}, page.WebSockets, "the page asked for this installation's control-plane WebSocket")
	origin := strings.TrimSuffix(webURL, "/")
	for _, r := range page.Requests {
		if strings.Contains(r.URL, "/_next/") {
			assert.True(t, strings.HasPrefix(r.URL, origin+"/_next/static/"), "%s is served from the web's origin, at its root", r.URL)
		}
	}
}
