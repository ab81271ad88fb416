package installation

import (
	"context"
	"fmt"

	"github.com/openinspect/pulumi-openinspect/provider/config"
	"github.com/openinspect/pulumi-openinspect/provider/installation/web"
	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
)

// Stage 1 of the pipeline: the arguments with every default applied, once.
// Later stages read a spec, never the raw optional pointers.

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
	Upstream      UpstreamArgs
	Modal         ModalArgs
	Daytona       DaytonaArgs
	E2B           E2BArgs
	OpenComputer  OpenComputerArgs
	Vercel        VercelArgs
	// limits are the provider's Workers limits (nil: the defaults).
	limits *config.WorkerLimits
	// apiURLs are the sandbox backends' apiUrl values as read, by provider
	// (sandbox_apiurl.go).
	apiURLs map[string]givenString
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
	}
	if a.Upstream != nil {
		s.Upstream = *a.Upstream
	}
	if x := a.Sandbox; x != nil {
		if p := family.Deref(x.Provider, ""); p != "" {
			s.SandboxProvider = p
		}
		s.ManageSandbox = family.Deref(x.Manage, true)
		if x.Modal != nil {
			s.Modal = *x.Modal
		}
		if x.Daytona != nil {
			s.Daytona = *x.Daytona
		}
		if x.E2B != nil {
			s.E2B = *x.E2B
		}
		if x.OpenComputer != nil {
			s.OpenComputer = *x.OpenComputer
		}
		if x.Vercel != nil {
			s.Vercel = *x.Vercel
		}
	}
	s.apiURLs = readSandboxAPIURLs(ctx, s)
	switch {
	case family.Deref(a.WebAppURL, "") != "":
		s.WebOrigin, s.WebOriginField = *a.WebAppURL, "webAppUrl"
	case a.Web != nil && a.Web.OnPlatform() == web.PlatformCloudflare && a.Web.CustomDomain != nil:
		s.WebOrigin, s.WebOriginField = "https://"+a.Web.CustomDomain.Hostname, "web.customDomain.hostname"
	case a.Web != nil && a.Web.OnPlatform() == web.PlatformCloudflare:
		// Upstream: https://<web worker>.<subdomain>.workers.dev.
		s.WebFromWorker, s.WebOriginIsDefault, s.WebOriginField = true, true, "web"
	case a.Web != nil && a.Web.OnPlatform() == web.PlatformVercel && a.Web.Vercel != nil && family.Deref(a.Web.Vercel.Domain, "") != "":
		s.WebOrigin, s.WebOriginField = "https://"+*a.Web.Vercel.Domain, "web.vercel.domain"
	case a.Web != nil && a.Web.OnPlatform() == web.PlatformVercel:
		// Upstream: the project's production URL on vercel.app.
		s.WebFromVercel, s.WebOriginIsDefault, s.WebOriginField = true, true, "web"
	case a.Web != nil && family.Deref(a.Web.PublicURL, "") != "":
		s.WebOrigin, s.WebOriginField = *a.Web.PublicURL, "web.publicUrl"
	default:
		// Upstream's default: the Vercel URL of the web app.
		s.WebOrigin = fmt.Sprintf("https://%s-%s.vercel.app", s.Prefix, a.DeploymentName)
		s.WebOriginIsDefault = true
		if a.Web != nil {
			s.WebOriginField = "web.publicUrl"
		} else {
			s.WebOriginField = "webAppUrl"
		}
	}
	return s
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
