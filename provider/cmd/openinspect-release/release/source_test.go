package release

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/internal/reporoot"
	"github.com/openinspect/pulumi-openinspect/provider/internal/artefacts"
)

// The manifest the plugin embeds names its source without the build
// machine's paths: a plain directory and a local git clone outside the
// working directory by their last element, each with what vouches for the
// commit. Before, it held the absolute path of the source as given.
func TestManifestRecordsNoPathOfTheBuildMachine(t *testing.T) {
	fixture := filepath.Join(reporoot.Dir(), "tests", "fixtures", "upstream")
	// A git clone of the fixture, somewhere else on the machine.
	clone := filepath.Join(t.TempDir(), "background-agents")
	require.NoError(t, copyTree(fixture, clone))
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", clone, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return strings.TrimSpace(string(out))
	}
	git("init", "--quiet")
	git("add", "-A")
	git("commit", "--quiet", "-m", "fixture")
	commit := git("rev-parse", "HEAD")

	for _, c := range []struct {
		name, source, commit, want string
	}{
		{"plain directory", fixture, "0123456789abcdef0123456789abcdef01234567",
			"directory upstream (it names no commit; the recorded digests vouch for it)"},
		{"local git clone", clone, commit, "local git directory background-agents at " + commit},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := t.TempDir()
			res, err := Run(context.Background(), Options{
				Source: c.source, Commit: c.commit, Out: out,
				Unverified: true, Prebuilt: true, NoWeb: true, Log: t.Logf,
			})
			require.NoError(t, err)
			assert.Equal(t, c.want, res.Manifest.Source)
			raw, err := os.ReadFile(filepath.Join(out, artefacts.ManifestFile))
			require.NoError(t, err)
			assert.False(t, strings.Contains(string(raw), filepath.Dir(c.source)), "the embedded manifest holds the build machine's path %s", filepath.Dir(c.source))
		})
	}
}

// recordedSource: a path under the working directory relative to it, any
// other local path by its last element, a URL as given without its
// credentials.
func TestRecordedSourceNamesWithoutTheMachinesLayout(t *testing.T) {
	wd := t.TempDir()
	t.Chdir(wd)
	for source, want := range map[string]string{
		"mirror.git":                        "mirror.git",
		"./checkouts/bg/":                   "checkouts/bg",
		filepath.Join(wd, "tarballs/x.tgz"): "tarballs/x.tgz",
		"/srv/build/background-agents":      "background-agents",
		"../elsewhere/background-agents":    "background-agents",
		wd:                                  filepath.Base(wd),
		"https://github.com/ColeMurray/background-agents.git":             "https://github.com/ColeMurray/background-agents.git",
		"https://x-access-token:ghs_secret@github.com/o/r.git":            "https://github.com/o/r.git",
		"https://codeload.github.com/o/r/tar.gz/0123456789abcdef01234567": "https://codeload.github.com/o/r/tar.gz/0123456789abcdef01234567",
		"git@github.com:o/r.git":                                          "git@github.com:o/r.git",
	} {
		assert.Equal(t, want, recordedSource(source), source)
	}
}
