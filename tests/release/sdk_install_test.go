package release

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/modfile"

	"github.com/openinspect/pulumi-openinspect/provider/cmd/openinspect-gen/sdkgen"
)

// sdkVersion is the version the committed SDKs carry (the VERSION file).
func sdkVersion(t *testing.T) string {
	t.Helper()
	v, err := sdkgen.ReadVersion(filepath.Join(repoRoot(), "VERSION"))
	require.NoError(t, err)
	return v
}

// TestNodeSDKHasARealVersion checks sdk/nodejs names a real package version
// and the plugin it needs (version and download server), not codegen
// placeholders.
func TestNodeSDKHasARealVersion(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot(), "sdk", "nodejs", "package.json"))
	require.NoError(t, err)
	var pkg struct {
		Name    string `json:"name"`
		Version string `json:"version"`
		Pulumi  struct {
			Resource bool   `json:"resource"`
			Name     string `json:"name"`
			Version  string `json:"version"`
			Server   string `json:"server"`
		} `json:"pulumi"`
	}
	require.NoError(t, json.Unmarshal(raw, &pkg))
	assert.Equal(t, sdkVersion(t), pkg.Version)
	assert.Equal(t, sdkVersion(t), pkg.Pulumi.Version)
	assert.Equal(t, "openinspect", pkg.Pulumi.Name)
	assert.Equal(t, "github://api.github.com/openinspect", pkg.Pulumi.Server)
}

// TestPythonSDKBuildsAndInstallsAsAWheel builds a wheel from sdk/python with
// the cached Python toolchain (.ci/python-tools.sh: setuptools, wheel and the
// Pulumi SDK), installs it as a user installs a released one, and imports it:
// the installed distribution has the real version and carries
// pulumi-plugin.json with the plugin's version and download server.
func TestPythonSDKBuildsAndInstallsAsAWheel(t *testing.T) {
	out, err := exec.Command(filepath.Join(repoRoot(), ".ci", "python-tools.sh")).Output()
	require.NoError(t, err, ".ci/python-tools.sh prepares the Python toolchain")
	python := filepath.Join(strings.TrimSpace(string(out)), "bin", "python")

	src := filepath.Join(t.TempDir(), "python")
	require.NoError(t, os.CopyFS(src, os.DirFS(filepath.Join(repoRoot(), "sdk", "python"))))
	wheels := t.TempDir()
	run := func(env []string, args ...string) string {
		t.Helper()
		cmd := exec.Command(python, args...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "python %s:\n%s", strings.Join(args, " "), out)
		return string(out)
	}
	// No build isolation: the build backend comes from the cached venv, so
	// nothing is fetched.
	run(nil, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--no-deps", "--no-build-isolation", "-w", wheels, src)
	built, err := filepath.Glob(filepath.Join(wheels, "pulumi_openinspect-*.whl"))
	require.NoError(t, err)
	require.Len(t, built, 1)
	// PEP 440's form of the semantic version (0.1.0-dev is 0.1.0+dev).
	wantVersion := strings.Replace(sdkVersion(t), "-", "+", 1)
	assert.Equal(t, "pulumi_openinspect-"+wantVersion+"-py3-none-any.whl", filepath.Base(built[0]))

	// Installed into a target directory rather than the shared cached venv,
	// whose pulumi package the wheel's dependencies are satisfied by.
	target := t.TempDir()
	run(nil, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps", "--target", target, built[0])
	got := run([]string{"PYTHONPATH=" + target}, "-c", `
import importlib.metadata, importlib.resources, json
import pulumi_openinspect
plugin = json.loads(importlib.resources.files("pulumi_openinspect").joinpath("pulumi-plugin.json").read_text())
print(json.dumps({"version": importlib.metadata.version("pulumi_openinspect"), "plugin": plugin,
                  "file": pulumi_openinspect.__file__, "has": hasattr(pulumi_openinspect, "OpenInspect")}))
`)
	var info struct {
		Version string         `json:"version"`
		Plugin  map[string]any `json:"plugin"`
		File    string         `json:"file"`
		Has     bool           `json:"has"`
	}
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(got)), &info), got)
	assert.Equal(t, wantVersion, info.Version)
	assert.Equal(t, map[string]any{"resource": true, "name": "openinspect", "version": sdkVersion(t),
		"server": "github://api.github.com/openinspect"}, info.Plugin)
	assert.True(t, strings.HasPrefix(info.File, target), "imported from the installed wheel, not the source: %s", info.File)
	assert.True(t, info.Has, "the package exports OpenInspect")
}

// TestGoSDKIsItsOwnModule builds a program in a module of its own that
// requires the Go SDK by its module path, the way a user's go.mod does; the
// replace points at sdk/go instead of a tagged release. The SDK's own
// dependencies (otel, grpc, protobuf versions the provider module does not
// use) are fetched as .ci/run fetches every other module: through the
// environment's GOPROXY and GOSUMDB with -mod=mod, so the test passes from an
// empty module cache. It stays deterministic: every version comes from
// sdk/go/go.mod's requirement graph (minimal version selection), checked by
// the checksum database, and a "latest" lookup for a package no required
// module provides fails the test.
func TestGoSDKIsItsOwnModule(t *testing.T) {
	const module = "github.com/openinspect/pulumi-openinspect/sdk/go"
	sdk := filepath.Join(repoRoot(), "sdk", "go")
	raw, err := os.ReadFile(filepath.Join(sdk, "go.mod"))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(raw), "module "+module+"\n"), "sdk/go/go.mod declares %s", module)

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/user\n\ngo 1.26\n\n"+
		"require "+module+" v0.0.0\n\nreplace "+module+" => "+sdk+"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(`package main

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/openinspect/pulumi-openinspect/sdk/go/openinspect"
)

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		_, err := openinspect.NewGeneratedSecret(ctx, "secret", &openinspect.GeneratedSecretArgs{})
		return err
	})
}
`), 0o644))
	// -modcacherw: a test pointing GOMODCACHE at a temporary directory can
	// remove it afterwards.
	env := append(os.Environ(), "GOFLAGS=-mod=mod -modcacherw", "GOWORK=off")
	goCmd := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "go %s:\n%s", strings.Join(args, " "), out)
		return string(out)
	}
	tidy := goCmd("mod", "tidy")
	// tidy resolves an import no module in the graph provides by asking the
	// proxy for the newest version: the SDK's go.mod would then be
	// incomplete, and the result would depend on the day.
	assert.NotContains(t, tidy, "finding module for package", "every import is provided by sdk/go/go.mod's requirements")
	goCmd("build", "-o", filepath.Join(dir, "program"), ".")

	// The Pulumi SDK the program builds with is the one sdk/go/go.mod asks
	// for: the user module got it from the SDK module, not from elsewhere.
	pulumiSDK := "github.com/pulumi/pulumi/sdk/v3"
	want := requiredVersion(t, string(raw), pulumiSDK)
	got := strings.Fields(strings.TrimSpace(goCmd("list", "-m", pulumiSDK)))
	require.Len(t, got, 2, "go list -m %s", pulumiSDK)
	assert.Equal(t, want, got[1], "%s selected for the user's program", pulumiSDK)
}

// requiredVersion is the version a go.mod's require lines give a module.
func requiredVersion(t *testing.T, gomod, module string) string {
	t.Helper()
	f, err := modfile.ParseLax("go.mod", []byte(gomod), nil)
	require.NoError(t, err)
	for _, r := range f.Require {
		if r.Mod.Path == module {
			return r.Mod.Version
		}
	}
	require.Failf(t, "module not required", "go.mod does not require %s", module)
	return ""
}
