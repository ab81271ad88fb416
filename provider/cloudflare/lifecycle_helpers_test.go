package cloudflare_test

import (
	"maps"
	"slices"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
	"github.com/openinspect/pulumi-openinspect/tests/providertest"
)

// checkedCreate is the start every account resource's lifecycle test
// shares: inputs pass Check, a preview creates without calling Cloudflare,
// and the create succeeds. It returns the checked inputs, the preview and
// the created resource.
func checkedCreate(t *testing.T, h *providertest.Harness, u resource.URN, inputs property.Map) (property.Map, p.CreateResponse, p.CreateResponse) {
	t.Helper()
	check, err := h.Server.Check(p.CheckRequest{Urn: u, Inputs: inputs})
	require.NoError(t, err)
	require.Empty(t, check.Failures)
	preview, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: check.Inputs, DryRun: true})
	require.NoError(t, err)
	assert.Zero(t, h.Emu.CloudflareCalls(), "preview must not call Cloudflare")
	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: check.Inputs})
	require.NoError(t, err)
	return check.Inputs, preview, created
}

// assertAdoptedOnRequest asserts that a create of a taken name under urn
// is refused, naming adoptExisting, and with adoptExisting set takes over
// the resource whose ID is wantID.
func assertAdoptedOnRequest(t *testing.T, h *providertest.Harness, urn resource.URN, inputs map[string]any, wantID string) {
	t.Helper()
	_, err := h.Server.Create(p.CreateRequest{Urn: urn, Properties: providertest.Props(t, inputs)})
	require.ErrorContains(t, err, "adoptExisting")
	adopt := maps.Clone(inputs)
	adopt["adoptExisting"] = true
	adopted, err := h.Server.Create(p.CreateRequest{Urn: urn, Properties: providertest.Props(t, adopt)})
	require.NoError(t, err)
	assert.Equal(t, wantID, adopted.ID)
	assert.True(t, adopted.Properties.Get("adopted").AsBool())
}

// assertCheckRejects asserts that Check names exactly the fields given as
// failing for inputs, before any call to Cloudflare.
func assertCheckRejects(t *testing.T, h *providertest.Harness, token string, inputs map[string]any, fields ...string) {
	t.Helper()
	check, err := h.Server.Check(p.CheckRequest{Urn: providertest.URN(token, "checked"), Inputs: providertest.Props(t, inputs)})
	require.NoError(t, err)
	var failed []string
	for _, f := range check.Failures {
		failed = append(failed, family.FailureField(f))
	}
	slices.Sort(failed)
	slices.Sort(fields)
	assert.Equal(t, fields, failed)
	assert.Zero(t, h.Emu.CloudflareCalls())
}
