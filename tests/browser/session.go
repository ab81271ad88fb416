package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Session is one headless Chromium a test drives through several pages, as
// a person does: it opens a URL, waits for what a page shows, clicks
// elements with the mouse (trusted input events at the element's centre,
// not a script's click()), and keeps the network log, the console and the
// cookies across navigations. Each step has its own deadline.
type Session struct {
	t       testing.TB
	r       *running
	page    *Page
	timeout time.Duration
}

// Open starts Chromium with a fresh profile and a blank page. Close (run by
// t.Cleanup) stops it.
func Open(t testing.TB, width, height int) *Session {
	t.Helper()
	chromium, err := Chromium()
	if err != nil {
		t.Fatal(err)
	}
	if width == 0 || height == 0 {
		width, height = 1280, 900
	}
	s := &Session{t: t, page: &Page{}, timeout: 60 * time.Second}
	r, err := startChromium(chromium, t.TempDir(), width, height, s.page)
	if err != nil {
		t.Fatal(err)
	}
	s.r = r
	t.Cleanup(func() {
		if err := r.stop(); err != nil {
			t.Errorf("stopping chromium: %v", err)
		}
	})
	ctx, cancel := s.step()
	defer cancel()
	var created struct{ TargetID string }
	if err := r.tools.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &created); err != nil {
		t.Fatal(err)
	}
	var attached struct{ SessionID string }
	if err := r.tools.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": created.TargetID, "flatten": true}, &attached); err != nil {
		t.Fatal(err)
	}
	r.session = attached.SessionID
	for _, domain := range []string{"Page.enable", "Runtime.enable", "Network.enable", "Log.enable"} {
		if err := r.tools.call(ctx, r.session, domain, struct{}{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func (s *Session) step() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.timeout)
}

// fatal fails the test with what the page showed and logged.
func (s *Session) fatal(format string, args ...any) {
	s.t.Helper()
	s.r.tools.drain()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dom, _ := s.r.evaluateString(ctx, "document.documentElement.outerHTML")
	where, _ := s.r.evaluateString(ctx, "location.href")
	s.page.DOM = dom
	s.t.Fatalf("browser: %s\nat %s\n%s", fmt.Sprintf(format, args...), where, s.page.report())
}

// Navigate sends the page to url and waits for its load event.
func (s *Session) Navigate(url string) {
	s.t.Helper()
	ctx, cancel := s.step()
	defer cancel()
	var nav struct{ ErrorText string }
	if err := s.r.tools.call(ctx, s.r.session, "Page.navigate", map[string]any{"url": url}, &nav); err != nil {
		s.fatal("navigating to %s: %v", url, err)
	}
	if nav.ErrorText != "" {
		s.fatal("navigating to %s: %s", url, nav.ErrorText)
	}
	if err := s.r.tools.waitEvent(ctx, s.r.session, "Page.loadEventFired"); err != nil {
		s.fatal("loading %s: %v", url, err)
	}
}

// WaitFor polls the JavaScript expression until it is truthy; a page that
// is navigating meanwhile is waited for.
func (s *Session) WaitFor(expr string) {
	s.t.Helper()
	ctx, cancel := s.step()
	defer cancel()
	if err := s.r.poll(ctx, expr, true); err != nil {
		s.fatal("%v", err)
	}
}

// WaitForWithin is WaitFor with its own time limit, for what takes longer
// than a step (a sandbox booting, an agent at work).
func (s *Session) WaitForWithin(expr string, limit time.Duration) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	if err := s.r.poll(ctx, expr, true); err != nil {
		s.fatal("%v", err)
	}
}

// Type clicks the field selector names, which focuses it, and types text
// into it as the keyboard's input would.
func (s *Session) Type(selector, text string) {
	s.t.Helper()
	s.Click(selector)
	ctx, cancel := s.step()
	defer cancel()
	if err := s.r.tools.call(ctx, s.r.session, "Input.insertText", map[string]any{"text": text}, nil); err != nil {
		s.fatal("typing into %s: %v", selector, err)
	}
}

// WaitForAny polls each expression until one is truthy and returns its
// index.
func (s *Session) WaitForAny(exprs ...string) int {
	s.t.Helper()
	parts := make([]string, len(exprs))
	for i, e := range exprs {
		parts[i] = fmt.Sprintf("((() => { try { return !!(%s); } catch (e) { return false; } })() ? %d : -1)", e, i)
	}
	expr := "Math.max(" + strings.Join(parts, ", ") + ") + 1"
	s.WaitFor(expr)
	var n float64
	s.eval(expr, &n)
	return int(n) - 1
}

