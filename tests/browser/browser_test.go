package browser

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// socketServer is a WebSocket endpoint written here from RFC 6455: it
// answers the opening handshake with Sec-WebSocket-Accept, sends one text
// frame, then reads the client's masked text frames until it closes,
// echoing each when echo is set.
type socketServer struct {
	greeting string
	echo     bool

	mu       sync.Mutex
	upgrades []string // request paths that asked for an upgrade
	received []string // text frames the client sent
	errs     []error  // protocol violations, not a browser closing its end
}

// acceptKey is Sec-WebSocket-Accept for a client's Sec-WebSocket-Key
// (RFC 6455 section 4.2.2: base64 of SHA-1 of key + the protocol's GUID).
func acceptKey(key string) string {
	sum := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	return base64.StdEncoding.EncodeToString(sum[:])
}

func (s *socketServer) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, err)
}

// seen returns copies of what the server recorded.
func (s *socketServer) seen() (upgrades, received []string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.upgrades), slices.Clone(s.received), errors.Join(s.errs...)
}

// waitReceived waits until the client sent n frames or broke the protocol.
func (s *socketServer) waitReceived(t *testing.T, n int) (upgrades, received []string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		upgrades, received, err := s.seen()
		if err != nil {
			t.Fatalf("the WebSocket server: %v", err)
		}
		if len(received) >= n || time.Now().After(deadline) {
			return upgrades, received
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *socketServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") ||
		!strings.Contains(strings.ToLower(r.Header.Get("Connection")), "upgrade") ||
		r.Header.Get("Sec-WebSocket-Version") != "13" || r.Header.Get("Sec-WebSocket-Key") == "" {
		http.Error(w, "want a WebSocket upgrade", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.upgrades = append(s.upgrades, r.URL.Path)
	s.mu.Unlock()
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		s.fail(fmt.Errorf("hijacking: %w", err))
		return
	}
	defer conn.Close()
	fmt.Fprintf(rw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n", acceptKey(r.Header.Get("Sec-WebSocket-Key")))
	if err := writeText(rw.Writer, s.greeting); err != nil {
		s.fail(fmt.Errorf("sending the greeting: %w", err))
		return
	}
	for {
		_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		opcode, payload, err := readFrame(rw.Reader)
		var violation protocolViolation
		switch {
		case errors.As(err, &violation):
			s.fail(err)
			return
		case err != nil, opcode == opClose:
			return // the browser closed the socket or went away
		case opcode != opText:
			s.fail(fmt.Errorf("the client sent opcode %#x, want only text frames", opcode))
			return
		}
		s.mu.Lock()
		s.received = append(s.received, string(payload))
		s.mu.Unlock()
		if s.echo {
			if err := writeText(rw.Writer, string(payload)); err != nil {
				return
			}
		}
	}
}

// writeText sends one unmasked, final text frame (servers never mask).
func writeText(w *bufio.Writer, text string) error {
	header := []byte{0x80 | opText} // FIN
	switch n := len(text); {
	case n < 126:
		header = append(header, byte(n))
	case n <= 0xffff:
		header = append(header, 126, byte(n>>8), byte(n))
	default:
		header = binary.BigEndian.AppendUint64(append(header, 127), uint64(n))
	}
	w.Write(header)
	w.WriteString(text)
	return w.Flush()
}

const (
	opText  = 0x1
	opClose = 0x8
)

type protocolViolation string

func (p protocolViolation) Error() string { return string(p) }

// readFrame reads one final frame, which a client must mask, and returns
// its opcode and unmasked payload.
func readFrame(r *bufio.Reader) (byte, []byte, error) {
	var head [2]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return 0, nil, err
	}
	if head[0]&0x80 == 0 {
		return 0, nil, protocolViolation("a fragmented frame (this server reads only final ones)")
	}
	if head[1]&0x80 == 0 {
		return 0, nil, protocolViolation("the client's frame is not masked")
	}
	n := uint64(head[1] & 0x7f)
	switch n {
	case 126:
		var ext [2]byte
		if _, err := io.ReadFull(r, ext[:]); err != nil {
			return 0, nil, err
		}
		n = uint64(binary.BigEndian.Uint16(ext[:]))
	case 127:
		var ext [8]byte
		if _, err := io.ReadFull(r, ext[:]); err != nil {
			return 0, nil, err
		}
		n = binary.BigEndian.Uint64(ext[:])
	}
	if n > 1<<20 {
		return 0, nil, protocolViolation(fmt.Sprintf("a frame of %d bytes", n))
	}
	var mask [4]byte
	if _, err := io.ReadFull(r, mask[:]); err != nil {
		return 0, nil, err
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		return 0, nil, err
	}
	for i := range payload {
		payload[i] ^= mask[i%4]
	}
	return head[0] & 0x0f, payload, nil
}

// The RFC's own example of the handshake (section 1.3).
func TestAcceptKeyMatchesRFC6455(t *testing.T) {
	if got, want := acceptKey("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="; got != want {
		t.Fatalf("acceptKey = %s, want %s", got, want)
	}
}

const pageTemplate = `<!doctype html>
<html><head><title>socket page</title></head>
<body>
<h1>WebSocket self-test</h1>
<p id="ws-status">connecting</p>
<script>
  const status = document.getElementById("ws-status");
  const socket = new WebSocket(%q + "/socket/feed");
  socket.onmessage = (event) => {
    status.textContent = "received: " + event.data;
    socket.send("ack " + event.data);
  };
  socket.onerror = () => { status.textContent = "socket error"; };
</script>
</body></html>
`

func TestLoadShowsWhatThePagesWebSocketReceived(t *testing.T) {
	sockets := &socketServer{greeting: "hello from the Go server"}
	wsServer := httptest.NewServer(sockets)
	defer wsServer.Close()
	wsURL := "ws://" + strings.TrimPrefix(wsServer.URL, "http://")
	pages := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, pageTemplate, wsURL)
	}))
	defer pages.Close()

	shot := ArtefactPath(t, "page.png")
	os.Remove(shot) // a previous run's screenshot must not pass this one
	page := Load(t, pages.URL+"/", Options{
		Screenshot: shot,
		WaitFor:    WaitForText("#ws-status", "received:"),
	})

	if want := `<p id="ws-status">received: hello from the Go server</p>`; !strings.Contains(page.DOM, want) {
		t.Errorf("the DOM does not show the socket's message %q:\n%s", want, page.DOM)
	}
	if want := wsURL + "/socket/feed"; len(page.WebSockets) != 1 || page.WebSockets[0] != want {
		t.Errorf("the page's WebSockets = %q, want [%q]", page.WebSockets, want)
	}
	// The reply is sent after the DOM changed; give it the moment it takes.
	upgrades, received := sockets.waitReceived(t, 1)
	if len(upgrades) != 1 || upgrades[0] != "/socket/feed" {
		t.Errorf("upgrade requests on %q, want one on /socket/feed", upgrades)
	}
	if len(received) != 1 || received[0] != "ack hello from the Go server" {
		t.Errorf("the client sent %q, want [\"ack hello from the Go server\"]", received)
	}

	png, err := os.ReadFile(shot)
	if err != nil {
		t.Fatalf("the screenshot: %v", err)
	}
	if signature := []byte("\x89PNG\r\n\x1a\n"); !bytes.HasPrefix(png, signature) {
		t.Errorf("%s does not start with the PNG signature (first bytes %q)", shot, png[:min(len(png), 8)])
	}
	t.Logf("screenshot kept at %s (%d bytes)", shot, len(png))
}

