package installation

import (
	"context"
	"fmt"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/openinspect/pulumi-openinspect/provider/config"
	"github.com/openinspect/pulumi-openinspect/provider/installation/web"
	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
)

// Stage 1 of the pipeline: the arguments with every default applied, once.
// Later stages read a spec's resolved fields, never the raw optional
// pointers: what an absent input means is decided here and nowhere else.
// The arguments stay embedded for what is passed on as given (secrets, the
// contract's inputs, numbers whose default belongs to a child resource)
// and for the few refusals where an input given empty differs from one
// left out; the resolved fields shadow the optional inputs of the same
// name.

// spec is a normalized OpenInspect spec.
type spec struct {
	*OpenInspectArgs

	Prefix          string
	DeletionPolicy  string // Delete or Orphan
	Adopt           bool
	SandboxProvider string // modal (upstream's default), daytona, e2b, vercel or opencomputer
	// ManageSandbox: the installation deploys its sandbox side itself.
	ManageSandbox bool
	// WebOrigin is the web UI's origin and WebOriginField the input it came
	// from, for messages ("" when it is upstream's default).
	WebOrigin, WebOriginField string
	// WebOriginIsDefault: WebOrigin is upstream's default, made of the names.
	WebOriginIsDefault bool
	// WebFromWorker: the web runs on Cloudflare without a custom domain or
	// webAppUrl, so its origin is the web Worker's workers.dev URL, known
	// only once WorkerUrls read the account (WebOrigin is empty then).
	WebFromWorker bool
	// WebFromVercel: the web runs on Vercel without a domain or webAppUrl,
	// so its origin is the production URL of its deployment, known once
	// the deployment is ready (WebOrigin is empty then).
	WebFromVercel bool

	// The optional plain inputs, "" (or false) where absent unless a
	// default is named.
	AppName      string // "": upstream's default, which the plan fills in
	AppIconURL   string
	TakeOverFrom string
	WebAppURL    string
	Access       accessLists
	// SlackEnabled is on unless slack.enabled is false (upstream's
	// default); the GitHub and Linear bots are off unless enabled.
	SlackEnabled, GithubBotEnabled, LinearBotEnabled bool
	GithubBotUsername, LinearBotClientID             string
	MediaLocation, MediaBucketName                   string
	Upstream                                         upstreamSource
	// web's optional plain settings; the rest of web is read as given
	// (web.Validate, web.Deploy).
	WebPublicURL, WebBundleDir string
	WebVercel                  webVercelSettings

	// The sandbox settings of every provider given (validation reports
	// those of a provider not chosen).
	Modal        modalSettings
	Daytona      daytonaSettings
	E2B          e2bSettings
	OpenComputer openComputerSettings
	Vercel       vercelSettings
	// SandboxImage is the existing image (snapshot or template) the chosen
	// provider's settings name instead of a build, "" for none: then the
	// installation builds one when it manages the sandbox side.
	SandboxImage string

	// bindings are the workers entries' bindings with their targets
	// resolved, by the entry's index (nil for an entry without bindings).
	bindings []*workerBindings
	// limits are the provider's Workers limits (nil: the defaults).
	limits *config.WorkerLimits
	// apiURLs are the sandbox backends' apiUrl values as read, by provider
	// (sandbox_apiurl.go).
	apiURLs map[string]givenString
}

// accessLists are the sign-in allowlists as written: comma-separated, ""
// when absent.
type accessLists struct {
	AllowedUsers, AllowedEmailDomains, AllowedEmails, AllowedGithubOrgs string
	UnsafeAllowAllUsers                                                 bool
}

// upstreamSource says where the upstream artefacts come from; Checkout is
// also where useEmbedded materialises the embedded ones.
type upstreamSource struct {
	Checkout, MigrationsDir string
	WorkerBundles           map[string]string
	AllowUnverified         bool
}

// webVercelSettings are web.vercel's optional settings.
type webVercelSettings struct {
	// ProjectName defaults to <namePrefix>-<deploymentName>, as upstream's
	// open-inspect-<suffix>.
	ProjectName, APIURL, Domain, SourceDir string
}

// modalSettings are sandbox.modal's. The workspace and the web suffix keep
// their pointers: given, even empty, each is refused with a managed app
// and otherwise wins over what the contract derives.
type modalSettings struct {
	Environment                     string // "": the provider's modalEnvironment, else main
	Workspace, EnvironmentWebSuffix *string
	APISecret                       pulumi.StringInput
}

