package artefacts

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/filetree"
)

const commit = "ecc3d7b81198c63ccab1cfd016fd7dcdaf1b746f"

func sampleSet(t *testing.T) (out string, m *Manifest) {
	t.Helper()
	root := filetree.Write(t, map[string]string{
		"packages/control-plane/dist/index.js":           "export class SessionDO {}\nexport default {}\n",
		"terraform/d1/migrations/0001_sessions.sql":      "CREATE TABLE sessions (id TEXT);\n",
		"packages/sandbox-runtime/src/sandbox_runtime/x": "print('x')\n",
		"packages/modal-infra/run.sh":                    "#!/bin/sh\n",
	})
	out = t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(out, "README.md"), []byte("placeholder"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(out, "stale.bin"), []byte("old"), 0o644))
	m, err := Write(out, Manifest{UpstreamCommit: commit, Source: "test", Files: []File{
		{Path: "terraform/d1/migrations/0001_sessions.sql", Kind: KindMigration},
		{Path: "packages/control-plane/dist/index.js", Kind: KindBundle, Worker: "control-plane"},
		{Path: "packages/sandbox-runtime/src/sandbox_runtime/x", Kind: KindSandbox},
		{Path: "packages/modal-infra/run.sh", Kind: KindSandbox},
	}}, root)
	require.NoError(t, err)
	return out, m
}

func TestWriteLoadMaterialise(t *testing.T) {
	out, m := sampleSet(t)
	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{"README.md", ManifestFile, ArchiveFile}, names, "Write cleans the directory but keeps the placeholder")
	assert.Equal(t, "packages/control-plane/dist/index.js", m.Files[0].Path, "files are in path order")
	assert.True(t, m.Files[1].Executable)

	set, err := Load(os.DirFS(out), ".")
	require.NoError(t, err)
	b, ok := set.Bundle("control-plane")
	require.True(t, ok)
	assert.Equal(t, digest([]byte("export class SessionDO {}\nexport default {}\n")), b.SHA256)
	assert.Len(t, set.Files(KindMigration), 1)
	assert.Contains(t, set.Summary(), "1 bundles, 1 migrations, 2 sandbox source files")
	assert.Contains(t, set.Summary(), "NOT verified")

	cache := t.TempDir()
	dir, err := set.Materialise(cache)
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join(dir, "terraform", "d1", "migrations", "0001_sessions.sql"))
	require.NoError(t, err)
	assert.Equal(t, "CREATE TABLE sessions (id TEXT);\n", string(got))
	info, err := os.Stat(filepath.Join(dir, "packages", "modal-infra", "run.sh"))
	require.NoError(t, err)
	assert.NotZero(t, info.Mode()&0o100, "the executable bit survives")

	again, err := set.Materialise(cache)
	require.NoError(t, err)
	assert.Equal(t, dir, again, "the same set materialises at the same path")

	// A damaged copy is replaced, not trusted.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "packages", "control-plane", "dist", "index.js"), []byte("tampered"), 0o644))
	again, err = set.Materialise(cache)
	require.NoError(t, err)
	assert.Equal(t, dir, again)
	got, err = os.ReadFile(filepath.Join(dir, "packages", "control-plane", "dist", "index.js"))
	require.NoError(t, err)
	assert.Equal(t, "export class SessionDO {}\nexport default {}\n", string(got))
	leftovers, err := os.ReadDir(filepath.Dir(dir))
	require.NoError(t, err)
	assert.Len(t, leftovers, 1, "no temporary or stale directories are left behind")
}

func TestWriteIsDeterministic(t *testing.T) {
	out1, _ := sampleSet(t)
	out2, _ := sampleSet(t)
	for _, name := range []string{ManifestFile, ArchiveFile} {
		a, err := os.ReadFile(filepath.Join(out1, name))
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(out2, name))
		require.NoError(t, err)
		assert.True(t, bytes.Equal(a, b), "%s differs between two writes of the same files", name)
	}
}

