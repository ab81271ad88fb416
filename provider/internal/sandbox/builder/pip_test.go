package builder

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/toolchain"
)

// A pin that is not an exact version is refused before anything runs: the
// cache key would stand for whatever the index served that day.
func TestPipEnvironmentRefusesLoosePins(t *testing.T) {
	cache := t.TempDir()
	r := &Runner{Label: "daytona", Python: "/nonexistent/python", CacheDir: cache}
	for _, pin := range []string{"daytona", "daytona>=0.161.0", "daytona==0.161.*", "daytona==latest"} {
		_, err := r.PipEnvironment(t.Context(), []string{pin})
		require.Error(t, err, pin)
		assert.Contains(t, err.Error(), "is not a package pinned to an exact version (name==1.2.3)", pin)
	}
	entries, err := os.ReadDir(cache)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing was created")
}

// A second call with the same interpreter and pins reuses the environment;
// the pinned version is what is installed. (A small pure-Python package:
// the Daytona builder's own environment is exercised by the DaytonaSnapshot
// tests.)
func TestPipEnvironmentIsCachedByPins(t *testing.T) {
	if testing.Short() {
		t.Skip("installs a package from the index on a cold cache; -short skips it")
	}
	r := &Runner{Label: "test", Python: toolchain.Python(t), CacheDir: filepath.Join(toolchain.CacheDir(), "builder-pip-test")}
	first, err := r.PipEnvironment(t.Context(), []string{"toml==0.10.2"})
	require.NoError(t, err)
	again, err := r.PipEnvironment(t.Context(), []string{"toml==0.10.2"})
	require.NoError(t, err)
	assert.True(t, again.Reused)
	assert.Equal(t, first.Dir, again.Dir)
	got, err := installedPipVersion(t.Context(), again.Python(), "toml")
	require.NoError(t, err)
	assert.Equal(t, "0.10.2", got)
}