// A page that never says what the test waits for fails with the wait's
// expression, still writes the screenshot and reports what the page logged.
func TestLoadReportsAWaitThatTimesOut(t *testing.T) {
	pages := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><p id="ws-status">connecting</p><script>console.log("page ran")</script>`)
	}))
	defer pages.Close()
	shot := filepath.Join(t.TempDir(), "timeout.png")
	page, err := load(t.TempDir(), pages.URL, Options{
		Screenshot: shot,
		WaitFor:    WaitForText("#ws-status", "received:"),
		Timeout:    3 * time.Second,
	})
	if err == nil {
		t.Fatal("load returned no error for a wait that cannot end")
	}
	if !strings.Contains(err.Error(), "was not true in time") || !strings.Contains(err.Error(), "#ws-status") {
		t.Errorf("the error does not name the wait: %v", err)
	}
	if !strings.Contains(page.DOM, `<p id="ws-status">connecting</p>`) {
		t.Errorf("the DOM at the timeout is missing: %q", page.DOM)
	}
	if !strings.Contains(strings.Join(page.Console, "\n"), "log: page ran") {
		t.Errorf("the page's console output is missing: %q", page.Console)
	}
	if _, err := os.Stat(shot); err != nil {
		t.Errorf("no screenshot after the timeout: %v", err)
	}
}

func TestMissingChromiumSaysHowToInstallIt(t *testing.T) {
	t.Setenv("CHROMIUM", filepath.Join(t.TempDir(), "no-chromium-here"))
	_, err := load(t.TempDir(), "http://127.0.0.1:1/", Options{Screenshot: filepath.Join(t.TempDir(), "x.png")})
	if err == nil || !strings.Contains(err.Error(), "run .ci/browser-tools.sh") {
		t.Fatalf("load without chromium: %v, want an error saying to run .ci/browser-tools.sh", err)
	}
}

// The network log has every request with its outcome (a redirect hop, a
// 404, a refused connection among them), and the computed styles are the
// stylesheet's.
func TestLoadRecordsTheNetworkLogAndComputedStyles(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + closed.Addr().String() + "/nothing-listens-here"
	closed.Close()
	pages := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, `<!doctype html><html><head><link rel="icon" href="data:,"><link rel="stylesheet" href="/style.css"><script src="/old-app.js"></script></head>
<body><p class="note">styled</p><img src="/missing.png" alt="">
<script>fetch(%q).catch(() => { document.body.dataset.fetched = "failed"; });</script></body></html>`, refused)
		case "/style.css":
			w.Header().Set("Content-Type", "text/css")
			fmt.Fprint(w, `body{background-color:rgb(1,2,3);font-family:"DejaVu Sans",sans-serif}.note{padding:7px}`)
		case "/old-app.js":
			http.Redirect(w, r, "/app.js", http.StatusFound)
		case "/app.js":
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprint(w, `document.documentElement.dataset.ran = "yes";`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer pages.Close()

	bg := Style{"body", "background-color"}
	font := Style{"body", "font-family"}
	padding := Style{".note", "padding-left"}
	page := Load(t, pages.URL+"/", Options{
		Screenshot: filepath.Join(t.TempDir(), "network.png"),
		WaitFor:    `document.body && document.body.dataset.fetched === "failed"`,
		Styles:     []Style{bg, font, padding},
	})

	want := map[string]string{
		pages.URL + "/":            "GET Document 200",
		pages.URL + "/style.css":   "GET Stylesheet 200",
		pages.URL + "/old-app.js":  "GET Script 302",
		pages.URL + "/app.js":      "GET Script 200",
		pages.URL + "/missing.png": "GET Image 404",
		refused:                    "GET Fetch 0 failed: net::ERR_CONNECTION_REFUSED",
	}
	got := map[string]string{}
	for _, r := range page.Requests {
		line := fmt.Sprintf("%s %s %d", r.Method, r.Type, r.Status)
		if r.Failed {
			line += " failed: " + r.Error
		}
		got[r.URL] = line
	}
	for url, w := range want {
		if got[url] != w {
			t.Errorf("the network log has %s as %q, want %q\n%s", url, got[url], w, page.report())
		}
	}
	var problems []string
	for _, r := range page.ProblemRequests() {
		problems = append(problems, r.URL+": "+r.Problem())
	}
	wantProblems := []string{pages.URL + "/missing.png: HTTP 404", refused + ": failed: net::ERR_CONNECTION_REFUSED"}
	slices.Sort(problems)
	slices.Sort(wantProblems) // the order of two random ports
	if !slices.Equal(problems, wantProblems) {
		t.Errorf("problem requests = %q, want %q", problems, wantProblems)
	}

	for st, w := range map[Style]string{bg: "rgb(1, 2, 3)", font: `"DejaVu Sans", sans-serif`, padding: "7px"} {
		if page.Styles[st] != w {
			t.Errorf("computed %s of %s = %q, want %q", st.Property, st.Selector, page.Styles[st], w)
		}
	}
	if !strings.Contains(page.DOM, `data-ran="yes"`) {
		t.Errorf("the redirected script did not run:\n%s", page.DOM)
	}
}

// A computed style of an element that is not there is absent from
// Page.Styles (an element with the property unset has its computed value).
func TestLoadLeavesOutAStyleOfNoElement(t *testing.T) {
	pages := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><link rel="icon" href="data:,"><p id="plain">plain</p>`)
	}))
	defer pages.Close()
	absent, plain := Style{"#absent", "color"}, Style{"#plain", "color"}
	page := Load(t, pages.URL, Options{
		Screenshot: filepath.Join(t.TempDir(), "nostyle.png"),
		Styles:     []Style{absent, plain},
	})
	if v, ok := page.Styles[absent]; ok {
		t.Errorf("the style of no element is %q, want it absent", v)
	}
	if v := page.Styles[plain]; v != "rgb(0, 0, 0)" {
		t.Errorf("the default colour of #plain is %q, want rgb(0, 0, 0)", v)
	}
}
