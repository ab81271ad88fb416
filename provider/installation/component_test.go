package installation

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/openinspect/pulumi-openinspect/provider/installation/web"
	"github.com/openinspect/pulumi-openinspect/provider/internal/artefacts"
	"github.com/openinspect/pulumi-openinspect/provider/internal/upstream"
)

// fixtureCheckout is this project's stand-in for a built upstream checkout.
var fixtureCheckout = filepath.Join("..", "..", "tests", "fixtures", "upstream")

// testRepoKey is base64 of 32 bytes, the form the repo secrets key takes.
const testRepoKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

// requiredArgs is a spec with only the required inputs.
func requiredArgs() OpenInspectArgs {
	checkout, unverified := fixtureCheckout, true // the fixture's migrations are not the pin's
	allowed := "octocat"
	return OpenInspectArgs{
		DeploymentName: "t1",
		Upstream:       &UpstreamArgs{Checkout: &checkout, AllowUnverified: &unverified},
		GithubApp: GithubAppArgs{AppID: "1", InstallationID: "2",
			PrivateKey: pulumi.String("-----BEGIN PRIVATE KEY-----")},
		AnthropicAPIKey:          pulumi.String("anthropic"),
		BrowserAuthSecret:        pulumi.String("browser-auth-secret-of-32-characters"),
		TokenEncryptionKey:       pulumi.String(testRepoKey),
		RepoSecretsEncryptionKey: pulumi.String(testRepoKey),
		// What upstream's gates require: the Slack bot's credentials (it is
		// on by default), an allowlist and a sign-in provider.
		Slack:       &SlackArgs{BotToken: pulumi.String("xoxb-test"), SigningSecret: pulumi.String("slack-signing")},
		Access:      &AccessArgs{AllowedUsers: &allowed},
		GithubOAuth: &OAuthArgs{ClientID: "oauth-client", ClientSecret: pulumi.String("oauth-secret")},
	}
}

// unmanaged configures the control plane for the sandbox provider without
// deploying the sandbox side: what upstream's Terraform does.
func unmanaged(args OpenInspectArgs) OpenInspectArgs {
	if args.Sandbox == nil {
		args.Sandbox = &SandboxArgs{}
	}
	off := false
	args.Sandbox.Manage = &off
	return args
}

func loadContract(t *testing.T) *upstream.Contract {
	t.Helper()
	c, err := upstream.Load()
	require.NoError(t, err)
	return c
}

func mustPlan(t *testing.T, args OpenInspectArgs) *installPlan {
	t.Helper()
	plan, err := planInstallation(loadContract(t), normalize(t.Context(), &args), nil)
	require.NoError(t, err)
	return plan
}

// holdsFor says whether a condition holds for a spec that gives the inputs in
// given (contract names, rendered values) and leaves every other input at its
// default. A condition that reads none of the given inputs keeps the
// contract's recorded default (the data, not the evaluator, says what
// upstream creates with its defaults); one that does is
// worked out from the given values, written here independently of the
// planner's evaluator. entry is the source of the var or secret the
// condition guards (nil for a resource or binding): "set" holds when that
// source is a given, non-empty input.
func holdsFor(t *testing.T, c *upstream.Contract, given map[string]string, when string, entry *upstream.Source) bool {
	t.Helper()
	if when == "" {
		return true
	}
	cond, ok := c.Conditions[when]
	require.True(t, ok, when)
	if cond.Test.Op == upstream.OpSet {
		if entry == nil || entry.Input == "" {
			return false
		}
		value, ok := given[entry.Input]
		if entry.Trim {
			value = strings.TrimSpace(value)
		}
		return ok && value != ""
	}
	if !readsGiven(t, c, given, when) {
		require.NotNil(t, cond.Default, "condition %s has no recorded default", when)
		return *cond.Default
	}
	value := given[cond.Test.Input]
	switch cond.Test.Op {
	case upstream.OpAlways:
		return true
	case upstream.OpIsTrue:
		return value == "true"
	case upstream.OpNonEmpty:
		return value != ""
	case upstream.OpNonBlank:
		return strings.TrimSpace(value) != ""
	case upstream.OpEquals:
		return value == cond.Test.Value
	case upstream.OpAllOf, upstream.OpAnyOf:
		someHold, allHold := false, true
		for _, sub := range cond.Test.Of {
			h := holdsFor(t, c, given, sub, nil)
			someHold, allHold = someHold || h, allHold && h
		}
		if cond.Test.Op == upstream.OpAllOf {
			return allHold
		}
		return someHold
	case upstream.OpNot:
		require.Len(t, cond.Test.Of, 1, when)
		return !holdsFor(t, c, given, cond.Test.Of[0], nil)
	}
	t.Fatalf("condition %s: op %q is not known to this test", when, cond.Test.Op)
	return false
}

// readsGiven says whether a condition, directly or through the conditions it
// combines, tests one of the given inputs. Derived values are not traced: a
// test giving an input a derived value depends on must say so here.
func readsGiven(t *testing.T, c *upstream.Contract, given map[string]string, when string) bool {
	t.Helper()
	cond, ok := c.Conditions[when]
	require.True(t, ok, when)
	if _, ok := given[cond.Test.Input]; ok && cond.Test.Input != "" {
		return true
	}
	for _, sub := range cond.Test.Of {
		if readsGiven(t, c, given, sub) {
			return true
		}
	}
	return false
}

func bindingNames(list []plannedBinding) []string {
	var out []string
	for _, b := range list {
		out = append(out, b.Binding+"->"+b.Target)
	}
	slices.Sort(out)
	return out
}

