package installation

import (
	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
	"github.com/openinspect/pulumi-openinspect/provider/installation/web"
)

// OpenInspectArgs are the inputs of the OpenInspect component: the operator's
// spec in Pulumi form. Nested types declare no schema defaults (the code
// applies them): a generated SDK applies nested defaults inside an Apply,
// which turns the whole nested object into an output, secret as soon as one
// field is, and the component then cannot read its plain fields. With only the required fields it expands to what
// upstream's Terraform creates at the pinned commit
// (third_party/background-agents/contract.json).
type OpenInspectArgs struct {
	DeploymentName string        `pulumi:"deploymentName"`
	NamePrefix     *string       `pulumi:"namePrefix,optional"`
	AppName        *string       `pulumi:"appName,optional"`
	AppIconURL     *string       `pulumi:"appIconUrl,optional"`
	AdoptExisting  *bool         `pulumi:"adoptExisting,optional"`
	TakeOverFrom   *string       `pulumi:"takeOverFrom,optional"`
	DeletionPolicy *string       `pulumi:"deletionPolicy,optional"`
	Upstream       *UpstreamArgs `pulumi:"upstream,optional"`
	WebAppURL      *string       `pulumi:"webAppUrl,optional"`

	GithubApp                     GithubAppArgs      `pulumi:"githubApp"`
	AnthropicAPIKey               pulumi.StringInput `pulumi:"anthropicApiKey" provider:"secret"`
	BrowserAuthSecret             pulumi.StringInput `pulumi:"browserAuthSecret" provider:"secret"`
	TokenEncryptionKey            pulumi.StringInput `pulumi:"tokenEncryptionKey" provider:"secret"`
	RepoSecretsEncryptionKey      pulumi.StringInput `pulumi:"repoSecretsEncryptionKey" provider:"secret"`
	ProviderAccountsEncryptionKey pulumi.StringInput `pulumi:"providerAccountsEncryptionKey,optional" provider:"secret"`

	Access      *AccessArgs    `pulumi:"access,optional"`
	GithubOAuth *OAuthArgs     `pulumi:"githubOAuth,optional"`
	GoogleOAuth *OAuthArgs     `pulumi:"googleOAuth,optional"`
	Slack       *SlackArgs     `pulumi:"slack,optional"`
	GithubBot   *GithubBotArgs `pulumi:"githubBot,optional"`
	LinearBot   *LinearBotArgs `pulumi:"linearBot,optional"`
	Sandbox     *SandboxArgs   `pulumi:"sandbox,optional"`
	Media       *MediaArgs     `pulumi:"media,optional"`

	KvNamespaces []string                      `pulumi:"kvNamespaces,optional"`
	R2Buckets    []string                      `pulumi:"r2Buckets,optional"`
	Queues       []string                      `pulumi:"queues,optional"`
	Workers      []InstallationWorkerArgs      `pulumi:"workers,optional"`
	AppSecrets   map[string]pulumi.StringInput `pulumi:"appSecrets,optional"`
	Web          *web.Args                     `pulumi:"web,optional"`
}

// UpstreamArgs says where the built upstream artifacts are.
type UpstreamArgs struct {
	Checkout      *string           `pulumi:"checkout,optional"`
	WorkerBundles map[string]string `pulumi:"workerBundles,optional"`
	MigrationsDir *string           `pulumi:"migrationsDir,optional"`
	// AllowUnverified turns a supplied migration that differs from the pin
	// into a warning instead of a refusal.
	AllowUnverified *bool `pulumi:"allowUnverified,optional"`
}

// GithubAppArgs is the GitHub App the platform uses for repository access.
type GithubAppArgs struct {
	AppID          string             `pulumi:"appId"`
	PrivateKey     pulumi.StringInput `pulumi:"privateKey" provider:"secret"`
	InstallationID string             `pulumi:"installationId"`
}

