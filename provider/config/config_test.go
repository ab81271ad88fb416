package config_test

import (
	"strings"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
	"github.com/openinspect/pulumi-openinspect/tests/providertest"
)

func TestConfigChangesNeverReplace(t *testing.T) {
	providertest.ClearEnv(t)
	server := providertest.NewServer(t)
	olds := providertest.Props(t, map[string]any{"cloudflareApiToken": "old", "cloudflareAccountId": "a1", "daytonaApiKey": "k1"})
	news := providertest.Props(t, map[string]any{"cloudflareApiToken": "rotated", "cloudflareAccountId": "a1", "daytonaApiKey": "k2",
		"cloudflareApiBaseUrl": "http://127.0.0.1:1/client/v4/"})
	diff, err := server.DiffConfig(p.DiffRequest{Urn: providertest.ProviderURN, OldInputs: olds, State: olds, Inputs: news})
	require.NoError(t, err)
	assert.True(t, diff.HasChanges)
	require.Len(t, diff.DetailedDiff, 3)
	for key, d := range diff.DetailedDiff {
		assert.Equal(t, p.Update, d.Kind, "%s must update in place", key)
	}

	same, err := server.DiffConfig(p.DiffRequest{Urn: providertest.ProviderURN, OldInputs: olds, State: olds, Inputs: olds})
	require.NoError(t, err)
	assert.False(t, same.HasChanges)
}

func TestConfigSecretsAreMarkedSecret(t *testing.T) {
	providertest.ClearEnv(t)
	server := providertest.NewServer(t)
	check, err := server.CheckConfig(p.CheckRequest{Urn: providertest.ProviderURN,
		Inputs: providertest.Props(t, map[string]any{"cloudflareApiToken": "tok", "modalTokenSecret": "ms", "daytonaApiKey": "dk", "cloudflareAccountId": "a"})})
	require.NoError(t, err)
	for _, key := range []string{"cloudflareApiToken", "modalTokenSecret", "daytonaApiKey"} {
		assert.True(t, check.Inputs.Get(key).Secret(), "%s must be secret", key)
	}
	assert.False(t, check.Inputs.Get("cloudflareAccountId").Secret())
}

func TestConfigMissingTokenNamesTheKey(t *testing.T) {
	providertest.ClearEnv(t)
	server := providertest.NewServer(t)
	require.NoError(t, server.Configure(p.ConfigureRequest{Args: providertest.Props(t, map[string]any{"cloudflareAccountId": "a"})}))
	_, err := server.Create(p.CreateRequest{Urn: providertest.URN(cloudflare.D1DatabaseToken, "db"), Properties: providertest.Props(t, map[string]any{"name": "x"})})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "openinspect:cloudflareApiToken")
	assert.Contains(t, err.Error(), "CLOUDFLARE_API_TOKEN")
}

func TestConfigReadsEnvironmentInConfigure(t *testing.T) {
	h := providertest.NewHarness(t)
	// A second provider configured with nothing but environment variables, as
	// `pulumi destroy` or `pulumi import` would configure it, reaches the same account.
	t.Setenv("CLOUDFLARE_API_TOKEN", "emulator-token")
	t.Setenv("CLOUDFLARE_ACCOUNT_ID", "0f1e2d3c4b5a69788796a5b4c3d2e1f0")
	t.Setenv("CLOUDFLARE_API_BASE_URL", h.Emu.CloudflareBaseURL())
	server := providertest.NewServer(t)
	require.NoError(t, server.Configure(p.ConfigureRequest{Args: property.NewMap(nil)}))
	created, err := server.Create(p.CreateRequest{Urn: providertest.URN(cloudflare.D1DatabaseToken, "db"), Properties: providertest.Props(t, map[string]any{"name": "oi-env"})})
	require.NoError(t, err)
	assert.NotEmpty(t, created.ID)
	require.Len(t, h.Emu.Inventory().D1, 1)
}

