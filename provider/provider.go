// Package provider assembles the openinspect Pulumi provider: one component
// resource that stands up a complete Open-Inspect installation, and the custom
// resources, one package per family, that own the hard parts of it. It holds
// no logic of its own; see doc.go for the layout.
package provider

import (
	"context"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/openinspect/pulumi-openinspect/provider/cloudflare"
	"github.com/openinspect/pulumi-openinspect/provider/config"
	"github.com/openinspect/pulumi-openinspect/provider/installation"
	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
	"github.com/openinspect/pulumi-openinspect/provider/sandbox"
	"github.com/openinspect/pulumi-openinspect/provider/tenant"
	"github.com/openinspect/pulumi-openinspect/provider/vercel"
)

// Name is the Pulumi package name; resource tokens are openinspect:index:<Name>.
const Name = family.PackageName

// PluginDownloadURL is where `pulumi plugin install` and the generated SDKs
// fetch the plugin: the GitHub releases of github.com/openinspect/pulumi-openinspect
// (release v<version>, asset pulumi-resource-openinspect-v<version>-<os>-<arch>.tar.gz,
// as .goreleaser.yaml names it).
const PluginDownloadURL = "github://api.github.com/openinspect"

// Version is the plugin's version. Release builds set it with
// -ldflags "-X github.com/openinspect/pulumi-openinspect/provider.Version=1.2.3".
var Version = "0.0.1-dev"

// Option replaces a resource's default instance, for tests that inject a
// dependency (a shorter wait, a fake client) through the resource's fields.
type Option func(*resources)

// resources are the instances New serves.
type resources struct {
	worker   *cloudflare.Worker
	modalApp *sandbox.ModalApp
	snapshot *sandbox.DaytonaSnapshot
	oc       *sandbox.OpenComputerSnapshot
	vercel   *sandbox.VercelSnapshot
	vdeploy  *vercel.VercelDeployment
}

// WithWorker serves w for the Worker resource.
func WithWorker(w *cloudflare.Worker) Option { return func(r *resources) { r.worker = w } }

// WithModalApp serves m for the ModalApp resource.
func WithModalApp(m *sandbox.ModalApp) Option { return func(r *resources) { r.modalApp = m } }

// WithDaytonaSnapshot serves d for the DaytonaSnapshot resource.
func WithDaytonaSnapshot(d *sandbox.DaytonaSnapshot) Option {
	return func(r *resources) { r.snapshot = d }
}

// WithOpenComputerSnapshot serves o for the OpenComputerSnapshot resource.
func WithOpenComputerSnapshot(o *sandbox.OpenComputerSnapshot) Option {
	return func(r *resources) { r.oc = o }
}

// WithVercelSnapshot serves v for the VercelSnapshot resource.
func WithVercelSnapshot(v *sandbox.VercelSnapshot) Option {
	return func(r *resources) { r.vercel = v }
}

// WithVercelDeployment serves d for the VercelDeployment resource.
func WithVercelDeployment(d *vercel.VercelDeployment) Option {
	return func(r *resources) { r.vdeploy = d }
}