// TestDefaultExpansionMatchesContract expands a spec with only the required
// inputs and compares every resource, binding, var, secret, cron, consumer and
// Durable Object with contract.json.
func TestDefaultExpansionMatchesContract(t *testing.T) {
	c := loadContract(t)
	plan := mustPlan(t, unmanaged(requiredArgs()))
	// What requiredArgs gives, in the contract's names: the required inputs
	// and what upstream's gates make it give (Slack bot credentials, an
	// allowlist, GitHub sign-in). Conditions are evaluated against these.
	given := map[string]string{
		"githubAppId": "1", "githubAppInstallationId": "2", "githubAppPrivateKey": "-----BEGIN PRIVATE KEY-----",
		"anthropicApiKey": "anthropic", "browserAuthSecret": "browser-auth-secret-of-32-characters",
		"tokenEncryptionKey": testRepoKey, "repoSecretsEncryptionKey": testRepoKey,
		"slackBotToken": "xoxb-test", "slackSigningSecret": "slack-signing",
		"allowedUsers":   "octocat",
		"githubClientId": "oauth-client", "githubClientSecret": "oauth-secret",
	}
	for name := range given {
		require.NotNil(t, c.Input(name), "given input %s is not in the contract", name)
	}
	for _, in := range c.Inputs {
		if in.Required {
			_, ok := given[in.Name]
			assert.True(t, ok, "required input %s missing from given: keep it in step with requiredArgs", in.Name)
		}
	}
	holds := func(when string) bool { return holdsFor(t, c, given, when, nil) }

	assert.Equal(t, "open-inspect-t1", plan.D1Name)
	var kv, queues []string
	for _, ns := range c.KVNamespaces {
		if holds(ns.When) {
			kv = append(kv, ns.Logical)
		}
	}
	for _, q := range c.Queues {
		if holds(q.When) {
			queues = append(queues, q.Logical)
		}
	}
	assert.Equal(t, []string{"session-index", "slack-kv"}, kv, "the contract's defaults changed: update this test on purpose")
	assert.Equal(t, kv, logicalsOf(plan.KV))
	assert.Equal(t, queues, logicalsOf(plan.Queues))
	for _, r := range plan.KV {
		assert.Equal(t, "open-inspect-"+r.Logical+"-t1", r.Name)
	}
	require.Len(t, plan.R2, 1)
	assert.Equal(t, plannedResource{Logical: "media", Name: "open-inspect-media-t1", Location: "ENAM"}, plan.R2[0])

	var workers []string
	for _, cw := range c.Workers {
		if !holds(cw.When) {
			continue
		}
		workers = append(workers, cw.Logical)
		w := plan.worker(cw.Logical)
		require.NotNil(t, w, cw.Logical)
		assert.Equal(t, "open-inspect-"+cw.Logical+"-t1", w.Name)
		assert.Equal(t, filepath.Join(fixtureCheckout, cw.Bundle), w.Script)

		var want struct{ d1, kv, r2, queues, services, objects []string }
		add := func(into *[]string, binding, target, when string) {
			if holds(when) {
				*into = append(*into, binding+"->"+target)
			}
		}
		into := map[string]*[]string{"d1": &want.d1, "kv": &want.kv, "r2": &want.r2,
			"queueProducers": &want.queues, "services": &want.services, "durableObjects": &want.objects}
		for _, b := range cw.Bindings.All() {
			add(into[b.Kind], b.Binding, b.Target, b.When)
		}
		assert.Equal(t, want.d1, bindingNames(w.D1), cw.Logical+" d1")
		assert.Equal(t, want.kv, bindingNames(w.KV), cw.Logical+" kv")
		assert.Equal(t, want.r2, bindingNames(w.R2), cw.Logical+" r2")
		assert.Equal(t, want.queues, bindingNames(w.Queues), cw.Logical+" queues")
		assert.Equal(t, want.services, bindingNames(w.Services), cw.Logical+" services")
		assert.Equal(t, want.objects, bindingNames(w.DurableObjects), cw.Logical+" durable objects")

		for _, set := range []struct {
			kind    string
			entries []upstream.EnvEntry
			got     map[string]valueRef
		}{{"vars", cw.Vars, w.Vars}, {"secrets", cw.Secrets, w.Secrets}} {
			var wantNames []string
			for _, e := range set.entries {
				if !holdsFor(t, c, given, e.When, &e.Source) {
					continue
				}
				if in := c.Input(e.Source.Input); in != nil && in.Secret {
					if _, ok := given[in.Name]; !ok {
						continue // an optional secret nobody gave is not bound (see contractWorker)
					}
				}
				wantNames = append(wantNames, e.Name)
			}
			slices.Sort(wantNames)
			assert.Equal(t, wantNames, slices.Sorted(maps.Keys(set.got)), cw.Logical+" "+set.kind)
		}
		var crons []string
		for _, cron := range cw.Crons {
			crons = append(crons, cron.Schedule)
		}
		assert.Equal(t, crons, w.Crons, cw.Logical+" crons")
		assert.Equal(t, cw.QueueConsumers, w.Consumers, cw.Logical+" consumers")
	}
	assert.Equal(t, []string{"control-plane", "slack-bot"}, workers, "the contract's defaults changed: update this test on purpose")
	var planned []string
	for _, w := range plan.Workers {
		planned = append(planned, w.Logical)
	}
	assert.Equal(t, workers, planned)

	// Values: literals as upstream renders them, the rest as references.
	cp, bot := plan.worker("control-plane"), plan.worker("slack-bot")
	assert.Equal(t, literal("false"), cp.Vars["UNSAFE_ALLOW_ALL_USERS"])
	assert.Equal(t, literal("600000"), cp.Vars["SANDBOX_INACTIVITY_TIMEOUT_MS"])
	assert.Equal(t, literal("modal"), cp.Vars["SANDBOX_PROVIDER"])
	assert.Equal(t, literal("t1"), cp.Vars["DEPLOYMENT_NAME"])
	assert.Equal(t, literal("https://open-inspect-t1.vercel.app"), cp.Vars["WEB_APP_URL"])
	assert.Equal(t, valueRef{kind: refWorkerURL, text: "control-plane"}, cp.Vars["WORKER_URL"])
	assert.Equal(t, valueRef{kind: refWorkerURL, text: "control-plane"}, bot.Vars["CONTROL_PLANE_URL"])
	assert.Equal(t, literal(*c.Worker("slack-bot").Var("DEFAULT_MODEL").Source.Value), bot.Vars["DEFAULT_MODEL"])
	assert.Equal(t, valueRef{kind: refGenerated, text: "serviceAuthSecretSlackBot"}, cp.Secrets["SERVICE_AUTH_SECRET_SLACK_BOT"])
	assert.Equal(t, cp.Secrets["SERVICE_AUTH_SECRET_SLACK_BOT"], bot.Secrets["SERVICE_AUTH_SECRET"], "the bot and the control plane share one key")
	assert.Equal(t, valueRef{kind: refGenerated, text: "providerAccountsEncryptionKey"}, cp.Secrets["PROVIDER_ACCOUNTS_ENCRYPTION_KEY"])
	assert.Equal(t, valueRef{kind: refSecretInput, text: "githubAppPrivateKey"}, cp.Secrets["GITHUB_APP_PRIVATE_KEY"])

	var generated []string
	for _, g := range plan.Generated {
		generated = append(generated, g.Name)
	}
	var allGenerated []string
	for _, g := range c.Generated {
		allGenerated = append(allGenerated, g.Name)
	}
	assert.Equal(t, allGenerated, generated, "the control plane binds every generated secret")
}

