package emulator_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/assets"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/d1"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/kv"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/queues"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/r2"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/workers"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/zones"
)

// The root package only composes the families: at most 600 lines of code,
// and the only routes it mounts itself are its admin inventory and the
// fallback; every API is registered by its own package.
func TestRootOnlyComposes(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	route := regexp.MustCompile(`HandleFunc\("([^"]*)"|\.API\(`)
	lines, routes := 0, 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		lines += strings.Count(string(b), "\n")
		for _, m := range route.FindAllStringSubmatch(string(b), -1) {
			routes++
			assert.Contains(t, []string{"GET /__emulator/inventory", "/"}, m[1], "%s mounts a route of its own: %s", f, m[0])
		}
	}
	assert.Equal(t, 2, routes, "the inventory and the fallback, and nothing else, are mounted here")
	// 600 until issue 50 added the model stand-in and the gateway's proxy
	// to what the root composes (each family's wiring is a few lines here).
	assert.LessOrEqual(t, lines, 620, "the root's non-test lines")
}

// Each Cloudflare API keeps its own state file.
func TestEachCloudflareAPIHasItsOwnStateFile(t *testing.T) {
	names := []string{d1.StateFileName, kv.StateFileName, r2.StateFileName, queues.StateFileName,
		zones.StateFileName, workers.StateFileName, assets.StateFileName}
	seen := map[string]bool{}
	for _, n := range names {
		assert.NotEmpty(t, n)
		assert.False(t, seen[n], "%s is shared", n)
		seen[n] = true
	}
}
