// A complete Open-Inspect installation as a TypeScript Pulumi program: the
// same installation as examples/yaml, through the generated Node.js SDK.
//
//   pulumi config set upstreamCheckout /src/background-agents   # a built checkout at the pinned commit
//   pulumi config set githubAppId 123456
//   pulumi config set githubAppInstallationId 7890123
//   pulumi config set --secret githubAppPrivateKey "$(cat app.pem)"
//   pulumi config set --secret anthropicApiKey sk-ant-...
//   pulumi config set --secret browserAuthSecret "$(openssl rand -base64 32)"
//   pulumi config set --secret tokenEncryptionKey "$(openssl rand -base64 32)"
//   pulumi config set --secret repoSecretsEncryptionKey "$(openssl rand -base64 32)"
//   pulumi up
import * as pulumi from "@pulumi/pulumi";
import * as openinspect from "@openinspect/pulumi-openinspect";

const config = new pulumi.Config();
const anthropicApiKey = config.requireSecret("anthropicApiKey");

const installation = new openinspect.OpenInspect("openinspect", {
    deploymentName: config.get("deploymentName") ?? pulumi.getStack(),
    upstream: { checkout: config.require("upstreamCheckout") },
    githubApp: {
        appId: config.require("githubAppId"),
        installationId: config.require("githubAppInstallationId"),
        privateKey: config.requireSecret("githubAppPrivateKey"),
    },
    anthropicApiKey,
    browserAuthSecret: config.requireSecret("browserAuthSecret"),
    tokenEncryptionKey: config.requireSecret("tokenEncryptionKey"),
    repoSecretsEncryptionKey: config.requireSecret("repoSecretsEncryptionKey"),
    // Upstream's gates: an allowlist, a sign-in provider, and the Slack
    // bot's credentials (it is on by default).
    access: { allowedUsers: config.require("allowedUsers") },
    githubOAuth: { clientId: config.require("githubOAuthClientId"), clientSecret: config.requireSecret("githubOAuthClientSecret") },
    slack: { botToken: config.requireSecret("slackBotToken"), signingSecret: config.requireSecret("slackSigningSecret") },
    appSecrets: { ANTHROPIC_API_KEY: anthropicApiKey },
});

export const controlPlaneUrl = installation.controlPlaneUrl;
export const appliedMigrations = installation.appliedMigrations;
export const workerHashes = installation.workerHashes;
