// Package browser loads a page in headless Chromium (Debian's package,
// installed by .ci/browser-tools.sh) for tests: it waits until the page's
// scripts made it say what the test waits for, then returns the DOM as the
// scripts left it, the computed styles the test asked for, every request
// the page made with its outcome (the network log), the WebSocket URLs it
// opened and what it logged, and writes a PNG screenshot the test keeps as
// an artefact.
//
// Chromium's one-shot flags (--dump-dom, --screenshot with
// --virtual-time-budget) dump the page as soon as virtual time runs out, and
// virtual time does not wait for a WebSocket's messages, which arrive in real
// time: a page that shows what its socket received is dumped before it shows
// it. So Load drives Chromium over the DevTools protocol on a pipe
// (--remote-debugging-pipe, no port to find or leak) and polls a condition
// with a deadline instead.
package browser

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// DefaultChromium is where Debian's chromium package puts its launcher.
const DefaultChromium = "/usr/bin/chromium"

// Options says what Load waits for and where the screenshot goes.
type Options struct {
	// Screenshot is the path of the PNG to write (its directory is made);
	// required: ArtefactPath gives one that outlives the test.
	Screenshot string
	// WaitFor is a JavaScript expression polled after the load event until
	// it is truthy (WaitForText builds one); empty means the load event.
	WaitFor string
	// Timeout bounds the whole load: start, navigation and wait (default 60 s,
	// generous because two cores run the tests side by side).
	Timeout time.Duration
	// Width and Height are the viewport's (default 1280 by 800).
	Width, Height int
	// Styles are the computed styles to read once the wait ended, into
	// Page.Styles.
	Styles []Style
}

// Style names one computed style: a CSS property of the first element the
// selector matches, as getComputedStyle resolves it (colours as
// "rgb(r, g, b)", lengths in px).
type Style struct {
	Selector, Property string
}

// Request is one HTTP request the page made, from Chromium's Network events
// (a redirect is a request of its own, with its 3xx). WebSockets are in
// Page.WebSockets instead.
type Request struct {
	URL, Method string
	// Type is Chromium's resource type: Document, Stylesheet, Script,
	// Fetch, Image, ...
	Type string
	// Status is the HTTP status; 0 while no response arrived.
	Status int
	// Failed is set by Network.loadingFailed, with its Error
	// (net::ERR_CONNECTION_REFUSED, ...) and whether the page canceled it.
	Failed   bool
	Error    string
	Canceled bool
}

// Pending says no response and no failure arrived for it.
func (r Request) Pending() bool { return r.Status == 0 && !r.Failed }

// Problem says what is wrong with the request, "" when it succeeded: it
// was answered 4xx or 5xx, failed (Chromium aborts a script or stylesheet
// it got a 404 for: both are said), or never finished.
func (r Request) Problem() string {
	var parts []string
	if r.Status >= 400 {
		parts = append(parts, fmt.Sprintf("HTTP %d", r.Status))
	}
	switch {
	case r.Failed && r.Canceled:
		parts = append(parts, "canceled ("+r.Error+")")
	case r.Failed:
		parts = append(parts, "failed: "+r.Error)
	case r.Pending():
		parts = append(parts, "no response")
	}
	return strings.Join(parts, ", then ")
}

func (r Request) String() string {
	outcome := r.Problem()
	if outcome == "" {
		outcome = fmt.Sprintf("HTTP %d", r.Status)
	}
	return fmt.Sprintf("%s %s (%s): %s", r.Method, r.URL, r.Type, outcome)
}

// Page is what Load saw.
type Page struct {
	// DOM is document.documentElement.outerHTML when the wait ended.
	DOM string
	// WebSockets are the URLs of the WebSockets the page created, in order.
	WebSockets []string
	// Console holds the page's console output, uncaught exceptions and
	// Chromium's log entries for it (failed loads, refused sockets).
	Console []string
	// Requests is the network log: every request the page made, in the
	// order it made them. Load waits (within its budget) until each has its
	// response or failure before it returns.
	Requests []Request
	// Styles holds the values of Options.Styles; one whose selector
	// matched no element is absent.
	Styles map[Style]string

	requestIndex map[string]int // Chromium's requestId → its entry in Requests
}

// ProblemRequests are the requests with a Problem: failed, 4xx or 5xx, or
// never finished.
func (p Page) ProblemRequests() []Request {
	var out []Request
	for _, r := range p.Requests {
		if r.Problem() != "" {
			out = append(out, r)
		}
	}
	return out
}

func (p *Page) pendingRequests() int {
	n := 0
	for _, r := range p.Requests {
		if r.Pending() {
			n++
		}
	}
	return n
}

