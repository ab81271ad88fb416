package engine

import (
	"bytes"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pulumi/providertest/pulumitest"
	"github.com/pulumi/providertest/pulumitest/assertpreview"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
)

// buildKill is one sandbox backend's build, killed at its slow step.
type buildKill struct {
	backend string
	// with selects the backend in the installation's program.
	with func(t *testing.T, pt *pulumitest.PulumiTest, emu *emulatorProcess)
	// hold is the backend call the build is killed in; the builder is then
	// mid-build remotely (the emulator's build goes on, as a cloud's does).
	hold emulator.Fault
	// converged checks the backend's objects once the recovery is done:
	// one ready build of the digest name and no build sandbox left over.
	converged func(t *testing.T, inv emulator.Inventory)
}

// TestSandboxBuildKilled kills `pulumi up` of a full installation while each
// backend's image build is under way (the emulator holds one of the
// builder's calls), then runs the documented recovery, `pulumi cancel` and
// one `pulumi up`: it must converge with one ready build and nothing of the
// killed build left, make no change on the next preview, and destroy must
// empty the emulator. Every process the killed CLI started (the plugin, the
// builder it ran) must exit by itself within seconds.
func TestSandboxBuildKilled(t *testing.T) {
	t.Parallel()
	requirePulumi(t)
	cases := []buildKill{
		{
			// The fixture installation's default backend: `modal deploy`
			// killed as it publishes the app.
			backend: "modal",
			with:    func(*testing.T, *pulumitest.PulumiTest, *emulatorProcess) {},
			hold:    emulator.Fault{Route: "GRPC /modal.client.ModalClient/AppPublish", Kind: emulator.FaultHold, Times: 1},
			converged: func(t *testing.T, inv emulator.Inventory) {
				var live []string
				for _, a := range inv.Modal.Apps {
					if a.State != "stopped" {
						live = append(live, a.Name+" "+a.State)
					}
				}
				require.Len(t, live, 1, "one live app: %+v", inv.Modal.Apps)
				assert.True(t, strings.HasSuffix(live[0], " deployed"), "deployed: %v", live)
			},
		},
		{
			backend: "daytona",
			with:    withDaytona,
			hold:    emulator.Fault{Route: "GET /daytona/api/snapshots/{idOrName}", Kind: emulator.FaultHold, Times: 1, After: 1},
			converged: func(t *testing.T, inv emulator.Inventory) {
				require.Len(t, inv.Daytona.Snapshots, 1, "one snapshot: %+v", inv.Daytona.Snapshots)
				assert.Equal(t, "active", inv.Daytona.Snapshots[0].State)
				assert.Empty(t, inv.Daytona.Sandboxes, "no build sandbox left")
			},
		},
		{
			backend: "e2b",
			with:    withE2B,
			hold:    emulator.Fault{Route: "GET /e2b/templates/{tid}/builds/{bid}/status", Kind: emulator.FaultHold, Times: 1},
			converged: func(t *testing.T, inv emulator.Inventory) {
				require.Len(t, inv.E2B.Templates, 1, "one template: %+v", inv.E2B.Templates)
				var statuses []string
				for _, b := range inv.E2B.Templates[0].Builds {
					statuses = append(statuses, b.Status)
				}
				assert.Equal(t, []string{"ready"}, statuses, "one build, ready")
				assert.Empty(t, inv.E2B.Sandboxes, "no sandbox left")
			},
		},
		{
			backend: "vercel",
			with:    withVercel,
			hold:    emulator.Fault{Route: "POST /vercel/api/v2/sandboxes/sessions/{sessionId}/cmd", Kind: emulator.FaultHold, Times: 1},
			converged: func(t *testing.T, inv emulator.Inventory) {
				var ready []string
				for _, s := range inv.Vercel.Snapshots {
					if s.Status == "created" {
						ready = append(ready, s.ID)
					}
				}
				assert.Len(t, ready, 1, "one snapshot: %+v", inv.Vercel.Snapshots)
				for _, sb := range inv.Vercel.Sandboxes {
					assert.NotEqual(t, "running", sb.Status, "build sandbox %s left running", sb.Name)
				}
			},
		},
		{
			backend: "opencomputer",
			with:    withOpenComputer,
			hold:    emulator.Fault{Route: "GET /opencomputer/api/snapshots/{name}", Kind: emulator.FaultHold, Times: 1, After: 1},
			converged: func(t *testing.T, inv emulator.Inventory) {
				require.Len(t, inv.OpenComputer.Snapshots, 1, "one snapshot: %+v", inv.OpenComputer.Snapshots)
				assert.Equal(t, "ready", inv.OpenComputer.Snapshots[0].Status)
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.backend, func(t *testing.T) {
			t.Parallel()
			runBuildKill(t, tc)
		})
	}
}

func runBuildKill(t *testing.T, tc buildKill) {
	begin := time.Now()
	emu := startEmulator(t)
	checkout := fixtureCopy(t)
	pt := newInstallationTest(t, emu)
	pt.SetConfig(t, "upstreamCheckout", checkout)
	tc.with(t, pt, emu)
	emu.injectFault(t, tc.hold)

	var out bytes.Buffer
	up := pulumiCommand(t, pt, &out, "up", "--yes", "--skip-preview")
	require.NoError(t, up.Start())
	exited := make(chan error, 1)
	go func() { exited <- up.Wait() }()
	tree := &processTree{root: up.Process.Pid}
	t.Cleanup(func() { tree.killAll() })
	emu.waitHeld(t, exited, &out)
	tree.snapshot() // the builder making the held call among them

	require.NoError(t, syscall.Kill(up.Process.Pid, syscall.SIGKILL))
	<-exited
	tree.requireGoneAfterKill(t, tc.backend)
	emu.waitAbandoned(t)
	emu.admin(t, http.MethodDelete, "faults", nil)
	tree.killAll() // Pulumi's language host, idle since the CLI went

	if lockFiles(t, pt) > 0 {
		runPulumi(t, pt, "cancel", "--yes")
	}
	recovery := runPulumi(t, pt, "up", "--yes", "--skip-preview")
	tc.converged(t, emu.inventory(t))
	assertpreview.HasNoChanges(t, pt.Preview(t))
	t.Logf("%s: killed in %s; recovery: %s; whole case %s", tc.backend, tc.hold.Route, resourcesLine(recovery),
		time.Since(begin).Round(time.Second))

	pt.Destroy(t)
	emu.requireEmpty(t)
}