func TestExtractRefusesAnArchiveThatDisagreesWithItsManifest(t *testing.T) {
	out, m := sampleSet(t)
	set, err := Load(os.DirFS(out), ".")
	require.NoError(t, err)

	// One digest changed in the manifest: the archive's file no longer matches.
	wrong := *m
	wrong.Files = append([]File(nil), m.Files...)
	wrong.Files[0].SHA256 = strings.Repeat("0", 64)
	bad := &Set{Manifest: wrong, archive: set.archive, digest: set.digest}
	err = bad.Extract(t.TempDir())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "packages/control-plane/dist/index.js in the archive has sha256")

	// A file the manifest lists is not in the archive.
	missing := *m
	missing.Files = append(append([]File(nil), m.Files...), File{Path: "terraform/d1/migrations/0002_x.sql", Kind: KindMigration, SHA256: strings.Repeat("a", 64)})
	bad = &Set{Manifest: missing, archive: set.archive}
	err = bad.Extract(t.TempDir())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "0002_x.sql is in the manifest but not in")

	// The archive holds a file the manifest does not list.
	fewer := *m
	fewer.Files = m.Files[1:]
	bad = &Set{Manifest: fewer, archive: set.archive}
	err = bad.Extract(t.TempDir())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "which the manifest does not list once")
}

func TestParseManifestRefusesMalformedManifests(t *testing.T) {
	good := Manifest{SchemaVersion: SchemaVersion, UpstreamCommit: commit, Files: []File{
		{Path: "a/b.sql", Kind: KindMigration, SHA256: strings.Repeat("a", 64)},
	}}
	for name, tc := range map[string]struct {
		edit func(m *Manifest)
		want string
	}{
		"another schema":   {func(m *Manifest) { m.SchemaVersion = 2 }, "schemaVersion 2"},
		"short commit":     {func(m *Manifest) { m.UpstreamCommit = "ecc3d7b" }, "not a 40-digit commit"},
		"escaping path":    {func(m *Manifest) { m.Files[0].Path = "../etc/passwd" }, "not a clean relative path"},
		"absolute path":    {func(m *Manifest) { m.Files[0].Path = "/etc/passwd" }, "not a clean relative path"},
		"unknown kind":     {func(m *Manifest) { m.Files[0].Kind = "binary" }, `kind "binary"`},
		"bundle no worker": {func(m *Manifest) { m.Files[0].Kind = KindBundle }, "a bundle names its worker"},
		"bad digest":       {func(m *Manifest) { m.Files[0].SHA256 = "xyz" }, "not 64 lower-case hex digits"},
		"listed twice":     {func(m *Manifest) { m.Files = append(m.Files, m.Files[0]) }, "listed twice"},
	} {
		t.Run(name, func(t *testing.T) {
			m := good
			m.Files = append([]File(nil), good.Files...)
			tc.edit(&m)
			raw, err := json.Marshal(m)
			require.NoError(t, err)
			_, err = ParseManifest(raw)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	raw, err := json.Marshal(good)
	require.NoError(t, err)
	_, err = ParseManifest(append(raw[:len(raw)-1], []byte(`,"extra":1}`)...))
	require.Error(t, err, "unknown fields are refused")
}

func TestLoadWithoutManifestSaysNothingIsEmbedded(t *testing.T) {
	_, err := Load(os.DirFS(t.TempDir()), ".")
	assert.ErrorIs(t, err, ErrNothingEmbedded)
	assert.Contains(t, ErrNothingEmbedded.Error(), "openinspect-release")
}

// TestEmbedded: a build without the release step embeds only the placeholder
// and says so; a build after it embeds a set that loads.
func TestEmbedded(t *testing.T) {
	set, err := Embedded()
	if errors.Is(err, ErrNothingEmbedded) {
		assert.Equal(t, ErrNothingEmbedded.Error(), Summary())
		return
	}
	require.NoError(t, err)
	assert.NotEmpty(t, set.Files(KindBundle))
	assert.NoError(t, set.Extract(t.TempDir()), "the embedded archive matches its manifest")
}