func logicalsOf(list []plannedResource) []string {
	var out []string
	for _, r := range list {
		out = append(out, r.Logical)
	}
	return out
}

// TestSandboxInjection: choosing a provider adds its vars and secrets to the
// control plane; explicit worker values win.
func TestSandboxInjection(t *testing.T) {
	t.Run("daytona", func(t *testing.T) {
		args := requiredArgs()
		provider, api, snapshot, target := "daytona", "https://daytona.example/api", "oi-base", "us"
		args.Sandbox = &SandboxArgs{Provider: &provider, Daytona: &DaytonaArgs{
			APIURL: pulumi.String(api), APIKey: pulumi.String("dtn"), BaseSnapshot: &snapshot, Target: &target}}
		args.Workers = []InstallationWorkerArgs{{Name: "control-plane", Vars: map[string]string{"DAYTONA_TARGET": "eu"}}}
		plan := mustPlan(t, args)
		assert.Nil(t, plan.Snapshot, "a given base snapshot is used, not built")
		cp := plan.worker("control-plane")
		assert.Equal(t, literal(api), cp.Vars["DAYTONA_API_URL"])
		assert.Equal(t, literal(snapshot), cp.Vars["DAYTONA_BASE_SNAPSHOT"])
		assert.Equal(t, literal("eu"), cp.Vars["DAYTONA_TARGET"], "the explicit worker value wins")
		assert.Equal(t, literal("daytona"), cp.Vars["SANDBOX_PROVIDER"])
		assert.Equal(t, valueRef{kind: refSecretInput, text: "daytonaApiKey"}, cp.Secrets["DAYTONA_API_KEY"])
		for k := range cp.Vars {
			assert.False(t, strings.HasPrefix(k, "MODAL_"), k)
		}
	})
	t.Run("modal", func(t *testing.T) {
		args := requiredArgs()
		workspace := "acme"
		args.Sandbox = &SandboxArgs{Modal: &ModalArgs{Workspace: &workspace, APISecret: pulumi.String("m")}}
		args.Workers = []InstallationWorkerArgs{{Name: "control-plane",
			Secrets: map[string]pulumi.StringInput{"MODAL_API_SECRET": pulumi.String("mine")}}}
		plan := mustPlan(t, unmanaged(args))
		assert.Nil(t, plan.Modal, "sandbox.manage false deploys nothing")
		cp := plan.worker("control-plane")
		assert.Equal(t, literal("acme"), cp.Vars["MODAL_WORKSPACE"])
		assert.Equal(t, literal("main"), cp.Vars["MODAL_ENVIRONMENT"])
		assert.Equal(t, literal(""), cp.Vars["MODAL_ENVIRONMENT_WEB_SUFFIX"])
		assert.Equal(t, valueRef{kind: refUserSecret, text: "MODAL_API_SECRET"}, cp.Secrets["MODAL_API_SECRET"], "the explicit worker secret wins")
		for k := range cp.Vars {
			assert.False(t, strings.HasPrefix(k, "DAYTONA_"), k)
		}
	})
	t.Run("managed modal", func(t *testing.T) {
		c := loadContract(t)
		plan := mustPlan(t, requiredArgs())
		require.NotNil(t, plan.Modal)
		assert.Equal(t, fixtureCheckout, plan.SandboxSource)
		cp := plan.worker("control-plane")
		assert.Equal(t, valueRef{kind: refSandbox, text: sandboxWorkspace}, cp.Vars["MODAL_WORKSPACE"])
		assert.Equal(t, valueRef{kind: refSandbox, text: sandboxEnvironment}, cp.Vars["MODAL_ENVIRONMENT"])
		assert.Equal(t, valueRef{kind: refSandbox, text: sandboxWebSuffix}, cp.Vars["MODAL_ENVIRONMENT_WEB_SUFFIX"])
		generatedKey := valueRef{kind: refGenerated, text: modalAPISecret.Name}
		assert.Equal(t, generatedKey, cp.Secrets["MODAL_API_SECRET"], "generated when none is given")
		var names []string
		for _, s := range plan.Modal.Secrets {
			names = append(names, s.Name)
			if s.Name == "internal-api" {
				assert.Equal(t, generatedKey, s.Keys["MODAL_API_SECRET"], "the app and the control plane share the key")
				assert.Equal(t, valueRef{kind: refWorkerURL, text: controlPlane, form: urlHost}, s.Keys["ALLOWED_CONTROL_PLANE_HOSTS"])
			}
		}
		var want []string
		for _, s := range c.Sandbox.Modal.Secrets {
			want = append(want, s.Name)
		}
		assert.Equal(t, want, names)

		args := requiredArgs()
		env := "staging"
		args.Sandbox = &SandboxArgs{Modal: &ModalArgs{Environment: &env, APISecret: pulumi.String("given")}}
		plan = mustPlan(t, args)
		assert.Equal(t, "staging", plan.Modal.Environment)
		assert.Equal(t, valueRef{kind: refSecretInput, text: "modalApiSecret"}, plan.worker("control-plane").Secrets["MODAL_API_SECRET"])
		for _, g := range plan.Generated {
			assert.NotEqual(t, modalAPISecret.Name, g.Name, "a given key is not generated")
		}
	})
	t.Run("managed daytona", func(t *testing.T) {
		args := requiredArgs()
		provider, api, grace := "daytona", "https://daytona.example/api", 3600
		args.Sandbox = &SandboxArgs{Provider: &provider, Daytona: &DaytonaArgs{APIURL: pulumi.String(api), APIKey: pulumi.String("dtn"),
			SnapshotGracePeriodSeconds: &grace}}
		plan := mustPlan(t, args)
		require.NotNil(t, plan.Snapshot)
		assert.Equal(t, "open-inspect-sandbox-base-t1", plan.Snapshot.NamePrefix)
		assert.Equal(t, &grace, plan.Snapshot.GracePeriodSeconds)
		assert.Nil(t, plan.Modal)
		assert.Equal(t, valueRef{kind: refSandbox, text: sandboxSnapshot}, plan.worker("control-plane").Vars["DAYTONA_BASE_SNAPSHOT"])
	})
	t.Run("bots and extras", func(t *testing.T) {
		args := requiredArgs()
		on, off, linearClient := true, false, "linear-client"
		args.Slack = &SlackArgs{Enabled: &off}
		args.LinearBot = &LinearBotArgs{Enabled: &on, ClientID: &linearClient, ClientSecret: pulumi.String("c"), WebhookSecret: pulumi.String("w")}
		args.KvNamespaces = []string{"extra"}
		target := "extra"
		args.Workers = []InstallationWorkerArgs{{Name: "control-plane",
			Bindings: &WorkerBindingsArgs{Kv: []LogicalBinding{{Binding: "EXTRA", Target: &target}}}}}
		plan := mustPlan(t, args)
		assert.Equal(t, []string{"session-index", "linear-kv", "extra"}, logicalsOf(plan.KV))
		assert.Nil(t, plan.worker("slack-bot"))
		assert.Equal(t, []string{"image-build-finalization", "image-build-finalization-dlq"}, logicalsOf(plan.Queues))
		cp := plan.worker("control-plane")
		assert.Equal(t, []string{"LINEAR_BOT->linear-bot"}, bindingNames(cp.Services))
		assert.Equal(t, []string{"EXTRA->extra", "REPOS_CACHE->session-index"}, bindingNames(cp.KV))
		linear := plan.worker("linear-bot")
		require.NotNil(t, linear)
		assert.Equal(t, valueRef{kind: refWorkerURL, text: "linear-bot"}, linear.Vars["WORKER_URL"])
		assert.Contains(t, linear.Secrets, "LINEAR_WEBHOOK_SECRET")
		assert.NotContains(t, linear.Secrets, "LINEAR_API_KEY", "an optional secret nobody gave is not bound")
	})
}

