package engine

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/sdk/go/openinspect"
)

// TestGoInlineTwoInstallations drives the component through the generated Go
// SDK (a remote component: the engine asks the provider to construct it). Two
// installations share one account and one stack without touching each other's
// names; the second keeps everything remote on destroy (deletionPolicy Orphan).
func TestGoInlineTwoInstallations(t *testing.T) {
	requirePulumi(t)
	emu := startEmulator(t)
	checkout := filepath.Join(repoRoot(), "tests", "fixtures", "upstream")
	installation := func(ctx *pulumi.Context, name string, policy *string, slack bool) (*openinspect.OpenInspect, error) {
		return openinspect.NewOpenInspect(ctx, name, &openinspect.OpenInspectArgs{
			DeploymentName: name,
			DeletionPolicy: policy,
			Upstream:       &openinspect.UpstreamArgs{Checkout: pulumi.String(checkout)},
			GithubApp: &openinspect.GithubAppArgs{AppId: pulumi.String("1"), InstallationId: pulumi.String("2"),
				PrivateKey: pulumi.ToSecret(pulumi.String(githubAppKey)).(pulumi.StringOutput)},
			AnthropicApiKey:          pulumi.ToSecret(pulumi.String(anthropicKey)).(pulumi.StringOutput),
			BrowserAuthSecret:        pulumi.ToSecret(pulumi.String("browser-auth-secret-with-at-least-32-characters")).(pulumi.StringOutput),
			TokenEncryptionKey:       pulumi.ToSecret(pulumi.String(repoSecretsKey)).(pulumi.StringOutput),
			RepoSecretsEncryptionKey: pulumi.ToSecret(pulumi.String(repoSecretsKey)).(pulumi.StringOutput),
			Slack:                    &openinspect.SlackArgs{Enabled: pulumi.Bool(slack)},
		})
	}
	orphan := "Orphan"
	stack := newInlineStack(t, "go-two", func(ctx *pulumi.Context) error {
		a, err := installation(ctx, "alpha", nil, true)
		if err != nil {
			return err
		}
		b, err := installation(ctx, "beta", &orphan, false)
		if err != nil {
			return err
		}
		ctx.Export("alphaUrl", a.ControlPlaneUrl)
		ctx.Export("betaWorkers", b.WorkerNames)
		return nil
	})
	configureStack(t, &stack, emu)
	ctx := t.Context()
	require.NoError(t, stack.SetConfig(ctx, "openinspect:workersDevBaseUrl", auto.ConfigValue{Value: emu.url + "/__workers"}))

	up, err := stack.Up(ctx)
	require.NoError(t, err)
	assert.Equal(t, emu.url+"/__workers/open-inspect-control-plane-alpha", up.Outputs["alphaUrl"].Value)
	assert.Equal(t, map[string]any{"control-plane": "open-inspect-control-plane-beta"}, up.Outputs["betaWorkers"].Value)
	inv := emu.inventory(t)
	var databases, workers []string
	for _, db := range inv.D1 {
		databases = append(databases, db.Name)
	}
	for _, w := range inv.Workers {
		workers = append(workers, w.Name)
	}
	slices.Sort(databases)
	slices.Sort(workers)
	assert.Equal(t, []string{"open-inspect-alpha", "open-inspect-beta"}, databases)
	assert.Equal(t, []string{"open-inspect-control-plane-alpha", "open-inspect-control-plane-beta", "open-inspect-slack-bot-alpha"}, workers)
	requireNoPlaintext(t, &stack, githubAppKey)

	requireNoOpPreview(t, stack, emu)

	_, err = stack.Destroy(ctx)
	require.NoError(t, err)
	inv = emu.inventory(t)
	databases, workers = nil, nil
	for _, db := range inv.D1 {
		databases = append(databases, db.Name)
	}
	for _, w := range inv.Workers {
		workers = append(workers, w.Name)
	}
	assert.Equal(t, []string{"open-inspect-beta"}, databases, "alpha is deleted, beta (Orphan) stays")
	assert.Equal(t, []string{"open-inspect-control-plane-beta"}, workers)
	assert.Len(t, inv.KV, 1, "beta's session-index namespace stays")
	assert.Len(t, inv.Queues, 2, "beta's image-build queues stay")
}
