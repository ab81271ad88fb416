// Command go is a complete Open-Inspect installation as a Go Pulumi program:
// the same installation as examples/yaml, through the generated Go SDK.
//
//	pulumi config set upstreamCheckout /src/background-agents   # a built checkout at the pinned commit
//	pulumi config set --secret githubAppPrivateKey "$(cat app.pem)"
//	pulumi config set --secret anthropicApiKey sk-ant-...
//	pulumi config set --secret browserAuthSecret "$(openssl rand -base64 32)"
//	pulumi config set --secret tokenEncryptionKey "$(openssl rand -base64 32)"
//	pulumi config set --secret repoSecretsEncryptionKey "$(openssl rand -base64 32)"
//	pulumi up
package main

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"

	"github.com/openinspect/pulumi-openinspect/sdk/go/openinspect"
)

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		cfg := config.New(ctx, "")
		deployment := cfg.Get("deploymentName")
		if deployment == "" {
			deployment = ctx.Stack()
		}
		oi, err := openinspect.NewOpenInspect(ctx, "openinspect", &openinspect.OpenInspectArgs{
			DeploymentName: deployment,
			Upstream:       &openinspect.UpstreamArgs{Checkout: pulumi.String(cfg.Require("upstreamCheckout"))},
			GithubApp: &openinspect.GithubAppArgs{
				AppId:          pulumi.String(cfg.Require("githubAppId")),
				InstallationId: pulumi.String(cfg.Require("githubAppInstallationId")),
				PrivateKey:     cfg.RequireSecret("githubAppPrivateKey"),
			},
			AnthropicApiKey:          cfg.RequireSecret("anthropicApiKey"),
			BrowserAuthSecret:        cfg.RequireSecret("browserAuthSecret"),
			TokenEncryptionKey:       cfg.RequireSecret("tokenEncryptionKey"),
			RepoSecretsEncryptionKey: cfg.RequireSecret("repoSecretsEncryptionKey"),
			// Upstream's gates: an allowlist, a sign-in provider, and the
			// Slack bot's credentials (it is on by default).
			Access: &openinspect.AccessArgs{AllowedUsers: pulumi.String(cfg.Require("allowedUsers"))},
			GithubOAuth: &openinspect.OAuthClientArgs{ClientId: pulumi.String(cfg.Require("githubOAuthClientId")),
				ClientSecret: cfg.RequireSecret("githubOAuthClientSecret")},
			Slack: &openinspect.SlackArgs{BotToken: cfg.RequireSecret("slackBotToken"),
				SigningSecret: cfg.RequireSecret("slackSigningSecret")},
			AppSecrets: pulumi.StringMap{"ANTHROPIC_API_KEY": cfg.RequireSecret("anthropicApiKey")},
		})
		if err != nil {
			return err
		}
		ctx.Export("controlPlaneUrl", oi.ControlPlaneUrl)
		ctx.Export("appliedMigrations", oi.AppliedMigrations)
		ctx.Export("workerHashes", oi.WorkerHashes)
		return nil
	})
}
