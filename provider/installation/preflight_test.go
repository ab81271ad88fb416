package installation_test

import (
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/integration"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
	"github.com/openinspect/pulumi-openinspect/provider/internal/web/vercelapi"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/daytona"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/e2b"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/opencomputer"
	emvercel "github.com/openinspect/pulumi-openinspect/tests/emulator/vercel"
	"github.com/openinspect/pulumi-openinspect/tests/providertest"
)

// previewServer serves the component with a resource monitor that answers
// every child as a preview does, except the NameLock, whose create's
// preview it runs for real against the harness's emulator: what the lock
// refuses there is what a preview of the program refuses. Each server is
// one program run (a monitor of its own).
func previewServer(t *testing.T, h *providertest.Harness, config map[string]property.Value) integration.Server {
	t.Helper()
	lockServer := h.AnotherServer(t, config)
	server, err := integration.NewServer(t.Context(), family.PackageName, providertest.Version,
		integration.WithProvider(providertest.NewProvider(t)),
		integration.WithMocks(&integration.MockResourceMonitor{NewResourceF: func(args integration.MockResourceArgs) (string, property.Map, error) {
			if args.TypeToken == "openinspect:index:NameLock" {
				resp, err := lockServer.Create(p.CreateRequest{Urn: providertest.URN(string(args.TypeToken), args.Name),
					Properties: args.Inputs, DryRun: true})
				return resp.ID, plainUnknowns(resp.Properties), err
			}
			// A preview knows no child's outputs.
			return args.Name + "-id", property.Map{}, nil
		}}))
	require.NoError(t, err)
	merged := h.Config().AsMap()
	for k, v := range config {
		merged[k] = v
	}
	require.NoError(t, server.Configure(p.ConfigureRequest{Args: property.NewMap(merged)}))
	return server
}

// plainUnknowns is outputs with each unknown made a plain unknown: a
// preview's lock has its preflight (holding secrets) unknown and secret,
// which the engine carries but the mock monitor cannot marshal.
func plainUnknowns(outputs property.Map) property.Map {
	out := make(map[string]property.Value, outputs.Len())
	for k, v := range outputs.All {
		if v.IsComputed() {
			v = property.New(property.Computed)
		}
		out[k] = v
	}
	return property.NewMap(out)
}

// Two OpenInspect components of one program claiming the same names are
// refused at preview, the second naming the first, before anything of the
// second is registered; another deployment name, the same component
// constructed again, or another program run are not refused.
func TestTwoComponentsWithTheSameNamesRefusedAtPreview(t *testing.T) {
	h := providertest.NewHarness(t)
	server := previewServer(t, h, nil)
	// The engine names its resource monitor in every ConstructRequest, one
	// per run; the test harness fills it in only after the provider saw
	// the request, so the runs are named here as the engine would.
	construct := func(s integration.Server, run, name, deployment string) error {
		spec := validSpec(providertest.FixtureCheckout(t))
		spec["deploymentName"] = deployment
		_, err := s.Construct(p.ConstructRequest{Urn: providertest.URN(componentToken, name), Inputs: providertest.Props(t, spec),
			DryRun: true, MonitorEndpoint: run})
		return err
	}
	require.NoError(t, construct(server, "127.0.0.1:1001", "first", "t1"))
	h.Emu.ResetCounts()
	err := construct(server, "127.0.0.1:1001", "second", "t1")
	require.Error(t, err, "two installations with the same names in one program")
	assert.Contains(t, err.Error(), `deploymentName: OpenInspect "first" of this program already claims the installation`)
	assert.Contains(t, err.Error(), "give one of them another deploymentName (or namePrefix)")
	assert.Contains(t, err.Error(), `the D1 database`, "each name the two share is said")
	assert.Empty(t, h.Emu.Counts(), "refused with no call")

	require.NoError(t, construct(server, "127.0.0.1:1001", "second", "t2"), "another deployment name claims other names")
	require.NoError(t, construct(server, "127.0.0.1:1001", "first", "t1"), "the same component constructed again keeps its own names")
	require.NoError(t, construct(server, "127.0.0.1:1002", "second", "t1"), "another program run claims nothing of this one")
}