// TestSpecValidation: every problem is reported at once, each with its field
// path, and nothing is registered.
func TestSpecValidation(t *testing.T) {
	for _, tc := range []struct {
		name   string
		modify func(a *OpenInspectArgs)
		want   []string
	}{
		{"required", func(a *OpenInspectArgs) {
			a.DeploymentName = ""
			a.GithubApp = GithubAppArgs{}
			a.AnthropicAPIKey = nil
		}, []string{"deploymentName: required", "githubApp.appId: required", "githubApp.privateKey: required", "anthropicApiKey: required"}},
		{"names", func(a *OpenInspectArgs) {
			prefix := "Open_Inspect"
			a.NamePrefix = &prefix
			a.DeploymentName = strings.Repeat("x", 40)
		}, []string{"namePrefix: \"Open_Inspect\" is not a valid name part"}},
		{"too long", func(a *OpenInspectArgs) { a.DeploymentName = strings.Repeat("x", 40) },
			[]string{"deploymentName: the name \"open-inspect-image-build-finalization-dlq-xxxx"}},
		{"bindings", func(a *OpenInspectArgs) {
			missing, bot, nothing := "nope", "linear-bot", ""
			a.Workers = []InstallationWorkerArgs{{Name: "control-plane", Bindings: &WorkerBindingsArgs{
				Kv:             []LogicalBinding{{Binding: "X", Target: &missing}},
				R2:             []LogicalBinding{{Binding: "Y", Target: &missing}},
				Queues:         []LogicalBinding{{Binding: "Z", Target: &missing}},
				Services:       []LogicalBinding{{Binding: "LINEAR", Target: &bot}},
				DurableObjects: []LogicalBinding{{Binding: "OBJ", Target: &nothing}},
			}}}
		}, []string{
			`workers[0].bindings.kv[0].target: no KV namespace "nope" in this installation (add it to kvNamespaces; it has "session-index", "slack-kv")`,
			`workers[0].bindings.r2[0].target: no R2 bucket "nope"`,
			`workers[0].bindings.queues[0].target: no queue "nope"`,
			`workers[0].bindings.services[0].target: no worker "linear-bot" in this installation (enable that bot or add it to workers`,
			`workers[0].bindings.durableObjects[0].target: required: the Durable Object class`,
		}},
		{"workers", func(a *OpenInspectArgs) {
			a.Workers = []InstallationWorkerArgs{
				{Name: "extra"},
				{Name: "extra", Secrets: map[string]pulumi.StringInput{"TOKEN": nil}},
			}
		}, []string{`workers[1].name: duplicate worker name "extra" (also workers[0])`, "workers[1].secrets.TOKEN: secret TOKEN has no value"}},
		{"custom worker without script", func(a *OpenInspectArgs) {
			a.Workers = []InstallationWorkerArgs{{Name: "extra"}}
		}, []string{"workers[0].script: required: extra is not an upstream worker"}},
		{"artifacts", func(a *OpenInspectArgs) { a.Upstream, a.Sandbox = nil, unmanaged(*a).Sandbox },
			[]string{"upstream: no bundle for worker control-plane: this plugin embeds no upstream artefacts", "upstream: no D1 migrations"}},
		{"missing bundle", func(a *OpenInspectArgs) {
			a.Upstream.WorkerBundles = map[string]string{"slack-bot": "does/not/exist.js"}
		}, []string{"upstream.workerBundles.slack-bot: the bundle does/not/exist.js of worker slack-bot is missing\n"}},
		{"durable object class", func(a *OpenInspectArgs) {
			class := "MissingDO"
			a.Workers = []InstallationWorkerArgs{{Name: "control-plane", Bindings: &WorkerBindingsArgs{
				DurableObjects: []LogicalBinding{{Binding: "OTHER", Target: &class}}}}}
		}, []string{`workers[0].bindings.durableObjects[0].target: the bundle ` + filepath.Join(fixtureCheckout, "packages", "control-plane", "dist", "index.js") +
			` of worker control-plane does not export the Durable Object class "MissingDO" of binding OTHER, so Cloudflare would refuse it (10061)`}},
		{"sandbox", func(a *OpenInspectArgs) {
			provider := "daytona"
			a.Sandbox = &SandboxArgs{Provider: &provider}
		}, []string{"sandbox.daytona.apiUrl: required", "sandbox.daytona.apiKey: required"}},
		{"unmanaged daytona", func(a *OpenInspectArgs) {
			provider, off := "daytona", false
			a.Sandbox = &SandboxArgs{Provider: &provider, Manage: &off}
		}, []string{"sandbox.daytona.baseSnapshot: required when sandbox.manage is false"}},
		{"managed modal with a workspace", func(a *OpenInspectArgs) {
			ws := "acme"
			a.Sandbox = &SandboxArgs{Modal: &ModalArgs{Workspace: &ws}}
		}, []string{"sandbox.modal.workspace: the managed Modal app reports its workspace"}},
		{"managed sandbox without a checkout", func(a *OpenInspectArgs) {
			a.Upstream = &UpstreamArgs{WorkerBundles: map[string]string{}}
		}, []string{"upstream.checkout: required to deploy the modal sandbox side"}},
		{"app secrets and web url", func(a *OpenInspectArgs) {
			u := "http://example.com"
			a.WebAppURL = &u
			a.AppSecrets = map[string]pulumi.StringInput{"lower": pulumi.String("x"), "SANDBOX_ID": pulumi.String("x"), "EMPTY": nil}
		}, []string{`webAppUrl: "http://example.com" must be an https origin`, "appSecrets.SANDBOX_ID: SANDBOX_ID is reserved", "appSecrets.EMPTY: secret EMPTY has no value"}},
		{"web pull secret named like the web's Secret", func(a *OpenInspectArgs) {
			a.Web = &web.Args{Image: "web:1", Namespace: "oi-t1", ImagePullSecrets: []web.PullSecret{
				{Name: "registry", Namespace: "infra"}, {Name: "open-inspect-web-t1", Namespace: "infra"}}}
		}, []string{`web.imagePullSecrets[1].name: "open-inspect-web-t1" is also the name of the web's own Secret`}},
		{"oauth", func(a *OpenInspectArgs) { a.GithubOAuth = &OAuthArgs{ClientID: "id"} },
			[]string{"githubOAuth.clientSecret: required"}},
	} {
		noEmbeddedArtefacts(t)
		t.Run(tc.name, func(t *testing.T) {
			args := requiredArgs()
			tc.modify(&args)
			mocks := &recordingMocks{}
			err := runWithMocks(mocks, args)
			require.Error(t, err)
			for _, want := range tc.want {
				assert.Contains(t, err.Error(), want)
			}
			assert.Empty(t, mocks.registered(), "nothing is registered for an invalid spec")
		})
	}
}

