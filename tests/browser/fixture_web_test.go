package browser

import (
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openinspect/pulumi-openinspect/internal/reporoot"
	"github.com/openinspect/pulumi-openinspect/provider/installation/webbuild"
)

// The fixture web build's prerendered page, rendered for an installation
// as the provider renders it, opens the control plane's WebSocket at the
// data-ws-url it was given plus /fixture/ws, shows the control plane's hello
// and the echo of its ping. A Go server stands in for the control plane
// here; tests/engine runs the page against the fixture control plane in the
// emulator's runtime.
func TestFixtureWebPageGreetsTheControlPlane(t *testing.T) {
	const controlPlane = "/__workers/open-inspect-control-plane-browser"
	sockets := &socketServer{greeting: `{"type":"hello","deployment":"browser-test"}`, echo: true}
	wsServer := httptest.NewServer(sockets)
	defer wsServer.Close()
	wsURL := "ws://" + strings.TrimPrefix(wsServer.URL, "http://") + controlPlane

	keys, err := webbuild.GenerateSecrets(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	build := filepath.Join(reporoot.Dir(), "tests", "fixtures", "upstream", "packages", "web", ".open-next")
	rendered := t.TempDir()
	res, err := webbuild.Render(os.DirFS(build), webbuild.Installation{
		Values:  webbuild.Values{WSURL: wsURL, SandboxProvider: "modal", AppName: "Open-Inspect"},
		Secrets: keys,
	}, webbuild.Dir(rendered))
	if err != nil {
		t.Fatalf("rendering the fixture web build: %v", err)
	}
	// The web Worker's URL in the emulator: its assets under a path prefix.
	const web = "/__workers/open-inspect-web-browser"
	pages := httptest.NewServer(http.StripPrefix(web, http.FileServer(http.Dir(filepath.Join(rendered, res.Assets)))))
	defer pages.Close()

	page := Load(t, pages.URL+web+"/", Options{
		Screenshot: ArtefactPath(t, "fixture-web.png"),
		WaitFor:    WaitForText("#ws-echo", "echo: ping"),
	})

	if want := `<p id="ws-status">connected: hello browser-test</p>`; !strings.Contains(page.DOM, want) {
		t.Errorf("the page does not show the control plane's hello %q:\n%s", want, page.DOM)
	}
	if want := wsURL + "/fixture/ws"; len(page.WebSockets) != 1 || page.WebSockets[0] != want {
		t.Errorf("the page's WebSockets = %q, want [%q]", page.WebSockets, want)
	}
	upgrades, received := sockets.waitReceived(t, 1)
	if want := controlPlane + "/fixture/ws"; len(upgrades) != 1 || upgrades[0] != want {
		t.Errorf("upgrade requests on %q, want one on %s", upgrades, want)
	}
	if len(received) != 1 || received[0] != "ping" {
		t.Errorf("the page sent %q, want [\"ping\"] after the hello", received)
	}
}
