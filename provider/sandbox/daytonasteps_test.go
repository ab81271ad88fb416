package sandbox_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/internal/sandbox/builder"
	"github.com/openinspect/pulumi-openinspect/provider/internal/upstream"
	"github.com/openinspect/pulumi-openinspect/provider/sandbox"
	"github.com/openinspect/pulumi-openinspect/tests/providertest"
	"github.com/openinspect/pulumi-openinspect/tests/toolchain"
)

// builderAsks runs the builder's own create_base_snapshot (src/toolchain.py)
// in the SDK's environment with a client that records what it is asked
// instead of calling Daytona, and computes what the SDK would send for it
// the way the SDK does (SnapshotService.create: the context hashes of the
// image's local directories, then the Dockerfile with the entrypoint).
const builderAsks = `
import json, sys
from pathlib import Path
from daytona._sync.object_storage import ObjectStorage
from src.toolchain import create_base_snapshot

class Snapshots:
    asked = None
    def create(self, params, *, on_logs=None, timeout=0):
        image = params.image
        hashes = [ObjectStorage._compute_hash_for_path_md5(ObjectStorage, c.source_path, c.archive_path)
                  for c in image._context_list]
        if params.entrypoint:
            image = image.entrypoint(params.entrypoint)
        Snapshots.asked = {"name": params.name, "dockerfile": image.dockerfile(), "contextHashes": hashes}

class Client:
    snapshot = Snapshots()

create_base_snapshot(Client(), Path(sys.argv[1]), sys.argv[2])
json.dump(Snapshots.asked, sys.stdout)
`

// TestDaytonaBuildAsksWhatTheBuilderEmits builds the snapshot through the
// resource (python -m src.bootstrap against the emulator) and compares what
// the emulator was asked to build, its Dockerfile and build contexts, with
// what the builder's own code emits for the same checkout. It runs on the
// fixture builder; OI_DAYTONA_STEPS_CHECKOUT=<an upstream checkout> runs it
// on upstream's (by hand: it builds nothing real, only the emulator is
// called).
func TestDaytonaBuildAsksWhatTheBuilderEmits(t *testing.T) {
	checkout := os.Getenv("OI_DAYTONA_STEPS_CHECKOUT")
	if checkout == "" {
		checkout = fixturePackages(t, "daytona-infra", "sandbox-runtime")
	}
	// Builds slow enough that the SDK sees one building and follows its log.
	h := daytonaHarness(t, 1500*time.Millisecond)
	u := providertest.URN(sandbox.DaytonaSnapshotToken, "base")
	inputs := daytonaInputs(t, h, checkout, "oi-steps-base", nil)
	h.Emu.ResetCounts()
	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs})
	require.NoError(t, err)
	name := created.Properties.Get("name").AsString()
	got := daytonaSnapshot(t, h, name)
	routes := h.Emu.Counts()

	c, err := upstream.Load()
	require.NoError(t, err)
	sdk := c.Sandbox.Daytona.Snapshot.BuilderSDK
	r := &builder.Runner{Label: "daytona", Python: toolchain.Python(t), CacheDir: filepath.Join(toolchain.CacheDir(), "daytona-venvs")}
	venv, err := r.PipEnvironment(t.Context(), []string{sdk.Package + "==" + sdk.Version})
	require.NoError(t, err)
	require.True(t, venv.Reused, "the environment the build ran in")
	cmd := exec.CommandContext(t.Context(), venv.Python(), "-c", builderAsks, checkout, name)
	cmd.Dir = filepath.Join(checkout, "packages", "daytona-infra")
	cmd.Env = append(builder.BaseEnv(), venv.Env()...)
	out, err := cmd.Output()
	require.NoError(t, err, "%s", out)
	var want struct {
		Name          string   `json:"name"`
		Dockerfile    string   `json:"dockerfile"`
		ContextHashes []string `json:"contextHashes"`
	}
	require.NoError(t, json.Unmarshal(out, &want))

	assert.Equal(t, name, want.Name)
	assert.Equal(t, want.Dockerfile, got.Dockerfile, "the Dockerfile the builder emits is the one built")
	assert.Equal(t, want.ContextHashes, got.ContextHashes, "the build contexts the builder emits are the ones uploaded and built")
	assert.Equal(t, "eu", got.RegionID)
	var steps []string
	for _, line := range strings.Split(got.Dockerfile, "\n") {
		if strings.TrimSpace(line) != "" {
			steps = append(steps, line)
		}
	}
	var called []string
	for route, n := range routes {
		if strings.HasPrefix(strings.SplitN(route, " ", 2)[1], "/daytona/") && n > 0 {
			called = append(called, route)
		}
	}
	slices.Sort(called)
	assert.Subset(t, called, []string{"GET /daytona/api/snapshots/{id}/build-logs-url", "GET /daytona/api/snapshots/{id}/build-logs"},
		"the SDK followed the build log")
	t.Logf("builder in %s: %d Dockerfile steps, %d build contexts; routes called: %s", checkout, len(steps), len(got.ContextHashes), strings.Join(called, ", "))
}