// Eval evaluates expr in the page and decodes its value into out.
func (s *Session) Eval(expr string, out any) {
	s.t.Helper()
	s.eval(expr, out)
}

func (s *Session) eval(expr string, out any) {
	s.t.Helper()
	ctx, cancel := s.step()
	defer cancel()
	var res struct {
		Result           struct{ Value json.RawMessage }
		ExceptionDetails *struct {
			Text      string
			Exception struct{ Description string }
		}
	}
	if err := s.r.tools.call(ctx, s.r.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, &res); err != nil {
		s.fatal("evaluating %s: %v", expr, err)
	}
	if res.ExceptionDetails != nil {
		s.fatal("evaluating %s: %s %s", expr, res.ExceptionDetails.Text, res.ExceptionDetails.Exception.Description)
	}
	if out != nil && len(res.Result.Value) > 0 {
		if err := json.Unmarshal(res.Result.Value, out); err != nil {
			s.fatal("decoding %s: %v", res.Result.Value, err)
		}
	}
}

// Text is the text of the first element the CSS selector matches ("" when
// none does).
func (s *Session) Text(selector string) string {
	s.t.Helper()
	sel, _ := json.Marshal(selector)
	var out string
	s.eval(fmt.Sprintf("(() => { const e = document.querySelector(%s); return e ? e.textContent : ''; })()", sel), &out)
	return out
}

// URL is where the page is.
func (s *Session) URL() string {
	s.t.Helper()
	var out string
	s.eval("location.href", &out)
	return out
}

// Click moves the mouse to the centre of the first element the selector
// matches (scrolled into view) and clicks it there, as a person does.
func (s *Session) Click(selector string) {
	s.t.Helper()
	sel, _ := json.Marshal(selector)
	s.WaitFor(fmt.Sprintf("(() => { const e = document.querySelector(%s); return !!e && !e.disabled; })()", sel))
	var box struct{ X, Y float64 }
	s.eval(fmt.Sprintf(`(() => { const e = document.querySelector(%s); e.scrollIntoView({block: "center"});
		const r = e.getBoundingClientRect(); return {x: r.left + r.width / 2, y: r.top + r.height / 2}; })()`, sel), &box)
	ctx, cancel := s.step()
	defer cancel()
	for _, kind := range []string{"mouseMoved", "mousePressed", "mouseReleased"} {
		ev := map[string]any{"type": kind, "x": box.X, "y": box.Y}
		if kind != "mouseMoved" {
			ev["button"], ev["clickCount"] = "left", 1
		}
		if err := s.r.tools.call(ctx, s.r.session, "Input.dispatchMouseEvent", ev, nil); err != nil {
			s.fatal("clicking %s: %v", selector, err)
		}
	}
}

// Cookies are the browser's cookies for url, by name.
func (s *Session) Cookies(url string) map[string]Cookie {
	s.t.Helper()
	ctx, cancel := s.step()
	defer cancel()
	var res struct{ Cookies []Cookie }
	if err := s.r.tools.call(ctx, s.r.session, "Network.getCookies", map[string]any{"urls": []string{url}}, &res); err != nil {
		s.fatal("reading cookies: %v", err)
	}
	out := map[string]Cookie{}
	for _, c := range res.Cookies {
		out[c.Name] = c
	}
	return out
}

// Cookie is one of the browser's cookies.
type Cookie struct {
	Name, Value, Domain, Path, SameSite string
	HTTPOnly                            bool `json:"httpOnly"`
	Secure                              bool
}

// Screenshot writes the page as a PNG at path (its directory made).
func (s *Session) Screenshot(path string) {
	s.t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		s.t.Fatal(err)
	}
	ctx, cancel := s.step()
	defer cancel()
	if err := s.r.screenshot(ctx, path); err != nil {
		s.fatal("screenshot: %v", err)
	}
	s.t.Logf("screenshot kept at %s", path)
}

// Log is what the page did so far: the network log, the WebSockets and the
// console, with the events received so far handled.
func (s *Session) Log() Page {
	s.r.tools.drain()
	return *s.page
}

// ProceedPastCertificateWarning does what a person does on Chromium's
// "Your connection is not private" page for a certificate their machine
// does not trust (the local cloud's own CA): Advanced, then Proceed. It
// reports whether the page was there.
func (s *Session) ProceedPastCertificateWarning() bool {
	s.t.Helper()
	var warned bool
	s.eval(`!!document.getElementById("details-button") && location.href.startsWith("chrome-error://")`, &warned)
	if !warned {
		return false
	}
	s.Click("#details-button")
	s.Click("#proceed-link")
	return true
}
