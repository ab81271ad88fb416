package tenant_test

import (
	"strings"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/providertest"
)

// The lock every child of an installation depends on checks the
// installation's hostnames against the account when it is created and when
// they change, with reads only; a preview leaves that to the Workers'
// checks, and an unchanged lock makes no call.
func TestNameLockChecksHostnamesBeforeAnyChild(t *testing.T) {
	h := providertest.NewHarness(t)
	zoneID, ok := h.Emu.Zones().ZoneID(emulator.DefaultAccountID, "example.com")
	require.True(t, ok)
	u := providertest.URN("openinspect:index:NameLock", "names")
	lock := func(hostname, zoneID string) property.Map {
		return providertest.Props(t, map[string]any{"namePrefix": "oi", "deploymentName": "prod",
			"hostnames": providertest.List(map[string]any{"field": "web.customDomain", "hostname": hostname, "zoneId": zoneID})})
	}
	onlyReads := func() {
		t.Helper()
		for route, n := range h.Emu.Counts() {
			method, _, _ := strings.Cut(route, " ")
			assert.Contains(t, []string{"GET", "HEAD"}, method, "only reads were made: %s x%d", route, n)
		}
	}

	const missingZone = "0123456789abcdef0123456789abcdef"
	h.Emu.ResetCounts()
	_, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: lock("inspect.example.com", missingZone), DryRun: true})
	require.NoError(t, err, "a preview leaves the zones to the Workers' checks")
	assert.Zero(t, h.Emu.CloudflareCalls(), "a preview of the lock reads nothing")
	for _, tc := range []struct{ hostname, zoneID, want string }{
		{"inspect.example.com", missingZone, "web.customDomain.zoneId: the account has no zone " + missingZone},
		{"inspect.example.org", zoneID, "web.customDomain: inspect.example.org is not in zone example.com"},
	} {
		_, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: lock(tc.hostname, tc.zoneID)})
		require.Error(t, err)
		assert.Contains(t, err.Error(), tc.want)
	}
	onlyReads()

	good := lock("inspect.example.com", zoneID)
	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: good})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(created.Properties.Get("installationId").AsString(), "oi"))

	h.Emu.ResetCounts()
	diff, err := h.Server.Diff(p.DiffRequest{Urn: u, ID: created.ID, State: created.Properties, Inputs: good})
	require.NoError(t, err)
	assert.False(t, diff.HasChanges, "the same hostnames change nothing")
	assert.Zero(t, h.Emu.CloudflareCalls(), "an unchanged lock makes no call")

	moved := lock("inspect.example.org", zoneID)
	diff, err = h.Server.Diff(p.DiffRequest{Urn: u, ID: created.ID, State: created.Properties, Inputs: moved})
	require.NoError(t, err)
	require.True(t, diff.HasChanges)
	assert.Equal(t, p.Update, diff.DetailedDiff["hostnames"].Kind, "a changed hostname updates the lock, never replaces it")
	_, err = h.Server.Update(p.UpdateRequest{Urn: u, ID: created.ID, State: created.Properties, Inputs: moved})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "web.customDomain: inspect.example.org is not in zone example.com")
	onlyReads()

	// The web on workers.dev or Kubernetes: no hostname, no read.
	plain := providertest.Props(t, map[string]any{"namePrefix": "oi", "deploymentName": "dev"})
	h.Emu.ResetCounts()
	_, err = h.Server.Create(p.CreateRequest{Urn: providertest.URN("openinspect:index:NameLock", "plain"), Properties: plain})
	require.NoError(t, err)
	assert.Zero(t, h.Emu.CloudflareCalls(), "a lock without hostnames reads nothing")
}