// recordingMocks answers registrations like the provider would and records them.
type recordingMocks struct {
	mu        sync.Mutex
	resources []pulumi.MockResourceArgs
}

func (m *recordingMocks) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	m.mu.Lock()
	m.resources = append(m.resources, args)
	m.mu.Unlock()
	out := args.Inputs.Copy()
	id := args.Name + "-id"
	switch args.TypeToken {
	case "openinspect:index:GeneratedSecret":
		out["value"] = resource.MakeSecret(resource.NewProperty("generated-" + args.Name))
	case "openinspect:index:D1Database":
		out["databaseId"] = resource.NewProperty("db-id")
	case "openinspect:index:D1Migrations":
		out["appliedCount"] = resource.NewProperty(3.0)
	case "openinspect:index:KvNamespace":
		out["namespaceId"] = resource.NewProperty("kv-" + args.Inputs["title"].StringValue())
	case "openinspect:index:Queue":
		out["queueId"] = resource.NewProperty("q-" + args.Inputs["name"].StringValue())
	case "openinspect:index:Worker":
		out["hash"] = resource.NewProperty("hash-" + args.Inputs["name"].StringValue())
	case "openinspect:index:WorkerUrls":
		urls := resource.PropertyMap{}
		for _, s := range args.Inputs["scripts"].ArrayValue() {
			urls[resource.PropertyKey(s.StringValue())] = resource.NewProperty("https://" + s.StringValue() + ".acct.workers.dev")
		}
		out["urls"] = resource.NewProperty(urls)
	}
	return id, out, nil
}