// WaitForText is a WaitFor expression true once the element matched by the
// CSS selector exists and its text contains substring.
func WaitForText(selector, substring string) string {
	sel, _ := json.Marshal(selector)
	sub, _ := json.Marshal(substring)
	return fmt.Sprintf("(() => { const e = document.querySelector(%s); return !!e && e.textContent.includes(%s); })()", sel, sub)
}

// Chromium returns the browser the tests run: $CHROMIUM, else Debian's
// /usr/bin/chromium. A missing browser is an error telling how to install
// it; tests fail on it, never skip.
func Chromium() (string, error) {
	path := os.Getenv("CHROMIUM")
	if path == "" {
		path = DefaultChromium
	}
	if _, err := exec.LookPath(path); err != nil {
		return "", fmt.Errorf("chromium is not installed at %s (%v): run .ci/browser-tools.sh", path, err)
	}
	return path, nil
}

// Load opens url in a fresh headless Chromium (a throwaway profile under
// t.TempDir), waits for opts.WaitFor, writes the screenshot and returns the
// page. Any failure, a wait that times out included, fails t; the
// screenshot and what the page logged are still written and reported then.
func Load(t testing.TB, url string, opts Options) Page {
	t.Helper()
	page, err := load(t.TempDir(), url, opts)
	if err != nil {
		t.Fatalf("browser: loading %s: %v\n%s", url, err, page.report())
	}
	return page
}

func (p Page) report() string {
	var b strings.Builder
	for _, r := range p.Requests {
		fmt.Fprintf(&b, "request: %s\n", r)
	}
	if len(p.WebSockets) > 0 {
		fmt.Fprintf(&b, "websockets: %s\n", strings.Join(p.WebSockets, ", "))
	}
	for _, line := range p.Console {
		fmt.Fprintf(&b, "console: %s\n", line)
	}
	if p.DOM != "" {
		fmt.Fprintf(&b, "dom: %s\n", p.DOM)
	}
	return b.String()
}

