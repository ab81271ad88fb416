package providertest

import (
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/openinspect/pulumi-openinspect/internal/reporoot"

	"github.com/blang/semver"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/integration"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider"
	"github.com/openinspect/pulumi-openinspect/provider/config"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/daytona"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/modal"
	"github.com/openinspect/pulumi-openinspect/tests/toolchain"
)

// FixtureWorker is a small ES module worker written for the tests: a default
// fetch handler and the Durable Object class SessionDO.
const FixtureWorker = "export class SessionDO { async fetch() { return new Response('do'); } }\n" +
	"export default { async fetch() { return new Response('ok'); } };\n"

// sdkEnv are variables cloudflare-go reads by itself (DefaultClientOptions);
// a developer's shell may hold them, and they must not reach a test client.
var sdkEnv = []string{"CLOUDFLARE_API_KEY", "CLOUDFLARE_EMAIL", "CLOUDFLARE_BASE_URL", "CLOUDFLARE_API_USER_SERVICE_KEY"}

// EnvVars are the variables ClearEnv empties: every one the provider's
// configuration falls back to (config.EnvVars) and those the SDKs read.
func EnvVars() []string { return append(config.EnvVars(), sdkEnv...) }

// ClearEnv empties every variable the provider's configuration falls back to,
// and those the SDKs read, so a test never depends on the caller's shell.
func ClearEnv(t testing.TB) {
	t.Helper()
	for _, k := range EnvVars() {
		t.Setenv(k, "")
	}
}

// Version is the version test servers report.
var Version = semver.MustParse("1.0.0")

// NewProvider builds the provider.
func NewProvider(t testing.TB, opts ...provider.Option) p.Provider {
	t.Helper()
	prov, err := provider.New(opts...)
	require.NoError(t, err)
	return prov
}

// NewServer serves the provider in-process, unconfigured.
func NewServer(t testing.TB, opts ...provider.Option) integration.Server {
	t.Helper()
	server, err := integration.NewServer(t.Context(), provider.Name, Version, integration.WithProvider(NewProvider(t, opts...)))
	require.NoError(t, err)
	return server
}

// Harness is the provider configured against its own emulator.
type Harness struct {
	Server integration.Server
	Emu    *emulator.Server

	config map[string]property.Value // what Configure was given
}

// NewHarness starts an emulator in a temporary directory and a provider
// configured for it (Cloudflare, Modal and Daytona), with the caller's
// environment cleared.
func NewHarness(t testing.TB, opts ...provider.Option) *Harness {
	t.Helper()
	return NewHarnessWith(t, emulator.Options{}, opts...)
}

// NewHarnessWith is NewHarness with emulator options (DataDir is set here).
func NewHarnessWith(t testing.TB, emuOpts emulator.Options, opts ...provider.Option) *Harness {
	t.Helper()
	ClearEnv(t)
	emuOpts.DataDir = t.TempDir()
	emu, err := emulator.Start(emuOpts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = emu.Close() })
	h := &Harness{Server: NewServer(t, opts...), Emu: emu, config: map[string]property.Value{
		"cloudflareApiToken":   property.New(emulator.DefaultToken).WithSecret(true),
		"cloudflareAccountId":  property.New(emulator.DefaultAccountID),
		"cloudflareApiBaseUrl": property.New(emu.CloudflareBaseURL()),
		"modalTokenId":         property.New(modal.DefaultTokenID),
		"modalTokenSecret":     property.New(modal.DefaultTokenSecret).WithSecret(true),
		"modalServerUrl":       property.New(emu.URL()),
		"daytonaApiKey":        property.New(daytona.DefaultAPIKey).WithSecret(true),
		"daytonaApiUrl":        property.New(emu.URL() + daytona.APIPrefix),
	}}
	h.Configure(t, nil)
	return h
}

