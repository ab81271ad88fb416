package tenant_test

import (
	"regexp"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/tenant"
	"github.com/openinspect/pulumi-openinspect/tests/providertest"
)

func TestGeneratedSecretIsStable(t *testing.T) {
	server := providertest.NewServer(t)
	u := providertest.URN(tenant.GeneratedSecretToken, "s")
	check, err := server.Check(p.CheckRequest{Urn: u, Inputs: providertest.Props(t, map[string]any{})})
	require.NoError(t, err)
	require.Empty(t, check.Failures)
	created, err := server.Create(p.CreateRequest{Urn: u, Properties: check.Inputs})
	require.NoError(t, err)
	value := created.Properties.Get("value")
	assert.True(t, value.Secret())
	assert.Regexp(t, regexp.MustCompile(`^[0-9a-f]{64}$`), value.AsString())

	// Same inputs: no change; new initialValue: updated in place, value kept.
	diff, err := server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: check.Inputs})
	require.NoError(t, err)
	assert.False(t, diff.HasChanges)
	again, err := server.Create(p.CreateRequest{Urn: u, Properties: check.Inputs})
	require.NoError(t, err)
	assert.NotEqual(t, value.AsString(), again.Properties.Get("value").AsString(), "two secrets differ")

	longer := providertest.Props(t, map[string]any{"length": 32, "alphabet": "alphanumeric"})
	check, err = server.Check(p.CheckRequest{Urn: u, Inputs: longer})
	require.NoError(t, err)
	diff, err = server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: check.Inputs})
	require.NoError(t, err)
	assert.Equal(t, p.UpdateReplace, diff.DetailedDiff["length"].Kind)
	replaced, err := server.Create(p.CreateRequest{Urn: u, Properties: check.Inputs})
	require.NoError(t, err)
	assert.Regexp(t, regexp.MustCompile(`^[A-Za-z0-9]{32}$`), replaced.Properties.Get("value").AsString())
}

func TestGeneratedSecretCarriesOverAnInitialValue(t *testing.T) {
	server := providertest.NewServer(t)
	u := providertest.URN(tenant.GeneratedSecretToken, "s")
	check, err := server.Check(p.CheckRequest{Urn: u, Inputs: providertest.Props(t, map[string]any{"initialValue": "existing-key-0123456789"})})
	require.NoError(t, err)
	created, err := server.Create(p.CreateRequest{Urn: u, Properties: check.Inputs})
	require.NoError(t, err)
	assert.Equal(t, "existing-key-0123456789", created.Properties.Get("value").AsString())
	assert.True(t, created.Properties.Get("value").Secret())
	assert.True(t, created.Properties.Get("initialValue").Secret())
}

func TestGeneratedSecretCheck(t *testing.T) {
	server := providertest.NewServer(t)
	check, err := server.Check(p.CheckRequest{Urn: providertest.URN(tenant.GeneratedSecretToken, "s"), Inputs: providertest.Props(t, map[string]any{"length": 4, "alphabet": "emoji"})})
	require.NoError(t, err)
	require.Len(t, check.Failures, 2)
}
