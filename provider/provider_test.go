package provider

import (
	"testing"

	"github.com/blang/semver"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/integration"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
)

// harness is a provider served in-process and configured against a fresh
// in-process emulator.
type harness struct {
	server    integration.Server
	emu       *emulator.Server
	databases int // names the databases newDatabase creates
}

func clearCloudEnv(t testing.TB) {
	t.Helper()
	for _, k := range []string{"CLOUDFLARE_API_TOKEN", "CLOUDFLARE_ACCOUNT_ID", "CLOUDFLARE_API_BASE_URL",
		"CLOUDFLARE_API_KEY", "CLOUDFLARE_EMAIL", "MODAL_TOKEN_ID", "MODAL_TOKEN_SECRET",
		"MODAL_ENVIRONMENT", "DAYTONA_API_KEY", "DAYTONA_API_URL"} {
		t.Setenv(k, "")
	}
}

func newServer(t testing.TB) integration.Server {
	t.Helper()
	prov, err := New()
	require.NoError(t, err)
	server, err := integration.NewServer(t.Context(), Name, semver.MustParse("1.0.0"), integration.WithProvider(prov))
	require.NoError(t, err)
	return server
}

func newHarness(t testing.TB) *harness {
	t.Helper()
	clearCloudEnv(t)
	emu, err := emulator.Start(emulator.Options{DataDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = emu.Close() })
	server := newServer(t)
	require.NoError(t, server.Configure(p.ConfigureRequest{Args: property.NewMap(map[string]property.Value{
		"cloudflareApiToken":   property.New(emulator.DefaultToken).WithSecret(true),
		"cloudflareAccountId":  property.New(emulator.DefaultAccountID),
		"cloudflareApiBaseUrl": property.New(emu.CloudflareBaseURL()),
	})}))
	return &harness{server: server, emu: emu}
}

func urn(typ, name string) resource.URN {
	return resource.NewURN("test", "openinspect", "", tokens.Type(typ), name)
}

// props builds a property map from plain Go values, nested maps and slices
// included.
func props(t testing.TB, m map[string]any) property.Map {
	t.Helper()
	return toValue(t, m).AsMap()
}

func toValue(t testing.TB, v any) property.Value {
	t.Helper()
	switch v := v.(type) {
	case map[string]any:
		out := map[string]property.Value{}
		for k, e := range v {
			out[k] = toValue(t, e)
		}
		return property.New(out)
	case []any:
		out := make([]property.Value, len(v))
		for i, e := range v {
			out[i] = toValue(t, e)
		}
		return property.New(out)
	case int:
		return property.New(float64(v))
	}
	pv, err := property.Any(v)
	require.NoError(t, err)
	return pv
}