// AccessArgs is who may sign in.
type AccessArgs struct {
	AllowedUsers        *string `pulumi:"allowedUsers,optional"`
	AllowedEmailDomains *string `pulumi:"allowedEmailDomains,optional"`
	AllowedEmails       *string `pulumi:"allowedEmails,optional"`
	AllowedGithubOrgs   *string `pulumi:"allowedGithubOrgs,optional"`
	UnsafeAllowAllUsers *bool   `pulumi:"unsafeAllowAllUsers,optional"`
}

// OAuthArgs is a browser sign-in client.
type OAuthArgs struct {
	ClientID     string             `pulumi:"clientId"`
	ClientSecret pulumi.StringInput `pulumi:"clientSecret" provider:"secret"`
}

// SlackArgs configures the Slack bot (on by default, as upstream).
type SlackArgs struct {
	Enabled         *bool              `pulumi:"enabled,optional"`
	BotToken        pulumi.StringInput `pulumi:"botToken,optional" provider:"secret"`
	SigningSecret   pulumi.StringInput `pulumi:"signingSecret,optional" provider:"secret"`
	TriggersEnabled *bool              `pulumi:"triggersEnabled,optional"`
}

// GithubBotArgs configures the GitHub bot (off by default).
type GithubBotArgs struct {
	Enabled       *bool              `pulumi:"enabled,optional"`
	WebhookSecret pulumi.StringInput `pulumi:"webhookSecret,optional" provider:"secret"`
	Username      *string            `pulumi:"username,optional"`
}

// LinearBotArgs configures the Linear bot (off by default).
type LinearBotArgs struct {
	Enabled       *bool              `pulumi:"enabled,optional"`
	ClientID      *string            `pulumi:"clientId,optional"`
	ClientSecret  pulumi.StringInput `pulumi:"clientSecret,optional" provider:"secret"`
	WebhookSecret pulumi.StringInput `pulumi:"webhookSecret,optional" provider:"secret"`
	APIKey        pulumi.StringInput `pulumi:"apiKey,optional" provider:"secret"`
}

// SandboxArgs selects and configures the sandbox provider.
type SandboxArgs struct {
	Provider            *string           `pulumi:"provider,optional"`
	Manage              *bool             `pulumi:"manage,optional"`
	InactivityTimeoutMs *int              `pulumi:"inactivityTimeoutMs,optional"`
	Modal               *ModalArgs        `pulumi:"modal,optional"`
	Daytona             *DaytonaArgs      `pulumi:"daytona,optional"`
	E2B                 *E2BArgs          `pulumi:"e2b,optional"`
	OpenComputer        *OpenComputerArgs `pulumi:"opencomputer,optional"`
	Vercel              *VercelArgs       `pulumi:"vercel,optional"`
}

// ModalArgs are the Modal settings the control plane needs.
type ModalArgs struct {
	Workspace            *string            `pulumi:"workspace,optional"`
	Environment          *string            `pulumi:"environment,optional"`
	EnvironmentWebSuffix *string            `pulumi:"environmentWebSuffix,optional"`
	APISecret            pulumi.StringInput `pulumi:"apiSecret,optional" provider:"secret"`
}

// DaytonaArgs are the Daytona settings the control plane needs.
type DaytonaArgs struct {
	APIURL       pulumi.StringInput `pulumi:"apiUrl,optional"`
	APIKey       pulumi.StringInput `pulumi:"apiKey,optional" provider:"secret"`
	BaseSnapshot *string            `pulumi:"baseSnapshot,optional"`
	Target       *string            `pulumi:"target,optional"`
	// SnapshotGracePeriodSeconds is how long a superseded base snapshot is kept.
	SnapshotGracePeriodSeconds *int `pulumi:"snapshotGracePeriodSeconds,optional"`
}

