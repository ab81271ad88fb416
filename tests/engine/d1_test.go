package engine

import (
	"testing"

	"github.com/pulumi/providertest/pulumitest"
	"github.com/pulumi/providertest/pulumitest/assertpreview"
	"github.com/pulumi/providertest/pulumitest/assertrefresh"
	"github.com/pulumi/providertest/pulumitest/opttest"
	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/daytona"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/modal"
	"github.com/openinspect/pulumi-openinspect/tests/toolchain"
)

// TestYAMLD1Lifecycle: up, a preview that changes nothing and calls
// Cloudflare zero times, a refresh with no changes, destroy to empty.
func TestYAMLD1Lifecycle(t *testing.T) {
	t.Parallel()
	requirePulumi(t)
	emu := startEmulator(t)
	pt := pulumitest.NewPulumiTest(t, "testdata/d1-yaml",
		opttest.LocalProviderPath("openinspect", binDir),
		opttest.SkipInstall(),
		// The gRPC debug log would hold secret values in plaintext.
		opttest.DisableGrpcLog(),
		opttest.Env("PULUMI_SKIP_UPDATE_CHECK", "true"),
	)
	configureStack(t, pt.CurrentStack(), emu)

	up := previewUp(t, pt)
	dbID, ok := up.Outputs["databaseId"].Value.(string)
	require.True(t, ok, "databaseId output: %v", up.Outputs)
	require.NotEmpty(t, dbID)
	assert.Equal(t, emulatorAccount, up.Outputs["accountId"].Value)
	d1 := emu.inventory(t).D1
	require.Len(t, d1, 1)
	assert.Equal(t, dbID, d1[0].ID)

	requireNoPlaintext(t, pt.CurrentStack(), emulatorToken)

	emu.resetCounts(t)
	assertpreview.HasNoChanges(t, pt.Preview(t))
	calls, counts := emu.cloudflareCalls(t)
	assert.Zero(t, calls, "a no-op preview must not call Cloudflare: %v", counts)

	assertrefresh.HasNoChanges(t, pt.Refresh(t))

	pt.Destroy(t)
	emu.requireEmpty(t)
}

// configureStack points the openinspect provider at the emulator, with the
// token stored as a secret.
func configureStack(t tb, stack *auto.Stack, emu *emulatorProcess) {
	t.Helper()
	ctx := t.Context()
	require.NoError(t, stack.SetConfig(ctx, "openinspect:cloudflareApiToken", auto.ConfigValue{Value: emulatorToken, Secret: true}))
	require.NoError(t, stack.SetConfig(ctx, "openinspect:cloudflareAccountId", auto.ConfigValue{Value: emulatorAccount}))
	require.NoError(t, stack.SetConfig(ctx, "openinspect:cloudflareApiBaseUrl", auto.ConfigValue{Value: emu.cloudflareBaseURL()}))
	// The sandbox side: the emulator's Modal and Daytona, a Python for the
	// Modal CLI and the tools cache its virtual environments are kept in.
	settings := map[string]auto.ConfigValue{
		"modalTokenId":     {Value: modal.DefaultTokenID},
		"modalTokenSecret": {Value: modal.DefaultTokenSecret, Secret: true},
		"modalServerUrl":   {Value: emu.url},
		"daytonaApiKey":    {Value: daytona.DefaultAPIKey, Secret: true},
		"daytonaApiUrl":    {Value: emu.url + "/daytona/api"},
	}
	// A portable stack gets these two from the environment instead
	// (portableEnv): provider config is kept in the state.
	if !emu.portable {
		settings["pythonPath"] = auto.ConfigValue{Value: toolchain.Python(t)}
		settings["cacheDir"] = auto.ConfigValue{Value: toolchain.CacheDir()}
	}
	for key, v := range settings {
		require.NoError(t, stack.SetConfig(ctx, "openinspect:"+key, v))
	}
}