func (m *recordingMocks) Call(pulumi.MockCallArgs) (resource.PropertyMap, error) {
	return resource.PropertyMap{}, nil
}

func (m *recordingMocks) registered() []pulumi.MockResourceArgs {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.resources)
}

func (m *recordingMocks) byName(t *testing.T, name string) pulumi.MockResourceArgs {
	t.Helper()
	for _, r := range m.registered() {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no resource %s registered", name)
	return pulumi.MockResourceArgs{}
}

func runWithMocks(mocks *recordingMocks, args OpenInspectArgs) error {
	return pulumi.RunErr(func(ctx *pulumi.Context) error {
		_, err := NewOpenInspect(ctx, "oi", args)
		return err
	}, pulumi.WithMocks("project", "stack", mocks))
}

// TestInstallationRegistersWiredChildren runs the component against mocks and
// checks how the children are wired: URLs before the workers exist, shared
// generated keys, secrets kept secret, the lock in front of everything.
func TestInstallationRegistersWiredChildren(t *testing.T) {
	args := requiredArgs()
	args.AppSecrets = map[string]pulumi.StringInput{"ANTHROPIC_API_KEY": pulumi.ToSecret(pulumi.String("sk")).(pulumi.StringOutput)}
	adopt := true
	args.AdoptExisting = &adopt
	mocks := &recordingMocks{}
	require.NoError(t, runWithMocks(mocks, args))
	for _, r := range mocks.registered() {
		switch strings.TrimPrefix(r.TypeToken, "openinspect:index:") {
		case "D1Database", "KvNamespace", "R2Bucket", "Queue", "Worker":
			assert.True(t, r.Inputs["adoptExisting"].BoolValue(), "%s adopts on request", r.Name)
		}
	}

	counts := map[string]int{}
	for _, r := range mocks.registered() {
		counts[strings.TrimPrefix(r.TypeToken, "openinspect:index:")]++
	}
	assert.Equal(t, map[string]int{"OpenInspect": 1, "NameLock": 1, "GeneratedSecret": 7, "ModalApp": 1, "D1Database": 1, "D1Migrations": 1,
		"KvNamespace": 2, "R2Bucket": 1, "Queue": 4, "WorkerUrls": 1, "Worker": 2, "AppSecrets": 1}, counts)

	cp := mocks.byName(t, "oi-worker-control-plane").Inputs
	vars := cp["vars"].ObjectValue()
	assert.Equal(t, "https://open-inspect-control-plane-t1.acct.workers.dev", vars["WORKER_URL"].StringValue())
	assert.True(t, cp["secrets"].ContainsSecrets(), "worker secrets stay secret")
	slackKey := unwrapSecret(unwrapSecret(cp["secrets"]).ObjectValue()["SERVICE_AUTH_SECRET_SLACK_BOT"])
	assert.Equal(t, "generated-oi-secret-serviceAuthSecretSlackBot", slackKey.StringValue())
	assert.Equal(t, "SessionDO", cp["durableObjects"].ArrayValue()[0].ObjectValue()["className"].StringValue())
	assert.Equal(t, "db-id", cp["d1Databases"].ArrayValue()[0].ObjectValue()["databaseId"].StringValue())
	assert.Equal(t, "open-inspect-slack-bot-t1", cp["services"].ArrayValue()[0].ObjectValue()["service"].StringValue())
	assert.Len(t, cp["crons"].ArrayValue(), 3)
	consumer := cp["queueConsumers"].ArrayValue()[0].ObjectValue()
	assert.Equal(t, "q-open-inspect-image-build-finalization-t1", consumer["queueId"].StringValue())
	assert.Equal(t, "open-inspect-image-build-finalization-dlq-t1", consumer["deadLetterQueue"].StringValue())
	assert.Equal(t, 12.0, consumer["maxRetries"].NumberValue())

	bot := mocks.byName(t, "oi-worker-slack-bot").Inputs
	assert.Equal(t, "https://open-inspect-control-plane-t1.acct.workers.dev", bot["vars"].ObjectValue()["CONTROL_PLANE_URL"].StringValue())

	app := mocks.byName(t, "oi-app-secrets").Inputs
	assert.Equal(t, "slack-bot", app["service"].StringValue())
	assert.Equal(t, "https://open-inspect-control-plane-t1.acct.workers.dev", app["controlPlaneUrl"].StringValue())
	assert.True(t, app["secrets"].ContainsSecrets())

	for _, r := range mocks.registered() {
		if r.TypeToken == "openinspect:index:NameLock" || r.TypeToken == "openinspect:index:OpenInspect" {
			continue
		}
		assert.Contains(t, fmt.Sprint(r.RegisterRPC.GetDependencies()), "oi-names", r.Name+" waits for the name lock")
	}
}

func TestGitHeadVerification(t *testing.T) {
	dir := t.TempDir()
	_, isGit, err := gitHead(dir)
	require.NoError(t, err)
	assert.False(t, isGit)

	pin := loadContract(t).Upstream.Commit
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".git", "refs", "heads"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".git", "packed-refs"), []byte("# pack-refs\n"+pin+" refs/heads/main\n"), 0o644))
	head, isGit, err := gitHead(dir)
	require.NoError(t, err)
	assert.True(t, isGit)
	assert.Equal(t, pin, head)

	other := strings.Repeat("a", 40)
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".git", "refs", "heads", "main"), []byte(other+"\n"), 0o644))
	args := requiredArgs()
	args.Upstream.Checkout = &dir
	_, err = planInstallation(loadContract(t), normalize(t.Context(), &args), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "upstream.checkout: HEAD is "+other+" but this provider is pinned to "+pin)
}