// E2BArgs are the E2B settings: one API key for the template build and
// the control plane.
type E2BArgs struct {
	APIURL     pulumi.StringInput `pulumi:"apiUrl,optional"`
	APIKey     pulumi.StringInput `pulumi:"apiKey,optional" provider:"secret"`
	TemplateID *string            `pulumi:"templateId,optional"`
	CPU        *int               `pulumi:"cpu,optional"`
	MemoryMB   *int               `pulumi:"memoryMb,optional"`
	// TemplateGracePeriodSeconds is how long a superseded template is kept.
	TemplateGracePeriodSeconds *int `pulumi:"templateGracePeriodSeconds,optional"`
}

// OpenComputerArgs are the OpenComputer settings: one API URL and key for
// the snapshot build and the control plane.
type OpenComputerArgs struct {
	APIURL          pulumi.StringInput `pulumi:"apiUrl,optional"`
	APIKey          pulumi.StringInput `pulumi:"apiKey,optional" provider:"secret"`
	Template        *string            `pulumi:"template,optional"`
	BuilderMemoryMB *int               `pulumi:"builderMemoryMb,optional"`
	// SnapshotGracePeriodSeconds is how long a superseded snapshot is kept.
	SnapshotGracePeriodSeconds *int `pulumi:"snapshotGracePeriodSeconds,optional"`
}

// VercelArgs are the Vercel Sandbox settings: one token and project for the
// base-snapshot build and the control plane.
type VercelArgs struct {
	Token                pulumi.StringInput `pulumi:"token,optional" provider:"secret"`
	ProjectID            *string            `pulumi:"projectId,optional"`
	TeamID               *string            `pulumi:"teamId,optional"`
	APIURL               pulumi.StringInput `pulumi:"apiUrl,optional"`
	Runtime              *string            `pulumi:"runtime,optional"`
	SnapshotExpirationMs *int               `pulumi:"snapshotExpirationMs,optional"`
	BaseSnapshotID       *string            `pulumi:"baseSnapshotId,optional"`
	// SnapshotGracePeriodSeconds is how long a superseded base snapshot is kept.
	SnapshotGracePeriodSeconds *int `pulumi:"snapshotGracePeriodSeconds,optional"`
}

// MediaArgs configures the media bucket.
type MediaArgs struct {
	Location   *string `pulumi:"location,optional"`
	BucketName *string `pulumi:"bucketName,optional"`
}

// InstallationWorkerArgs adds a worker, or changes one upstream defines.
// Bindings name resources by logical name; explicit values win over the
// defaults and over sandbox injection.
type InstallationWorkerArgs struct {
	Name     string                        `pulumi:"name"`
	Script   *string                       `pulumi:"script,optional"`
	Bindings *WorkerBindingsArgs           `pulumi:"bindings,optional"`
	Vars     map[string]string             `pulumi:"vars,optional"`
	Secrets  map[string]pulumi.StringInput `pulumi:"secrets,optional"`
	Crons    []string                      `pulumi:"crons,optional"`
	// Observability replaces upstream's Workers Logs setting for this worker.
	Observability *cloudflare.Observability `pulumi:"observability,optional"`
}

// WorkerBindingsArgs are a worker's bindings by logical name.
type WorkerBindingsArgs struct {
	D1             []LogicalBinding `pulumi:"d1,optional"`
	Kv             []LogicalBinding `pulumi:"kv,optional"`
	R2             []LogicalBinding `pulumi:"r2,optional"`
	Queues         []LogicalBinding `pulumi:"queues,optional"`
	Services       []LogicalBinding `pulumi:"services,optional"`
	DurableObjects []LogicalBinding `pulumi:"durableObjects,optional"`
}

// LogicalBinding binds a resource of the installation by its logical name
// (`target`); for Durable Objects the target is the class name.
type LogicalBinding struct {
	Binding string  `pulumi:"binding"`
	Target  *string `pulumi:"target,optional"`
}

