package installation

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/openinspect/pulumi-openinspect/provider/internal/upstream"
	"github.com/openinspect/pulumi-openinspect/provider/sandbox"
)

// e2bBackend is the e2b sandbox provider: an E2bTemplate child builds the
// template, unless sandbox.e2b.templateId names one. The child is
// registered after the control plane (registerAfterControlPlane), whose
// E2B_TEMPLATE_ID is the name computed from local files.
type e2bBackend struct{}

func (e2bBackend) existingImage(s *spec) string { return s.E2B.TemplateID }

// validate checks the E2B settings the build and the control plane share.
func (e2bBackend) validate(s *spec) problems {
	var errs problems
	if s.SandboxProvider != "e2b" {
		return errs
	}
	e := s.E2B // apiUrl: sandboxAPIURLProblems
	if e.APIKey == nil {
		errs.add("sandbox.e2b.apiKey", "required with the e2b provider (the template build and the control plane both use it)")
	}
	if !s.ManageSandbox && s.SandboxImage == "" {
		errs.add("sandbox.e2b.templateId", "required when sandbox.manage is false (otherwise the installation builds its own)")
	}
	if c := e.CPU; c != nil && (*c < 1 || *c > 8) {
		errs.add("sandbox.e2b.cpu", "must be between 1 and 8, got %d", *c)
	}
	if m := e.MemoryMB; m != nil && (*m < 512 || *m%2 != 0) {
		errs.add("sandbox.e2b.memoryMb", "must be an even number of at least 512, got %d", *m)
	}
	if g := e.TemplateGracePeriodSeconds; g != nil && *g < 0 {
		errs.add("sandbox.e2b.templateGracePeriodSeconds", "must be 0 or more, got %d", *g)
	}
	return errs
}

func (e2bBackend) plan(pl *planner, s *spec) error {
	pl.plan.E2BTemplate = &plannedE2BTemplate{NamePrefix: pl.plan.resourceName("sandbox"), CPU: s.E2B.CPU, MemoryMB: s.E2B.MemoryMB,
		GracePeriodSeconds: s.E2B.TemplateGracePeriodSeconds}
	pl.explicitVar(s, "E2B_TEMPLATE_ID", sandboxE2BTemplate)
	return nil
}

func (e2bBackend) planned(plan *installPlan) bool { return plan.E2BTemplate != nil }

func (e2bBackend) sources(*upstream.Contract) []string {
	return []string{"packages/e2b-infra/build-template.py", "packages/e2b-infra/uv.lock", "packages/sandbox-runtime/src"}
}

// register only names the template: the child itself is registered after
// the control plane (registerAfterControlPlane).
func (e2bBackend) register(b *installer, _ sandboxRegistration) (*sandboxChild, error) {
	t := b.plan.E2BTemplate
	name, err := sandbox.E2bTemplateName(b.plan.SandboxSource, t.NamePrefix, t.CPU, t.MemoryMB)
	return &sandboxChild{outputs: map[string]pulumi.StringOutput{sandboxE2BTemplate: pulumi.String(name).ToStringOutput()}}, err
}

// registerAfterControlPlane registers the E2bTemplate child, as upstream
// orders it: after the control plane is uploaded (a new control plane boots
// an old template, never the reverse). Its key is the one the control plane
// gets.
func (e2bBackend) registerAfterControlPlane(b *installer, r sandboxRegistration, cp pulumi.Resource) error {
	t := b.plan.E2BTemplate
	props := b.imageProps(r, t.NamePrefix, t.GracePeriodSeconds)
	props["apiKey"] = pulumi.ToSecret(b.plan.SecretInputs["e2bApiKey"])
	props["d1DatabaseId"] = r.db.DatabaseID
	if u := b.apiURLInput("e2b"); u != nil {
		props["apiUrl"] = u
	}
	optionalInts(props, map[string]*int{"cpu": t.CPU, "memoryMb": t.MemoryMB})
	tmpl := &e2bTemplateChild{}
	err := b.ctx.RegisterResource(sandbox.E2bTemplateToken, b.child("e2b-template"), props, tmpl,
		pulumi.Parent(r.comp), pulumi.DependsOn([]pulumi.Resource{r.lock, cp}))
	if b.sandboxed != nil {
		b.sandboxed.status = func() pulumi.StringOutput { return pulumi.Sprintf("e2b: template %s (%s)", tmpl.Name, tmpl.Status) }
	}
	return err
}

func (e2bBackend) preflight(b *installer) pulumi.Map {
	u, ok := b.preflightAPIURL("e2b")
	if !ok {
		return nil
	}
	return keyPreflight("e2b", b.plan.SecretInputs["e2bApiKey"], map[string]*string{"apiUrl": u})
}

// e2bTemplateChild is the E2bTemplate child's outputs the component reads.
type e2bTemplateChild struct {
	pulumi.CustomResourceState
	Name   pulumi.StringOutput `pulumi:"name"`
	Status pulumi.StringOutput `pulumi:"status"`
}
