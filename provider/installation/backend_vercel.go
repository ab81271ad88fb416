package installation

import (
	"slices"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/openinspect/pulumi-openinspect/provider/internal/upstream"
	"github.com/openinspect/pulumi-openinspect/provider/sandbox"
)

// vercelBackend is the vercel sandbox provider: a VercelSnapshot child
// builds the base snapshot, unless sandbox.vercel.baseSnapshotId names one.
type vercelBackend struct{}

func (vercelBackend) existingImage(s *spec) string { return s.Vercel.BaseSnapshotID }

// validate checks the Vercel Sandbox settings the build and the control
// plane share.
func (vercelBackend) validate(s *spec) problems {
	var errs problems
	if s.SandboxProvider != "vercel" {
		return errs
	}
	x := s.Vercel
	if x.Token == nil {
		errs.add("sandbox.vercel.token", "required with the vercel provider (the base-snapshot build and the control plane both use it)")
	}
	if strings.TrimSpace(x.ProjectID) == "" {
		errs.add("sandbox.vercel.projectId", "required with the vercel provider (every Sandbox API call is scoped by project)")
	}
	if r := x.Runtime; r != nil && !slices.Contains(sandbox.VercelRuntimes, *r) {
		errs.add("sandbox.vercel.runtime", "%q: one of %s", *r, strings.Join(sandbox.VercelRuntimes, ", "))
	}
	if e := x.SnapshotExpirationMs; e != nil && *e < 0 {
		errs.add("sandbox.vercel.snapshotExpirationMs", "must be 0 (never) or more, got %d", *e)
	}
	if !s.ManageSandbox && s.SandboxImage == "" {
		errs.add("sandbox.vercel.baseSnapshotId", "required when sandbox.manage is false (otherwise the installation builds its own)")
	}
	if g := x.SnapshotGracePeriodSeconds; g != nil && *g < 0 {
		errs.add("sandbox.vercel.snapshotGracePeriodSeconds", "must be 0 or more, got %d", *g)
	}
	return errs
}

func (vercelBackend) plan(pl *planner, s *spec) error {
	pl.plan.Vercel = &plannedVercel{NamePrefix: pl.plan.resourceName("sandbox-base"), GracePeriodSeconds: s.Vercel.SnapshotGracePeriodSeconds}
	pl.explicitVar(s, "VERCEL_BASE_SNAPSHOT_NAME", sandboxVercel)
	return nil
}

func (vercelBackend) planned(plan *installPlan) bool { return plan.Vercel != nil }

func (vercelBackend) sources(*upstream.Contract) []string {
	return []string{"packages/control-plane/package.json", "packages/sandbox-runtime/src"}
}

func (vercelBackend) register(b *installer, r sandboxRegistration) (*sandboxChild, error) {
	plan, x := b.plan, b.spec.Vercel
	props := b.imageProps(r, plan.Vercel.NamePrefix, plan.Vercel.GracePeriodSeconds)
	props["token"] = pulumi.ToSecret(plan.SecretInputs["vercelSandboxToken"])
	props["projectId"] = pulumi.String(x.ProjectID)
	props["d1DatabaseId"] = r.db.DatabaseID
	optionalStrings(props, map[string]*string{"teamId": &x.TeamID, "runtime": x.Runtime})
	if u := b.apiURLInput("vercel"); u != nil {
		props["apiUrl"] = u
	}
	snap := &vercelChild{}
	err := b.ctx.RegisterResource(sandbox.VercelSnapshotToken, b.child("vercel-snapshot"), props, snap, r.opts...)
	return &sandboxChild{outputs: map[string]pulumi.StringOutput{sandboxVercel: snap.Name},
		status: func() pulumi.StringOutput {
			return pulumi.Sprintf("vercel: base snapshot %s of sandbox %s (%s)", snap.VercelSnapshotID, snap.Name, snap.Status)
		}}, err
}

func (vercelBackend) preflight(b *installer) pulumi.Map {
	x := b.spec.Vercel
	u, ok := b.preflightAPIURL("vercel")
	if !ok {
		return nil
	}
	return keyPreflight("vercel", b.plan.SecretInputs["vercelSandboxToken"],
		map[string]*string{"apiUrl": u, "teamId": &x.TeamID, "projectId": &x.ProjectID})
}

// vercelChild is the VercelSnapshot child's outputs the component reads.
type vercelChild struct {
	pulumi.CustomResourceState
	Name             pulumi.StringOutput `pulumi:"name"`
	VercelSnapshotID pulumi.StringOutput `pulumi:"vercelSnapshotId"`
	Status           pulumi.StringOutput `pulumi:"status"`
}
