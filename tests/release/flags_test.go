package release

import (
	"errors"
	"flag"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// flagLine is a flag's line in the flag package's PrintDefaults output.
var flagLine = regexp.MustCompile(`(?m)^  -([\w-]+)`)

// TestCommandsHelpListOnlyTheirOwnFlags: `-h` of the plugin and of the
// release step lists the flags each defines and none of the logging
// library's that Pulumi's SDK registers on the process's global flag set
// (-alsologtostderr, -log_dir, -v, ...); both exit 0. The plugin still
// accepts the two of those the engine passes it, and refuses the rest.
func TestCommandsHelpListOnlyTheirOwnFlags(t *testing.T) {
	// This test binary links glog through the same SDK: its global flag
	// set, less the testing package's, is the list to look for.
	var logging []string
	flag.VisitAll(func(f *flag.Flag) {
		if !strings.HasPrefix(f.Name, "test.") {
			logging = append(logging, f.Name)
		}
	})
	require.Subset(t, logging, []string{"log_dir", "alsologtostderr", "v", "logtostderr"}, "glog's flags are registered in this process")

	dir := t.TempDir()
	for _, c := range []struct {
		binary, main string
		own          []string
	}{
		{"pulumi-resource-openinspect", "./provider/cmd/pulumi-resource-openinspect", []string{"version"}},
		{"openinspect-release", "./provider/cmd/openinspect-release", []string{"source", "commit", "out", "record", "unverified", "prebuilt", "no-web"}},
	} {
		bin := filepath.Join(dir, c.binary)
		build := exec.Command("go", "build", "-o", bin, c.main)
		build.Dir = repoRoot()
		out, err := build.CombinedOutput()
		require.NoError(t, err, "%s", out)

		out, err = exec.Command(bin, "-h").CombinedOutput()
		require.NoError(t, err, "%s -h exits 0:\n%s", c.binary, out)
		var listed []string
		for _, m := range flagLine.FindAllStringSubmatch(string(out), -1) {
			listed = append(listed, m[1])
		}
		assert.Subset(t, listed, c.own, "%s -h lists its flags:\n%s", c.binary, out)
		for _, name := range logging {
			assert.NotContains(t, listed, name, "%s -h lists the logging library's -%s:\n%s", c.binary, name, out)
		}
	}

	// The engine starts the plugin with --logtostderr -v=N when asked to
	// flow its logs; those parse (the plugin then waits for the engine, so
	// -version ends the run), while glog's other flags are unknown.
	plugin := filepath.Join(dir, "pulumi-resource-openinspect")
	out, err := exec.Command(plugin, "--logtostderr", "-v=9", "-version").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Regexp(t, `^\S+\n$`, string(out), "the version alone")
	out, err = exec.Command(plugin, "-log_dir", dir).CombinedOutput()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "an unknown flag fails: %v\n%s", err, out)
	assert.Equal(t, 2, exit.ExitCode())
	assert.Contains(t, string(out), "flag provided but not defined: -log_dir")
}
