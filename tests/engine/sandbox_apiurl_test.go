package engine

import (
	"regexp"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optpreview"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/sdk/go/openinspect"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/daytona"
)

// TestDaytonaAPIURLFromAnotherResource (issue 48): the installation's
// sandbox.daytona.apiUrl is an output of another resource of the program,
// unknown until that resource is created. The first preview plans the
// installation with it unknown; the up deploys, and the URL reaches both the
// DaytonaSnapshot child (the provider's own daytonaApiUrl is unset, so the
// snapshot is built in the emulator only if the child was given it) and the
// control plane's DAYTONA_API_URL; the preview after it changes nothing.
func TestDaytonaAPIURLFromAnotherResource(t *testing.T) {
	t.Parallel()
	requirePulumi(t)
	emu := startEmulator(t)
	checkout := fixtureCopy(t)
	daytonaAPI := emu.url + "/daytona/api"
	stack := newInlineStack(t, "go-apiurl", func(ctx *pulumi.Context) error {
		source, err := openinspect.NewKvNamespace(ctx, "endpoint-source", &openinspect.KvNamespaceArgs{
			Title: pulumi.String("oi-engine-apiurl-source")})
		if err != nil {
			return err
		}
		// Known once the namespace exists, as an endpoint another resource
		// reports would be.
		apiURL := source.NamespaceId.ApplyT(func(string) string { return daytonaAPI }).(pulumi.StringOutput)
		args := installationArgs("apiurl", checkout)
		args.Slack = &openinspect.SlackArgs{Enabled: pulumi.Bool(false)}
		args.Sandbox = &openinspect.SandboxArgs{Provider: pulumi.String("daytona"), Daytona: &openinspect.DaytonaSettingsArgs{
			ApiUrl: apiURL, ApiKey: pulumi.ToSecret(pulumi.String(daytona.DefaultAPIKey)).(pulumi.StringOutput)}}
		inst, err := openinspect.NewOpenInspect(ctx, "oi", args)
		if err != nil {
			return err
		}
		ctx.Export("sandboxStatus", inst.SandboxStatus)
		return nil
	})
	configureStack(t, &stack, emu)
	ctx := t.Context()
	require.NoError(t, stack.SetConfig(ctx, "openinspect:workersDevBaseUrl", auto.ConfigValue{Value: emu.workersDevBase()}))
	// Credentials given once, by the component: nothing reaches the
	// emulator's Daytona but through sandbox.daytona.
	for _, key := range []string{"openinspect:daytonaApiKey", "openinspect:daytonaApiUrl"} {
		require.NoError(t, stack.RemoveConfig(ctx, key))
	}

	preview, err := stack.Preview(ctx, optpreview.SuppressProgress())
	require.NoError(t, err, "the first preview, the apiUrl unknown")
	assert.NotZero(t, preview.ChangeSummary["create"])
	calls, counts := emu.sandboxCalls(t)
	assert.Zero(t, calls, "the preview makes no sandbox call: %v", counts)

	up, err := stack.Up(ctx)
	require.NoError(t, err)
	snapshots := emu.snapshots(t)
	require.Len(t, snapshots, 1, "the DaytonaSnapshot child was given the URL and built there")
	assert.Regexp(t, regexp.MustCompile(`^open-inspect-sandbox-base-apiurl-[0-9a-f]{12}$`), snapshots[0])
	assert.Equal(t, "daytona: base snapshot "+snapshots[0]+" (active)", up.Outputs["sandboxStatus"].Value)
	cp := emu.workerBindings(t, "open-inspect-control-plane-apiurl")
	assert.Equal(t, daytonaAPI, cp["DAYTONA_API_URL"]["text"], "the control plane's DAYTONA_API_URL is the output's value")

	requireNoOpPreview(t, stack, emu)

	_, err = stack.Destroy(ctx)
	require.NoError(t, err)
	emu.requireEmpty(t)
}
