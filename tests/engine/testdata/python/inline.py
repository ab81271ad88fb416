"""A Python program run by the Automation API through the generated Python SDK.

Usage: inline.py up|preview|destroy. Parameters come from the environment
(OI_*); each step prints one JSON line. No language plugin is needed: the
program runs in this process and the pulumi CLI connects back to it.
"""
import json
import os
import sys

import pulumi
from pulumi import automation as auto

import pulumi_openinspect as oi


def program():
    db = oi.D1Database("db", name="oi-py-db")
    cp = oi.Worker(
        "controlPlane",
        name="oi-py-control-plane",
        script=pulumi.FileAsset(os.environ["OI_SCRIPT"]),
        d1_databases=[oi.D1BindingArgs(binding="DB", database_id=db.database_id)],
        durable_objects=[oi.DurableObjectBindingArgs(binding="SESSION", class_name="SessionDO")],
        services=[oi.ServiceBindingArgs(binding="BOT", service="oi-py-bot")],
        secrets={"TOKEN_ENCRYPTION_KEY": pulumi.Output.secret(os.environ["OI_SECRET"])},
    )
    oi.Worker(
        "bot",
        name="oi-py-bot",
        content="export default { fetch(r, env) { return env.CONTROL_PLANE.fetch(r) } }",
        services=[oi.ServiceBindingArgs(binding="CONTROL_PLANE", service="oi-py-control-plane")],
    )
    pulumi.export("url", cp.url)
    # A whole installation through the component, with only its required inputs,
    # what upstream's gates require (an allowlist, a sign-in provider) and the
    # Slack bot off: the engine asks the provider to construct it.
    secret = pulumi.Output.secret(os.environ["OI_SECRET"])
    installation = oi.OpenInspect(
        "installation",
        deployment_name="py",
        upstream=oi.UpstreamArgs(checkout=os.environ["OI_CHECKOUT"], allow_unverified=True),  # the fixture is not the pin
        github_app=oi.GithubAppArgs(app_id="1", installation_id="2", private_key=secret),
        anthropic_api_key=secret,
        browser_auth_secret=secret,
        token_encryption_key=pulumi.Output.secret(os.environ["OI_REPO_KEY"]),  # an AES key, as upstream imports it
        repo_secrets_encryption_key=pulumi.Output.secret(os.environ["OI_REPO_KEY"]),
        access=oi.AccessArgs(allowed_email_domains="example.invalid"),  # reserved: admits no one
        github_o_auth=oi.OAuthClientArgs(client_id="oi-test-oauth-client", client_secret=secret),
        slack=oi.SlackArgs(enabled=False),
        # The sandbox side is exercised by sandbox_test.go; here only the SDK path.
        sandbox=oi.SandboxArgs(manage=False),
    )
    pulumi.export("installationWorkers", installation.worker_names)


def main():
    env = os.environ
    stack = auto.create_or_select_stack(
        stack_name="test",
        project_name="oi-engine-python",
        program=program,
        opts=auto.LocalWorkspaceOptions(
            work_dir=env["OI_WORK_DIR"],
            pulumi_home=env["OI_PULUMI_HOME"],
            # No project_settings: the Python Automation API cannot express
            # plugin paths, so the caller writes Pulumi.yaml into work_dir.
            env_vars={
                "PULUMI_BACKEND_URL": "file://" + env["OI_BACKEND_DIR"],
                "PULUMI_CONFIG_PASSPHRASE": "engine-test",
                "PULUMI_SKIP_UPDATE_CHECK": "true",
            },
        ),
    )
    stack.set_config("openinspect:cloudflareApiToken", auto.ConfigValue(env["OI_TOKEN"], secret=True))
    stack.set_config("openinspect:cloudflareAccountId", auto.ConfigValue(env["OI_ACCOUNT"]))
    stack.set_config("openinspect:cloudflareApiBaseUrl", auto.ConfigValue(env["OI_API_BASE_URL"]))

    step = sys.argv[1]
    if step == "up":
        res = stack.up()
        print(json.dumps({"step": "up", "outputs": {k: v.value for k, v in res.outputs.items()}}))
    elif step == "preview":
        res = stack.preview()
        print(json.dumps({"step": "preview", "changes": {str(k): v for k, v in res.change_summary.items()}}))
    elif step == "destroy":
        stack.destroy()
        print(json.dumps({"step": "destroy"}))
    else:
        sys.exit("usage: inline.py up|preview|destroy")


if __name__ == "__main__":
    main()