// The image backends' settings: names resolved, numbers left to the child
// resource, whose own defaults apply when they are absent.
type (
	daytonaSettings struct {
		APIURL, APIKey             pulumi.StringInput
		BaseSnapshot, Target       string
		SnapshotGracePeriodSeconds *int
	}
	e2bSettings struct {
		APIURL, APIKey                            pulumi.StringInput
		TemplateID                                string
		CPU, MemoryMB, TemplateGracePeriodSeconds *int
	}
	openComputerSettings struct {
		APIURL, APIKey                              pulumi.StringInput
		Template                                    string
		BuilderMemoryMB, SnapshotGracePeriodSeconds *int
	}
	vercelSettings struct {
		Token, APIURL                     pulumi.StringInput
		ProjectID, TeamID, BaseSnapshotID string
		// Runtime keeps its pointer: given empty, it is refused.
		Runtime                                          *string
		SnapshotExpirationMs, SnapshotGracePeriodSeconds *int
	}
)

// workerBindings are a workers entry's bindings by kind.
type workerBindings struct {
	D1, KV, R2, Queues, Services, DurableObjects []plannedBinding
}

// workerLimits are the limits the workers are checked against.
func (s *spec) workerLimits() config.WorkerLimits {
	if s.limits != nil {
		return *s.limits
	}
	lim, _ := (&config.Config{}).WorkerLimits() // the defaults are valid
	return lim
}

// normalize applies the defaults and reads the sandbox apiUrl, the one
// plain setting that may be another resource's output. It never fails:
// what is wrong is for validateSpec to report.
func normalize(ctx context.Context, a *OpenInspectArgs) *spec {
	s := &spec{
		OpenInspectArgs: a,
		Prefix:          family.Deref(a.NamePrefix, defaultNamePrefix),
		DeletionPolicy:  family.Deref(a.DeletionPolicy, "Delete"),
		Adopt:           family.Deref(a.AdoptExisting, false),
		SandboxProvider: "modal",
		ManageSandbox:   true,
		AppName:         family.Deref(a.AppName, ""),
		AppIconURL:      family.Deref(a.AppIconURL, ""),
		TakeOverFrom:    family.Deref(a.TakeOverFrom, ""),
		WebAppURL:       family.Deref(a.WebAppURL, ""),
		SlackEnabled:    true,
	}
	if x := a.Access; x != nil {
		s.Access = accessLists{AllowedUsers: family.Deref(x.AllowedUsers, ""), AllowedEmailDomains: family.Deref(x.AllowedEmailDomains, ""),
			AllowedEmails: family.Deref(x.AllowedEmails, ""), AllowedGithubOrgs: family.Deref(x.AllowedGithubOrgs, ""),
			UnsafeAllowAllUsers: family.Deref(x.UnsafeAllowAllUsers, false)}
	}
	if x := a.Slack; x != nil {
		s.SlackEnabled = family.Deref(x.Enabled, true)
	}
	if x := a.GithubBot; x != nil {
		s.GithubBotEnabled, s.GithubBotUsername = family.Deref(x.Enabled, false), family.Deref(x.Username, "")
	}
	if x := a.LinearBot; x != nil {
		s.LinearBotEnabled, s.LinearBotClientID = family.Deref(x.Enabled, false), family.Deref(x.ClientID, "")
	}
	if x := a.Media; x != nil {
		s.MediaLocation, s.MediaBucketName = family.Deref(x.Location, ""), family.Deref(x.BucketName, "")
	}
	if x := a.Upstream; x != nil {
		s.Upstream = upstreamSource{Checkout: family.Deref(x.Checkout, ""), MigrationsDir: family.Deref(x.MigrationsDir, ""),
			WorkerBundles: x.WorkerBundles, AllowUnverified: family.Deref(x.AllowUnverified, false)}
	}
	if x := a.Web; x != nil {
		s.WebPublicURL, s.WebBundleDir = family.Deref(x.PublicURL, ""), family.Deref(x.BundleDir, "")
		if v := x.Vercel; v != nil {
			s.WebVercel = webVercelSettings{ProjectName: family.Deref(v.ProjectName, s.Prefix+"-"+a.DeploymentName),
				APIURL: family.Deref(v.APIURL, ""), Domain: family.Deref(v.Domain, ""), SourceDir: family.Deref(v.SourceDir, "")}
		}
	}
	if x := a.Sandbox; x != nil {
		if p := family.Deref(x.Provider, ""); p != "" {
			s.SandboxProvider = p
		}
		s.ManageSandbox = family.Deref(x.Manage, true)
		resolveSandboxSettings(s, x)
	}
	if b := s.backend(); b != nil {
		s.SandboxImage = b.existingImage(s)
	}
	s.bindings = resolveBindings(a.Workers)
	s.apiURLs = readSandboxAPIURLs(ctx, s)
	resolveWebOrigin(s)
	return s
}

