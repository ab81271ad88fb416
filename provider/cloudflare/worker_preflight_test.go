package cloudflare_test

import (
	"slices"
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
// a bound D1 database exists, a consumed queue exists and is not its own
// dead-letter queue) is refused in the preview with read-only calls, every
// problem at once, each naming its field; a create that had no preview
// refuses the zones before its first mutating call.
func TestWorkerAccountRulesRefusedBeforeAnyChange(t *testing.T) {
	h := providertest.NewHarness(t)
	client, _ := newTargets(t, h)
	queue, err := client.CreateQueue(t.Context(), "oi-jobs")
	require.NoError(t, err)
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
		"queueConsumers": providertest.List(
			M{"queueId": "0123456789abcdef0123456789abcdee"},
			M{"queueId": queue.ID, "deadLetterQueue": "oi-jobs"},
		),
	}))
	zoneProblems := []string{
		"domains[0]: app.other.org is not in zone example.com",
		"domains[1].zoneName: zone missing.dev is not in account",
		"routes[1].zoneId: the account has no zone 0123456789abcdef0123456789abcdef",
	}
	previewProblems := append(slices.Clone(zoneProblems),
		"d1Databases[0].databaseId: account "+emulator.DefaultAccountID+" has no D1 database 00000000-0000-4000-8000-000000000000",
		"queueConsumers[0].queueId: account "+emulator.DefaultAccountID+" has no queue 0123456789abcdef0123456789abcdee",
		"queueConsumers[1].deadLetterQueue: oi-jobs is the queue this consumer reads",
	)
	h.Emu.ResetCounts()
	for dryRun, wants := range map[bool][]string{true: previewProblems, false: zoneProblems} {
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
	inv := h.Emu.Inventory()
	assert.Empty(t, inv.Workers, "no script was uploaded")
	assert.Empty(t, inv.Domains)
	assert.Empty(t, inv.Routes)
}