// New builds the provider with every resource and the provider configuration.
func New(opts ...Option) (p.Provider, error) {
	r := resources{worker: &cloudflare.Worker{}, modalApp: &sandbox.ModalApp{}, snapshot: &sandbox.DaytonaSnapshot{},
		oc: &sandbox.OpenComputerSnapshot{}, vercel: &sandbox.VercelSnapshot{}, vdeploy: &vercel.VercelDeployment{}}
	for _, o := range opts {
		o(&r)
	}
	prov, err := infer.NewProviderBuilder().
		WithDisplayName("Open-Inspect").
		WithDescription("Stands up a complete Open-Inspect (background-agents) installation on Cloudflare, Modal, Daytona, E2B, Vercel Sandbox or OpenComputer, and Kubernetes.").
		WithKeywords("open-inspect", "cloudflare", "modal", "daytona", "e2b", "vercel", "opencomputer", "kubernetes", "category/cloud").
		WithHomepage("https://github.com/openinspect/pulumi-openinspect").
		WithRepository("https://github.com/openinspect/pulumi-openinspect").
		WithPublisher("openinspect").
		WithPluginDownloadURL(PluginDownloadURL).
		WithLicense("Apache-2.0").
		WithNamespace("openinspect").
		WithModuleMap(family.ModuleMap).
		WithLanguageMap(map[string]any{
			"go": map[string]any{
				"importBasePath":                 "github.com/openinspect/pulumi-openinspect/sdk/go/openinspect",
				"generateResourceContainerTypes": true,
				"respectSchemaVersion":           true,
			},
			"nodejs": map[string]any{
				"packageName":          "@openinspect/pulumi-openinspect",
				"respectSchemaVersion": true,
			},
			"python": map[string]any{
				"packageName":          "pulumi_openinspect",
				"respectSchemaVersion": true,
				"pyproject":            map[string]any{"enabled": true},
			},
		}).
		WithConfig(infer.Config(&config.Config{})).
		WithResources(
			infer.Resource(&cloudflare.D1Database{}),
			infer.Resource(&cloudflare.KvNamespace{}),
			infer.Resource(&cloudflare.R2Bucket{}),
			infer.Resource(&cloudflare.D1Migrations{}),
			infer.Resource(&cloudflare.Queue{}),
			infer.Resource(r.worker),
			infer.Resource(&tenant.AppSecrets{}),
			infer.Resource(&tenant.GeneratedSecret{}),
			infer.Resource(&cloudflare.WorkerUrls{}),
			infer.Resource(&tenant.NameLock{}),
			infer.Resource(r.modalApp),
			infer.Resource(r.snapshot),
			infer.Resource(&sandbox.E2bTemplate{}),
			infer.Resource(r.oc),
			infer.Resource(r.vercel),
			infer.Resource(&vercel.VercelProject{}),
			infer.Resource(r.vdeploy),
		).
		WithComponents(infer.ComponentF(installation.NewOpenInspect)).
		Build()
	if err != nil {
		return p.Provider{}, err
	}
	return readableFailures(checkComponentInputs(explainReplacements(reportFailedSteps(prov, r.worker.StepFailed)))), nil
}

// reportFailedSteps calls failed whenever a create, update or delete (not
// a preview's) or the component's construction fails: the engine then
// starts no further step, and a Worker waiting for a target of this program
// stops waiting for what this run will not create.
func reportFailedSteps(inner p.Provider, failed func()) p.Provider {
	note := func(err error) error {
		if err != nil {
			failed()
		}
		return err
	}
	if create := inner.Create; create != nil {
		inner.Create = func(ctx context.Context, req p.CreateRequest) (p.CreateResponse, error) {
			resp, err := create(ctx, req)
			if !req.DryRun {
				err = note(err)
			}
			return resp, err
		}
	}
	if update := inner.Update; update != nil {
		inner.Update = func(ctx context.Context, req p.UpdateRequest) (p.UpdateResponse, error) {
			resp, err := update(ctx, req)
			if !req.DryRun {
				err = note(err)
			}
			return resp, err
		}
	}
	if del := inner.Delete; del != nil {
		inner.Delete = func(ctx context.Context, req p.DeleteRequest) error { return note(del(ctx, req)) }
	}
	if construct := inner.Construct; construct != nil {
		inner.Construct = func(ctx context.Context, req p.ConstructRequest) (p.ConstructResponse, error) {
			resp, err := construct(ctx, req)
			if !req.DryRun {
				err = note(err)
			}
			return resp, err
		}
	}
	return inner
}

// checkComponentInputs refuses a component input of the wrong kind (a YAML
// number for a string) naming its field, before the SDK's decoding would
// fail without one.
func checkComponentInputs(inner p.Provider) p.Provider {
	construct := inner.Construct
	if construct == nil {
		return inner
	}
	inner.Construct = func(ctx context.Context, req p.ConstructRequest) (p.ConstructResponse, error) {
		if req.Urn.Type().String() == installation.Token {
			ctx = installation.WithProgramRun(ctx, req.MonitorEndpoint)
			req.Inputs = installation.NumericIDs(req.Inputs)
			if err := installation.CheckInputKinds(req.Inputs); err != nil {
				return p.ConstructResponse{}, err
			}
		}
		return construct(ctx, req)
	}
	return inner
}

// readableFailures passes every Check's and CheckConfig's failures through
// family.Readable: the engine prints a failure that names a property with
// that property's input rendered as a Go value ({<nil>} for a nested path,
// {map[...]} for a map), so the field path goes into the reason instead.
func readableFailures(inner p.Provider) p.Provider {
	wrap := func(check func(context.Context, p.CheckRequest) (p.CheckResponse, error)) func(context.Context, p.CheckRequest) (p.CheckResponse, error) {
		if check == nil {
			return nil
		}
		return func(ctx context.Context, req p.CheckRequest) (p.CheckResponse, error) {
			resp, err := check(ctx, req)
			resp.Failures = family.Readable(resp.Failures)
			return resp, err
		}
	}
	inner.Check = wrap(inner.Check)
	inner.CheckConfig = wrap(inner.CheckConfig)
	return inner
}