// Annotate documents the component's inputs.
func (a *OpenInspectArgs) Annotate(an infer.Annotator) {
	an.Describe(&a.DeploymentName, "The installation's unique name: the last part of every Cloudflare name. Immutable: a change is refused at preview.")
	an.Describe(&a.NamePrefix, "First part of every Cloudflare name. Immutable like deploymentName.")
	an.SetDefault(&a.NamePrefix, defaultNamePrefix)
	an.Describe(&a.AppName, "Display name shown in the UI and in bot messages.")
	an.Describe(&a.AppIconURL, "URL (absolute or root-relative) of a logo for the web UI's command menu and favicon; "+
		"empty (default) keeps the built-in icon. Upstream passes it to the web only (NEXT_PUBLIC_APP_ICON_URL), "+
		"not to any worker.")
	an.Describe(&a.AdoptExisting, "Take over Cloudflare resources that already exist under this installation's names and record "+
		"no installation (for example retained by deletionPolicy Orphan before identities existed), instead of failing with a "+
		"conflict. Objects recording another installation are never taken over by it: see takeOverFrom. Objects recording "+
		"this installation (a create an interrupted run finished) are adopted without it.")
	an.Describe(&a.TakeOverFrom, "The identity (installationId) of another installation whose Cloudflare objects under this "+
		"installation's names are taken over, with a warning: for moving an installation into a new stack, since that "+
		"installation's destroy could still delete them.")
	an.Describe(&a.DeletionPolicy, "Delete (default) removes everything on destroy; Orphan leaves every remote resource in place and only forgets it.")
	an.Describe(&a.Upstream, "Overrides for the upstream artefacts (worker bundles, migrations, sandbox sources). Without it the component uses "+
		"the artefacts embedded in the plugin, built from the pinned commit by the release step.")
	an.Describe(&a.WebAppURL, "Origin of the web UI (https, or http on loopback). Defaults to where web runs: https://<web.customDomain.hostname> or "+
		"the web Worker's workers.dev URL (platform cloudflare), or web.publicUrl (kubernetes); without web, upstream's Vercel URL.")
	an.Describe(&a.GithubApp, "The GitHub App used for repository access.")
	an.Describe(&a.AnthropicAPIKey, "Anthropic API key for the bots.")
	an.Describe(&a.BrowserAuthSecret, "Signs browser-auth state and cookies; at least 32 characters.")
	an.Describe(&a.TokenEncryptionKey, "Key that encrypts stored tokens (32 random bytes, base64).")
	an.Describe(&a.RepoSecretsEncryptionKey, "Key that encrypts repository and global secrets (32 random bytes, base64).")
	an.Describe(&a.ProviderAccountsEncryptionKey, "An existing provider-accounts key; when absent one is generated once and kept.")
	an.Describe(&a.Access, "Who may sign in.")
	an.Describe(&a.GithubOAuth, "GitHub sign-in for the web UI.")
	an.Describe(&a.GoogleOAuth, "Google sign-in for the web UI.")
	an.Describe(&a.Slack, "The Slack bot (enabled by default).")
	an.Describe(&a.GithubBot, "The GitHub bot (disabled by default).")
	an.Describe(&a.LinearBot, "The Linear bot (disabled by default).")
	an.Describe(&a.Sandbox, "The sandbox provider: its vars and secrets are added to the control plane.")
	an.Describe(&a.Media, "The media R2 bucket.")
	an.Describe(&a.KvNamespaces, "Additional KV namespaces, by logical name.")
	an.Describe(&a.R2Buckets, "Additional R2 buckets, by logical name.")
	an.Describe(&a.Queues, "Additional queues, by logical name.")
	an.Describe(&a.Workers, "Additional workers, or changes to upstream's (matched by logical name).")
	an.Describe(&a.AppSecrets, "Global secrets seeded into the control plane's store (what sandboxes receive as environment). Keys removed here are pruned; keys added elsewhere are left alone. Give each value as a secret (secret config, `pulumi.ToSecret`): the map itself is not marked secret, so its keys stay readable and can be validated before anything is deployed; every value is stored as a secret by the resources it reaches.")
	an.Describe(&a.Web, "Run the web UI: as a Worker with static assets on Cloudflare (platform cloudflare), or on Kubernetes.")
}

