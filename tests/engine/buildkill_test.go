package engine

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pulumi/providertest/pulumitest"
	"github.com/pulumi/providertest/pulumitest/assertpreview"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/e2b"
)

// buildKill is one build of an installation (a sandbox image or the web's
// Vercel deployment), killed at one of its steps.
type buildKill struct {
	name string
	// program is the installation's test (nil: examples/yaml, the fixture
	// checkout copied).
	program func(t *testing.T, emu *emulatorProcess) *pulumitest.PulumiTest
	// flags are the emulator's extra command-line flags.
	flags []string
	// with selects the backend in the installation's program.
	with func(t *testing.T, pt *pulumitest.PulumiTest, emu *emulatorProcess)
	// hold is the call the build is killed in; the build is then under
	// way remotely (the emulator's build goes on, as a cloud's does).
	hold emulator.Fault
	// atKill, when set, checks that the kill left what the case says,
	// once the held call was abandoned.
	atKill func(t *testing.T, emu *emulatorProcess)
	// converged checks the backend's objects once the recovery is done:
	// one ready build of the digest name (one deployment) and no build
	// sandbox left over.
	converged func(t *testing.T, inv emulator.Inventory)
}

// TestSandboxBuildKilled kills `pulumi up` of a full installation while each
// backend's image build is under way (the emulator holds one of the
// builder's calls; E2B's also during its file upload and during its
// pre-warm sandbox's delete), and while the web's Vercel deployment builds
// or is ready but not yet recorded, then runs the documented recovery,
// `pulumi cancel` and one `pulumi up`: it must converge with one ready
// build (one deployment) and nothing of the killed build left, make no
// change on the next preview, and destroy must empty the emulator. Every
// process the killed CLI started (the plugin, the builder it ran) must exit
// by itself within seconds.
func TestSandboxBuildKilled(t *testing.T) {
	t.Parallel()
	requirePulumi(t)
	cases := []buildKill{
		{
			// The fixture installation's default backend: `modal deploy`
			// killed as it publishes the app.
			name: "modal",
			hold: emulator.Fault{Route: "GRPC /modal.client.ModalClient/AppPublish", Kind: emulator.FaultHold, Times: 1},
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
			name: "daytona",
			with: withDaytona,
			hold: emulator.Fault{Route: "GET /daytona/api/snapshots/{idOrName}", Kind: emulator.FaultHold, Times: 1, After: 1},
			converged: func(t *testing.T, inv emulator.Inventory) {
				require.Len(t, inv.Daytona.Snapshots, 1, "one snapshot: %+v", inv.Daytona.Snapshots)
				assert.Equal(t, "active", inv.Daytona.Snapshots[0].State)
				assert.Empty(t, inv.Daytona.Sandboxes, "no build sandbox left")
			},
		},
		{
			name:      "e2b",
			with:      withE2B,
			hold:      emulator.Fault{Route: "GET /e2b/templates/{tid}/builds/{bid}/status", Kind: emulator.FaultHold, Times: 1},
			converged: e2bConverged,
		},
		{
			// The SDK's upload of the runtime (its COPY step) is held: the
			// build was requested and stays waiting, never started.
			name: "e2b upload",
			with: withE2B,
			hold: emulator.Fault{Route: "PUT /e2b/uploads/{tid}/{hash}", Kind: emulator.FaultHold, Times: 1},
			atKill: func(t *testing.T, emu *emulatorProcess) {
				assert.Equal(t, []string{"waiting"}, e2bBuildStatuses(t, emu.inventory(t)), "the killed build never started")
			},
			converged: e2bConverged,
		},
		{
			// The template is ready; the builder's pre-warm sandbox runs
			// and its delete is held, so it outlives the builder.
			name: "e2b prewarm",
			with: withE2B,
			hold: emulator.Fault{Route: "DELETE /e2b/sandboxes/{id}", Kind: emulator.FaultHold, Times: 1},
			atKill: func(t *testing.T, emu *emulatorProcess) {
				inv := emu.inventory(t)
				assert.Equal(t, []string{"ready"}, e2bBuildStatuses(t, inv))
				require.Len(t, inv.E2B.Sandboxes, 1, "the pre-warm sandbox outlived the kill")
				sb := inv.E2B.Sandboxes[0]
				assert.Equal(t, "running", sb.State)
				assert.Equal(t, "template-prewarm", sb.Metadata["purpose"])
				// The builder gives it 60 s; E2B would end it then. An hour,
				// so that what the recovery does, not its speed, decides.
				emu.e2bSetTimeout(t, sb.ID, 3600)
			},
			converged: e2bConverged,
		},
		{
			// The web's production deployment is created and building (for
			// a minute), its first read held.
			name:    "vercel web building",
			program: newVercelWebKillTest,
			flags:   []string{"-vercel-build-time", "60s"},
			hold:    emulator.Fault{Route: "GET /vercel/api/v13/deployments/{idOrUrl}", Kind: emulator.FaultHold, Times: 1},
			atKill: func(t *testing.T, emu *emulatorProcess) {
				deployments := emu.vercelProject(t, vercelWebProject).Deployments
				require.Len(t, deployments, 1, "the killed create made its deployment")
				assert.Equal(t, "BUILDING", deployments[0].State)
			},
			converged: vercelWebConverged,
		},
		{
			// The deployment is ready and holds the production alias; the
			// create's next read of the build log is held, so the state
			// never records it.
			name:    "vercel web ready",
			program: newVercelWebKillTest,
			hold:    emulator.Fault{Route: "GET /vercel/api/v3/deployments/{idOrUrl}/events", Kind: emulator.FaultHold, Times: 1, After: 1},
			atKill: func(t *testing.T, emu *emulatorProcess) {
				deployments := emu.vercelProject(t, vercelWebProject).Deployments
				require.Len(t, deployments, 1, "the killed create made its deployment")
				assert.Equal(t, "READY", deployments[0].State)
				assert.NotEmpty(t, deployments[0].Aliases, "it holds the production alias")
			},
			converged: vercelWebConverged,
		},
		{
			name: "vercel",
			with: withVercel,
			hold: emulator.Fault{Route: "POST /vercel/api/v2/sandboxes/sessions/{sessionId}/cmd", Kind: emulator.FaultHold, Times: 1},
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
			name: "opencomputer",
			with: withOpenComputer,
			hold: emulator.Fault{Route: "GET /opencomputer/api/snapshots/{name}", Kind: emulator.FaultHold, Times: 1, After: 1},
			converged: func(t *testing.T, inv emulator.Inventory) {
				require.Len(t, inv.OpenComputer.Snapshots, 1, "one snapshot: %+v", inv.OpenComputer.Snapshots)
				assert.Equal(t, "ready", inv.OpenComputer.Snapshots[0].Status)
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			runBuildKill(t, tc)
		})
	}
}

