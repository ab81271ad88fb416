package builder

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writePackage(t *testing.T, scripts string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"x","scripts":{`+scripts+`}}`), 0o644))
	return dir
}

// An upstream-shaped bundling script is read as its entry point and flags,
// the output path left for the caller; anything else is refused by name.
func TestReadEsbuildScript(t *testing.T) {
	dir := writePackage(t, `"build": "esbuild src/build-template.ts --bundle --format=esm --platform=node --target=node22 --outfile=dist/build-template.js --packages=external"`)
	s, err := ReadEsbuildScript(dir, "build")
	require.NoError(t, err)
	assert.Equal(t, "src/build-template.ts", s.Entry)
	assert.Equal(t, []string{"--bundle", "--format=esm", "--platform=node", "--target=node22", "--packages=external"}, s.Flags)

	for script, want := range map[string]string{
		`"build": "tsc && esbuild src/a.ts --bundle"`:   "more than one esbuild command",
		`"build": "webpack src/a.ts"`:                   "does not run esbuild",
		`"build": "esbuild src/a.ts src/b.ts --bundle"`: "more than one entry point",
		`"build": "esbuild --bundle"`:                   "names no entry point",
		`"other": "esbuild src/a.ts"`:                   `has no "build" script`,
	} {
		_, err := ReadEsbuildScript(writePackage(t, script), "build")
		require.Error(t, err, script)
		assert.Contains(t, err.Error(), want, script)
	}
}

// Pins must be exact versions: a range would make the cache key stand for
// whatever the registry served that day. Nothing is installed for a bad one.
func TestNodeEnvironmentRefusesRanges(t *testing.T) {
	cache := t.TempDir()
	r := &Runner{Label: "test", CacheDir: cache}
	for _, pin := range []string{"esbuild@^0.28.1", "esbuild", "@scope/pkg@latest", "zod@4"} {
		_, err := r.NodeEnvironment(context.Background(), "", []string{pin})
		require.Error(t, err, pin)
		assert.Contains(t, err.Error(), "not a package pinned to an exact version", pin)
	}
	entries, err := os.ReadDir(cache)
	require.NoError(t, err)
	assert.Empty(t, entries)
}
