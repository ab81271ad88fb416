package wrangler_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	cf "github.com/cloudflare/cloudflare-go/v4"
	"github.com/cloudflare/cloudflare-go/v4/workers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/internal/loopback"
)

// lockedBuffer collects a process's output while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// wranglerTailEvent is what `wrangler tail --format json` prints per event.
type wranglerTailEvent struct {
	Outcome    string `json:"outcome"`
	ScriptName string `json:"scriptName"`
	Logs       []struct {
		Message []any  `json:"message"`
		Level   string `json:"level"`
	} `json:"logs"`
	Exceptions []struct {
		Name    string `json:"name"`
		Message string `json:"message"`
	} `json:"exceptions"`
	Event struct {
		Request struct {
			URL    string `json:"url"`
			Method string `json:"method"`
		} `json:"request"`
	} `json:"event"`
}

// tailEvents decodes the JSON objects wrangler printed, in order.
func tailEvents(out string) []wranglerTailEvent {
	var events []wranglerTailEvent
	dec := json.NewDecoder(strings.NewReader(out[max(strings.Index(out, "{"), 0):]))
	for {
		var ev wranglerTailEvent
		if err := dec.Decode(&ev); err != nil {
			return events
		}
		events = append(events, ev)
	}
}

// loopbackProxy is an HTTP proxy that tunnels CONNECTs to loopback only:
// wrangler sends a tail's WebSocket through HTTPS_PROXY whatever NO_PROXY
// says (its tail code takes the proxy from the environment alone), so the
// tail process gets this proxy instead of the harness's sentinel, and a
// request for any other host is refused and counted, as the sentinel's are.
type loopbackProxy struct {
	ln      net.Listener
	refused atomic.Int64
}

func startLoopbackProxy(t *testing.T) *loopbackProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &loopbackProxy{ln: ln}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.serve(c)
		}
	}()
	return p
}

func (p *loopbackProxy) url() string { return "http://" + p.ln.Addr().String() }

func (p *loopbackProxy) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	host, _, err := net.SplitHostPort(req.Host)
	if req.Method != http.MethodConnect || err != nil || !(loopback.IsLocalhost(host) || net.ParseIP(host).IsLoopback()) {
		p.refused.Add(1)
		_, _ = io.WriteString(c, "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
		return
	}
	up, err := net.Dial("tcp", net.JoinHostPort(loopback.Addr, req.URL.Port()))
	if err != nil {
		_, _ = io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
		return
	}
	defer up.Close()
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, br); done <- struct{}{} }() // br holds what the client sent past the CONNECT
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
}

// TestWranglerTail: `wrangler tail <script> --format json` against the
// emulator prints the script's console.log line and its uncaught exception,
// as it does against Cloudflare, and stops on Ctrl-C.
func TestWranglerTail(t *testing.T) {
	emu := startEmulator(t)
	e := newEnv(t, emu)
	project := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(project, "src"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(project, "src", "index.js"), []byte(`export default {
  fetch(request) {
    const { pathname } = new URL(request.url);
    console.log("tailed request", pathname);
    if (pathname === "/boom") throw new RangeError("out of range in " + pathname);
    return new Response("tailed");
  },
};
`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(project, "wrangler.json"),
		[]byte(`{"name": "oi-wr-tail", "main": "src/index.js", "compatibility_date": "2025-08-15", "workers_dev": true}`), 0o644))
	e.must(t, project, "", []string{"deploy"}, "Current Version ID: ")

	// wrangler tail runs until interrupted: started here, stopped below.
	wranglerSlots <- struct{}{}
	defer func() { <-wranglerSlots }()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.bin, "tail", "oi-wr-tail", "--format", "json")
	proxy := startLoopbackProxy(t)
	cmd.Dir = project
	for _, v := range e.vars {
		if k, _, _ := strings.Cut(v, "="); k != "HTTPS_PROXY" && k != "HTTP_PROXY" {
			cmd.Env = append(cmd.Env, v)
		}
	}
	cmd.Env = append(cmd.Env, "HTTPS_PROXY="+proxy.url(), "HTTP_PROXY="+proxy.url())
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false // exited was received from
	t.Cleanup(func() {
		if !stopped {
			_ = cmd.Process.Kill()
			<-exited
		}
	})

	client := loopback.Client(10 * time.Second)
	get := func(path string) int {
		res, err := client.Get(emu.Workers().WorkerURL("oi-wr-tail") + path)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	// The tail is live once wrangler has connected, which it does not
	// announce in JSON mode: request until an event comes through.
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(out.String(), `"tailed request"`) {
		select {
		case err := <-exited:
			stopped = true
			t.Fatalf("wrangler tail exited (%v):\n%s", err, out.String())
		default:
		}
		require.True(t, time.Now().Before(deadline), "wrangler tail printed no event within 60s:\n%s", out.String())
		require.Equal(t, http.StatusOK, get("/hello"))
		time.Sleep(300 * time.Millisecond)
	}
	require.Equal(t, http.StatusInternalServerError, get("/boom"))
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "out of range in /boom") }, 30*time.Second, 100*time.Millisecond,
		"wrangler tail printed no exception:\n%s", out.String())

	var hello, boom *wranglerTailEvent
	events := tailEvents(out.String())
	for i := range events {
		switch events[i].Event.Request.URL {
		case emu.Workers().WorkerURL("oi-wr-tail") + "/hello":
			hello = &events[i]
		case emu.Workers().WorkerURL("oi-wr-tail") + "/boom":
			boom = &events[i]
		}
	}
	require.NotNil(t, hello, "the /hello event in:\n%s", out.String())
	require.NotNil(t, boom, "the /boom event in:\n%s", out.String())
	assert.Equal(t, "ok", hello.Outcome)
	assert.Equal(t, "oi-wr-tail", hello.ScriptName)
	assert.Equal(t, "GET", hello.Event.Request.Method)
	require.Len(t, hello.Logs, 1)
	assert.Equal(t, []any{"tailed request", "/hello"}, hello.Logs[0].Message)
	assert.Equal(t, "log", hello.Logs[0].Level)
	assert.Equal(t, "exception", boom.Outcome)
	require.Len(t, boom.Exceptions, 1)
	assert.Equal(t, "RangeError", boom.Exceptions[0].Name)
	assert.Equal(t, "out of range in /boom", boom.Exceptions[0].Message)

	// Ctrl-C stops it.
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	select {
	case err := <-exited:
		stopped = true
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("wrangler tail: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("wrangler tail did not stop on SIGINT:\n%s", out.String())
	}
	// wrangler's Ctrl-C handler does not wait for its DELETE to be sent,
	// so the tail stays until it expires, as one nobody deleted does.
	got, err := cfClient(emu).Workers.Scripts.Tail.Get(t.Context(), "oi-wr-tail", workers.ScriptTailGetParams{AccountID: cf.F(acct)})
	require.NoError(t, err)
	assert.Regexp(t, `^[0-9a-f]{32}$`, got.ID, "the tail wrangler made")
	assert.Zero(t, e.sentinel.conns.Load(), "wrangler reached for a host other than the emulator")
	assert.Zero(t, proxy.refused.Load(), "wrangler tail reached for a host other than the emulator")
}
