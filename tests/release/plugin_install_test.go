package release

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"text/template"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/toolchain"
)

// pluginVersion is the release the test builds, serves and installs.
const pluginVersion = "0.3.0"

// TestPluginInstallsFromReleaseArchive is the path a user's plugin takes: the
// release archive for this machine is built as .goreleaser.yaml describes it
// (its build flags, its name_template rendered with Go templates as
// goreleaser does, the binary at the archive's root with the listed files),
// served from a loopback HTTP server, and installed with the real CLI's
// `pulumi plugin install resource openinspect <version> --server <url>` into
// a fresh PULUMI_HOME. A YAML program then deploys a KV namespace to the
// emulator and a generated secret, and destroys them, with the provider on
// neither PATH nor a Pulumi.yaml path: the engine can only find it in the
// plugin cache.
//
// goreleaser itself is not run: it is not in the Go module proxy at a
// version this module can build offline, and no binary may be downloaded. The
// test instead builds the archive from the config's fields, and
// TestReleaseLdflagsSetTheVersion pins those fields, so a change to the
// archive section fails one of the two.
func TestPluginInstallsFromReleaseArchive(t *testing.T) {
	pulumiBin := filepath.Join(toolchain.BinDir(), "pulumi")
	if _, err := os.Stat(pulumiBin); err != nil {
		t.Fatalf("the pulumi CLI is not in %s: run `make tools` (builds it from the Go module proxy)", toolchain.BinDir())
	}
	cfg := readGoreleaser(t)
	require.Len(t, cfg.Archives, 1)
	archive := cfg.Archives[0]
	build := cfg.Builds[0]

	// The archive for this machine, as goreleaser names and fills it.
	name := renderTemplate(t, archive.NameTemplate, map[string]string{
		"Binary": build.Binary, "Version": pluginVersion, "Os": runtime.GOOS, "Arch": runtime.GOARCH,
	}) + ".tar.gz"
	assert.Equal(t, "pulumi-resource-openinspect-v"+pluginVersion+"-"+runtime.GOOS+"-"+runtime.GOARCH+".tar.gz", name,
		"the name `pulumi plugin install` asks a server for")
	binary := buildPlugin(t, build.Binary, build.Main, build.Ldflags, build.Env, pluginVersion)
	releaseDir := t.TempDir()
	writeArchive(t, filepath.Join(releaseDir, name), binary, build.Binary, archive.Files)

	var mu sync.Mutex
	var requested []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requested = append(requested, r.URL.Path)
		mu.Unlock()
		http.FileServer(http.Dir(releaseDir)).ServeHTTP(w, r)
	}))
	defer srv.Close()

	home := t.TempDir()
	// Only the toolchain (pulumi, its YAML language host) and the system
	// directories: no directory holding pulumi-resource-openinspect.
	path := toolchain.BinDir() + string(os.PathListSeparator) + "/usr/bin:/bin"
	env := append(os.Environ(),
		"PATH="+path,
		"PULUMI_HOME="+home,
		"PULUMI_SKIP_UPDATE_CHECK=true",
		"PULUMI_CONFIG_PASSPHRASE=plugin-install-test",
	)
	t.Setenv("PATH", path)
	_, err := exec.LookPath(build.Binary)
	require.Error(t, err, "%s must not be on PATH for this test", build.Binary)

	pulumi := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command(pulumiBin, args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "pulumi %s:\n%s", strings.Join(args, " "), out)
		return string(out)
	}

	pulumi(home, "plugin", "install", "resource", "openinspect", pluginVersion, "--server", srv.URL)
	mu.Lock()
	assert.Equal(t, []string{"/" + name}, requested, "the CLI fetched the archive by its release name")
	mu.Unlock()
	cached := filepath.Join(home, "plugins", "resource-openinspect-v"+pluginVersion, build.Binary)
	fi, err := os.Stat(cached)
	require.NoError(t, err, "the plugin is in the cache")
	assert.NotZero(t, fi.Mode()&0o111, "the cached plugin is executable")
	out, err := exec.Command(cached, "-version").Output()
	require.NoError(t, err)
	assert.Equal(t, pluginVersion, strings.TrimSpace(string(out)), "the cached plugin is the release build")

	var plugins []struct {
		Name, Kind, Version string
	}
	require.NoError(t, json.Unmarshal([]byte(pulumi(home, "plugin", "ls", "--json")), &plugins))
	assert.Contains(t, plugins, struct{ Name, Kind, Version string }{"openinspect", "resource", pluginVersion})

	// A program that deploys through the cached plugin.
	emu, err := emulator.Start(emulator.Options{})
	require.NoError(t, err)
	defer emu.Close()
	project := t.TempDir()
	program := `name: plugin-install
runtime: yaml
resources:
  cache:
    type: openinspect:index:KvNamespace
    properties:
      title: plugin-install-cache
    options:
      version: ` + pluginVersion + `
  secret:
    type: openinspect:index:GeneratedSecret
    options:
      version: ` + pluginVersion + `
outputs:
  namespaceId: ${cache.namespaceId}
`
	require.NoError(t, os.WriteFile(filepath.Join(project, "Pulumi.yaml"), []byte(program), 0o644))
	backend := t.TempDir()
	pulumi(project, "login", "file://"+backend)
	pulumi(project, "stack", "init", "test")
	for key, value := range map[string]string{
		"openinspect:cloudflareAccountId":  emulator.DefaultAccountID,
		"openinspect:cloudflareApiBaseUrl": emu.URL() + "/client/v4/",
	} {
		pulumi(project, "config", "set", key, value)
	}
	pulumi(project, "config", "set", "--secret", "openinspect:cloudflareApiToken", emulator.DefaultToken)
	pulumi(project, "up", "--yes", "--skip-preview")
	var outputs map[string]any
	require.NoError(t, json.Unmarshal([]byte(pulumi(project, "stack", "output", "--json")), &outputs))
	inv := emu.Inventory()
	require.Len(t, inv.KV, 1, "the program created its namespace in the emulator")
	assert.Equal(t, inv.KV[0].ID, outputs["namespaceId"])
	pulumi(project, "destroy", "--yes", "--skip-preview")
	assert.True(t, emu.Inventory().Empty(), "destroy emptied the emulator")

	mu.Lock()
	assert.Len(t, requested, 1, "nothing was downloaded again: the engine used the cache")
	mu.Unlock()
}

