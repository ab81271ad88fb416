package platform

import (
	"context"
	"fmt"

	"github.com/pulumi/pulumi-go-provider/infer"
)

// NameLock holds an installation's names. Both parts of every Cloudflare name
// are immutable: a changed prefix or deployment name would otherwise turn into
// replacements that create empty resources and delete the D1 database with its
// data. The lock's Diff refuses the change, so preview fails with an
// explanation, and the component makes every child depend on the lock so an
// `up` stops before touching anything.
type NameLock struct{}

// NameLockArgs are the names being held.
type NameLockArgs struct {
	NamePrefix     string `pulumi:"namePrefix"`
	DeploymentName string `pulumi:"deploymentName"`
}

// NameLockState is what NameLock records.
type NameLockState struct {
	NameLockArgs
}

var _ infer.CustomDiff[NameLockArgs, NameLockState] = (*NameLock)(nil)

// Annotate documents the resource.
func (r *NameLock) Annotate(a infer.Annotator) {
	a.Describe(r, "Refuses any change of an installation's namePrefix or deploymentName: Cloudflare names "+
		"are derived from both, and renaming would replace the D1 database and drop its data. The OpenInspect "+
		"component creates one; to really move an installation, create a new one and migrate the data.")
}

// Annotate documents the inputs.
func (a *NameLockArgs) Annotate(an infer.Annotator) {
	an.Describe(&a.NamePrefix, "The name prefix.")
	an.Describe(&a.DeploymentName, "The deployment name.")
}

// Create records the names.
func (*NameLock) Create(_ context.Context, req infer.CreateRequest[NameLockArgs]) (infer.CreateResponse[NameLockState], error) {
	return infer.CreateResponse[NameLockState]{
		ID:     req.Inputs.NamePrefix + "/" + req.Inputs.DeploymentName,
		Output: NameLockState{NameLockArgs: req.Inputs},
	}, nil
}

// Diff refuses every change.
func (*NameLock) Diff(_ context.Context, req infer.DiffRequest[NameLockArgs, NameLockState]) (infer.DiffResponse, error) {
	old, now := req.State.NameLockArgs, req.Inputs
	for _, c := range []struct{ field, was, is string }{
		{"namePrefix", old.NamePrefix, now.NamePrefix},
		{"deploymentName", old.DeploymentName, now.DeploymentName},
	} {
		if c.was != c.is {
			return infer.DiffResponse{}, fmt.Errorf("%s cannot change (%q -> %q): every Cloudflare name of this "+
				"installation contains it, so the change would replace the D1 database and lose its data. Set it "+
				"back to %q; to move an installation, create a new one beside it and migrate the data",
				c.field, c.was, c.is, c.was)
		}
	}
	return infer.DiffResponse{}, nil
}
