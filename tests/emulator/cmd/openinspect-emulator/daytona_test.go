package main

import (
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBinaryDaytonaFlags: -daytona-api-key replaces the default key and
// -daytona-build-time -1ns makes builds finish within the request.
func TestBinaryDaytonaFlags(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not on PATH")
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "openinspect-emulator")
	if out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	addrFile := filepath.Join(tmp, "url")
	url, _ := runBinary(t, bin, "-addr-file", addrFile, "-daytona-api-key", "flag-key", "-daytona-organization", "flag-org", "-daytona-build-time", "-1ns")

	call := func(method, path, key, body string) (int, string) {
		req, err := http.NewRequest(method, url+"/daytona/api"+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := call("GET", "/snapshots", "emulator-daytona-key", ""); code != http.StatusUnauthorized {
		t.Errorf("default key: status %d, want 401", code)
	}
	code, body := call("POST", "/snapshots", "flag-key", `{"name":"n","imageName":"alpine:3.20"}`)
	if code != http.StatusOK || !strings.Contains(body, `"state":"active"`) || !strings.Contains(body, `"organizationId":"flag-org"`) {
		t.Errorf("create: %d %s", code, body)
	}
}
