package installation_test

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/stretchr/testify/require"
)

// gateCases are the specs of issue 21: what upstream's own Terraform refuses
// at plan time, what deployed and then broke at run time, what a child or
// Cloudflare refused only after other objects existed, and messages that
// named the wrong field. Each must be refused by the component before any
// registration or call, like the cases of the main table.
func gateCases(t *testing.T, fixture, tmp string, set func(string, any) func(map[string]any),
	worker func(map[string]any) func(map[string]any), upstream func(map[string]any) func(map[string]any)) []tableCase {
	without := func(keys ...string) func(m map[string]any) {
		return func(m map[string]any) {
			for _, k := range keys {
				delete(m, k)
			}
		}
	}
	both := func(fs ...func(map[string]any)) func(m map[string]any) {
		return func(m map[string]any) {
			for _, f := range fs {
				f(m)
			}
		}
	}
	key := func(n int) property.Value {
		return secret(base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", n))))
	}
	// Files that are not ES modules: /etc/passwd through a symlink, a
	// service-worker script, binary data.
	passwd := filepath.Join(tmp, "passwd.js")
	require.NoError(t, os.Symlink("/etc/passwd", passwd))
	serviceWorker := filepath.Join(tmp, "service-worker.js")
	require.NoError(t, os.WriteFile(serviceWorker, []byte("addEventListener('fetch', e => e.respondWith(new Response('ok')));\n"), 0o644))
	syntaxError := filepath.Join(tmp, "syntax-error.js")
	require.NoError(t, os.WriteFile(syntaxError, []byte("export class SessionDO {}\nexport default {\n  fetch() { return new Response('ok' }\n};\n"), 0o644))
	binary := filepath.Join(tmp, "binary.js")
	require.NoError(t, os.WriteFile(binary, []byte{0x7f, 'E', 'L', 'F', 0, 0, 1, 2}, 0o644))
	// A checkout whose control-plane bundle is not an ES module.
	notESM := filepath.Join(tmp, "not-esm-checkout")
	require.NoError(t, os.CopyFS(notESM, os.DirFS(fixture)))
	require.NoError(t, os.WriteFile(filepath.Join(notESM, "packages", "control-plane", "dist", "index.js"),
		[]byte("module.exports = { fetch() {} };\n"), 0o644))
	big := strings.Repeat("v", 5<<10+1)
	bigSecret := "s3cr3t-" + strings.Repeat("q", 5<<10)
	absentText["takeOverFrom not an identity"] = "{not-an-id!}"
	absentText["64-character name prefix"] = "deploymentName:"
	absentText["whitespace deployment name"] = "webAppUrl"
	absentText["missing script of an upstream worker"] = "npm"
	absentText["numeric deployment name"] = "failed to copy inputs"
	return []tableCase{
		// Upstream's plan-time refusals.
		{name: "slack bot enabled by default without credentials", modify: without("slack"),
			want: "slack.botToken: required while the Slack bot is enabled (the default)"},
		{name: "slack bot without its signing secret", modify: set("slack", map[string]any{"botToken": secret("xoxb-1")}),
			want: "slack.signingSecret: required while the Slack bot is enabled"},
		{name: "slack bot enabled without its token", modify: set("slack", map[string]any{"enabled": true, "signingSecret": secret("sig")}),
			want: "slack.botToken: required while the Slack bot is enabled"},
		{name: "github bot without webhook secret", modify: set("githubBot", map[string]any{"enabled": true, "username": "app[bot]"}),
			want: "githubBot.webhookSecret: required while githubBot.enabled is true"},
		{name: "github bot without username", modify: set("githubBot", map[string]any{"enabled": true, "webhookSecret": secret("w")}),
			want: "githubBot.username: required while githubBot.enabled is true"},
		{name: "github bot with a blank username", modify: set("githubBot", map[string]any{"enabled": true, "webhookSecret": secret("w"), "username": "  "}),
			want: "githubBot.username: required"},
		{name: "linear bot without credentials", modify: set("linearBot", map[string]any{"enabled": true}),
			want: "linearBot.clientId: required while linearBot.enabled is true"},
		{name: "linear bot with partial credentials", modify: set("linearBot", map[string]any{"enabled": true, "clientId": "c", "clientSecret": secret("cs")}),
			want: "linearBot.webhookSecret: required while linearBot.enabled is true"},
		{name: "no access allowlist", modify: without("access"), want: "access: no allowlist admits anyone"},
		{name: "blank access allowlist", modify: set("access", map[string]any{"allowedUsers": " , ", "allowedEmails": ","}),
			want: "access: no allowlist admits anyone"},
		{name: "allow-all explicitly off", modify: set("access", map[string]any{"unsafeAllowAllUsers": false}),
			want: "access: no allowlist admits anyone"},
		{name: "no sign-in provider", modify: without("githubOAuth"), want: "githubOAuth: no sign-in provider"},
		{name: "google sign-in with github-only admission", modify: both(without("githubOAuth"),
			set("googleOAuth", map[string]any{"clientId": "g", "clientSecret": secret("gs")})), want: "googleOAuth: Google sign-in admits no one"},
		{name: "google sign-in with github orgs and allow-all", modify: both(
			set("googleOAuth", map[string]any{"clientId": "g", "clientSecret": secret("gs")}),
			set("access", map[string]any{"allowedGithubOrgs": "acme", "unsafeAllowAllUsers": true})), want: "googleOAuth: Google sign-in admits no one"},

		// Accepted, then broken at run time.
		{name: "token key not base64", modify: set("tokenEncryptionKey", secret("token-key-not-base64!")),
			want: "tokenEncryptionKey: is not standard base64", secret: "token-key-not-base64!"},
		{name: "token key of 20 bytes", modify: set("tokenEncryptionKey", key(20)), want: "tokenEncryptionKey: decodes to 20 bytes"},
		{name: "provider accounts key of 16 bytes", modify: set("providerAccountsEncryptionKey", key(16)),
			want: "providerAccountsEncryptionKey: must be 32 bytes in padded standard base64"},
		{name: "whitespace modal environment", modify: set("sandbox", map[string]any{"manage": false, "modal": map[string]any{"environment": "   "}}),
			want: `sandbox.modal.environment: "   " is not a name Modal accepts`},
		{name: "worker bundle symlinked to /etc/passwd", modify: upstream(map[string]any{"workerBundles": map[string]any{"slack-bot": passwd}}),
			want: "upstream.workerBundles.slack-bot: the bundle " + passwd + " of worker slack-bot is not an ES module"},
		{name: "checkout bundle not an ES module", modify: upstream(map[string]any{"checkout": notESM}),
			want: "upstream.checkout: the bundle " + filepath.Join(notESM, "packages", "control-plane", "dist", "index.js") + " of worker control-plane is not an ES module"},
		{name: "worker script a service worker", modify: worker(map[string]any{"script": serviceWorker}),
			want: "workers[0].script: the bundle " + serviceWorker + " of worker control-plane is not an ES module"},
		{name: "worker script with a syntax error", modify: worker(map[string]any{"script": syntaxError}),
			want: "workers[0].script: the bundle " + syntaxError + " of worker control-plane is not valid JavaScript at line 3, column 38: " +
				`Expected ")" but found "}"; Cloudflare refuses the upload (10021): rebuild the bundle`},
		{name: "worker script binary", modify: worker(map[string]any{"script": binary}),
			want: "workers[0].script: the bundle " + binary + " of worker control-plane is not JavaScript text"},

		// Refused late before; now before anything is registered.
		{name: "worker var over 5 KB", modify: worker(map[string]any{"vars": map[string]any{"BIG": big}}),
			want: "workers[0].vars.BIG: 5121 bytes: over Cloudflare's 5 KiB limit for one Worker var"},
		{name: "allowlist over 5 KB", modify: set("access", map[string]any{"allowedUsers": big}),
			want: "access.allowedUsers: 5121 bytes: over Cloudflare's 5 KiB limit"},
		{name: "worker secret over 5 KB", modify: worker(map[string]any{"secrets": map[string]any{"BIG": secret(bigSecret)}}),
			want: "workers[0].secrets.BIG: the value is over Cloudflare's 5 KiB limit for one Worker secret", secret: bigSecret[:40]},
		{name: "slack token over 5 KB", modify: set("slack", map[string]any{"botToken": secret(bigSecret), "signingSecret": secret("sig")}),
			want: "slack.botToken: the value is over Cloudflare's 5 KiB limit", secret: bigSecret[:40]},
		{name: "takeOverFrom not an identity", modify: set("takeOverFrom", "not-an-id!"),
			want: `takeOverFrom: "not-an-id!" is not an installation identity`},
		{name: "takeOverFrom in upper case", modify: set("takeOverFrom", "OI"+strings.Repeat("A", 32)),
			want: "takeOverFrom: \"OI" + strings.Repeat("A", 32) + "\" is not an installation identity"},

		// Messages.
		{name: "64-character name prefix", modify: set("namePrefix", strings.Repeat("p", 64)), want: "namePrefix: the name"},
		{name: "whitespace deployment name", modify: set("deploymentName", "  "), want: `deploymentName: "  " is not a valid name part`},
		{name: "missing script of an upstream worker", modify: worker(map[string]any{"script": filepath.Join(tmp, "nope.js")}),
			want: "workers[0].script: the bundle " + filepath.Join(tmp, "nope.js") + " of worker control-plane is missing"},
		{name: "numeric deployment name", modify: set("deploymentName", 123),
			want: "deploymentName: must be a string, got the number 123: quote it"},
		{name: "numeric secret", modify: set("anthropicApiKey", property.New(4711.0).WithSecret(true)),
			want: "anthropicApiKey: must be a string, got a number", secret: "4711"},
		{name: "boolean as a string", modify: set("slack", map[string]any{"enabled": "yes"}), want: `slack.enabled: must be true or false, got a string`},
		{name: "workers as an object", modify: set("workers", map[string]any{"name": "x"}), want: "workers: must be a list, got an object"},
		{name: "number in a list", modify: set("kvNamespaces", []any{7}), want: "kvNamespaces[0]: must be a string, got the number 7"},
	}
}
