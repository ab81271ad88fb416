package installation

import (
	"fmt"

	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapi"

	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/openinspect/pulumi-openinspect/provider/installation/web"
	"github.com/openinspect/pulumi-openinspect/provider/internal/upstream"
)

// Token is the component's type token.
const Token = "openinspect:index:OpenInspect"

// OpenInspect is one complete Open-Inspect installation: the component
// expands its spec into the Cloudflare resources, generated secrets, platform
// secrets and the web UI on Kubernetes.
type OpenInspect struct {
	pulumi.ResourceState

	ControlPlaneURL   pulumi.StringOutput    `pulumi:"controlPlaneUrl"`
	WebURL            pulumi.StringOutput    `pulumi:"webUrl"`
	D1DatabaseID      pulumi.StringOutput    `pulumi:"d1DatabaseId"`
	AppliedMigrations pulumi.IntOutput       `pulumi:"appliedMigrations"`
	WorkerNames       pulumi.StringMapOutput `pulumi:"workerNames"`
	WorkerHashes      pulumi.StringMapOutput `pulumi:"workerHashes"`
	SandboxStatus     pulumi.StringOutput    `pulumi:"sandboxStatus"`
	UpstreamCommit    pulumi.StringOutput    `pulumi:"upstreamCommit"`
	// UpstreamVerification says where the artefacts came from and what was
	// checked: keys source, migrations and bundle.<worker>.
	UpstreamVerification pulumi.StringMapOutput `pulumi:"upstreamVerification"`
	// UpstreamSummary is upstreamVerification in one line, for a person.
	UpstreamSummary pulumi.StringOutput `pulumi:"upstreamSummary"`
	// The Linear bot's URLs to set up the Linear app with ("" without it).
	LinearWebhookURL        pulumi.StringOutput    `pulumi:"linearWebhookUrl"`
	LinearOAuthAuthorizeURL pulumi.StringOutput    `pulumi:"linearOAuthAuthorizeUrl"`
	KvNamespaceIDs          pulumi.StringMapOutput `pulumi:"kvNamespaceIds"`
	ModalHealthURL          pulumi.StringOutput    `pulumi:"modalHealthUrl"`
	WebPlatform             pulumi.StringOutput    `pulumi:"webPlatform"`
}

// Annotate documents the component and its outputs.
func (o *OpenInspect) Annotate(a infer.Annotator) {
	a.Describe(o, "One complete Open-Inspect installation. With only the required inputs it creates what upstream's "+
		"Terraform creates at the pinned commit: the D1 database with its migrations, KV namespaces, the media R2 "+
		"bucket, queues, the control plane and bot workers with their bindings, vars, secrets, crons and Durable "+
		"Objects, and the generated shared secrets; optionally the platform's global secrets and the web UI on "+
		"Kubernetes. Names are <namePrefix>-<logical>-<deploymentName> and never change.")
	a.Describe(&o.ControlPlaneURL, "URL of the control-plane worker.")
	a.Describe(&o.WebURL, "URL of the web UI.")
	a.Describe(&o.D1DatabaseID, "ID of the D1 database.")
	a.Describe(&o.AppliedMigrations, "Number of D1 migrations applied.")
	a.Describe(&o.WorkerNames, "Script name by logical worker name.")
	a.Describe(&o.WorkerHashes, "Content hash by logical worker name; it changes exactly when the worker is uploaded again.")
	a.Describe(&o.SandboxStatus, "What the installation configured for its sandbox provider.")
	a.Describe(&o.UpstreamCommit, "The upstream commit this installation is pinned to.")
	a.Describe(&o.UpstreamVerification, "Where the upstream artefacts came from and what was verified: source (the embedded artefacts or the "+
		"supplied checkout), migrations (compared with the digests recorded for the pin; with allowUnverified, each file that differs under "+
		"migrations.<file>) and bundle.<worker> (compared with the reference build).")
	a.Describe(&o.UpstreamSummary, "upstreamVerification in one line: where the artefacts came from, how many of the pin's "+
		"migrations they hold (and how many are missing, changed or extra), and how many bundles differ from the reference build.")
	a.Describe(&o.LinearWebhookURL, "The Linear bot's webhook URL (<linear-bot URL>/webhook), to set in the Linear OAuth application's "+
		"webhook configuration; empty when the Linear bot is not deployed.")
	a.Describe(&o.LinearOAuthAuthorizeURL, "The URL a Linear workspace admin visits to install the agent "+
		"(<linear-bot URL>/oauth/authorize); empty when the Linear bot is not deployed.")
	a.Describe(&o.KvNamespaceIDs, "KV namespace ID by logical name (session-index, slack-kv, github-kv, linear-kv, and any extra namespace).")
	a.Describe(&o.ModalHealthURL, "The Modal app's health endpoint (https://<workspace>[-<environment suffix>]--open-inspect-api-health.modal.run) "+
		"when the installation deploys the Modal app; empty otherwise.")
	a.Describe(&o.WebPlatform, "Where the web UI runs: kubernetes or cloudflare (web.platform), or none (no web).")
}

