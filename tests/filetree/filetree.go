// Package filetree writes the small directory trees tests build their
// inputs from (bundles, asset directories, upstream source), so that each
// test package need not carry its own copy of the loop.
package filetree

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Write writes files (slash path -> content) under a new temporary
// directory and returns it. A file ending in .sh is executable, as a
// checkout's scripts are.
func Write(t testing.TB, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for rel, content := range files {
		path := filepath.Join(root, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		mode := os.FileMode(0o644)
		if strings.HasSuffix(rel, ".sh") {
			mode = 0o755
		}
		require.NoError(t, os.WriteFile(path, []byte(content), mode))
	}
	return root
}