// TestConfigRefusesPlainHTTPToAnotherHost: a credential-carrying API base
// URL over plain http to another machine is refused when the provider is
// configured, which the engine does before the preview asks any resource
// anything, naming the key and never the token; the same scheme on loopback
// (the local cloud) is accepted.
func TestConfigRefusesPlainHTTPToAnotherHost(t *testing.T) {
	for _, tc := range []struct{ key, url, credential string }{
		{"cloudflareApiBaseUrl", "http://api.cloudflare.example/client/v4/", "Cloudflare API token"},
		{"modalServerUrl", "http://modal.example:443", "Modal token"},
		{"daytonaApiUrl", "http://10.0.0.5/api", "Daytona API key"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			providertest.ClearEnv(t)
			server := providertest.NewServer(t)
			err := server.Configure(p.ConfigureRequest{Args: providertest.Props(t, map[string]any{
				"cloudflareApiToken": "secret-token-value", "cloudflareAccountId": "a", tc.key: tc.url})})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "openinspect:"+tc.key)
			assert.Contains(t, err.Error(), tc.url)
			assert.Contains(t, err.Error(), tc.credential+" would travel unencrypted")
			assert.NotContains(t, err.Error(), "secret-token-value")
		})
	}
	for _, local := range []string{"http://127.0.0.1:8787/client/v4/", "http://localhost:8787/client/v4/", "http://[::1]:8787/client/v4/", "https://api.cloudflare.com/client/v4/"} {
		providertest.ClearEnv(t)
		server := providertest.NewServer(t)
		require.NoError(t, server.Configure(p.ConfigureRequest{Args: providertest.Props(t, map[string]any{
			"cloudflareApiToken": "t", "cloudflareAccountId": "a", "cloudflareApiBaseUrl": local})}), local)
	}
}

// TestConfigRefusesModalEnvironmentNamesModalRefuses: issue 48. A
// modalEnvironment Modal's client would refuse (too long, not ASCII, a
// space, a leading '-') is refused when the provider is configured, before
// any call, naming the key and its variable and saying the rule; names
// Modal takes are accepted, from the key or the variable alike.
func TestConfigRefusesModalEnvironmentNamesModalRefuses(t *testing.T) {
	const rule = "Modal environment names are 2 to 64 characters, ASCII letters, digits, '-', '_' and '.', starting with a letter or digit"
	for name, want := range map[string]string{
		strings.Repeat("e", 300): `"` + strings.Repeat("e", 64) + `"… (300 characters) is 300 characters, which Modal refuses: ` + rule,
		"prodé":                  `"prodé" is not a name Modal accepts: ` + rule,
		"my env":                 `"my env" is not a name Modal accepts: ` + rule,
		"-dev":                   `"-dev" is not a name Modal accepts: ` + rule,
	} {
		providertest.ClearEnv(t)
		server := providertest.NewServer(t)
		err := server.Configure(p.ConfigureRequest{Args: providertest.Props(t, map[string]any{"modalEnvironment": name})})
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "openinspect:modalEnvironment (or MODAL_ENVIRONMENT): "+want)

		t.Setenv("MODAL_ENVIRONMENT", name)
		err = providertest.NewServer(t).Configure(p.ConfigureRequest{Args: property.NewMap(nil)})
		require.Error(t, err, "MODAL_ENVIRONMENT=%s", name)
		assert.Contains(t, err.Error(), "openinspect:modalEnvironment (or MODAL_ENVIRONMENT): "+want)
	}
	for _, name := range []string{"main", "oi-live", "staging_2.eu", strings.Repeat("e", 64)} {
		providertest.ClearEnv(t)
		require.NoError(t, providertest.NewServer(t).Configure(p.ConfigureRequest{Args: providertest.Props(t, map[string]any{"modalEnvironment": name})}), name)
		t.Setenv("MODAL_ENVIRONMENT", name)
		require.NoError(t, providertest.NewServer(t).Configure(p.ConfigureRequest{Args: property.NewMap(nil)}), name)
	}
}