// NewOpenInspect runs the pipeline: normalize the spec (defaults applied
// once), validate it (the secret values awaited where known), plan the installation from the upstream contract,
// resolve and verify the artefacts, validate the plan, and only then
// register the children. Nothing is registered when any stage finds a
// problem, and every problem is reported at once.
func NewOpenInspect(ctx *pulumi.Context, name string, args OpenInspectArgs, opts ...pulumi.ResourceOption) (*OpenInspect, error) {
	contract, err := upstream.Load()
	if err != nil {
		return nil, fmt.Errorf("loading the upstream contract: %w", err)
	}
	s := normalize(ctx.Context(), &args)
	if s.limits, err = workerLimits(ctx.Context()); err != nil {
		return nil, err
	}
	emb, err := useEmbedded(ctx.Context(), s)
	if err != nil {
		return nil, err
	}
	plan, err := planInstallation(contract, s, emb, validateSecretValues(ctx.Context(), s)...)
	if err != nil {
		return nil, err
	}
	if err := claimNames(ctx.Context(), name, plan); err != nil {
		return nil, err
	}
	comp := &OpenInspect{}
	if err := ctx.RegisterComponentResource(Token, name, comp, opts...); err != nil {
		return nil, err
	}
	if s.Web != nil && s.Web.OnPlatform() == web.PlatformKubernetes && s.WebAppURL == "" && s.WebPublicURL == "" {
		// The in-cluster URL is not an origin browsers reach, and the control
		// plane refuses plain http beyond loopback.
		_ = ctx.Log.Warn(fmt.Sprintf("web.publicUrl is not set, so the control plane's WEB_APP_URL stays %s "+
			"(upstream's default): set web.publicUrl to the URL your ingress serves the web UI at", plan.WebAppURL),
			&pulumi.LogArgs{Resource: comp})
	}
	if base := providerConfig(ctx.Context()).WorkersDevBase(); s.WebFromWorker && base != "" && plan.Web != nil {
		// A workersDevBaseUrl (the local cloud's http://*.workers.localhost)
		// can give the web Worker a URL the control plane refuses as
		// WEB_APP_URL; the installation deploys, but nobody can sign in.
		if derived := cfapi.WorkersDevURL(base, "", plan.scriptName(webLogical)); !validWebOrigin(derived) {
			_ = ctx.Log.Warn(fmt.Sprintf("the web Worker's URL %s is not an origin the control plane accepts as WEB_APP_URL "+
				"(https, or http on localhost, 127.0.0.1 or [::1]), so sign-in will be unavailable: set webAppUrl to where the web UI "+
				"is served (the local cloud serves it on a port of its own: the emulator's -local-origin)", derived),
				&pulumi.LogArgs{Resource: comp})
		}
	}
	if s.Adopt && s.ProviderAccountsEncryptionKey == nil {
		// Taking over an orphaned installation makes a new generated key, and
		// what the old one encrypted could no longer be read.
		_ = ctx.Log.Warn("adoptExisting is set but providerAccountsEncryptionKey is not: if the resources being adopted "+
			"belong to an installation that already stored provider accounts, set providerAccountsEncryptionKey to the key it "+
			"used (its PROVIDER_ACCOUNTS_ENCRYPTION_KEY), or what it encrypted can no longer be read", &pulumi.LogArgs{Resource: comp})
	}
	for _, w := range plan.Warnings {
		_ = ctx.Log.Warn(w, &pulumi.LogArgs{Resource: comp})
	}
	for _, d := range plan.Details {
		_ = ctx.Log.Debug(d, &pulumi.LogArgs{Resource: comp})
	}
	b := &installer{ctx: ctx, name: name, contract: contract, plan: plan, spec: s}
	if err := b.install(comp); err != nil {
		return nil, err
	}
	return comp, nil
}

// planInstallation runs every stage before registration: validate the
// spec, plan, resolve and verify the artefacts, validate the plan.
// valueErrs are what validateSecretValues found, reported with the spec's.
func planInstallation(contract *upstream.Contract, s *spec, emb *embedded, valueErrs ...error) (*installPlan, error) {
	if errs := append(validateSpec(s), valueErrs...); len(errs) > 0 {
		return nil, specError(errs)
	}
	plan, err := buildPlan(contract, s)
	if err != nil {
		return nil, err
	}
	errs := validatePlan(plan, s)
	errs = append(errs, resolveArtifacts(contract, plan, s, emb)...)
	errs = append(errs, resolveWeb(plan, s, emb)...)
	errs = append(errs, resolveVercelWeb(plan, s, emb)...)
	if len(errs) == 0 {
		// The Worker's own rules last: what the bundle checks find (a
		// worker's var count) they would report again.
		if errs = checkWorkerBundles(plan, s); len(errs) == 0 {
			errs = childWorkerProblems(plan, s)
		}
	}
	if len(errs) > 0 {
		return nil, specError(errs)
	}
	return plan, nil
}
