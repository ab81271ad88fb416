package installation_test

import (
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/integration"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
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
				return resp.ID, resp.Properties, err
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
// built when the up follows.
func TestPreviewRefusesWrongCredentialsAtTheLock(t *testing.T) {
	h := providertest.NewHarness(t)
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			server := previewServer(t, h, tc.config)
			spec := validSpec(providertest.FixtureCheckout(t))
			tc.modify(spec)
			_, err := server.Construct(p.ConstructRequest{Urn: providertest.URN(componentToken, "oi"), Inputs: providertest.Props(t, spec), DryRun: true})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "wrong-vercel-token")
			assert.NotContains(t, err.Error(), "wrong-cloudflare-token")
		})
	}
}
