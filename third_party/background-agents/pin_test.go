package backgroundagents

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadPin: a pin directory is read whole, and each way it can be
// unusable is an error naming what is wrong (the binary then refuses to
// start rather than run at the embedded pin).
func TestReadPin(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := readPin("relative/pin"); err == nil || !strings.Contains(err.Error(), "not an absolute path") {
		t.Errorf("a relative directory: %v", err)
	}
	if _, _, err := readPin(dir); err == nil || !strings.Contains(err.Error(), "contract.json") {
		t.Errorf("no contract.json: %v", err)
	}
	write("contract.json", `{"schemaVersion": 1}`)
	if _, _, err := readPin(dir); err == nil || !strings.Contains(err.Error(), "UPSTREAM_COMMIT") {
		t.Errorf("no UPSTREAM_COMMIT: %v", err)
	}
	write("UPSTREAM_COMMIT", " \n")
	if _, _, err := readPin(dir); err == nil || !strings.Contains(err.Error(), "is empty") {
		t.Errorf("an empty UPSTREAM_COMMIT: %v", err)
	}
	write("UPSTREAM_COMMIT", "0123456789abcdef0123456789abcdef01234567\n")
	contract, commit, err := readPin(dir)
	if err != nil {
		t.Fatal(err)
	}
	if string(contract) != `{"schemaVersion": 1}` || strings.TrimSpace(commit) != "0123456789abcdef0123456789abcdef01234567" {
		t.Errorf("read %q and %q", contract, commit)
	}
}

// TestEmbeddedPinByDefault: a build that sets no pinDir (a release, this
// test) has the embedded files in effect.
func TestEmbeddedPinByDefault(t *testing.T) {
	if pinDir != "" {
		t.Fatalf("this test binary was linked with pinDir %s", pinDir)
	}
	raw, err := os.ReadFile("UPSTREAM_COMMIT")
	if err != nil {
		t.Fatal(err)
	}
	if Commit() != strings.TrimSpace(string(raw)) {
		t.Errorf("Commit() = %s, want the embedded %s", Commit(), strings.TrimSpace(string(raw)))
	}
}
