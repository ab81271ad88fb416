package daytonaapi

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDigestDependsOnContentNotPlace(t *testing.T) {
	m := testManifest(t)
	base, err := m.Digest()
	require.NoError(t, err)
	assert.Len(t, base, 64)

	// The same files elsewhere, written in another order, with other
	// modification times: same digest.
	other := m
	dir := filepath.Join(t.TempDir(), "elsewhere")
	for _, p := range []string{"util/io.py", "entrypoint.py", "__init__.py"} {
		b, err := os.ReadFile(filepath.Join(m.RuntimeDir, p))
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, p), b, 0o600))
		old := time.Now().Add(-48 * time.Hour)
		require.NoError(t, os.Chtimes(filepath.Join(dir, p), old, old))
	}
	other.RuntimeDir = dir
	d, err := other.Digest()
	require.NoError(t, err)
	assert.Equal(t, base, d)

	// Env is a map: iteration order must not matter either.
	for range 5 {
		d, err := m.Digest()
		require.NoError(t, err)
		require.Equal(t, base, d)
	}
}

func TestDigestChangesWithTheRecipeAndFiles(t *testing.T) {
	m := testManifest(t)
	base, err := m.Digest()
	require.NoError(t, err)
	variants := map[string]func(m *Manifest){
		"base image":  func(m *Manifest) { m.BaseImage = "python:3.13-slim-bookworm" },
		"apt package": func(m *Manifest) { m.AptPackages = append(m.AptPackages, "jq") },
		"run command": func(m *Manifest) { m.RunCommands = []string{"npm install -g opencode-ai@1.18.19"} },
		"pip package": func(m *Manifest) { m.PipPackages = []string{"httpx>=0.28", "pydantic"} },
		"env value": func(m *Manifest) {
			m.Env = map[string]string{"SANDBOX_VERSION": "daytona-v7", "GREETING": "hello world"}
		},
		"runtime path": func(m *Manifest) { m.RuntimePath = "/opt/runtime" },
		"workdir":      func(m *Manifest) { m.Workdir = "/work" },
		"entrypoint":   func(m *Manifest) { m.Entrypoint = []string{"python", "-m", "other"} },
		"memory":       func(m *Manifest) { m.Memory = 8 },
		"file content": func(m *Manifest) {
			require.NoError(t, os.WriteFile(filepath.Join(m.RuntimeDir, "entrypoint.py"), []byte("changed\n"), 0o644))
		},
		"file renamed": func(m *Manifest) {
			require.NoError(t, os.Rename(filepath.Join(m.RuntimeDir, "util", "io.py"), filepath.Join(m.RuntimeDir, "util", "io2.py")))
		},
		"empty directory added": func(m *Manifest) {
			require.NoError(t, os.Mkdir(filepath.Join(m.RuntimeDir, "empty"), 0o755))
		},
	}
	seen := map[string]string{base: "original"}
	for name, change := range variants {
		v := testManifest(t) // a fresh runtime directory each time
		change(&v)
		d, err := v.Digest()
		require.NoError(t, err, name)
		prev, dup := seen[d]
		assert.False(t, dup, "%s gives the same digest as %s", name, prev)
		seen[d] = name
	}
}

func TestDigestRefusesWhatCannotBeUploaded(t *testing.T) {
	m := testManifest(t)
	require.NoError(t, os.Symlink("entrypoint.py", filepath.Join(m.RuntimeDir, "link.py")))
	_, err := m.Digest()
	assert.ErrorContains(t, err, "link.py is not a regular file or directory")

	m = testManifest(t)
	m.RuntimeDir = filepath.Join(t.TempDir(), "missing")
	_, err = m.Digest()
	assert.ErrorContains(t, err, "daytona: manifest: runtime directory")

	m = testManifest(t)
	m.Env = map[string]string{"BAD-NAME": "x"}
	_, err = m.Digest()
	assert.ErrorContains(t, err, `environment variable name "BAD-NAME"`)

	m = Manifest{BaseImage: "alpine:3.20"}
	_, err = m.Digest()
	assert.NoError(t, err, "a manifest without a runtime directory is fine")
}

func TestQuoting(t *testing.T) {
	assert.Equal(t, []string{"httpx", "'httpx>=0.27'", "'a'\\''b'", "pkg==1.0"}, shellWords([]string{"httpx", "httpx>=0.27", "a'b", "pkg==1.0"}))
	assert.Equal(t, "plain", envValue("plain"))
	assert.Equal(t, "$PATH:/x", envValue("$PATH:/x"))
	assert.Equal(t, `"a b"`, envValue("a b"))
	assert.Equal(t, `"say \"hi\" \\o/"`, envValue(`say "hi" \o/`))
	assert.Equal(t, `""`, envValue(""))
}
