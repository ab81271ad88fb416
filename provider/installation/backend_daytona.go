package installation

import (
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/openinspect/pulumi-openinspect/provider/internal/upstream"
	"github.com/openinspect/pulumi-openinspect/provider/sandbox"
)

// daytonaBackend is the daytona sandbox provider: a DaytonaSnapshot child
// builds the base snapshot, unless sandbox.daytona.baseSnapshot names one.
type daytonaBackend struct{}

func (daytonaBackend) existingImage(s *spec) string { return s.Daytona.BaseSnapshot }

func (daytonaBackend) validate(s *spec) problems {
	var errs problems
	if s.SandboxProvider != "daytona" {
		return errs
	}
	d := s.Daytona // apiUrl: sandboxAPIURLProblems
	if d.APIKey == nil {
		errs.add("sandbox.daytona.apiKey", "required with the daytona provider: a Daytona API key (as a secret), which the snapshot build and the control plane both use")
	}
	if !s.ManageSandbox && s.SandboxImage == "" {
		errs.add("sandbox.daytona.baseSnapshot", "required when sandbox.manage is false (otherwise the installation builds its own)")
	}
	if g := d.SnapshotGracePeriodSeconds; g != nil && *g < 0 {
		errs.add("sandbox.daytona.snapshotGracePeriodSeconds", "must be 0 or more, got %d", *g)
	}
	return errs
}

func (daytonaBackend) plan(pl *planner, s *spec) error {
	pl.plan.Snapshot = &plannedSnapshot{NamePrefix: pl.plan.resourceName("sandbox-base"),
		GracePeriodSeconds: s.Daytona.SnapshotGracePeriodSeconds}
	pl.explicitVar(s, "DAYTONA_BASE_SNAPSHOT", sandboxSnapshot)
	return nil
}

func (daytonaBackend) planned(plan *installPlan) bool { return plan.Snapshot != nil }

func (daytonaBackend) sources(c *upstream.Contract) []string {
	return []string{c.Sandbox.Daytona.Package + "/src/bootstrap.py", c.Sandbox.Daytona.Package + "/src/toolchain.py", c.Sandbox.Daytona.Snapshot.RuntimeSource}
}

// register registers the DaytonaSnapshot: the Daytona settings the control
// plane gets build the snapshot too, so credentials are given once.
func (daytonaBackend) register(b *installer, r sandboxRegistration) (*sandboxChild, error) {
	plan := b.plan
	props := b.imageProps(r, plan.Snapshot.NamePrefix, plan.Snapshot.GracePeriodSeconds)
	props["apiKey"] = pulumi.ToSecret(plan.SecretInputs["daytonaApiKey"])
	props["d1DatabaseId"] = r.db.DatabaseID
	optionalStrings(props, map[string]*string{"target": &b.spec.Daytona.Target})
	if u := b.apiURLInput("daytona"); u != nil {
		props["apiUrl"] = u
	}
	snap := &snapshotChild{}
	err := b.ctx.RegisterResource(sandbox.DaytonaSnapshotToken, b.child("daytona-snapshot"), props, snap, r.opts...)
	return &sandboxChild{outputs: map[string]pulumi.StringOutput{sandboxSnapshot: snap.Name},
		status: func() pulumi.StringOutput {
			return pulumi.Sprintf("daytona: base snapshot %s (%s)", snap.Name, snap.State)
		}}, err
}

func (daytonaBackend) preflight(b *installer) pulumi.Map {
	u, ok := b.preflightAPIURL("daytona")
	if !ok {
		return nil
	}
	return keyPreflight("daytona", b.plan.SecretInputs["daytonaApiKey"], map[string]*string{"apiUrl": u})
}

// snapshotChild is the DaytonaSnapshot child's outputs the component reads.
type snapshotChild struct {
	pulumi.CustomResourceState
	Name  pulumi.StringOutput `pulumi:"name"`
	State pulumi.StringOutput `pulumi:"state"`
}
