package installation

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/openinspect/pulumi-openinspect/provider/internal/upstream"
)

// A sandbox backend is one sandbox provider as the installation sees it:
// how its settings are checked, which child deploys its sandbox side, what
// the control plane gets from that child, and what the child reads from the
// checkout. Each is in its own file, backend_<provider>.go; the stages call
// them through sandboxBackend, never by the provider's name.
type sandboxBackend interface {
	// existingImage is the existing image the backend's settings name
	// instead of a build (spec.SandboxImage), "" for none; with
	// sandbox.manage and none, the installation deploys the sandbox side
	// itself through a child.
	existingImage(s *spec) string
	// validate checks the backend's settings (sandbox.<provider>); it is
	// called for every backend, and checks only what applies.
	validate(s *spec) problems
	// plan plans the child and points the control plane's settings at its
	// outputs, when the installation builds it.
	plan(pl *planner, s *spec) error
	// planned: the plan holds this backend's child.
	planned(plan *installPlan) bool
	// sources are the checkout's files the child reads.
	sources(c *upstream.Contract) []string
	// register registers the planned child.
	register(b *installer, r sandboxRegistration) (*sandboxChild, error)
	// preflight is what the NameLock checks of the backend's credential
	// before any child is touched (tenant.SandboxPreflight), nil for
	// nothing: the key the build and the control plane share, checked
	// whether or not the installation builds the image, since the
	// control plane needs it either way.
	preflight(b *installer) pulumi.Map
}

// sandboxChild is a registered sandbox child as the rest of the
// installation reads it.
type sandboxChild struct {
	// outputs are the child's outputs control-plane values refer to, by
	// the names the planner gave them.
	outputs map[string]pulumi.StringOutput
	// status says what the child is (the sandboxStatus output); nil until
	// the child itself is registered.
	status func() pulumi.StringOutput
}

// sandboxRegistration is what a sandbox child is registered with.
type sandboxRegistration struct {
	comp   *OpenInspect
	lock   pulumi.Resource
	db     *d1Child
	adopt  pulumi.BoolInput
	orphan bool
	opts   []pulumi.ResourceOption
}

// sandboxProviders are the sandbox.provider values, in the order messages
// name them; sandboxBackends holds each one's backend.
var (
	sandboxProviders = []string{"modal", "daytona", "e2b", "vercel", "opencomputer"}
	sandboxBackends  = map[string]sandboxBackend{
		"modal": modalBackend{}, "daytona": daytonaBackend{}, "e2b": e2bBackend{},
		"vercel": vercelBackend{}, "opencomputer": openComputerBackend{},
	}
)

// backend is the spec's sandbox backend; nil for an unknown provider
// (validateSpec reports it).
func (s *spec) backend() sandboxBackend { return sandboxBackends[s.SandboxProvider] }

// buildsSandbox: the installation deploys its sandbox side through a child.
func (s *spec) buildsSandbox() bool {
	b := s.backend()
	return s.ManageSandbox && b != nil && s.SandboxImage == ""
}

// plannedBackend is the backend whose child the plan holds, nil for none.
func (p *installPlan) plannedBackend() sandboxBackend {
	for _, name := range sandboxProviders {
		if b := sandboxBackends[name]; b.planned(p) {
			return b
		}
	}
	return nil
}

// explicitVar points the control plane's var name at the sandbox child's
// output, unless the spec sets it itself (explicit values win).
func (pl *planner) explicitVar(s *spec, name, output string) {
	if _, explicit := s.explicitValue(controlPlane, name); !explicit {
		pl.plan.worker(controlPlane).Vars[name] = valueRef{kind: refSandbox, text: output}
	}
}

// imageProps are the inputs every image child shares (sandbox.ImageInputs).
func (b *installer) imageProps(r sandboxRegistration, namePrefix string, grace *int) pulumi.Map {
	props := pulumi.Map{
		"source":       pulumi.String(b.plan.SandboxSource),
		"namePrefix":   pulumi.String(namePrefix),
		"keepOnDelete": pulumi.Bool(r.orphan),
	}
	optionalInts(props, map[string]*int{"gracePeriodSeconds": grace})
	return props
}

// keyPreflight is a backend's preflight: its provider, its key (a secret)
// and the plain settings the key is read with; nil without a key.
func keyPreflight(provider string, key pulumi.StringInput, plain map[string]*string) pulumi.Map {
	if key == nil {
		return nil
	}
	props := pulumi.Map{"provider": pulumi.String(provider), "key": pulumi.ToSecret(key)}
	optionalStrings(props, plain)
	return props
}

// optionalStrings adds each given, non-empty string to props.
func optionalStrings(props pulumi.Map, values map[string]*string) {
	for key, v := range values {
		if v != nil && *v != "" {
			props[key] = pulumi.String(*v)
		}
	}
}

// optionalInts adds each given int to props.
func optionalInts(props pulumi.Map, values map[string]*int) {
	for key, v := range values {
		if v != nil {
			props[key] = pulumi.Int(*v)
		}
	}
}