// noEmbeddedArtefacts makes the component see a plugin built without the
// release step, whatever provider/internal/artefacts/dist holds here.
func noEmbeddedArtefacts(t *testing.T) {
	t.Helper()
	saved := embeddedArtefacts
	embeddedArtefacts = func() (*artefacts.Set, error) { return nil, artefacts.ErrNothingEmbedded }
	t.Cleanup(func() { embeddedArtefacts = saved })
}

// fixtureSet writes the fixture checkout as an (unverified) artefact set the
// way the release step does, and makes it the embedded one.
func fixtureSet(t *testing.T) *artefacts.Set {
	t.Helper()
	c := loadContract(t)
	var files []artefacts.File
	for _, w := range c.Workers {
		files = append(files, artefacts.File{Path: w.Bundle, Kind: artefacts.KindBundle, Worker: w.Logical})
	}
	err := filepath.WalkDir(fixtureCheckout, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(fixtureCheckout, p)
		rel = filepath.ToSlash(rel)
		switch {
		case strings.HasPrefix(rel, c.D1Migrations.Directory+"/"):
			files = append(files, artefacts.File{Path: rel, Kind: artefacts.KindMigration})
		case strings.HasPrefix(rel, "packages/modal-infra/") || strings.HasPrefix(rel, "packages/sandbox-runtime/"):
			files = append(files, artefacts.File{Path: rel, Kind: artefacts.KindSandbox})
		case strings.HasPrefix(rel, artefacts.WebBuildDir+"/"):
			files = append(files, artefacts.File{Path: rel, Kind: artefacts.KindWeb})
		}
		return nil
	})
	require.NoError(t, err)
	out := t.TempDir()
	_, err = artefacts.Write(out, artefacts.Manifest{UpstreamCommit: c.Upstream.Commit, Source: "fixture", Files: files}, fixtureCheckout)
	require.NoError(t, err)
	set, err := artefacts.Load(os.DirFS(out), ".")
	require.NoError(t, err)
	saved := embeddedArtefacts
	embeddedArtefacts = func() (*artefacts.Set, error) { return set, nil }
	t.Cleanup(func() { embeddedArtefacts = saved })
	t.Setenv("OPENINSPECT_CACHE_DIR", t.TempDir())
	return set
}

// With no upstream input the component deploys the embedded artefacts:
// bundles, migrations and the Modal sources all come from the materialised
// set, and the verification output says so.
func TestEmbeddedArtefactsAreTheDefault(t *testing.T) {
	set := fixtureSet(t)
	args := requiredArgs()
	args.Upstream = nil
	plan, emb, err := planEmbedded(t, args)
	require.NoError(t, err)
	require.NotNil(t, emb)
	for _, w := range plan.Workers {
		assert.True(t, strings.HasPrefix(w.Script, emb.dir), "%s comes from the embedded set: %s", w.Logical, w.Script)
		assert.Contains(t, plan.Verification["bundle."+w.Logical], "embedded")
	}
	assert.Equal(t, filepath.Join(emb.dir, "terraform", "d1", "migrations"), plan.MigrationsDir)
	assert.Equal(t, emb.dir, plan.SandboxSource)
	assert.Contains(t, plan.Verification["source"], set.Digest())
	assert.Contains(t, plan.Verification["source"], "NOT verified")
	require.Len(t, plan.Warnings, 1, "an unverified embedded set is announced")

	// An override wins over the embedded set.
	override := t.TempDir()
	args.Upstream = &UpstreamArgs{MigrationsDir: &override}
	_, _, err = planEmbedded(t, args)
	require.ErrorContains(t, err, "upstream.migrationsDir: in "+override+": no NNNN_*.sql migration files given")
}

// planEmbedded plans args as the component does, with the artefacts
// embedded in the plugin standing in for a checkout that is not given
// (useEmbedded; nil when one is).
func planEmbedded(t *testing.T, args OpenInspectArgs) (*installPlan, *embedded, error) {
	t.Helper()
	s := normalize(t.Context(), &args)
	emb, err := useEmbedded(t.Context(), s)
	require.NoError(t, err)
	plan, err := planInstallation(loadContract(t), s, emb)
	return plan, emb, err
}

