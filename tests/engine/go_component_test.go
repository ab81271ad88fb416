package engine

import (
	"path/filepath"
	"regexp"
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
// names; the second keeps everything remote on destroy (deletionPolicy Orphan),
// and a new stack can take it over only with adoptExisting.
func TestGoInlineTwoInstallations(t *testing.T) {
	t.Parallel()
	requirePulumi(t)
	emu := startEmulator(t)
	checkout := filepath.Join(repoRoot(), "tests", "fixtures", "upstream")
	installation := func(ctx *pulumi.Context, name string, policy *string, slack bool) (*openinspect.OpenInspect, error) {
		args := installationArgs(name, checkout)
		args.DeletionPolicy = policy
		bot := &openinspect.SlackArgs{Enabled: pulumi.Bool(slack)}
		if slack { // upstream refuses the bot without its app's credentials
			bot.BotToken = pulumi.ToSecret(pulumi.String(installationSecrets["slackBotToken"])).(pulumi.StringOutput)
			bot.SigningSecret = pulumi.ToSecret(pulumi.String(installationSecrets["slackSigningSecret"])).(pulumi.StringOutput)
		}
		args.Slack = bot
		return openinspect.NewOpenInspect(ctx, name, args)
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
	require.NoError(t, stack.SetConfig(ctx, "openinspect:workersDevBaseUrl", auto.ConfigValue{Value: emu.workersDevBase()}))

	up, err := previewUpStack(ctx, t, stack)
	require.NoError(t, err)
	assert.Equal(t, emu.workerURL("open-inspect-control-plane-alpha"), up.Outputs["alphaUrl"].Value)
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

	// A new stack finds beta's names taken: refused until adopted on purpose.
	adopt := false
	// beta as it was deployed: without the Slack bot.
	betaArgs := func() *openinspect.OpenInspectArgs {
		args := installationArgs("beta", checkout)
		args.Slack = &openinspect.SlackArgs{Enabled: pulumi.Bool(false)}
		return args
	}
	resurrect := newInlineStack(t, "go-resurrect", func(ctx *pulumi.Context) error {
		args := betaArgs()
		args.AdoptExisting = &adopt
		_, err := openinspect.NewOpenInspect(ctx, "beta", args)
		return err
	})
	configureStack(t, &resurrect, emu)
	require.NoError(t, resurrect.SetConfig(ctx, "openinspect:workersDevBaseUrl", auto.ConfigValue{Value: emu.workersDevBase()}))
	// These two updates are about failing: they call Up directly (the
	// refusal comes from the create, which a preview does not run).
	_, err = resurrect.Up(ctx)
	require.Error(t, err, "an orphaned installation is not captured silently")
	assert.Contains(t, err.Error(), "adoptExisting")
	// beta's objects record beta's identity: adoptExisting alone does not
	// take another installation's objects, takeOverFrom naming it does.
	adopt = true
	_, err = resurrect.Up(ctx)
	require.Error(t, err, "adoptExisting never takes over another installation's objects")
	owner := regexp.MustCompile(`belongs to installation (oi[0-9a-f]{32})`).FindStringSubmatch(err.Error())
	require.Len(t, owner, 2, "the refusal names the owning installation: %v", err)
	from := owner[1]
	// The same stack, as a user would re-run it: what its refused runs
	// created (a namespace beta never had) records this stack's identity.
	resurrect.Workspace().SetProgram(func(ctx *pulumi.Context) error {
		args := betaArgs()
		args.AdoptExisting, args.TakeOverFrom = &adopt, &from
		_, err := openinspect.NewOpenInspect(ctx, "beta", args)
		return err
	})
	_, err = previewUpStack(ctx, t, resurrect)
	require.NoError(t, err, "takeOverFrom takes the orphaned installation over")
	_, err = resurrect.Destroy(ctx)
	require.NoError(t, err)
	emu.requireEmpty(t)
}

// installationArgs are the required inputs of an installation built from the fixture checkout.
func installationArgs(name, checkout string) *openinspect.OpenInspectArgs {
	secret := func(s string) pulumi.StringOutput { return pulumi.ToSecret(pulumi.String(s)).(pulumi.StringOutput) }
	return &openinspect.OpenInspectArgs{
		DeploymentName: name,
		Upstream:       &openinspect.UpstreamArgs{Checkout: pulumi.String(checkout), AllowUnverified: pulumi.Bool(true)},
		GithubApp: &openinspect.GithubAppArgs{AppId: pulumi.String("1"), InstallationId: pulumi.String("2"),
			PrivateKey: secret(githubAppKey)},
		AnthropicApiKey:          secret(anthropicKey),
		BrowserAuthSecret:        secret("browser-auth-secret-with-at-least-32-characters"),
		TokenEncryptionKey:       secret(repoSecretsKey),
		RepoSecretsEncryptionKey: secret(repoSecretsKey),
		// What upstream's gates require: an allowlist (a reserved domain
		// that admits no one) and a sign-in provider.
		Access: &openinspect.AccessArgs{AllowedEmailDomains: pulumi.String("example.invalid")},
		GithubOAuth: &openinspect.OAuthClientArgs{ClientId: pulumi.String("oi-test-oauth-client"),
			ClientSecret: secret(installationSecrets["githubOAuthClientSecret"])},
		// The sandbox side is exercised by sandbox_test.go; two installations
		// here would also need two Modal environments.
		Sandbox: &openinspect.SandboxArgs{Manage: pulumi.Bool(false)},
	}
}
