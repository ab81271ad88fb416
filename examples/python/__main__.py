"""A complete Open-Inspect installation as a Python Pulumi program: the same
installation as examples/yaml, through the generated Python SDK.

    pulumi config set upstreamCheckout /src/background-agents   # a built checkout at the pinned commit
    pulumi config set githubAppId 123456
    pulumi config set githubAppInstallationId 7890123
    pulumi config set --secret githubAppPrivateKey "$(cat app.pem)"
    pulumi config set --secret anthropicApiKey sk-ant-...
    pulumi config set --secret browserAuthSecret "$(openssl rand -base64 32)"
    pulumi config set --secret tokenEncryptionKey "$(openssl rand -base64 32)"
    pulumi config set --secret repoSecretsEncryptionKey "$(openssl rand -base64 32)"
    pulumi up
"""
import pulumi
import pulumi_openinspect as oi

config = pulumi.Config()
anthropic_api_key = config.require_secret("anthropicApiKey")

installation = oi.OpenInspect(
    "openinspect",
    deployment_name=config.get("deploymentName") or pulumi.get_stack(),
    upstream=oi.UpstreamArgs(checkout=config.require("upstreamCheckout")),
    github_app=oi.GithubAppArgs(
        app_id=config.require("githubAppId"),
        installation_id=config.require("githubAppInstallationId"),
        private_key=config.require_secret("githubAppPrivateKey"),
    ),
    anthropic_api_key=anthropic_api_key,
    browser_auth_secret=config.require_secret("browserAuthSecret"),
    token_encryption_key=config.require_secret("tokenEncryptionKey"),
    repo_secrets_encryption_key=config.require_secret("repoSecretsEncryptionKey"),
    # Upstream's gates: an allowlist, a sign-in provider, and the Slack bot's
    # credentials (it is on by default).
    access=oi.AccessArgs(allowed_users=config.require("allowedUsers")),
    github_o_auth=oi.OAuthClientArgs(
        client_id=config.require("githubOAuthClientId"),
        client_secret=config.require_secret("githubOAuthClientSecret"),
    ),
    slack=oi.SlackArgs(
        bot_token=config.require_secret("slackBotToken"),
        signing_secret=config.require_secret("slackSigningSecret"),
    ),
    app_secrets={"ANTHROPIC_API_KEY": anthropic_api_key},
)

pulumi.export("controlPlaneUrl", installation.control_plane_url)
pulumi.export("appliedMigrations", installation.applied_migrations)
pulumi.export("workerHashes", installation.worker_hashes)
