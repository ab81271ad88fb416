package tenant

import (
	"context"
	"fmt"

	"github.com/pulumi/pulumi-go-provider/infer"
)

// NameLock holds an installation's names and its identity. Both parts of
// every Cloudflare name are immutable: a changed prefix or deployment name
// would otherwise turn into replacements that create empty resources and
// delete the D1 database with its data. The lock's Diff refuses the change, so
// preview fails with an explanation, and the component makes every child
// depend on the lock so an `up` stops before touching anything.
//
// Because every child depends on it, the lock is also where the installation
// identity is born: a random ID generated on the lock's create, before any
// child exists, kept in state and never changed. Children record it as their
// ownership evidence (see cloudflare/ownership.go), which is what lets a
// create after a crash recognise an object this installation made but whose
// create the engine never recorded.
type NameLock struct{}

// NameLockArgs are the names being held.
type NameLockArgs struct {
	NamePrefix     string `pulumi:"namePrefix"`
	DeploymentName string `pulumi:"deploymentName"`
}

// NameLockState is what NameLock records.
type NameLockState struct {
	NameLockArgs
	// InstallationID is the installation's identity: "oi" and 32 hex digits,
	// valid as a Kubernetes label value and inside a Workers script tag.
	InstallationID string `pulumi:"installationId"`
}

// installationIDLength is the number of hex digits of an identity (128 bits).
const installationIDLength = 32

var (
	_ infer.CustomDiff[NameLockArgs, NameLockState]   = (*NameLock)(nil)
	_ infer.CustomUpdate[NameLockArgs, NameLockState] = (*NameLock)(nil)
)

// Annotate documents the resource.
func (r *NameLock) Annotate(a infer.Annotator) {
	a.Describe(r, "Refuses any change of an installation's namePrefix or deploymentName: Cloudflare names "+
		"are derived from both, and renaming would replace the D1 database and drop its data. The OpenInspect "+
		"component creates one; to really move an installation, create a new one and migrate the data. It also "+
		"generates the installation's identity, which every child records as its ownership evidence.")
}

// Annotate documents the inputs.
func (a *NameLockArgs) Annotate(an infer.Annotator) {
	an.Describe(&a.NamePrefix, "The name prefix.")
	an.Describe(&a.DeploymentName, "The deployment name.")
}

// Annotate documents the outputs.
func (s *NameLockState) Annotate(an infer.Annotator) {
	an.Describe(&s.InstallationID, "The installation's identity: random, generated once before any other child, never changed.")
}

// NewInstallationID returns a fresh installation identity.
func NewInstallationID() (string, error) {
	hex, err := randomString(installationIDLength, "hex")
	if err != nil {
		return "", fmt.Errorf("generating the installation identity: %w", err)
	}
	return "oi" + hex, nil
}

// Create records the names and generates the identity.
func (*NameLock) Create(_ context.Context, req infer.CreateRequest[NameLockArgs]) (infer.CreateResponse[NameLockState], error) {
	state := NameLockState{NameLockArgs: req.Inputs}
	id := req.Inputs.NamePrefix + "/" + req.Inputs.DeploymentName
	if req.DryRun {
		return infer.CreateResponse[NameLockState]{ID: id, Output: state}, nil
	}
	var err error
	if state.InstallationID, err = NewInstallationID(); err != nil {
		return infer.CreateResponse[NameLockState]{}, err
	}
	return infer.CreateResponse[NameLockState]{ID: id, Output: state}, nil
}

// Diff refuses every change of the names. A lock recorded before identities
// existed gets its identity through an update.
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
	return infer.DiffResponse{HasChanges: req.State.InstallationID == ""}, nil
}

// Update only ever runs for a lock without an identity: it generates one.
func (*NameLock) Update(_ context.Context, req infer.UpdateRequest[NameLockArgs, NameLockState]) (infer.UpdateResponse[NameLockState], error) {
	state := req.State
	state.NameLockArgs = req.Inputs
	if state.InstallationID == "" && !req.DryRun {
		var err error
		if state.InstallationID, err = NewInstallationID(); err != nil {
			return infer.UpdateResponse[NameLockState]{}, err
		}
	}
	return infer.UpdateResponse[NameLockState]{Output: state}, nil
}