func load(profile, url string, opts Options) (page Page, err error) {
	if opts.Screenshot == "" {
		return page, errors.New("Options.Screenshot is empty: give the PNG's path (browser.ArtefactPath)")
	}
	chromium, err := Chromium()
	if err != nil {
		return page, err
	}
	if opts.Timeout == 0 {
		opts.Timeout = 60 * time.Second
	}
	if opts.Width == 0 || opts.Height == 0 {
		opts.Width, opts.Height = 1280, 800
	}
	if err := os.MkdirAll(filepath.Dir(opts.Screenshot), 0o755); err != nil {
		return page, fmt.Errorf("making the screenshot's directory: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), opts.Timeout)
	defer cancel()

	b, err := startChromium(chromium, profile, opts.Width, opts.Height, &page)
	if err != nil {
		return page, err
	}
	defer func() {
		if stopErr := b.stop(); stopErr != nil && err == nil {
			err = stopErr
		}
		if err != nil {
			err = fmt.Errorf("%w\nchromium's stderr (last lines):\n%s", err, b.stderrTail())
		}
	}()
	return page, b.visit(ctx, url, opts, &page)
}

// running is one Chromium process and its DevTools pipe.
type running struct {
	cmd     *exec.Cmd
	stderr  *bytes.Buffer
	tools   *devtools
	toPipe  *os.File
	exited  chan error
	session string
}

func startChromium(chromium, profile string, width, height int, page *Page) (*running, error) {
	// Chromium reads commands on fd 3 and writes on fd 4.
	commandsR, commandsW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("making the devtools pipe: %w", err)
	}
	repliesR, repliesW, err := os.Pipe()
	if err != nil {
		commandsR.Close()
		commandsW.Close()
		return nil, fmt.Errorf("making the devtools pipe: %w", err)
	}
	cmd := exec.Command(chromium,
		"--headless",
		"--no-sandbox", // CI runs as root, where Chromium's sandbox refuses to start
		"--disable-gpu",
		"--user-data-dir="+profile,
		"--remote-debugging-pipe",
		fmt.Sprintf("--window-size=%d,%d", width, height),
		"--no-first-run",
		"--no-default-browser-check",
		"--disable-background-networking", // no update or safe-browsing requests off loopback
		"--disable-component-update",
		"--disable-sync",
		"--hide-scrollbars",
		"--mute-audio",
		"about:blank",
	)
	r := &running{cmd: cmd, stderr: &bytes.Buffer{}, toPipe: commandsW, exited: make(chan error, 1)}
	cmd.Stderr = r.stderr
	cmd.Stdout = r.stderr
	cmd.ExtraFiles = []*os.File{commandsR, repliesW}
	err = cmd.Start()
	// The child holds its own copies; ours would keep the pipe open after it exits.
	commandsR.Close()
	repliesW.Close()
	if err != nil {
		commandsW.Close()
		repliesR.Close()
		return nil, fmt.Errorf("starting %s: %w", chromium, err)
	}
	go func() {
		r.exited <- cmd.Wait()
		repliesR.Close()
	}()
	r.tools = newDevtools(commandsW, repliesR, page.record)
	return r, nil
}

// record keeps what a test may want to see from the page's events.
func (p *Page) record(m message) {
	switch m.Method {
	case "Network.requestWillBeSent":
		var e struct {
			RequestID string
			Type      string
			Request   struct{ URL, Method string }
			// Set when this continues a redirect: that hop's answer.
			RedirectResponse *struct{ Status int }
		}
		if json.Unmarshal(m.Params, &e) != nil {
			return
		}
		if p.requestIndex == nil {
			p.requestIndex = map[string]int{}
		}
		if i, ok := p.requestIndex[e.RequestID]; ok && e.RedirectResponse != nil {
			p.Requests[i].Status = e.RedirectResponse.Status
		}
		p.requestIndex[e.RequestID] = len(p.Requests)
		p.Requests = append(p.Requests, Request{URL: e.Request.URL, Method: e.Request.Method, Type: e.Type})
	case "Network.responseReceived":
		var e struct {
			RequestID string
			Response  struct{ Status int }
		}
		if json.Unmarshal(m.Params, &e) == nil {
			if i, ok := p.requestIndex[e.RequestID]; ok {
				p.Requests[i].Status = e.Response.Status
			}
		}
	case "Network.loadingFailed":
		var e struct {
			RequestID string
			ErrorText string
			Canceled  bool
		}
		if json.Unmarshal(m.Params, &e) == nil {
			if i, ok := p.requestIndex[e.RequestID]; ok {
				r := &p.Requests[i]
				r.Failed, r.Error, r.Canceled = true, e.ErrorText, e.Canceled
			}
		}
	case "Network.webSocketCreated":
		var e struct{ URL string }
		if json.Unmarshal(m.Params, &e) == nil {
			p.WebSockets = append(p.WebSockets, e.URL)
		}
	case "Runtime.consoleAPICalled":
		var e struct {
			Type string
			Args []struct {
				Value       json.RawMessage
				Description string
			}
		}
		if json.Unmarshal(m.Params, &e) == nil {
			parts := make([]string, 0, len(e.Args))
			for _, a := range e.Args {
				var s string
				switch {
				case json.Unmarshal(a.Value, &s) == nil:
					parts = append(parts, s)
				case len(a.Value) > 0:
					parts = append(parts, string(a.Value))
				default:
					parts = append(parts, a.Description)
				}
			}
			p.Console = append(p.Console, e.Type+": "+strings.Join(parts, " "))
		}
	case "Runtime.exceptionThrown":
		var e struct {
			ExceptionDetails struct {
				Text      string
				Exception struct{ Description string }
			}
		}
		if json.Unmarshal(m.Params, &e) == nil {
			p.Console = append(p.Console, "exception: "+e.ExceptionDetails.Text+" "+e.ExceptionDetails.Exception.Description)
		}
	case "Log.entryAdded":
		var e struct {
			Entry struct{ Level, Source, Text, URL string }
		}
		if json.Unmarshal(m.Params, &e) == nil {
			p.Console = append(p.Console, fmt.Sprintf("log %s %s: %s %s", e.Entry.Level, e.Entry.Source, e.Entry.Text, e.Entry.URL))
		}
	}
}

// visit opens a page target, navigates it to url, waits, then reads the DOM
// and takes the screenshot. The DOM and screenshot are taken even when the
// wait timed out, so the failure shows what the page did show.
func (r *running) visit(ctx context.Context, url string, opts Options, page *Page) error {
	var created struct{ TargetID string }
	if err := r.tools.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &created); err != nil {
		return err
	}
	var attached struct{ SessionID string }
	if err := r.tools.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": created.TargetID, "flatten": true}, &attached); err != nil {
		return err
	}
	r.session = attached.SessionID
	for _, domain := range []string{"Page.enable", "Runtime.enable", "Network.enable", "Log.enable"} {
		if err := r.tools.call(ctx, r.session, domain, struct{}{}, nil); err != nil {
			return err
		}
	}
	var nav struct{ ErrorText string }
	if err := r.tools.call(ctx, r.session, "Page.navigate", map[string]any{"url": url}, &nav); err != nil {
		return err
	}
	if nav.ErrorText != "" {
		return fmt.Errorf("navigation failed: %s", nav.ErrorText)
	}
	waitErr := r.tools.waitEvent(ctx, r.session, "Page.loadEventFired")
	if waitErr == nil && opts.WaitFor != "" {
		waitErr = r.poll(ctx, opts.WaitFor, false)
	}
	// Read what the page shows with a fresh budget when the wait used it up.
	readCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	// The requests the page made by now get their outcome (a response or a
	// failure arrives as an event, not necessarily before the wait ended);
	// one still pending when the budget ends is reported as such.
	settleCtx, cancelSettle := context.WithTimeout(readCtx, 5*time.Second)
	for page.pendingRequests() > 0 {
		if r.tools.pump(settleCtx) != nil {
			break
		}
	}
	cancelSettle()
	stylesErr := r.styles(readCtx, opts.Styles, page)
	dom, domErr := r.evaluateString(readCtx, "document.documentElement.outerHTML")
	page.DOM = dom
	shotErr := r.screenshot(readCtx, opts.Screenshot)
	r.tools.drain()
	return errors.Join(waitErr, stylesErr, domErr, shotErr)
}