// Annotate documents the artifact locations.
func (u *UpstreamArgs) Annotate(a infer.Annotator) {
	a.SetToken("index", "Upstream")
	a.Describe(u, "Where the built upstream artefacts come from. Unset: the artefacts embedded in the plugin, built at the pinned commit by the release step. Otherwise a checkout at the pinned commit, or each worker bundle and the D1 migrations directory given separately (each wins over the checkout).")
	a.Describe(&u.Checkout, "Overrides the artefacts embedded in the plugin: a checkout of upstream at the pinned commit with the worker bundles built "+
		"(see the README's Releases for the build sequence that works at the pin). Its migrations must match the digests recorded for the pin "+
		"(a git tree's HEAD must be the pin too); a bundle that differs from the reference build is a warning. The managed sandbox side "+
		"(Modal app, Daytona runtime) is read from it.")
	a.Describe(&u.WorkerBundles, "Built bundles by logical worker name; each wins over the checkout and the embedded artefacts.")
	a.Describe(&u.MigrationsDir, "The D1 migrations directory; wins over the checkout's and the embedded one. Verified like the checkout's.")
	a.Describe(&u.AllowUnverified, "Deploy supplied migrations that differ from the pinned commit's (missing, extra or changed files), with a warning instead of a refusal.")
}

// Annotate documents the GitHub App settings.
func (g *GithubAppArgs) Annotate(a infer.Annotator) {
	a.SetToken("index", "GithubApp")
	a.Describe(g, "The GitHub App the platform acts as for repository access: its ID, installation ID and private key.")
	a.Describe(&g.AppID, "GitHub App ID.")
	a.Describe(&g.PrivateKey, "GitHub App private key, PKCS#8 PEM.")
	a.Describe(&g.InstallationID, "GitHub App installation ID.")
}

// Annotate documents the sign-in allowlists.
func (x *AccessArgs) Annotate(a infer.Annotator) {
	a.SetToken("index", "Access")
	a.Describe(x, "Who may sign in to the web UI. Each list is comma-separated; a user matching any of them is admitted.")
	a.Describe(&x.AllowedUsers, "Comma-separated GitHub logins admitted at sign-in.")
	a.Describe(&x.AllowedEmailDomains, "Comma-separated e-mail domains admitted at sign-in.")
	a.Describe(&x.AllowedEmails, "Comma-separated e-mail addresses admitted at sign-in.")
	a.Describe(&x.AllowedGithubOrgs, "Comma-separated GitHub organisations whose members are admitted.")
	a.Describe(&x.UnsafeAllowAllUsers, "Admit every authenticated user.")
}

// Annotate documents an OAuth client.
func (o *OAuthArgs) Annotate(a infer.Annotator) {
	a.SetToken("index", "OAuthClient")
	a.Describe(o, "An OAuth client the web UI signs users in with.")
	a.Describe(&o.ClientID, "OAuth client ID.")
	a.Describe(&o.ClientSecret, "OAuth client secret.")
}

// Annotate documents the Slack bot settings.
func (s *SlackArgs) Annotate(a infer.Annotator) {
	a.SetToken("index", "Slack")
	a.Describe(s, "The Slack bot: whether it is deployed (with its KV namespace and queues) and the Slack app credentials it uses.")
	a.Describe(&s.Enabled, "Deploy the Slack bot, its KV namespace and queues (default true, as upstream).")
	a.Describe(&s.BotToken, "Slack bot OAuth token (xoxb-...).")
	a.Describe(&s.SigningSecret, "Slack app signing secret.")
	a.Describe(&s.TriggersEnabled, "Allow channel-message triggers.")
}