// e2bConverged: one template, one build, ready, and no sandbox.
func e2bConverged(t *testing.T, inv emulator.Inventory) {
	assert.Equal(t, []string{"ready"}, e2bBuildStatuses(t, inv), "one build, ready")
	assert.Empty(t, inv.E2B.Sandboxes, "no sandbox left")
}

// e2bBuildStatuses are the statuses of the one template's builds, oldest
// first.
func e2bBuildStatuses(t *testing.T, inv emulator.Inventory) []string {
	t.Helper()
	require.Len(t, inv.E2B.Templates, 1, "one template: %+v", inv.E2B.Templates)
	statuses := []string{}
	for _, b := range inv.E2B.Templates[0].Builds {
		statuses = append(statuses, b.Status)
	}
	return statuses
}

// e2bSetTimeout sets a sandbox's timeout through E2B's API, as a client.
func (e *emulatorProcess) e2bSetTimeout(t *testing.T, id string, seconds int) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.url+e2b.APIPrefix+"/sandboxes/"+id+"/timeout",
		strings.NewReader(fmt.Sprintf(`{"timeout": %d}`, seconds)))
	require.NoError(t, err)
	req.Header.Set("X-API-Key", e2b.DefaultAPIKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
}

// newVercelWebKillTest is examples/yaml-vercel from a copy of the fixture
// checkout.
func newVercelWebKillTest(t *testing.T, emu *emulatorProcess) *pulumitest.PulumiTest {
	pt := newVercelWebTest(t, emu)
	pt.SetConfig(t, "upstreamCheckout", fixtureCopy(t))
	return pt
}

// vercelWebConverged: the web's project holds exactly one deployment, the
// killed run's, ready and holding the production alias.
func vercelWebConverged(t *testing.T, inv emulator.Inventory) {
	for _, p := range inv.Vercel.Projects {
		if p.Name != vercelWebProject {
			continue
		}
		require.Len(t, p.Deployments, 1, "one deployment: %+v", p.Deployments)
		assert.Equal(t, "READY", p.Deployments[0].State)
		assert.NotEmpty(t, p.Deployments[0].Aliases, "it holds the production alias")
		return
	}
	t.Fatalf("no Vercel project %s: %+v", vercelWebProject, inv.Vercel.Projects)
}

func runBuildKill(t *testing.T, tc buildKill) {
	begin := time.Now()
	emu := startEmulatorWith(t, os.Stderr, tc.flags...)
	var pt *pulumitest.PulumiTest
	if tc.program != nil {
		pt = tc.program(t, emu)
	} else {
		pt = newInstallationTest(t, emu)
		pt.SetConfig(t, "upstreamCheckout", fixtureCopy(t))
	}
	if tc.with != nil {
		tc.with(t, pt, emu)
	}
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
	tree.requireGoneAfterKill(t, tc.name)
	emu.waitAbandoned(t)
	emu.admin(t, http.MethodDelete, "faults", nil)
	tree.killAll() // Pulumi's language host, idle since the CLI went
	if tc.atKill != nil {
		tc.atKill(t, emu)
	}

	if lockFiles(t, pt) > 0 {
		runPulumi(t, pt, "cancel", "--yes")
	}
	recovery := runPulumi(t, pt, "up", "--yes", "--skip-preview")
	tc.converged(t, emu.inventory(t))
	assertpreview.HasNoChanges(t, pt.Preview(t))
	t.Logf("%s: killed in %s; recovery: %s; whole case %s", tc.name, tc.hold.Route, resourcesLine(recovery),
		time.Since(begin).Round(time.Second))

	pt.Destroy(t)
	emu.requireEmpty(t)
}