// A supplied tree that is not a git work tree is compared with the digests
// recorded for the pin: a changed, missing or extra migration is refused
// naming the file, unless allowUnverified; a bundle that differs from the
// reference build is a warning naming the worker and both digests.
func TestSuppliedMigrationsAreVerified(t *testing.T) {
	noEmbeddedArtefacts(t)
	c := loadContract(t)
	dir := t.TempDir()
	names := slices.Sorted(maps.Keys(c.Artefacts.Migrations))
	// Files with the pin's names: the digests only match for real content,
	// which this project does not hold, so every file "differs" — except
	// none is left out or added yet.
	for _, n := range names {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), []byte("-- not upstream's\n"), 0o644))
	}
	require.NoError(t, os.Remove(filepath.Join(dir, names[1])))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "9999_extra.sql"), []byte("SELECT 1;\n"), 0o644))
	args := requiredArgs()
	args.Upstream.MigrationsDir, args.Upstream.AllowUnverified = &dir, nil
	_, err := planInstallation(c, normalize(t.Context(), &args), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "upstream.migrationsDir: migration "+filepath.Join(dir, names[0])+" differs from the pinned commit's (sha256 ")
	assert.Contains(t, err.Error(), "upstream.migrationsDir: migration "+names[1]+" of the pinned commit is missing from "+dir)
	assert.Contains(t, err.Error(), "upstream.migrationsDir: migration "+filepath.Join(dir, "9999_extra.sql")+" is not one of the pinned commit's")
	assert.Contains(t, err.Error(), "set upstream.allowUnverified to deploy them anyway")

	allow := true
	args.Upstream.AllowUnverified = &allow
	plan, err := planInstallation(c, normalize(t.Context(), &args), nil)
	require.NoError(t, err)
	assert.Contains(t, plan.Verification["migrations"], "UNVERIFIED")
	// One warning line per condition, pointing at upstreamVerification; the
	// per-file findings are there and in the debug log.
	migrationWarnings := slices.DeleteFunc(slices.Clone(plan.Warnings), func(w string) bool { return !strings.Contains(w, "migration") })
	require.Len(t, migrationWarnings, 1, "%q", plan.Warnings)
	assert.Contains(t, migrationWarnings[0], fmt.Sprintf("upstream.migrationsDir: %d D1 migrations differ from the pinned commit %s's", len(names)+1, c.Upstream.Commit))
	assert.Contains(t, migrationWarnings[0], "upstreamVerification")
	assert.Contains(t, plan.Verification["migrations."+names[0]], "differs: sha256 ")
	assert.Equal(t, "missing (the pinned commit has it)", plan.Verification["migrations."+names[1]])
	assert.Equal(t, "extra (not one of the pinned commit's)", plan.Verification["migrations.9999_extra.sql"])
	details := strings.Join(plan.Details, "\n")
	assert.Contains(t, details, "upstream.migrationsDir: migration "+names[1]+" of the pinned commit is missing from "+dir)
	assert.Contains(t, details, "upstream.migrationsDir: migration "+filepath.Join(dir, "9999_extra.sql")+" is not one of the pinned commit's")

	sum, _, err := artefacts.FileSHA256(filepath.Join(fixtureCheckout, "packages", "control-plane", "dist", "index.js"))
	require.NoError(t, err)
	bundleWarnings := slices.DeleteFunc(slices.Clone(plan.Warnings), func(w string) bool { return !strings.Contains(w, "bundles of") })
	require.Len(t, bundleWarnings, 1, "every differing bundle in one line: %q", plan.Warnings)
	assert.Contains(t, bundleWarnings[0], "control-plane (upstream.checkout)")
	assert.Len(t, plan.Warnings, 2, "nothing else is announced: %q", plan.Warnings)
	assert.Contains(t, details, "the bundle of worker control-plane")
	assert.Contains(t, details, "has sha256 "+sum+", the reference build of "+c.Upstream.Commit+" has "+c.Artefacts.Bundles["control-plane"].SHA256)
	assert.Contains(t, plan.Verification["bundle.control-plane"], "DIFFERS")

	// The same in one line, for a person: counts, not files.
	assert.Regexp(t, fmt.Sprintf(`^checkout %s, upstream %s: 0 of the pin's %d migrations \(1 missing, %d changed, 1 extra\); `+
		`\d+ of \d+ bundles differ from the reference build; see upstreamVerification$`,
		regexp.QuoteMeta(fixtureCheckout), c.Upstream.Commit[:12], len(names), len(names)-1), plan.Summary)
}

// The summary of artefacts that all match names no finding and points at
// nothing; the embedded set is counted from its manifest.
func TestUpstreamSummaryWhenEverythingMatches(t *testing.T) {
	commit := "ecc3d7b81198c63ccab1cfd016fd7dcdaf1b746f"
	matching := verificationTally{source: "checkout /src", compared: true, pinned: 66, matched: 66, bundles: 4}
	assert.Equal(t, "checkout /src, upstream ecc3d7b81198: the pin's 66 migrations, all matching; 4 bundles match the reference build",
		matching.summary(commit))
	embedded := verificationTally{source: "embedded artefacts", embedded: 66, embeddedBundles: 4}
	assert.Equal(t, "embedded artefacts, upstream ecc3d7b81198: 66 migrations and 4 bundles checked against the plugin's manifest",
		embedded.summary(commit))
}