// Annotate documents the GitHub bot settings.
func (g *GithubBotArgs) Annotate(a infer.Annotator) {
	a.SetToken("index", "GithubBot")
	a.Describe(g, "The GitHub bot worker (off by default): whether it is deployed, its webhook secret and its bot login.")
	a.Describe(&g.Enabled, "Deploy the GitHub bot.")
	a.Describe(&g.WebhookSecret, "Secret that verifies GitHub webhook deliveries.")
	a.Describe(&g.Username, "The App's bot login, e.g. name[bot].")
}

// Annotate documents the Linear bot settings.
func (l *LinearBotArgs) Annotate(a infer.Annotator) {
	a.SetToken("index", "LinearBot")
	a.Describe(l, "The Linear bot worker (off by default): whether it is deployed and the Linear OAuth application and webhook it uses.")
	a.Describe(&l.Enabled, "Deploy the Linear bot.")
	a.Describe(&l.ClientID, "Linear OAuth application client ID.")
	a.Describe(&l.ClientSecret, "Linear OAuth application client secret.")
	a.Describe(&l.WebhookSecret, "Linear webhook signing secret.")
	a.Describe(&l.APIKey, "Optional Linear API key used as a fallback.")
}

// Annotate documents the sandbox settings.
func (s *SandboxArgs) Annotate(a infer.Annotator) {
	a.SetToken("index", "Sandbox")
	a.Describe(s, "The sandbox provider sessions run in (Modal, Daytona, E2B, Vercel Sandbox or OpenComputer): its settings, added to the control plane's vars and secrets, and whether the installation deploys the sandbox side itself.")
	a.Describe(&s.Provider, "modal (default), daytona, e2b, vercel or opencomputer.")
	a.Describe(&s.Manage, "Deploy the sandbox side too (default true): with modal, a ModalApp child writes the named secrets, "+
		"deploys upstream's Modal app and wires its workspace and web suffix into the control plane; with daytona and no "+
		"baseSnapshot, a DaytonaSnapshot child builds the digest-named base snapshot; with e2b and no templateId, an "+
		"E2bTemplate child builds the digest-named template with upstream's builder; with opencomputer and no template, an "+
		"OpenComputerSnapshot child builds the digest-named snapshot with upstream's builder; with vercel and no baseSnapshotId, a "+
		"VercelSnapshot child builds the base snapshot of a digest-named sandbox with upstream's builder. All need upstream.checkout. "+
		"false only configures the control plane, for a sandbox side deployed by other means.")
	a.Describe(&s.InactivityTimeoutMs, "Idle milliseconds before a sandbox with no clients is snapshotted and stopped.")
	a.Describe(&s.Modal, "Modal settings; required when provider is modal.")
	a.Describe(&s.Daytona, "Daytona settings; required when provider is daytona.")
	a.Describe(&s.E2B, "E2B settings; required when provider is e2b.")
	a.Describe(&s.OpenComputer, "OpenComputer settings; required when provider is opencomputer.")
	a.Describe(&s.Vercel, "Vercel Sandbox settings; required when provider is vercel.")
}

// apiURLOutputNote ends each sandbox apiUrl's description: the one plain
// sandbox setting that may be another resource's output.
const apiURLOutputNote = "May be another resource's output, though not a secret (it becomes the control plane's plain-text var): " +
	"at a preview before that resource exists, what uses it is unknown, and it is checked once known."

