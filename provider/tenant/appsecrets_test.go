package tenant_test

import (
	"testing"

	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapitest"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
	"github.com/openinspect/pulumi-openinspect/provider/internal/controlplane"
	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
	"github.com/openinspect/pulumi-openinspect/provider/tenant"
	"github.com/openinspect/pulumi-openinspect/tests/emulator"
	"github.com/openinspect/pulumi-openinspect/tests/providertest"
)

const (
	appSecretsRoute = "PUT /__workers/{script_name}/secrets"
	slackBotSecret  = "slack-bot-service-secret-0123456789abcdef0123456789abcdef"
)

// newControlPlane deploys the fixture control plane (run by the emulator in
// workerd, its secrets in its D1 database) holding the slack bot's service
// secret, and returns the URL its API answers on.
func newControlPlane(t *testing.T, h *providertest.Harness) string {
	t.Helper()
	_, dbID := cfapitest.NewMigratedDatabase(t, h, providertest.FixtureCheckout(t))
	inputs := providertest.Props(t, map[string]any{"name": "oi-cp", "content": providertest.FixtureControlPlane(t),
		"compatibilityDate": "2024-09-23", "compatibilityFlags": []any{"nodejs_compat"},
		"d1Databases": providertest.List(map[string]any{"binding": "DB", "databaseId": dbID})})
	inputs = inputs.Set("secrets", providertest.Value(t, map[string]any{
		"SERVICE_AUTH_SECRET_SLACK_BOT": slackBotSecret,
		"REPO_SECRETS_ENCRYPTION_KEY":   "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", // base64 of 32 bytes
	}).WithSecret(true))
	_, err := h.Server.Create(p.CreateRequest{Urn: providertest.URN(cloudflare.WorkerToken, "cp"), Properties: inputs})
	require.NoError(t, err)
	return h.Emu.Workers().WorkerURL("oi-cp")
}

func appSecretsInputs(t *testing.T, url string, secrets map[string]any) property.Map {
	t.Helper()
	m := providertest.Props(t, map[string]any{"controlPlaneUrl": url})
	m = m.Set("serviceSecret", property.New(slackBotSecret).WithSecret(true))
	return m.Set("secrets", providertest.Value(t, secrets).WithSecret(true))
}

