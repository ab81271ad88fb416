package cloudflare_test

import (
	"fmt"
	"testing"

	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapitest"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
	"github.com/openinspect/pulumi-openinspect/tests/providertest"
)

const kvListKey = "GET /client/v4/accounts/{account_id}/storage/kv/namespaces"

// A new namespace's create costs the same calls and lists nothing whether
// the account holds 0 or 250 other namespaces (other installations'): the
// create is tried first and only a taken title is looked up by listing.
func TestKvNamespaceCreateCostDoesNotGrowWithTheAccount(t *testing.T) {
	h := providertest.NewHarness(t)
	client := cfapitest.Client(t, h)
	calls := map[int]int{}
	for _, others := range []int{0, 250} {
		for i := len(h.Emu.Inventory().KV); i < others; i++ {
			_, err := client.CreateNamespace(t.Context(), fmt.Sprintf("other-installation-%03d", i))
			require.NoError(t, err)
		}
		u := providertest.URN(cloudflare.KvNamespaceToken, fmt.Sprintf("kv-%d", others))
		inputs := providertest.Props(t, map[string]any{"title": fmt.Sprintf("open-inspect-cost-%d", others)})
		h.Emu.ResetCounts()
		_, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: inputs})
		require.NoError(t, err)
		assert.Zero(t, h.Emu.Counts()[kvListKey], "with %d other namespaces the create lists the account", others)
		calls[others] = h.Emu.CloudflareCalls()
	}
	assert.Equal(t, calls[0], calls[250], "calls of a create with 0 and 250 other namespaces")

	// A taken title is still found (by listing) and refused without adoptExisting.
	h.Emu.ResetCounts()
	_, err := h.Server.Create(p.CreateRequest{Urn: providertest.URN(cloudflare.KvNamespaceToken, "dup"),
		Properties: providertest.Props(t, map[string]any{"title": "other-installation-007"})})
	require.ErrorContains(t, err, "adoptExisting")
	assert.Positive(t, h.Emu.Counts()[kvListKey])
}
