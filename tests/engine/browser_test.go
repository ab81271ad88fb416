package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/openinspect/pulumi-openinspect/tests/browser"
)

// TestBrowserLoadsTheWebUI deploys examples/yaml as it is (the full default
// installation, web.platform cloudflare) from the fixture checkout to the
// emulator, whose workerd runs the deployed workers, then loads webUrl in
// headless Chromium as a user would: the page's script opens the control
// plane's WebSocket at the URL the provider rendered into it plus
// /fixture/ws, the running fixture control plane greets it with this
// deployment's name and echoes the page's ping. The screenshot is kept under
// the artefacts directory (browser.ArtefactDir).
func TestBrowserLoadsTheWebUI(t *testing.T) {
	requirePulumi(t)
	emu := startEmulator(t)
	pt := newInstallationWithWebTest(t, emu)
	pt.SetConfig(t, "openinspect:cacheDir", t.TempDir())
	up := previewUp(t, pt)

	webURL, _ := up.Outputs["webUrl"].Value.(string)
	assert.Equal(t, emu.workerURL(webScript), webURL)
	wsURL := workerWebSocket(emu.url, controlPlaneScript)
	shot := browser.ArtefactPath(t, "web-ui.png")
	page := browser.Load(t, webURL, browser.Options{
		Screenshot: shot,
		WaitFor:    browser.WaitForText("#ws-echo", "echo: ping"),
	})
	t.Logf("screenshot kept at %s", shot)

	assert.Contains(t, page.DOM, "<title>Open-Inspect</title>", "the web Worker's page, rendered for this installation")
	assert.Contains(t, page.DOM, `<p id="ws-status">connected: hello engine</p>`,
		"the control plane running in workerd greeted the page with its deployment's name")
	assert.Equal(t, []string{wsURL + "/fixture/ws"}, page.WebSockets, "the page asked for this installation's control-plane WebSocket")
}
