// Package wrangler_test runs Cloudflare's own CLI, wrangler 4.86.0 from npm,
// against the in-process emulator: the conformance suite (wrangler_test.go)
// and the side-by-side benchmark against the provider's request path
// (bench_test.go).
//
// wrangler is installed by .ci/wrangler-tools.sh (called by `make
// test-tools`) into ${OPENINSPECT_TOOLS_CACHE:-$HOME/.cache/openinspect-tools}
// /wrangler-4.86.0; a missing install fails the suite rather than skipping
// it, since a skipped conformance suite proves nothing.
//
// wrangler never reaches the internet here. Every URL it uses is the
// emulator's: the API base (CLOUDFLARE_API_BASE_URL), the D1 import upload
// URL (which the emulator hands out), the OAuth endpoints (WRANGLER_AUTH_*,
// unused with a token but pointed at the emulator anyway) and npm's registry
// for its update check (npm_config_registry; the banner that runs it is also
// hidden). Metrics and error reports are off. HTTPS_PROXY and HTTP_PROXY
// name a sentinel listener on loopback, with NO_PROXY exempting loopback, so
// any request to any other host would reach the sentinel, and the suite
// asserts that none did. HOME is a fresh directory, so no user's wrangler
// login or config is read.
package wrangler_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/toolchain"
)

// wranglerVersion is the version .ci/wrangler-tools.sh installs.
const wranglerVersion = "4.86.0"

// wranglerBin finds the installed wrangler or fails with what to run.
func wranglerBin(tb testing.TB) string {
	tb.Helper()
	dir := filepath.Join(toolchain.CacheDir(), "wrangler-"+wranglerVersion)
	bin := filepath.Join(dir, "node_modules", ".bin", "wrangler")
	if _, err := os.Stat(filepath.Join(dir, ".complete")); err != nil {
		tb.Fatalf("wrangler %s is not installed in %s: run `make test-tools` (or ./.ci/wrangler-tools.sh) first", wranglerVersion, dir)
	}
	if _, err := exec.LookPath("node"); err != nil {
		tb.Fatalf("wrangler needs node on PATH: %v", err)
	}
	return bin
}

// sentinel is a listener that stands in for every host other than the
// emulator: wrangler is told to use it as its HTTP(S) proxy, so a request
// that would leave the machine arrives here instead and is counted.
type sentinel struct {
	ln    net.Listener
	conns atomic.Int64
}

func startSentinel(tb testing.TB) *sentinel {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s := &sentinel{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			_ = c.Close()
		}
	}()
	tb.Cleanup(func() { _ = ln.Close() })
	return s
}

func (s *sentinel) url() string { return "http://" + s.ln.Addr().String() }

// env is one wrangler environment: an emulator, a HOME and the variables
// that point wrangler at them.
type env struct {
	tb       testing.TB
	bin      string
	emu      *emulator.Server
	sentinel *sentinel
	home     string
	vars     []string
}

func newEnv(tb testing.TB, emu *emulator.Server) *env {
	tb.Helper()
	e := &env{tb: tb, bin: wranglerBin(tb), emu: emu, sentinel: startSentinel(tb), home: tb.TempDir()}
	blocked := emu.URL() + "/__blocked"
	e.vars = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + e.home,
		"XDG_CONFIG_HOME=" + filepath.Join(e.home, ".config"),
		"TMPDIR=" + tb.TempDir(),
		"CLOUDFLARE_API_BASE_URL=" + strings.TrimSuffix(emu.CloudflareBaseURL(), "/"),
		"CLOUDFLARE_API_TOKEN=" + emulator.DefaultToken,
		"CLOUDFLARE_ACCOUNT_ID=" + emulator.DefaultAccountID,
		"WRANGLER_SEND_METRICS=false",
		"WRANGLER_SEND_ERROR_REPORTS=false",
		"WRANGLER_HIDE_BANNER=true",
		"WRANGLER_AUTH_DOMAIN=" + strings.TrimPrefix(blocked, "http://"),
		"WRANGLER_AUTH_URL=" + blocked + "/oauth2/auth",
		"WRANGLER_TOKEN_URL=" + blocked + "/oauth2/token",
		"WRANGLER_REVOKE_URL=" + blocked + "/oauth2/revoke",
		"npm_config_registry=" + blocked + "/npm/",
		"NO_UPDATE_NOTIFIER=1",
		"HTTPS_PROXY=" + e.sentinel.url(),
		"HTTP_PROXY=" + e.sentinel.url(),
		"NO_PROXY=127.0.0.1,localhost,::1",
		"CI=true",
		"FORCE_COLOR=0",
		"NO_COLOR=1",
	}
	return e
}

var ansiRE = regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`)

// result is one wrangler run.
type result struct {
	args     []string
	out      string // stdout and stderr, interleaved, without colour codes
	err      error
	duration time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("wrangler %s (%s, err %v):\n%s", strings.Join(r.args, " "), r.duration.Round(time.Millisecond), r.err, r.out)
}

// wranglerSlots bounds how many wrangler processes run at once: each is a
// Node process that spends most of its ~2 s starting up, and the machine has
// two cores.
var wranglerSlots = make(chan struct{}, 2)

// run runs wrangler in dir with stdin, for at most two minutes.
func (e *env) run(dir, stdin string, args ...string) result {
	wranglerSlots <- struct{}{}
	defer func() { <-wranglerSlots }()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.bin, args...)
	cmd.Dir = dir
	cmd.Env = e.vars
	cmd.Stdin = strings.NewReader(stdin)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	start := time.Now()
	err := cmd.Run()
	return result{args: args, out: ansiRE.ReplaceAllString(buf.String(), ""), err: err, duration: time.Since(start)}
}

// must runs wrangler and fails the test unless it succeeded and printed
// every one of want.
func (e *env) must(tb testing.TB, dir, stdin string, args []string, want ...string) string {
	tb.Helper()
	r := e.run(dir, stdin, args...)
	if r.err != nil {
		tb.Fatalf("%s", r)
	}
	for _, w := range want {
		if !strings.Contains(r.out, w) {
			tb.Fatalf("want %q in the output of %s", w, r)
		}
	}
	return r.out
}

// copyDir copies the fixture tree src into dst.
func copyDir(tb testing.TB, src, dst string) {
	tb.Helper()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		tb.Fatal(err)
	}
}
