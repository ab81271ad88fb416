package tenant

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/openinspect/pulumi-openinspect/provider/config"
	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/zonecheck"
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
	// Hostnames are the installation's hostnames in Cloudflare zones
	// (web.customDomain): the lock checks them against the account before
	// any other child is touched, so `up --skip-preview` and an update
	// refuse a zone the account lacks before the rest is built, as a
	// create's preview does.
	Hostnames []HostnameInZone `pulumi:"hostnames,optional"`
	// Preflight is what the installation will need from its credentials
	// and this machine, verified before any other child is touched
	// (preflight.go).
	Preflight *Preflight `pulumi:"preflight,optional"`
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
	an.Describe(&a.Hostnames, "The installation's hostnames in Cloudflare zones, each with the field that sets it: "+
		"each zone must be in the account and hold its hostname, checked (read-only) when the lock is created and "+
		"when they change, before any child that depends on the lock is touched.")
	an.Describe(&a.Preflight, "What the installation needs from its credentials and from this machine, verified (reads and "+
		"local checks only) when the lock is created, in its preview too, and for what changed when it is updated: a "+
		"wrong token or a missing Python fails before any child that depends on the lock is touched.")
}

// Annotate documents the outputs.
func (s *NameLockState) Annotate(an infer.Annotator) {
	an.Describe(&s.InstallationID, "The installation's identity: random, generated once before any other child, never changed.")
}

// HostnameInZone is a hostname an installation serves, in a zone of the
// account given by ID or by name, with the component field that sets it: a
// refusal names the field.
type HostnameInZone struct {
	Field    string `pulumi:"field"`
	Hostname string `pulumi:"hostname"`
	ZoneID   string `pulumi:"zoneId,optional"`
	ZoneName string `pulumi:"zoneName,optional"`
}

// Annotate documents the type.
func (h *HostnameInZone) Annotate(a infer.Annotator) {
	a.Describe(h, "A hostname an installation serves in a zone of the account, checked before any child is touched.")
	a.Describe(&h.Field, "The field that sets it (e.g. web.customDomain), named when the account refuses it.")
	a.Describe(&h.Hostname, "The hostname, e.g. inspect.example.com.")
	a.Describe(&h.ZoneID, "The zone's ID. Exactly one of zoneId and zoneName is set.")
	a.Describe(&h.ZoneName, "The zone's name, looked up in the account.")
}

// checkHostnames refuses, all at once and each naming its field, the
// hostnames whose zone the configured account lacks or that lie outside
// their zone, with read-only calls (one per zone).
func checkHostnames(ctx context.Context, hosts []HostnameInZone) error {
	if len(hosts) == 0 {
		return nil
	}
	client, err := config.Cloudflare(ctx)
	if err != nil {
		return err
	}
	zones := zonecheck.New(client)
	for _, h := range hosts {
		if err := zones.Check(ctx, h.Field, h.Hostname, h.ZoneID, h.ZoneName); err != nil {
			return fmt.Errorf("checking %s against the account: %w", h.Field, err)
		}
	}
	if len(zones.Problems) == 0 {
		return nil
	}
	return errors.New(strings.Join(zones.Problems, "; "))
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
func (*NameLock) Create(ctx context.Context, req infer.CreateRequest[NameLockArgs]) (infer.CreateResponse[NameLockState], error) {
	state := NameLockState{NameLockArgs: req.Inputs}
	id := req.Inputs.NamePrefix + "/" + req.Inputs.DeploymentName
	if err := runPreflight(ctx, req.Inputs.Preflight, nil); err != nil {
		return infer.CreateResponse[NameLockState]{}, err
	}
	if req.DryRun {
		// A create's preview checks the hostnames in the Workers' checks.
		return infer.CreateResponse[NameLockState]{ID: id, Output: state}, nil
	}
	if err := checkHostnames(ctx, req.Inputs.Hostnames); err != nil {
		return infer.CreateResponse[NameLockState]{}, err
	}
	var err error
	if state.InstallationID, err = NewInstallationID(); err != nil {
		return infer.CreateResponse[NameLockState]{}, err
	}
	return infer.CreateResponse[NameLockState]{ID: id, Output: state}, nil
}

// Diff refuses every change of the names. A lock recorded before identities
// existed gets its identity through an update, and changed hostnames are
// checked through one.
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
	diff := infer.DiffResponse{HasChanges: req.State.InstallationID == ""}
	if !slices.Equal(old.Hostnames, now.Hostnames) {
		diff.HasChanges = true
		diff.DetailedDiff = map[string]p.PropertyDiff{"hostnames": {Kind: p.Update, InputDiff: true}}
	}
	// A lock recorded before the preflight existed keeps its state until
	// something else changes: an unchanged installation's preview stays
	// free of calls after an upgrade of the plugin.
	if old.Preflight != nil && !preflightEqual(old.Preflight, now.Preflight) {
		diff.HasChanges = true
		if diff.DetailedDiff == nil {
			diff.DetailedDiff = map[string]p.PropertyDiff{}
		}
		diff.DetailedDiff["preflight"] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
	}
	return diff, nil
}

// Update generates the identity of a lock without one and checks the
// hostnames it did not hold before.
func (*NameLock) Update(ctx context.Context, req infer.UpdateRequest[NameLockArgs, NameLockState]) (infer.UpdateResponse[NameLockState], error) {
	state := req.State
	state.NameLockArgs = req.Inputs
	if err := runPreflight(ctx, req.Inputs.Preflight, req.State.Preflight); err != nil {
		return infer.UpdateResponse[NameLockState]{}, err
	}
	if req.DryRun {
		return infer.UpdateResponse[NameLockState]{Output: state}, nil
	}
	var added []HostnameInZone
	for _, h := range req.Inputs.Hostnames {
		if !slices.Contains(req.State.Hostnames, h) {
			added = append(added, h)
		}
	}
	if err := checkHostnames(ctx, added); err != nil {
		return infer.UpdateResponse[NameLockState]{}, err
	}
	if state.InstallationID == "" {
		var err error
		if state.InstallationID, err = NewInstallationID(); err != nil {
			return infer.UpdateResponse[NameLockState]{}, err
		}
	}
	return infer.UpdateResponse[NameLockState]{Output: state}, nil
}