// resolveSandboxSettings copies each provider's settings that are given.
func resolveSandboxSettings(s *spec, x *SandboxArgs) {
	if m := x.Modal; m != nil {
		s.Modal = modalSettings{Environment: family.Deref(m.Environment, ""), Workspace: m.Workspace,
			EnvironmentWebSuffix: m.EnvironmentWebSuffix, APISecret: m.APISecret}
	}
	if d := x.Daytona; d != nil {
		s.Daytona = daytonaSettings{APIURL: d.APIURL, APIKey: d.APIKey, BaseSnapshot: family.Deref(d.BaseSnapshot, ""),
			Target: family.Deref(d.Target, ""), SnapshotGracePeriodSeconds: d.SnapshotGracePeriodSeconds}
	}
	if e := x.E2B; e != nil {
		s.E2B = e2bSettings{APIURL: e.APIURL, APIKey: e.APIKey, TemplateID: family.Deref(e.TemplateID, ""),
			CPU: e.CPU, MemoryMB: e.MemoryMB, TemplateGracePeriodSeconds: e.TemplateGracePeriodSeconds}
	}
	if o := x.OpenComputer; o != nil {
		s.OpenComputer = openComputerSettings{APIURL: o.APIURL, APIKey: o.APIKey, Template: family.Deref(o.Template, ""),
			BuilderMemoryMB: o.BuilderMemoryMB, SnapshotGracePeriodSeconds: o.SnapshotGracePeriodSeconds}
	}
	if v := x.Vercel; v != nil {
		s.Vercel = vercelSettings{Token: v.Token, APIURL: v.APIURL, ProjectID: family.Deref(v.ProjectID, ""),
			TeamID: family.Deref(v.TeamID, ""), BaseSnapshotID: family.Deref(v.BaseSnapshotID, ""), Runtime: v.Runtime,
			SnapshotExpirationMs: v.SnapshotExpirationMs, SnapshotGracePeriodSeconds: v.SnapshotGracePeriodSeconds}
	}
}

// resolveBindings resolves the targets of the workers entries' bindings:
// a D1 binding without one binds the installation's database; any other
// kind without one is left "" for validatePlan to refuse.
func resolveBindings(entries []InstallationWorkerArgs) []*workerBindings {
	out := make([]*workerBindings, len(entries))
	for i, entry := range entries {
		b := entry.Bindings
		if b == nil {
			continue
		}
		resolve := func(given []LogicalBinding, def string) []plannedBinding {
			var list []plannedBinding
			for _, lb := range given {
				list = append(list, plannedBinding{Binding: lb.Binding, Target: family.Deref(lb.Target, def)})
			}
			return list
		}
		out[i] = &workerBindings{D1: resolve(b.D1, mainDatabase), KV: resolve(b.Kv, ""), R2: resolve(b.R2, ""),
			Queues: resolve(b.Queues, ""), Services: resolve(b.Services, ""), DurableObjects: resolve(b.DurableObjects, "")}
	}
	return out
}

// resolveWebOrigin decides where the web UI is reached from: webAppUrl,
// else where web runs, else upstream's default.
func resolveWebOrigin(s *spec) {
	w := s.Web
	switch {
	case s.WebAppURL != "":
		s.WebOrigin, s.WebOriginField = s.WebAppURL, "webAppUrl"
	case w != nil && w.OnPlatform() == web.PlatformCloudflare && w.CustomDomain != nil:
		s.WebOrigin, s.WebOriginField = "https://"+w.CustomDomain.Hostname, "web.customDomain.hostname"
	case w != nil && w.OnPlatform() == web.PlatformCloudflare:
		// Upstream: https://<web worker>.<subdomain>.workers.dev.
		s.WebFromWorker, s.WebOriginIsDefault, s.WebOriginField = true, true, "web"
	case w != nil && w.OnPlatform() == web.PlatformVercel && w.Vercel != nil && s.WebVercel.Domain != "":
		s.WebOrigin, s.WebOriginField = "https://"+s.WebVercel.Domain, "web.vercel.domain"
	case w != nil && w.OnPlatform() == web.PlatformVercel:
		// Upstream: the project's production URL on vercel.app.
		s.WebFromVercel, s.WebOriginIsDefault, s.WebOriginField = true, true, "web"
	case w != nil && s.WebPublicURL != "":
		s.WebOrigin, s.WebOriginField = s.WebPublicURL, "web.publicUrl"
	default:
		// Upstream's default: the Vercel URL of the web app.
		s.WebOrigin = fmt.Sprintf("https://%s-%s.vercel.app", s.Prefix, s.DeploymentName)
		s.WebOriginIsDefault = true
		if w != nil {
			s.WebOriginField = "web.publicUrl"
		} else {
			s.WebOriginField = "webAppUrl"
		}
	}
}

// explicitValue reports whether a worker entry of the spec sets name as a
// var or secret itself: explicit values win over sandbox injection.
func (s *spec) explicitValue(worker, name string) (string, bool) {
	for _, w := range s.Workers {
		if w.Name != worker {
			continue
		}
		if v, ok := w.Vars[name]; ok {
			return v, true
		}
		if _, ok := w.Secrets[name]; ok {
			return "", true
		}
	}
	return "", false
}