func TestAppSecretsSeedPruneAndReseed(t *testing.T) {
	h := providertest.NewHarness(t)
	url := newControlPlane(t, h)
	u := providertest.URN(tenant.AppSecretsToken, "app")
	inputs := appSecretsInputs(t, url, map[string]any{"ANTHROPIC_API_KEY": "sk-ant-1", "OPENAI_API_KEY": "sk-oa-1"})

	check, err := h.Server.Check(p.CheckRequest{Urn: u, Inputs: inputs})
	require.NoError(t, err)
	require.Empty(t, check.Failures)
	created, err := h.Server.Create(p.CreateRequest{Urn: u, Properties: check.Inputs})
	require.NoError(t, err)
	store, ok := h.Emu.Workers().AppSecrets(emulator.DefaultAccountID, "oi-cp")
	require.True(t, ok)
	assert.Equal(t, map[string]string{"ANTHROPIC_API_KEY": "sk-ant-1", "OPENAI_API_KEY": "sk-oa-1"}, store)
	assert.True(t, created.Properties.Get("secrets").Secret())
	assert.True(t, created.Properties.Get("valuesHash").Secret())

	// A key added elsewhere (the web UI) must survive everything below.
	other, err := controlplane.New(url, "slack-bot", slackBotSecret)
	require.NoError(t, err)
	require.NoError(t, other.PutSecrets(t.Context(), map[string]string{"FROM_UI": "ui"}))

	// Unchanged: no diff.
	diff, err := h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: check.Inputs})
	require.NoError(t, err)
	assert.False(t, diff.HasChanges)

	// One key removed, one value changed: put, prune only ours.
	nextCheck, err := h.Server.Check(p.CheckRequest{Urn: u, Inputs: appSecretsInputs(t, url, map[string]any{"ANTHROPIC_API_KEY": "sk-ant-2"})})
	require.NoError(t, err)
	next := nextCheck.Inputs
	diff, err = h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: next})
	require.NoError(t, err)
	assert.Contains(t, diff.DetailedDiff, "secrets")
	updated, err := h.Server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: created.Properties, Inputs: next})
	require.NoError(t, err)
	store, _ = h.Emu.Workers().AppSecrets(emulator.DefaultAccountID, "oi-cp")
	assert.Equal(t, map[string]string{"ANTHROPIC_API_KEY": "sk-ant-2", "FROM_UI": "ui"}, store)

	// A wiped store: refresh notices, the next update re-seeds.
	h.Emu.Workers().WipeAppSecrets(emulator.DefaultAccountID, "oi-cp")
	read, err := h.Server.Read(p.ReadRequest{ID: created.ID, Urn: u, Properties: updated.Properties, Inputs: next})
	require.NoError(t, err)
	assert.Equal(t, []string{"ANTHROPIC_API_KEY"}, providertest.Strings(read.Properties.Get("missing")))
	diff, err = h.Server.Diff(p.DiffRequest{ID: created.ID, Urn: u, State: read.Properties, Inputs: next})
	require.NoError(t, err)
	assert.True(t, diff.HasChanges)
	h.Emu.ResetCounts()
	reseeded, err := h.Server.Update(p.UpdateRequest{ID: created.ID, Urn: u, State: read.Properties, Inputs: next})
	require.NoError(t, err)
	assert.Equal(t, 1, h.Emu.Counts()[appSecretsRoute])
	assert.Empty(t, providertest.Strings(reseeded.Properties.Get("missing")))
	store, _ = h.Emu.Workers().AppSecrets(emulator.DefaultAccountID, "oi-cp")
	assert.Equal(t, map[string]string{"ANTHROPIC_API_KEY": "sk-ant-2"}, store)

	// Delete removes only what this resource set.
	require.NoError(t, other.PutSecrets(t.Context(), map[string]string{"FROM_UI": "ui"}))
	require.NoError(t, h.Server.Delete(p.DeleteRequest{ID: created.ID, Urn: u, Properties: reseeded.Properties}))
	store, _ = h.Emu.Workers().AppSecrets(emulator.DefaultAccountID, "oi-cp")
	assert.Equal(t, map[string]string{"FROM_UI": "ui"}, store)
}

func TestAppSecretsWrongServiceSecretIsRejected(t *testing.T) {
	h := providertest.NewHarness(t)
	url := newControlPlane(t, h)
	inputs := appSecretsInputs(t, url, map[string]any{"K": "v"}).Set("serviceSecret", property.New("wrong").WithSecret(true))
	check, err := h.Server.Check(p.CheckRequest{Urn: providertest.URN(tenant.AppSecretsToken, "app"), Inputs: inputs})
	require.NoError(t, err)
	_, err = h.Server.Create(p.CreateRequest{Urn: providertest.URN(tenant.AppSecretsToken, "app"), Properties: check.Inputs})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "wrong")
	store, _ := h.Emu.Workers().AppSecrets(emulator.DefaultAccountID, "oi-cp")
	assert.Empty(t, store)
}

func TestAppSecretsCheck(t *testing.T) {
	h := providertest.NewHarness(t)
	inputs := appSecretsInputs(t, "not a url", map[string]any{"1BAD": "v", "EMPTY": "", "lower": "v", "PATH": "/bin"}).Set("service", property.New("web"))
	check, err := h.Server.Check(p.CheckRequest{Urn: providertest.URN(tenant.AppSecretsToken, "app"), Inputs: inputs})
	require.NoError(t, err)
	fields := map[string]bool{}
	for _, f := range check.Failures {
		fields[family.FailureField(f)] = true
	}
	assert.Equal(t, map[string]bool{"controlPlaneUrl": true, "service": true, "secrets.1BAD": true, "secrets.EMPTY": true,
		"secrets.lower": true, "secrets.PATH": true}, fields)
}