// styles reads each computed style into page.Styles.
func (r *running) styles(ctx context.Context, styles []Style, page *Page) error {
	if len(styles) == 0 {
		return nil
	}
	page.Styles = map[Style]string{}
	var errs []error
	for _, st := range styles {
		sel, _ := json.Marshal(st.Selector)
		prop, _ := json.Marshal(st.Property)
		expr := fmt.Sprintf("(() => { const e = document.querySelector(%s); return e ? getComputedStyle(e).getPropertyValue(%s) : null; })()", sel, prop)
		var res struct {
			Result           struct{ Value *string }
			ExceptionDetails *struct{ Text string }
		}
		if err := r.tools.call(ctx, r.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &res); err != nil {
			errs = append(errs, fmt.Errorf("computed style %s of %s: %w", st.Property, st.Selector, err))
			continue
		}
		switch {
		case res.ExceptionDetails != nil:
			errs = append(errs, fmt.Errorf("computed style %s of %s: %s", st.Property, st.Selector, res.ExceptionDetails.Text))
		case res.Result.Value != nil:
			page.Styles[st] = *res.Result.Value
		}
	}
	return errors.Join(errs...)
}

// poll evaluates expr every 50 ms until it is truthy or ctx ends. An
// evaluation that fails ends the wait, unless retryFailures: a page that is
// navigating loses its context for a moment, and the next try reaches the
// new page.
func (r *running) poll(ctx context.Context, expr string, retryFailures bool) error {
	var last string
	for {
		var res struct {
			Result           struct{ Value any }
			ExceptionDetails *struct {
				Text      string
				Exception struct{ Description string }
			}
		}
		err := r.tools.call(ctx, r.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &res)
		switch {
		case err != nil && ctx.Err() != nil:
		case err != nil && !retryFailures:
			return err
		case err != nil:
			last = "; it last failed: " + err.Error()
		case res.ExceptionDetails != nil:
			last = fmt.Sprintf("; it last threw %s %s", res.ExceptionDetails.Text, res.ExceptionDetails.Exception.Description)
		case truthy(res.Result.Value):
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waited %s was not true in time%s", expr, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func truthy(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return v
	case float64:
		return v != 0
	case string:
		return v != ""
	default:
		return true
	}
}

func (r *running) evaluateString(ctx context.Context, expr string) (string, error) {
	var res struct{ Result struct{ Value string } }
	if err := r.tools.call(ctx, r.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &res); err != nil {
		return "", err
	}
	return res.Result.Value, nil
}

func (r *running) screenshot(ctx context.Context, path string) error {
	var shot struct{ Data string }
	if err := r.tools.call(ctx, r.session, "Page.captureScreenshot", map[string]any{"format": "png"}, &shot); err != nil {
		return err
	}
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		return fmt.Errorf("decoding the screenshot: %w", err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		return fmt.Errorf("writing the screenshot: %w", err)
	}
	return nil
}

// stop asks Chromium to close, and kills it (this process only, by its own
// handle) when it has not exited after a few seconds.
func (r *running) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = r.tools.call(ctx, "", "Browser.close", struct{}{}, nil)
	r.toPipe.Close()
	select {
	case <-r.exited:
		return nil
	case <-time.After(10 * time.Second):
		if err := r.cmd.Process.Kill(); err != nil {
			return fmt.Errorf("killing chromium (pid %d): %w", r.cmd.Process.Pid, err)
		}
		<-r.exited
		return fmt.Errorf("chromium (pid %d) did not exit after Browser.close; killed it", r.cmd.Process.Pid)
	}
}

func (r *running) stderrTail() string {
	lines := strings.Split(strings.TrimRight(r.stderr.String(), "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}