// A wrong credential fails the installation's preview at the NameLock,
// the first child, naming the key: nothing else of the installation is
// built when the up follows. The sandbox backend's key is checked too,
// with the image given (sandbox.manage false): the control plane needs it
// whether or not the installation builds the image. The right key passes.
func TestPreviewRefusesWrongCredentialsAtTheLock(t *testing.T) {
	h := providertest.NewHarness(t)
	vercelAPI := h.Emu.URL() + emvercel.APIPrefix
	vc, err := vercelapi.New(vercelAPI, emvercel.DefaultToken, emvercel.DefaultTeamID)
	require.NoError(t, err)
	sandboxProject, err := vc.CreateProject(t.Context(), "oi-sandboxes", vercelapi.ProjectSettings{})
	require.NoError(t, err)
	// backend selects a sandbox backend with key, its image given.
	backend := func(provider string, key string) func(m map[string]any) {
		settings := map[string]map[string]any{
			"daytona":      {"apiUrl": h.Emu.URL() + daytona.APIPrefix, "baseSnapshot": "oi-base"},
			"e2b":          {"apiUrl": h.Emu.URL() + e2b.APIPrefix, "templateId": "oi-template"},
			"opencomputer": {"apiUrl": h.Emu.URL() + opencomputer.APIPrefix, "template": "oi-snapshot"},
			"vercel": {"apiUrl": vercelAPI, "teamId": emvercel.DefaultTeamID, "projectId": sandboxProject.ID,
				"baseSnapshotId": "snap_oi"},
		}[provider]
		if provider == "vercel" {
			settings["token"] = secret(key)
		} else {
			settings["apiKey"] = secret(key)
		}
		return func(m map[string]any) {
			m["sandbox"] = map[string]any{"provider": provider, "manage": false, provider: settings}
		}
	}
	rightKeys := map[string]struct {
		key   string
		calls func() int
	}{
		"daytona": {daytona.DefaultAPIKey, h.Emu.Daytona().Calls}, "e2b": {e2b.DefaultAPIKey, h.Emu.E2B().Calls},
		"opencomputer": {opencomputer.DefaultAPIKey, h.Emu.OpenComputer().Calls}, "vercel": {emvercel.DefaultToken, h.Emu.Vercel().Calls},
	}
	for provider, right := range rightKeys {
		t.Run("right "+provider+" key", func(t *testing.T) {
			spec := validSpec(providertest.FixtureCheckout(t))
			backend(provider, right.key)(spec)
			server := previewServer(t, h, nil)
			h.Emu.ResetCounts()
			_, err := server.Construct(p.ConstructRequest{Urn: providertest.URN(componentToken, "oi"),
				Inputs: providertest.Props(t, spec), DryRun: true})
			require.NoError(t, err)
			assert.Equal(t, 1, right.calls(), "the lock read the backend's API once")
		})
	}
	wrongSecrets := []string{"wrong-vercel-token", "wrong-cloudflare-token", "wrong-daytona-key", "wrong-e2b-key",
		"wrong-opencomputer-key", "wrong-vercel-sandbox-token"}
	for _, tc := range []struct {
		name   string
		config map[string]property.Value
		modify func(m map[string]any)
		want   string
	}{
		{"wrong Vercel token", nil, func(m map[string]any) {
			m["web"] = map[string]any{"platform": "vercel", "vercel": map[string]any{"token": secret("wrong-vercel-token"),
				"teamId": emvercel.DefaultTeamID, "apiUrl": h.Emu.URL() + emvercel.APIPrefix}}
		}, "web.vercel.token: Vercel refused the token"},
		{"wrong Cloudflare token", map[string]property.Value{"cloudflareApiToken": secret("wrong-cloudflare-token")}, func(map[string]any) {},
			"openinspect:cloudflareApiToken (or CLOUDFLARE_API_TOKEN): Cloudflare refused the token"},
		{"wrong Daytona key", nil, backend("daytona", "wrong-daytona-key"), "sandbox.daytona.apiKey: Daytona at " + h.Emu.URL() +
			daytona.APIPrefix + " refused the API key"},
		{"wrong E2B key", nil, backend("e2b", "wrong-e2b-key"), "sandbox.e2b.apiKey: E2B at " + h.Emu.URL() + e2b.APIPrefix +
			" refused the API key"},
		{"wrong OpenComputer key", nil, backend("opencomputer", "wrong-opencomputer-key"), "sandbox.opencomputer.apiKey: OpenComputer at " +
			h.Emu.URL() + opencomputer.APIPrefix + " refused the API key"},
		{"wrong Vercel Sandbox token", nil, backend("vercel", "wrong-vercel-sandbox-token"), "sandbox.vercel.token: Vercel refused the token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server := previewServer(t, h, tc.config)
			spec := validSpec(providertest.FixtureCheckout(t))
			tc.modify(spec)
			_, err := server.Construct(p.ConstructRequest{Urn: providertest.URN(componentToken, "oi"), Inputs: providertest.Props(t, spec), DryRun: true})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			for _, s := range wrongSecrets {
				assert.NotContains(t, err.Error(), s, "no secret is quoted")
			}
		})
	}
}
