// The Node twin of TestGoInlineWorkerPair: an inline Pulumi program, run by the
// Node.js Automation API in this process (no pulumi-language-nodejs plugin),
// that declares resources through the generated Node SDK (sdk/nodejs compiled
// by the test). tests/engine/nodejs_test.go runs it once per step:
//
//   node inline.js up|preview|destroy
//
// and reads one line `OI-RESULT <json>` from stdout per run; the engine's own
// output goes to stderr. Every parameter comes from the environment:
//
//   OI_SDK_DIR          the compiled SDK (a directory holding index.js)
//   OI_BIN_DIR          directory of pulumi-resource-openinspect
//   OI_BACKEND_DIR      the file:// backend directory
//   OI_WORK_DIR         the workspace directory (Pulumi.yaml, stack config)
//   OI_PULUMI_HOME      PULUMI_HOME for the CLI
//   OI_CF_BASE_URL      the emulator's Cloudflare API base URL
//   OI_CF_TOKEN         Cloudflare API token (set as secret config)
//   OI_CF_ACCOUNT       Cloudflare account id
//   OI_SCRIPT           path of the control plane's script (a file asset)
//   OI_WORKER_SECRET    a secret binding value for the control plane
//   OI_NAME_PREFIX      prefix of the Cloudflare names (workers, database)
//   OI_CHECKOUT         the fixture upstream checkout the installation deploys
"use strict";

const pulumi = require("@pulumi/pulumi");
const automation = require("@pulumi/pulumi/automation");

function env(name) {
    const v = process.env[name];
    if (!v) {
        throw new Error(`${name} is not set`);
    }
    return v;
}

const step = process.argv[2];
if (!["up", "preview", "destroy"].includes(step)) {
    console.error(`usage: node inline.js up|preview|destroy (got ${JSON.stringify(step)})`);
    process.exit(2);
}

const openinspect = require(env("OI_SDK_DIR"));
const prefix = env("OI_NAME_PREFIX");
const cpName = `${prefix}-control-plane`;
const botName = `${prefix}-bot`;

// The program: a D1 database, a control plane binding it, a Durable Object
// class, the bot (service binding) and a secret, with its script a file
// asset; and the bot binding the control plane back.
async function program() {
    const db = new openinspect.D1Database("db", { name: `${prefix}-db` });
    const cp = new openinspect.Worker("controlPlane", {
        name: cpName,
        script: new pulumi.asset.FileAsset(env("OI_SCRIPT")),
        d1Databases: [{ binding: "DB", databaseId: db.databaseId }],
        durableObjects: [{ binding: "SESSION", className: "SessionDO" }],
        services: [{ binding: "BOT", service: botName }],
        secrets: { TOKEN_ENCRYPTION_KEY: pulumi.secret(env("OI_WORKER_SECRET")) },
    });
    const bot = new openinspect.Worker("bot", {
        name: botName,
        content: "export default { fetch(r, env) { return env.CONTROL_PLANE.fetch(r) } }",
        services: [{ binding: "CONTROL_PLANE", service: cpName }],
    });
    // A whole installation through the component, with only its required
    // inputs, what upstream's gates require (an allowlist, a sign-in provider)
    // and the Slack bot off: the engine asks the provider to construct it.
    const secret = pulumi.secret(env("OI_WORKER_SECRET"));
    const installation = new openinspect.OpenInspect("installation", {
        deploymentName: prefix,
        upstream: { checkout: env("OI_CHECKOUT"), allowUnverified: true }, // the fixture's migrations are not the pin's
        githubApp: { appId: "1", installationId: "2", privateKey: secret },
        anthropicApiKey: secret,
        browserAuthSecret: secret,
        tokenEncryptionKey: pulumi.secret(env("OI_REPO_KEY")), // an AES key, as upstream imports it
        repoSecretsEncryptionKey: pulumi.secret(env("OI_REPO_KEY")),
        access: { allowedEmailDomains: "example.invalid" }, // reserved: admits no one
        githubOAuth: { clientId: "oi-test-oauth-client", clientSecret: secret },
        slack: { enabled: false },
        // The sandbox side is exercised by sandbox_test.go; here only the SDK path.
        sandbox: { manage: false },
    });
    return {
        url: cp.url,
        databaseId: db.databaseId,
        controlPlaneName: cp.name,
        botName: bot.name,
        installationWorkers: installation.workerNames,
    };
}

async function main() {
    const projectName = "oi-engine-node-workers";
    const stack = await automation.LocalWorkspace.createOrSelectStack(
        { stackName: "test", projectName, program },
        {
            workDir: env("OI_WORK_DIR"),
            pulumiHome: env("OI_PULUMI_HOME"),
            projectSettings: {
                name: projectName,
                runtime: "nodejs",
                plugins: { providers: [{ name: "openinspect", path: env("OI_BIN_DIR") }] },
            },
            envVars: {
                PULUMI_BACKEND_URL: "file://" + env("OI_BACKEND_DIR"),
                PULUMI_CONFIG_PASSPHRASE: "engine-test",
                PULUMI_SKIP_UPDATE_CHECK: "true",
            },
        },
    );
    await stack.setAllConfig({
        "openinspect:cloudflareApiToken": { value: env("OI_CF_TOKEN"), secret: true },
        "openinspect:cloudflareAccountId": { value: env("OI_CF_ACCOUNT") },
        "openinspect:cloudflareApiBaseUrl": { value: env("OI_CF_BASE_URL") },
    });

    const onOutput = (out) => process.stderr.write(out);
    const result = { step, sdk: require("@pulumi/pulumi/package.json").version };
    switch (step) {
        case "up": {
            const up = await stack.up({ onOutput });
            result.result = up.summary.result;
            result.outputs = {};
            for (const [k, v] of Object.entries(up.outputs)) {
                // A secret output would be printed in plaintext: keep its flag only.
                result.outputs[k] = v.secret ? { secret: true } : { value: v.value };
            }
            break;
        }
        case "preview": {
            const preview = await stack.preview({ onOutput });
            result.changeSummary = preview.changeSummary;
            break;
        }
        case "destroy": {
            const destroy = await stack.destroy({ onOutput });
            result.result = destroy.summary.result;
            result.resourceChanges = destroy.summary.resourceChanges;
            break;
        }
    }
    return result;
}

main().then(
    (result) => {
        // Exit explicitly once the line is written: the Automation API's gRPC
        // handles may otherwise keep the event loop alive.
        process.stdout.write("OI-RESULT " + JSON.stringify(result) + "\n", () => process.exit(0));
    },
    (err) => {
        console.error(`inline.js ${step} failed:`, err && err.stack ? err.stack : err);
        process.exit(1);
    },
);