// Annotate documents the Vercel Sandbox settings.
func (v *VercelArgs) Annotate(a infer.Annotator) {
	a.SetToken("index", "VercelSandboxSettings")
	a.Describe(v, "Vercel Sandbox settings of the installation: the token and project (used by both the base-snapshot build "+
		"and the control plane), and the snapshot sessions start from.")
	a.Describe(&v.Token, "Vercel token for the Sandbox API (upstream's vercel_sandbox_token).")
	a.Describe(&v.ProjectID, "The Vercel project that scopes every Sandbox API call (upstream's vercel_sandbox_project_id).")
	a.Describe(&v.TeamID, "The Vercel team, when the project belongs to one.")
	a.Describe(&v.APIURL, "Sandbox API base URL (default https://vercel.com/api). "+apiURLOutputNote)
	a.Describe(&v.Runtime, "Sandbox runtime (default node24): node22, node24 or python3.13.")
	a.Describe(&v.SnapshotExpirationMs, "Expiry of the snapshots sessions take, in milliseconds; 0 (default) means never.")
	a.Describe(&v.BaseSnapshotID, "An existing base snapshot to use (upstream's vercel_base_snapshot_id); when absent (and sandbox.manage "+
		"is not false) the installation builds its own through a VercelSnapshot child.")
	a.Describe(&v.SnapshotGracePeriodSeconds, "How long a superseded base snapshot is kept before a later up deletes it (default a day).")
}

// Annotate documents the OpenComputer settings.
func (o *OpenComputerArgs) Annotate(a infer.Annotator) {
	a.SetToken("index", "OpenComputerSettings")
	a.Describe(o, "OpenComputer settings of the installation: the API and its key (used by both the snapshot build and the control plane), "+
		"and the snapshot sessions boot from.")
	a.Describe(&o.APIURL, "OpenComputer REST API URL ending in /api, e.g. https://app.opencomputer.dev/api (upstream's opencomputer_api_url). "+apiURLOutputNote)
	a.Describe(&o.APIKey, "OpenComputer API key.")
	a.Describe(&o.Template, "An existing snapshot to use (upstream's opencomputer_template); when absent (and sandbox.manage is not false) "+
		"the installation builds its own, digest-named, through an OpenComputerSnapshot child.")
	a.Describe(&o.BuilderMemoryMB, "Memory of the snapshot build's builder VM in MB (default 8192).")
	a.Describe(&o.SnapshotGracePeriodSeconds, "How long a superseded snapshot is kept before a later up deletes it (default a day).")
}

// Annotate documents the E2B settings.
func (e *E2BArgs) Annotate(a infer.Annotator) {
	a.SetToken("index", "E2bSettings")
	a.Describe(e, "E2B settings of the installation: the API and its key (used by both the template build and the control plane), "+
		"and the template sessions start from.")
	a.Describe(&e.APIURL, "E2B REST API base URL (default https://api.e2b.app). "+apiURLOutputNote)
	a.Describe(&e.APIKey, "E2B API key.")
	a.Describe(&e.TemplateID, "An existing template to use (upstream's e2b_template_id); when absent (and sandbox.manage is not false) "+
		"the installation builds its own, digest-named, through an E2bTemplate child.")
	a.Describe(&e.CPU, "vCPUs of the built template (default 2).")
	a.Describe(&e.MemoryMB, "Memory of the built template in MB, an even number (default 4096).")
	a.Describe(&e.TemplateGracePeriodSeconds, "How long a superseded template is kept before a later up deletes it (default a day).")
}

// Annotate documents the Modal settings.
func (m *ModalArgs) Annotate(a infer.Annotator) {
	a.SetToken("index", "ModalSettings")
	a.Describe(m, "Modal settings of the installation: the environment its app is deployed in and the secret the control plane signs its calls with.")
	a.Describe(&m.Workspace, "Modal workspace; forms the endpoint host. Only with sandbox.manage false: a managed app reports its own.")
	a.Describe(&m.Environment, "Modal environment the app is deployed in (default: the provider's modalEnvironment, else main): "+
		"2 to 64 ASCII letters, digits, '-', '_' and '.', starting with a letter or digit, as Modal requires. "+
		"Each installation needs its own: upstream's app and secret names are fixed.")
	a.Describe(&m.EnvironmentWebSuffix, "Web suffix of the Modal environment in endpoint hosts; empty for none. Only with sandbox.manage false.")
	a.Describe(&m.APISecret, "Shared secret the control plane signs Modal calls with; generated once when absent and the app is managed.")
}

