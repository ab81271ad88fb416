package drift

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/workerd"
)

// TestCompatibilityFlagsAreTheRuntimes: the list of compatibility flags the
// Worker's Check accepts (provider/cloudflare/compatibility_flags.txt) is
// the runtime's own. The candidates are every snake_case word in the workerd
// binary the tests run; workerd, given them all as one Worker's flags, names
// each it does not know, and the rest are its flags. With
// OPENINSPECT_UPDATE_COMPAT_FLAGS=1 the test writes the list instead.
func TestCompatibilityFlagsAreTheRuntimes(t *testing.T) {
	bin, err := workerd.Find("")
	require.NoError(t, err, "workerd is installed by .ci/workerd-tools.sh (make test-tools)")
	version, err := exec.Command(bin, "--version").Output()
	require.NoError(t, err)
	raw, err := os.ReadFile(bin)
	require.NoError(t, err)
	candidates := snakeCaseWords(raw)

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "w.js"), []byte("export default {};\n"), 0o644))
	quoted := make([]string, len(candidates))
	for i, c := range candidates {
		quoted[i] = `"` + c + `"`
	}
	config := fmt.Sprintf(`using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = ( services = [ (name = "main", worker = .w) ] );
const w :Workerd.Worker = ( modules = [ (name = "w.js", esModule = embed "w.js") ], compatibilityDate = "2024-09-23", compatibilityFlags = [%s] );
`, strings.Join(quoted, ", "))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "flags.capnp"), []byte(config), 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// With no sockets workerd checks the configuration and exits; it fails
	// here by design (the unknown flags, contradictory pairs, experimental
	// flags), so only its report matters.
	out, _ := exec.CommandContext(ctx, bin, "serve", filepath.Join(dir, "flags.capnp")).CombinedOutput()
	unknown := map[string]bool{}
	for _, m := range regexp.MustCompile(`No such compatibility flag: ([a-z0-9_]+)`).FindAllSubmatch(out, -1) {
		unknown[string(m[1])] = true
	}
	require.NotEmpty(t, unknown, "workerd reported no unknown flag: its report changed form:\n%s", firstLines(out, 20))
	var known []string
	for _, c := range candidates {
		if !unknown[c] {
			known = append(known, c)
		}
	}
	require.Contains(t, known, "nodejs_compat", "the derivation lost a flag every Worker here uses")

	path := filepath.Join(repoRoot(t), "provider", "cloudflare", "compatibility_flags.txt")
	committed, err := os.ReadFile(path)
	require.NoError(t, err)
	header, listed := splitComments(committed)
	if os.Getenv("OPENINSPECT_UPDATE_COMPAT_FLAGS") == "1" {
		require.NoError(t, os.WriteFile(path, []byte(header+strings.Join(known, "\n")+"\n"), 0o644))
		t.Logf("wrote %d flags of %s to %s", len(known), strings.TrimSpace(string(version)), path)
		return
	}
	added, removed := setDifference(known, listed), setDifference(listed, known)
	require.True(t, len(added) == 0 && len(removed) == 0,
		"%s knows other compatibility flags than %s: new %v, gone %v; run this test with OPENINSPECT_UPDATE_COMPAT_FLAGS=1 and update the header's version",
		strings.TrimSpace(string(version)), path, added, removed)
}

// snakeCaseWords are the printable runs in a binary that could be a flag's
// name, sorted and unique.
func snakeCaseWords(raw []byte) []string {
	word := regexp.MustCompile(`^[a-z][a-z0-9_]{2,}$`)
	set := map[string]bool{}
	for _, run := range bytes.FieldsFunc(raw, func(r rune) bool { return r < 0x20 || r > 0x7e }) {
		if word.Match(run) {
			set[string(run)] = true
		}
	}
	out := make([]string, 0, len(set))
	for w := range set {
		out = append(out, w)
	}
	slices.Sort(out)
	return out
}

// splitComments separates a list file's leading "#" lines from its entries.
func splitComments(raw []byte) (header string, entries []string) {
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "#"):
			header += line + "\n"
		case strings.TrimSpace(line) != "":
			entries = append(entries, strings.TrimSpace(line))
		}
	}
	return header, entries
}

func setDifference(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func firstLines(b []byte, n int) string {
	lines := strings.SplitN(string(b), "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}
