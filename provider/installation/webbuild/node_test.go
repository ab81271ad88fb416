package webbuild

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// lookNode finds node, which the engine tests need too; without it the test
// fails rather than skips.
func lookNode(t *testing.T) string {
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node reads the rendered JS here; install Node.js 20 or newer")
	return node
}

func runNode(t *testing.T, node, dir, script string) []byte {
	name := filepath.Join(dir, "check.mjs")
	require.NoError(t, os.WriteFile(name, []byte(script), 0o644))
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, name).Output()
	if ee, ok := err.(*exec.ExitError); ok {
		t.Fatalf("node: %v\n%s", err, ee.Stderr)
	}
	require.NoError(t, err)
	return out
}