// Annotate documents the Daytona settings.
func (d *DaytonaArgs) Annotate(a infer.Annotator) {
	a.SetToken("index", "DaytonaSettings")
	a.Describe(d, "Daytona settings of the installation: the API, its key, and the base snapshot sessions start from.")
	a.Describe(&d.APIURL, "Daytona REST API base URL. "+apiURLOutputNote)
	a.Describe(&d.APIKey, "Daytona API key (snapshot read, write, delete).")
	a.Describe(&d.BaseSnapshot, "Name of an existing base snapshot to use; when absent (and sandbox.manage is not false) "+
		"the installation builds its own, digest-named, through a DaytonaSnapshot child.")
	a.Describe(&d.Target, "Optional Daytona target.")
	a.Describe(&d.SnapshotGracePeriodSeconds, "How long a superseded base snapshot is kept before a later up deletes it (default a day).")
}

// Annotate documents the media bucket settings.
func (m *MediaArgs) Annotate(a infer.Annotator) {
	a.SetToken("index", "Media")
	a.Describe(m, "The installation's media R2 bucket (bound to the control plane as MEDIA_BUCKET): its location and, optionally, its full name.")
	a.Describe(&m.Location, "R2 location hint (default ENAM).")
	a.Describe(&m.BucketName, "Full name of the bucket instead of the naming pattern.")
}

// Annotate documents a worker entry.
func (w *InstallationWorkerArgs) Annotate(a infer.Annotator) {
	a.SetToken("index", "InstallationWorker")
	a.Describe(w, "A worker of the installation: an addition, or a change to one upstream defines (matched by logical name).")
	a.Describe(&w.Name, "Logical worker name, e.g. control-plane; the script is <namePrefix>-<name>-<deploymentName>.")
	a.Describe(&w.Script, "Path of the built ESM bundle; wins over upstream.workerBundles and the checkout.")
	a.Describe(&w.Bindings, "Bindings by logical name, added to (or replacing, by binding name) the defaults.")
	a.Describe(&w.Vars, "Plain-text variables; win over defaults and sandbox injection.")
	a.Describe(&w.Secrets, "Secret variables; win over defaults and sandbox injection. Give each value as a secret (the map itself is not marked secret so its keys can be validated); the worker stores them as secrets.")
	a.Describe(&w.Crons, "Cron triggers; when given they replace the defaults.")
	a.Describe(&w.Observability, "Workers Logs for this worker; when given it replaces upstream's setting (on, head sampling 1, invocation logs), which every worker gets otherwise.")
}

// Annotate documents a binding by logical name.
func (b *LogicalBinding) Annotate(a infer.Annotator) {
	a.Describe(b, "A binding to a resource of the installation, named by its logical name rather than its Cloudflare ID.")
	a.Describe(&b.Binding, "The binding's name in the worker's env.")
	a.Describe(&b.Target, "Logical name of the bound resource (database, namespace, bucket, queue or worker), or the Durable Object class name. D1 defaults to the installation's database.")
}

// Annotate names the type in the schema.
func (b *WorkerBindingsArgs) Annotate(a infer.Annotator) {
	a.SetToken("index", "WorkerBindings")
	a.Describe(b, "A worker's bindings, each naming a resource of the installation by its logical name.")
	a.Describe(&b.D1, "D1 database bindings (the target defaults to the installation's database).")
	a.Describe(&b.Kv, "KV namespace bindings.")
	a.Describe(&b.R2, "R2 bucket bindings.")
	a.Describe(&b.Queues, "Queue producer bindings.")
	a.Describe(&b.Services, "Service bindings to other workers of the installation.")
	a.Describe(&b.DurableObjects, "Durable Object bindings; the target is a class the worker exports.")
}
