package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cloudflare/cloudflare-go/v4"
	"github.com/cloudflare/cloudflare-go/v4/d1"
	"github.com/cloudflare/cloudflare-go/v4/option"
	"github.com/cloudflare/cloudflare-go/v4/workers"
	"github.com/cloudflare/cloudflare-go/v4/zones"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
)

// TestBinary builds the command and runs it the way a script would: wait
// for -addr-file, use the API, stop it with SIGTERM, start it again on the
// same -data-dir and find the state still there.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "CLOUDFLARE_") {
			t.Setenv(k, "")
			_ = os.Unsetenv(k)
		}
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not on PATH")
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "openinspect-emulator")
	build := exec.Command(goTool, "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dataDir := filepath.Join(tmp, "data")
	addrFile := filepath.Join(tmp, "url")
	const token = "binary-test-token"

	url, stop := runBinary(t, bin, "-data-dir", dataDir, "-addr-file", addrFile, "-token", token)
	resp, err := http.Get(url + "/__emulator/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "ok" {
		t.Fatalf("healthz: %d %q", resp.StatusCode, body)
	}
	c := cloudflare.NewClient(option.WithBaseURL(url+"/client/v4/"), option.WithAPIToken(token), option.WithMaxRetries(0))
	db, err := c.D1.Database.New(context.Background(), d1.DatabaseNewParams{
		AccountID: cloudflare.F(emulator.DefaultAccountID), Name: cloudflare.F("from-binary")})
	if err != nil {
		t.Fatal(err)
	}
	stdout := stop()
	if !strings.Contains(stdout, "openinspect-emulator listening on "+url+"\n") {
		t.Errorf("stdout %q lacks the listening line", stdout)
	}
	if strings.Contains(stdout, token) {
		t.Error("the token was printed")
	}
	if _, err := os.Stat(addrFile); !os.IsNotExist(err) {
		t.Errorf("addr file left behind after exit: %v", err)
	}

	url, stop = runBinary(t, bin, "-data-dir", dataDir, "-addr-file", addrFile, "-token", token, "-workers-subdomain", "from-flag",
		"-zones", "example.com, flag.example")
	defer stop()
	c = cloudflare.NewClient(option.WithBaseURL(url+"/client/v4/"), option.WithAPIToken(token), option.WithMaxRetries(0))
	got, err := c.D1.Database.Get(context.Background(), db.UUID, d1.DatabaseGetParams{AccountID: cloudflare.F(emulator.DefaultAccountID)})
	if err != nil {
		t.Fatalf("database lost across restart: %v", err)
	}
	if got.Name != "from-binary" {
		t.Errorf("name %q", got.Name)
	}
	sub, err := c.Workers.Subdomains.Get(context.Background(), workers.SubdomainGetParams{AccountID: cloudflare.F(emulator.DefaultAccountID)})
	if err != nil {
		t.Fatal(err)
	}
	if sub.Subdomain != "from-flag" {
		t.Errorf("workers.dev subdomain %q, want the -workers-subdomain value", sub.Subdomain)
	}
	zs, err := c.Zones.List(context.Background(), zones.ZoneListParams{Name: cloudflare.F("flag.example")})
	if err != nil {
		t.Fatal(err)
	}
	if len(zs.Result) != 1 || zs.Result[0].Account.ID != emulator.DefaultAccountID {
		t.Errorf("zones named by -zones: %+v", zs.Result)
	}
}

// runBinary starts the emulator, waits for its address file and returns the
// URL and a func that SIGTERMs it, waits for a clean exit and returns stdout.
func runBinary(t *testing.T, bin string, args ...string) (string, func() string) {
	t.Helper()
	addrFile := args[indexOf(args, "-addr-file")+1]
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	stop := func() string {
		if stopped {
			return stdout.String()
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("emulator exited with %v; stderr:\n%s", err, stderr.String())
			}
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("emulator did not exit after SIGTERM")
		}
		return stdout.String()
	}
	t.Cleanup(func() { stop() })

	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(addrFile)
		if err == nil && len(b) > 0 {
			return string(b), stop
		}
		select {
		case err := <-exited:
			t.Fatalf("emulator exited early: %v; stderr:\n%s", err, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no address file after 10s; stderr:\n%s", stderr.String())
		}
	}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}
