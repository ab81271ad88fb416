package cloudflare_test

import (
	"net/url"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/providertest"
)

// TestWorkerUrlsReadSubdomainOnce: create and refresh read the account's
// subdomain (one call); preview, diff and update make none.
func TestWorkerUrlsReadSubdomainOnce(t *testing.T) {
	workerUrlsReadSubdomainOnce(t)
}

// TestWorkerUrlsIgnoreCallersEnv is the same test run from a shell that
// exports every variable the configuration falls back to, as the README tells
// emulator users to do (OPENINSPECT_WORKERS_DEV_BASE_URL among them), each set
// to junk: the harness clears them all, so the provider still reads the
// account's workers.dev subdomain.
func TestWorkerUrlsIgnoreCallersEnv(t *testing.T) {
	for _, k := range providertest.EnvVars() {
		t.Setenv(k, "http://junk.invalid/"+k)
	}
	require.Contains(t, providertest.EnvVars(), "OPENINSPECT_WORKERS_DEV_BASE_URL")
	workerUrlsReadSubdomainOnce(t)
}

func workerUrlsReadSubdomainOnce(t *testing.T) {
	h := providertest.NewHarness(t)
	u := providertest.URN("openinspect:index:WorkerUrls", "urls")
	inputs := providertest.Props(t, map[string]any{"scripts": []any{"open-inspect-control-plane-t", "open-inspect-slack-bot-t"}})

	preview, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs, DryRun: true})
	require.NoError(t, err)
	assert.Zero(t, h.Emu.CloudflareCalls(), "preview must not call Cloudflare")
	previewed := preview.Properties.Get("urls")
	assert.True(t, previewed.IsComputed() || previewed.IsNull(), "a create's preview has read no subdomain: no URLs yet, %v", previewed)

	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs})
	require.NoError(t, err)
	assert.Equal(t, 1, h.Emu.CloudflareCalls(), "one subdomain read")
	urls := created.Properties.Get("urls").AsMap()
	assert.Equal(t, "https://open-inspect-control-plane-t.openinspect-emulator.workers.dev", urls.Get("open-inspect-control-plane-t").AsString())

	more := providertest.Props(t, map[string]any{"scripts": []any{"open-inspect-control-plane-t", "open-inspect-github-bot-t"}})
	diff, err := h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: more})
	require.NoError(t, err)
	assert.True(t, diff.HasChanges)
	// The update's preview shows the URLs it will record: the kept
	// script's unchanged, the new one's known.
	planned, err := h.Server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: more, DryRun: true})
	require.NoError(t, err)
	require.True(t, planned.Properties.Get("urls").IsMap(), "the URLs are known at an update's preview: %v", planned.Properties.Get("urls"))
	assert.Equal(t, urls.Get("open-inspect-control-plane-t").AsString(),
		planned.Properties.Get("urls").AsMap().Get("open-inspect-control-plane-t").AsString())
	assert.Equal(t, "https://open-inspect-github-bot-t.openinspect-emulator.workers.dev",
		planned.Properties.Get("urls").AsMap().Get("open-inspect-github-bot-t").AsString())
	assert.Equal(t, 1, h.Emu.CloudflareCalls(), "an update's preview makes no call")
	updated, err := h.Server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: more})
	require.NoError(t, err)
	assert.Equal(t, 1, h.Emu.CloudflareCalls(), "an update recomputes from state")
	assert.Equal(t, "https://open-inspect-github-bot-t.openinspect-emulator.workers.dev",
		updated.Properties.Get("urls").AsMap().Get("open-inspect-github-bot-t").AsString())

	_, err = h.Server.Read(p.ReadRequest{ID: created.ID, Urn: u, Properties: updated.Properties, Inputs: more})
	require.NoError(t, err)
	assert.Equal(t, 2, h.Emu.CloudflareCalls(), "refresh reads the subdomain again")
}

func TestNameLockRefusesRenames(t *testing.T) {
	h := providertest.NewHarness(t)
	u := providertest.URN("openinspect:index:NameLock", "names")
	inputs := providertest.Props(t, map[string]any{"namePrefix": "open-inspect", "deploymentName": "prod"})
	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs})
	require.NoError(t, err)

	diff, err := h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: inputs})
	require.NoError(t, err)
	assert.False(t, diff.HasChanges)
	for field, value := range map[string]string{"namePrefix": "oi", "deploymentName": "staging"} {
		changed := providertest.Props(t, map[string]any{"namePrefix": "open-inspect", "deploymentName": "prod", field: value})
		_, err = h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: changed})
		require.Error(t, err)
		assert.Contains(t, err.Error(), field+" cannot change")
		assert.Contains(t, err.Error(), "replace the D1 database")
	}
}

// TestWorkerUrlsFromAWildcardBase: a wildcard workersDevBaseUrl gives each
// script its own origin, http://<script>.workers.localhost:PORT, with no
// Cloudflare call; a malformed wildcard is refused when configuring.
func TestWorkerUrlsFromAWildcardBase(t *testing.T) {
	h := providertest.NewHarness(t)
	emu, err := url.Parse(h.Emu.URL())
	require.NoError(t, err)
	h.Configure(t, map[string]property.Value{"workersDevBaseUrl": property.New("http://*.workers.localhost:" + emu.Port() + "/")})
	u := providertest.URN("openinspect:index:WorkerUrls", "urls")
	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: providertest.Props(t, map[string]any{
		"scripts": []any{"open-inspect-control-plane-t", "open-inspect-web-t"}})})
	require.NoError(t, err)
	assert.Zero(t, h.Emu.CloudflareCalls(), "the base names the URLs: no subdomain read")
	urls := created.Properties.Get("urls").AsMap()
	assert.Equal(t, "http://open-inspect-control-plane-t.workers.localhost:"+emu.Port(), urls.Get("open-inspect-control-plane-t").AsString())
	assert.Equal(t, "http://open-inspect-web-t.workers.localhost:"+emu.Port(), urls.Get("open-inspect-web-t").AsString())
	assert.Equal(t, h.Emu.Workers().WorkerURL("open-inspect-web-t"), urls.Get("open-inspect-web-t").AsString(), "where the emulator serves it")

	server := providertest.NewServer(t)
	err = server.Configure(p.ConfigureRequest{Args: providertest.Props(t, map[string]any{"workersDevBaseUrl": "http://web-*.workers.localhost:8787"})})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the first label of the host")
}
