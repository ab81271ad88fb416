// Package release checks that the release configuration builds what it says.
package release

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/openinspect/pulumi-openinspect/internal/reporoot"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type goreleaser struct {
	Builds []struct {
		Binary  string   `yaml:"binary"`
		Main    string   `yaml:"main"`
		Env     []string `yaml:"env"`
		Ldflags []string `yaml:"ldflags"`
		Goos    []string `yaml:"goos"`
		Goarch  []string `yaml:"goarch"`
	} `yaml:"builds"`
	Archives []struct {
		Formats      []string `yaml:"formats"`
		NameTemplate string   `yaml:"name_template"`
		Files        []string `yaml:"files"`
	} `yaml:"archives"`
}

func repoRoot() string { return reporoot.Dir() }

// TestReleaseLdflagsSetTheVersion builds the plugin with the ldflags the
// release uses and asks the binary for its version, so a renamed package or
// variable cannot silently ship every release as a dev build.
func TestReleaseLdflagsSetTheVersion(t *testing.T) {
	cfg := readGoreleaser(t)
	build := cfg.Builds[0]
	assert.Equal(t, "pulumi-resource-openinspect", build.Binary)
	assert.Contains(t, build.Env, "CGO_ENABLED=0")
	assert.ElementsMatch(t, []string{"linux", "darwin"}, build.Goos)
	assert.ElementsMatch(t, []string{"amd64", "arm64"}, build.Goarch)
	require.Len(t, cfg.Archives, 1)
	assert.Equal(t, []string{"tar.gz"}, cfg.Archives[0].Formats)
	assert.Equal(t, "{{ .Binary }}-v{{ .Version }}-{{ .Os }}-{{ .Arch }}", cfg.Archives[0].NameTemplate)

	const version = "9.8.7-rc.1"
	out := buildPlugin(t, build.Binary, build.Main, build.Ldflags, build.Env, version)
	got, err := exec.Command(out, "-version").Output()
	require.NoError(t, err)
	assert.Equal(t, version, strings.TrimSpace(string(got)))
}
