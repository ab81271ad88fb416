package toolchain

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A clone outside CI learns in one message which variable to set; a
// directory that lacks the file is named with it; a complete one resolves.
func TestSharedPathNamesTheVariable(t *testing.T) {
	_, err := sharedPath("", "reference/pko-crds-v2.9.0")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "OPENINSPECT_SHARED_DIR is not set")
	assert.Contains(t, err.Error(), "reference/pko-crds-v2.9.0")

	dir := t.TempDir()
	_, err = sharedPath(dir, "reference/pko-crds-v2.9.0")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "OPENINSPECT_SHARED_DIR="+dir+" does not hold reference/pko-crds-v2.9.0")

	require.NoError(t, os.MkdirAll(filepath.Join(dir, "reference", "pko-crds-v2.9.0"), 0o755))
	got, err := sharedPath(dir, "reference/pko-crds-v2.9.0")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "reference", "pko-crds-v2.9.0"), got)
}
