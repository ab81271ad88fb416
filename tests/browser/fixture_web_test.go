package browser

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openinspect/pulumi-openinspect/internal/reporoot"
	"github.com/openinspect/pulumi-openinspect/provider/installation/webbuild"
	"github.com/openinspect/pulumi-openinspect/tests/serviceauth"
)

// controlPlaneStandIn answers what the fixture web asks of the control
// plane: its WebSocket (/fixture/ws, greeting and echoing) and, for the
// service "web" signing with key, GET /internal/auth/sign-in-providers
// (providers, or 503 while unavailable is set); any other signature is 401.
type controlPlaneStandIn struct {
	sockets *socketServer
	key     string

	mu          sync.Mutex
	unavailable bool
	asked       []string // the URL each signed sign-in-providers call was made to
	refused     []string // why a call was refused
}

func (c *controlPlaneStandIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/fixture/ws" {
		c.sockets.ServeHTTP(w, r)
		return
	}
	if r.Method != http.MethodGet || r.URL.Path != "/internal/auth/sign-in-providers" {
		http.Error(w, `{"error":"Not found"}`, http.StatusNotFound)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	header := r.Header.Get("X-OpenInspect-Service-Signature")
	parts := strings.Split(header, ".")
	var ms int64
	if len(parts) == 4 {
		ms, _ = strconv.ParseInt(parts[1], 10, 64)
	}
	want := serviceauth.Header(serviceauth.Request{Service: "web", Key: c.key, At: time.UnixMilli(ms), Nonce: parts[min(2, len(parts)-1)],
		Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery})
	if len(parts) != 4 || r.Header.Get("X-OpenInspect-Service") != "web" || header != want {
		c.refused = append(c.refused, fmt.Sprintf("service %q, signature %q", r.Header.Get("X-OpenInspect-Service"), header))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":"Unauthorized"}`)
		return
	}
	c.asked = append(c.asked, r.Header.Get("x-workerhost-url"))
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if c.unavailable {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"error":"Sign-in providers are not configured"}`)
		return
	}
	fmt.Fprint(w, `{"providers":["github"]}`)
}

// startWorkerHost runs the Worker module in Node (testdata/workerhost.mjs)
// with config and returns its origin; it is stopped when the test ends.
func startWorkerHost(t *testing.T, module string, config map[string]any) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node runs the web Worker here; install Node.js 20 or newer: %v", err)
	}
	raw, err := json.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, filepath.Join(reporoot.Dir(), "tests", "browser", "testdata", "workerhost.mjs"), module)
	cmd.Env = append(os.Environ(), "WORKER_HOST_CONFIG="+string(raw))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the worker host: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("the worker host's stderr:\n%s", stderr.String())
		}
	})
	port := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		port <- strings.TrimPrefix(strings.TrimSpace(line), "listening ")
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case p := <-port:
		if _, err := strconv.Atoi(p); err != nil {
			t.Fatalf("the worker host did not start (it said %q):\n%s", p, stderr.String())
		}
		return "http://127.0.0.1:" + p
	case <-time.After(60 * time.Second):
		t.Fatalf("the worker host did not say it listens within a minute:\n%s", stderr.String())
	}
	return ""
}

// webOrigin serves a Worker with static assets at the root of its own
// origin, in Cloudflare's order: a path naming an asset is answered from the
// assets, anything else by the worker.
func webOrigin(assets, worker string) http.Handler {
	files := http.FileServer(http.Dir(assets))
	target, _ := url.Parse(worker)
	proxy := httputil.NewSingleHostReverseProxy(target)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if st, err := os.Stat(filepath.Join(assets, filepath.FromSlash(path.Clean(r.URL.Path)))); err == nil && st.Mode().IsRegular() {
			files.ServeHTTP(w, r)
			return
		}
		proxy.ServeHTTP(w, r)
	})
}

// The fixture web build, rendered for an installation as the provider
// renders it, its worker running in Node and its assets at the root of the
// web's origin as Cloudflare serves them, in front of a Go stand-in for the
// control plane: a person loading / sees the styled sign-in page with the
// GitHub button the control plane's providers call for, the client chunks
// hydrate it and open the control plane's WebSocket, and nothing the page
// asks for fails. tests/engine loads the same page from the emulator, against
// the fixture control plane running in workerd.
func TestFixtureWebPageGreetsTheControlPlane(t *testing.T) {
	const key = "web-service-auth-secret-for-the-browser-test"
	cp := &controlPlaneStandIn{sockets: &socketServer{greeting: `{"type":"hello","deployment":"browser-test"}`, echo: true}, key: key}
	cpServer := httptest.NewServer(cp)
	defer cpServer.Close()
	wsURL := "ws://" + strings.TrimPrefix(cpServer.URL, "http://")

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
	if len(res.Renamed) == 0 {
		t.Fatal("rendering renamed no chunk: the page would not exercise per-installation chunk names")
	}
	assets := filepath.Join(rendered, res.Assets)
	assetServer := httptest.NewServer(http.FileServer(http.Dir(assets)))
	defer assetServer.Close()
	worker := startWorkerHost(t, filepath.Join(rendered, res.Worker), map[string]any{
		"vars": map[string]string{
			"CONTROL_PLANE_URL":   cpServer.URL,
			"SERVICE_AUTH_SECRET": key,
			"SANDBOX_PROVIDER":    "modal",
		},
		"assets":   assetServer.URL,
		"services": map[string]string{"CONTROL_PLANE_WORKER": cpServer.URL},
	})
	web := httptest.NewServer(webOrigin(assets, worker))
	defer web.Close()

	page := LoadFixtureWeb(t, web.URL+"/", ArtefactPath(t, "fixture-web.png"), "browser-test")

	if want := wsURL + "/fixture/ws"; len(page.WebSockets) != 1 || page.WebSockets[0] != want {
		t.Errorf("the page's WebSockets = %q, want [%q]", page.WebSockets, want)
	}
	upgrades, received := cp.sockets.waitReceived(t, 1)
	if len(upgrades) != 1 || upgrades[0] != "/fixture/ws" {
		t.Errorf("upgrade requests on %q, want one on /fixture/ws", upgrades)
	}
	if len(received) != 1 || received[0] != "ping" {
		t.Errorf("the page sent %q, want [\"ping\"] after the hello", received)
	}
	for _, r := range page.Requests {
		if strings.Contains(r.URL, "/_next/") && !strings.HasPrefix(r.URL, web.URL+"/_next/static/") {
			t.Errorf("%s is not under the web origin's /_next/static/", r.URL)
		}
	}
	cp.mu.Lock()
	asked, refused := cp.asked, cp.refused
	cp.mu.Unlock()
	if want := cpServer.URL + "/internal/auth/sign-in-providers"; len(asked) != 1 || asked[0] != want || len(refused) != 0 {
		t.Errorf("the worker asked for the sign-in providers at %q (refused: %q), want once, signed, at %s", asked, refused, want)
	}

	// When the control plane cannot say, the page says sign-in is unavailable.
	cp.mu.Lock()
	cp.unavailable = true
	cp.mu.Unlock()
	resp, err := http.Get(web.URL + "/login")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "Sign-in is temporarily unavailable.") || strings.Contains(string(body), "Sign in with") {
		t.Errorf("/login with the providers unavailable: %d\n%s", resp.StatusCode, body)
	}
}