// readGoreleaser parses .goreleaser.yaml.
func readGoreleaser(t *testing.T) goreleaser {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot(), ".goreleaser.yaml"))
	require.NoError(t, err)
	var cfg goreleaser
	require.NoError(t, yaml.Unmarshal(raw, &cfg))
	require.Len(t, cfg.Builds, 1)
	return cfg
}

// renderTemplate renders a goreleaser name template; goreleaser's templates
// are Go text/templates over fields of these names.
func renderTemplate(t *testing.T, text string, fields map[string]string) string {
	t.Helper()
	tmpl, err := template.New("name").Option("missingkey=error").Parse(text)
	require.NoError(t, err)
	var b strings.Builder
	require.NoError(t, tmpl.Execute(&b, fields))
	return b.String()
}

// buildPlugin builds the plugin for this machine with the release's flags
// and returns the binary's path.
func buildPlugin(t *testing.T, binary, main string, ldflags, buildEnv []string, version string) string {
	t.Helper()
	flags := renderTemplate(t, strings.Join(ldflags, " "), map[string]string{"Version": version})
	out := filepath.Join(t.TempDir(), binary)
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", flags, "-o", out, main)
	cmd.Dir = repoRoot()
	cmd.Env = append(os.Environ(), buildEnv...)
	msg, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", msg)
	return out
}

// writeArchive writes a tar.gz with the binary at its root under its name,
// then the listed extra files from the repository root, as goreleaser does
// without wrap_in_directory.
func writeArchive(t *testing.T, dst, binary, binaryName string, files []string) {
	t.Helper()
	f, err := os.Create(dst)
	require.NoError(t, err)
	defer f.Close()
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	add := func(src, name string, mode int64) {
		in, err := os.Open(src)
		require.NoError(t, err)
		defer in.Close()
		fi, err := in.Stat()
		require.NoError(t, err)
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: fi.Size(), ModTime: fi.ModTime(), Typeflag: tar.TypeReg}))
		_, err = io.Copy(tw, in)
		require.NoError(t, err)
	}
	add(binary, binaryName, 0o755)
	for _, file := range files {
		add(filepath.Join(repoRoot(), file), file, 0o644)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
}