// Configure configures the provider again with extra keys added to (or,
// with a null value, removed from) what it was given.
func (h *Harness) Configure(t testing.TB, extra map[string]property.Value) {
	t.Helper()
	for k, v := range extra {
		if v.IsNull() {
			delete(h.config, k)
		} else {
			h.config[k] = v
		}
	}
	require.NoError(t, h.Server.Configure(p.ConfigureRequest{Args: property.NewMap(h.config)}))
}

// Config is the configuration the provider was given, for another server
// on the same emulator (one with a mock resource monitor, say).
func (h *Harness) Config() property.Map { return property.NewMap(maps.Clone(h.config)) }

// AnotherServer is a second provider on the same emulator, configured as
// this one plus extra: another installation (another Modal environment,
// say) beside the first.
func (h *Harness) AnotherServer(t testing.TB, extra map[string]property.Value, opts ...provider.Option) integration.Server {
	t.Helper()
	config := maps.Clone(h.config)
	maps.Copy(config, extra)
	server := NewServer(t, opts...)
	require.NoError(t, server.Configure(p.ConfigureRequest{Args: property.NewMap(config)}))
	return server
}

// EnableModalDeploys gives the provider a Python for the Modal CLI and the
// tools cache for its virtual environments, which CI keeps between runs.
func (h *Harness) EnableModalDeploys(t testing.TB) {
	t.Helper()
	h.Configure(t, map[string]property.Value{
		"pythonPath": property.New(toolchain.Python(t)),
		"cacheDir":   property.New(toolchain.CacheDir()),
	})
}

// FixtureCheckout is the fixture upstream checkout (tests/fixtures/upstream).
func FixtureCheckout(t testing.TB) string {
	t.Helper()
	return filepath.Join(reporoot.Dir(), "tests", "fixtures", "upstream")
}

// Cloudflare is where and as whom a test's own Cloudflare client talks to
// the harness's emulator (provider/internal/cloudflare/cfapitest takes it).
func (h *Harness) Cloudflare() (baseURL, token, accountID string) {
	return h.Emu.CloudflareBaseURL(), emulator.DefaultToken, emulator.DefaultAccountID
}

// ProviderURN is the URN of the test stack's default provider.
var ProviderURN = URN("pulumi:providers:"+provider.Name, "default")

// URN is a test stack's URN for a resource of type token.
func URN(token, name string) resource.URN {
	return resource.NewURN("test", provider.Name, "", tokens.Type(token), name)
}

// Props builds a property map from plain Go values, nested maps and slices
// included.
func Props(t testing.TB, m map[string]any) property.Map {
	t.Helper()
	return Value(t, m).AsMap()
}

// Value converts a plain Go value (maps, slices, ints, strings, bools).
func Value(t testing.TB, v any) property.Value {
	t.Helper()
	switch v := v.(type) {
	case map[string]any:
		out := map[string]property.Value{}
		for k, e := range v {
			out[k] = Value(t, e)
		}
		return property.New(out)
	case []any:
		out := make([]property.Value, len(v))
		for i, e := range v {
			out[i] = Value(t, e)
		}
		return property.New(out)
	case int:
		return property.New(float64(v))
	case property.Value: // already converted: a secret or an unknown, say
		return v
	}
	pv, err := property.Any(v)
	require.NoError(t, err)
	return pv
}

// List is a property list of objects.
func List(items ...map[string]any) []any {
	out := make([]any, len(items))
	for i, m := range items {
		out[i] = m
	}
	return out
}

// Strings reads a property list of strings; anything else reads as nil.
func Strings(v property.Value) []string {
	if !v.IsArray() {
		return nil
	}
	var out []string
	for _, s := range v.AsArray().All {
		out = append(out, s.AsString())
	}
	return out
}

// FixtureControlPlane is the fixture control plane's bundle
// (tests/fixtures/upstream/packages/control-plane/dist/index.js): the script
// the emulator runs in workerd where a test needs a control plane that
// answers.
func FixtureControlPlane(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(FixtureCheckout(t), "packages", "control-plane", "dist", "index.js"))
	require.NoError(t, err)
	return string(b)
}
