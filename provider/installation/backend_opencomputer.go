package installation

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/openinspect/pulumi-openinspect/provider/internal/upstream"
	"github.com/openinspect/pulumi-openinspect/provider/sandbox"
)

// openComputerBackend is the opencomputer sandbox provider: an
// OpenComputerSnapshot child builds the snapshot, unless
// sandbox.opencomputer.template names one.
type openComputerBackend struct{}

func (openComputerBackend) existingImage(s *spec) string { return s.OpenComputer.Template }

// validate checks the OpenComputer settings the build and the control
// plane share.
func (openComputerBackend) validate(s *spec) problems {
	var errs problems
	if s.SandboxProvider != "opencomputer" {
		return errs
	}
	o := s.OpenComputer // apiUrl: sandboxAPIURLProblems
	if o.APIKey == nil {
		errs.add("sandbox.opencomputer.apiKey", "required with the opencomputer provider (the snapshot build and the control plane both use it)")
	}
	if !s.ManageSandbox && s.SandboxImage == "" {
		errs.add("sandbox.opencomputer.template", "required when sandbox.manage is false (otherwise the installation builds its own)")
	}
	if m := o.BuilderMemoryMB; m != nil && *m < 1024 {
		errs.add("sandbox.opencomputer.builderMemoryMb", "must be at least 1024, got %d", *m)
	}
	if g := o.SnapshotGracePeriodSeconds; g != nil && *g < 0 {
		errs.add("sandbox.opencomputer.snapshotGracePeriodSeconds", "must be 0 or more, got %d", *g)
	}
	return errs
}

func (openComputerBackend) plan(pl *planner, s *spec) error {
	o := s.OpenComputer
	pl.plan.OpenComputer = &plannedOpenComputer{NamePrefix: pl.plan.resourceName("sandbox"), BuilderMemoryMB: o.BuilderMemoryMB,
		GracePeriodSeconds: o.SnapshotGracePeriodSeconds}
	pl.explicitVar(s, "OPENCOMPUTER_TEMPLATE", sandboxOpenComputer)
	return nil
}

func (openComputerBackend) planned(plan *installPlan) bool { return plan.OpenComputer != nil }

func (openComputerBackend) sources(*upstream.Contract) []string {
	return []string{"packages/opencomputer-infra/package.json", "packages/opencomputer-infra/src/build-template.ts", "packages/sandbox-runtime/src"}
}

func (openComputerBackend) register(b *installer, r sandboxRegistration) (*sandboxChild, error) {
	o := b.plan.OpenComputer
	props := b.imageProps(r, o.NamePrefix, o.GracePeriodSeconds)
	props["apiUrl"] = b.apiURLInput("opencomputer") // required: validated as set
	props["apiKey"] = pulumi.ToSecret(b.plan.SecretInputs["opencomputerApiKey"])
	props["d1DatabaseId"] = r.db.DatabaseID
	optionalInts(props, map[string]*int{"builderMemoryMb": o.BuilderMemoryMB})
	snap := &openComputerChild{}
	err := b.ctx.RegisterResource(sandbox.OpenComputerSnapshotToken, b.child("opencomputer-snapshot"), props, snap, r.opts...)
	return &sandboxChild{outputs: map[string]pulumi.StringOutput{sandboxOpenComputer: snap.Name},
		status: func() pulumi.StringOutput {
			return pulumi.Sprintf("opencomputer: snapshot %s (%s)", snap.Name, snap.Status)
		}}, err
}

func (openComputerBackend) preflight(b *installer) pulumi.Map {
	u, ok := b.preflightAPIURL("opencomputer")
	if !ok {
		return nil
	}
	return keyPreflight("opencomputer", b.plan.SecretInputs["opencomputerApiKey"], map[string]*string{"apiUrl": u})
}

// openComputerChild is the OpenComputerSnapshot child's outputs the
// component reads.
type openComputerChild struct {
	pulumi.CustomResourceState
	Name   pulumi.StringOutput `pulumi:"name"`
	Status pulumi.StringOutput `pulumi:"status"`
}
