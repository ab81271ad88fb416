package browser

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// The fixture web's stylesheet (tests/fixtures/upstream/packages/web) sets
// these; nothing else on its pages does, so seeing them computed proves the
// stylesheet at /_next/static/css/ loaded and applied.
var fixtureWebStyles = map[Style]string{
	{"body", "background-color"}:                                 "rgb(15, 23, 42)",
	{"body", "color"}:                                            "rgb(226, 232, 240)",
	{`button[data-provider="github"]`, "background-color"}:       "rgb(37, 99, 235)",
	{`button[data-provider="github"]`, "border-top-left-radius"}: "8px",
}

// fixtureWebFont is the family the stylesheet gives the body.
const fixtureWebFont = `"DejaVu Sans"`

// LoadFixtureWeb loads the fixture web's sign-in page at url (/ or /login of
// the web Worker's origin) as a person would, keeps its screenshot at shot,
// and checks what they would see: the stylesheet applied (computed styles),
// the client chunks ran (the root is marked data-hydrated="true"), a "Sign
// in with GitHub" button rendered from the control plane's sign-in
// providers, the control plane's WebSocket open (its hello naming
// deployment, then the echo of the page's ping), and a network log without
// a failed request or a 4xx/5xx answer. The page is returned for the
// caller's own checks (URLs, which WebSocket).
func LoadFixtureWeb(t testing.TB, url, shot, deployment string) Page {
	t.Helper()
	os.Remove(shot) // a previous run's screenshot must not pass for this one
	styles := []Style{{"body", "font-family"}}
	for st := range fixtureWebStyles {
		styles = append(styles, st)
	}
	// Not Load: a page that never got as far as the wait still has its
	// checks reported, which say more than the wait's timeout.
	page, loadErr := load(t.TempDir(), url, Options{
		Screenshot: shot,
		WaitFor: `(() => { const app = document.getElementById("app"), echo = document.getElementById("ws-echo");
			return !!app && app.dataset.hydrated === "true" && !!echo && echo.textContent.includes("echo: ping"); })()`,
		Styles: styles,
	})
	if _, err := os.Stat(shot); err != nil {
		t.Errorf("no screenshot: %v", err)
	} else {
		t.Logf("screenshot kept at %s", shot)
	}
	var problems []string
	fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if loadErr != nil {
		fail("%v", loadErr)
	}
	for st, want := range fixtureWebStyles {
		if got, ok := page.Styles[st]; !ok {
			fail("no element matches %s, so its %s cannot be checked", st.Selector, st.Property)
		} else if got != want {
			fail("the stylesheet did not apply: computed %s of %s is %q, want %q", st.Property, st.Selector, got, want)
		}
	}
	if got := page.Styles[Style{"body", "font-family"}]; !strings.HasPrefix(got, fixtureWebFont) {
		fail("the stylesheet did not apply: the body's font-family is %q, want %s first", got, fixtureWebFont)
	}
	if !strings.Contains(page.DOM, `data-hydrated="true"`) {
		fail("the client script did not hydrate the page (no data-hydrated=\"true\")")
	}
	if want := `data-provider="github">Sign in with GitHub</button>`; !strings.Contains(page.DOM, want) {
		fail("no GitHub sign-in button (%s) from the control plane's sign-in providers", want)
	}
	if want := fmt.Sprintf(`<p id="ws-status">connected: hello %s</p>`, deployment); !strings.Contains(page.DOM, want) {
		fail("the page does not show the control plane's hello %s", want)
	}
	if want := `<p id="ws-echo">echo: ping</p>`; !strings.Contains(page.DOM, want) {
		fail("the page does not show the echo %s", want)
	}
	var css, scripts int
	for _, r := range page.Requests {
		switch {
		case r.Type == "Stylesheet" && strings.Contains(r.URL, "/_next/static/css/"):
			css++
		case r.Type == "Script" && strings.Contains(r.URL, "/_next/static/chunks/"):
			scripts++
		}
	}
	if css == 0 || scripts < 3 {
		fail("the page loaded %d stylesheets and %d client chunks from /_next/static/, want 1 and at least 3", css, scripts)
	}
	for _, r := range page.ProblemRequests() {
		fail("a request went wrong: %s", r)
	}
	if len(problems) > 0 {
		t.Errorf("what a person sees at %s is wrong:\n- %s\n%s", url, strings.Join(problems, "\n- "), page.report())
	}
	return page
}
