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
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// socketServer is a WebSocket endpoint written here from RFC 6455: it
// answers the opening handshake with Sec-WebSocket-Accept, sends one text
// frame and reads the client's masked reply.
type socketServer struct {
	greeting string

	mu       sync.Mutex
	upgrades []string // request paths that asked for an upgrade
	replies  []string // text frames the client sent
	errs     []error
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
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	reply, err := readText(rw.Reader)
	if err != nil {
		s.fail(fmt.Errorf("reading the client's reply: %w", err))
		return
	}
	s.mu.Lock()
	s.replies = append(s.replies, reply)
	s.mu.Unlock()
}

// writeText sends one unmasked, final text frame (servers never mask).
func writeText(w *bufio.Writer, text string) error {
	header := []byte{0x81} // FIN + opcode 1 (text)
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

// readText reads one final text frame, which a client must mask.
func readText(r *bufio.Reader) (string, error) {
	var head [2]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return "", err
	}
	if head[0] != 0x81 {
		return "", fmt.Errorf("first byte %#x, want 0x81 (a final text frame)", head[0])
	}
	if head[1]&0x80 == 0 {
		return "", errors.New("the client's frame is not masked")
	}
	n := uint64(head[1] & 0x7f)
	switch n {
	case 126:
		var ext [2]byte
		if _, err := io.ReadFull(r, ext[:]); err != nil {
			return "", err
		}
		n = uint64(binary.BigEndian.Uint16(ext[:]))
	case 127:
		var ext [8]byte
		if _, err := io.ReadFull(r, ext[:]); err != nil {
			return "", err
		}
		n = binary.BigEndian.Uint64(ext[:])
	}
	if n > 1<<20 {
		return "", fmt.Errorf("frame of %d bytes", n)
	}
	var mask [4]byte
	if _, err := io.ReadFull(r, mask[:]); err != nil {
		return "", err
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		return "", err
	}
	for i := range payload {
		payload[i] ^= mask[i%4]
	}
	return string(payload), nil
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
	deadline := time.Now().Add(10 * time.Second)
	for {
		sockets.mu.Lock()
		upgrades, replies, errs := append([]string(nil), sockets.upgrades...), append([]string(nil), sockets.replies...), errors.Join(sockets.errs...)
		sockets.mu.Unlock()
		if len(replies) > 0 || errs != nil || time.Now().After(deadline) {
			if errs != nil {
				t.Errorf("the WebSocket server: %v", errs)
			}
			if len(upgrades) != 1 || upgrades[0] != "/socket/feed" {
				t.Errorf("upgrade requests on %q, want one on /socket/feed", upgrades)
			}
			if len(replies) != 1 || replies[0] != "ack hello from the Go server" {
				t.Errorf("the client's replies = %q, want [\"ack hello from the Go server\"]", replies)
			}
			break
		}
		time.Sleep(20 * time.Millisecond)
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
