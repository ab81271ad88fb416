package cloudflare_test

import (
	"strings"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/providertest"
)

// What only the account can decide (a zone exists and holds the hostname,
// a bound D1 database exists) is refused in the preview with read-only
// calls, and again by a create that had no preview, before its first
// mutating call: every problem at once, each naming its field.
func TestWorkerAccountRulesRefusedBeforeAnyChange(t *testing.T) {
	h := providertest.NewHarness(t)
	zoneID, ok := h.Emu.Zones().ZoneID(emulator.DefaultAccountID, "example.com")
	require.True(t, ok)
	u := providertest.URN(cloudflare.WorkerToken, "web")
	inputs := checked(t, h, u, providertest.Props(t, M{"name": "oi-web", "content": providertest.FixtureWorker,
		"domains": providertest.List(
			M{"hostname": "app.other.org", "zoneId": zoneID},
			M{"hostname": "app.missing.dev", "zoneName": "missing.dev"},
		),
		"routes": providertest.List(
			M{"pattern": "*.example.com/api/*", "zoneId": zoneID},
			M{"pattern": "example.com/*", "zoneId": "0123456789abcdef0123456789abcdef"},
		),
		"d1Databases": providertest.List(M{"binding": "DB", "databaseId": "00000000-0000-4000-8000-000000000000"}),
	}))
	wants := []string{
		"domains[0]: app.other.org is not in zone example.com",
		"domains[1].zoneName: zone missing.dev is not in account",
		"routes[1].zoneId: the account has no zone 0123456789abcdef0123456789abcdef",
		"d1Databases[0].databaseId: account " + emulator.DefaultAccountID + " has no D1 database 00000000-0000-4000-8000-000000000000",
	}
	for _, dryRun := range []bool{true, false} {
		_, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs, DryRun: dryRun})
		require.Error(t, err, "dryRun %v", dryRun)
		for _, want := range wants {
			assert.Contains(t, err.Error(), want, "dryRun %v", dryRun)
		}
		assert.NotContains(t, err.Error(), "routes[0]", "a wildcard route in its zone is fine")
	}
	for route, n := range h.Emu.Counts() {
		method, _, _ := strings.Cut(route, " ")
		assert.Contains(t, []string{"GET", "HEAD"}, method, "only reads were made: %s x%d", route, n)
	}
	assert.True(t, h.Emu.Inventory().Empty(), "nothing was created")
}
