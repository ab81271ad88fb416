package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
	"github.com/openinspect/pulumi-openinspect/provider/internal/sandbox/builder"
	"github.com/openinspect/pulumi-openinspect/provider/internal/sandbox/opencomputerapi"
)

// OpenComputerSnapshot is an installation's OpenComputer base snapshot,
// built by upstream's own builder (packages/opencomputer-infra/src/
// build-template.ts, bundled by its package's build script and run with
// Node and the SDK) under a name made from a digest of everything that
// build reads.
type OpenComputerSnapshot struct {
	// Now is the clock superseded snapshots' grace periods are measured
	// with; nil means time.Now.
	Now func() time.Time
	// Timeout bounds each builder step (default builder.DefaultTimeout).
	Timeout time.Duration
}

// OpenComputerSnapshotToken is the OpenComputerSnapshot resource's type token.
const OpenComputerSnapshotToken = "openinspect:index:OpenComputerSnapshot"

// Where the build reads, relative to a checkout root.
const (
	ocBuilderDir = "packages/opencomputer-infra"
	ocBuilder    = "src/build-template.ts"
	ocRuntimeDir = "packages/sandbox-runtime"
)

// OpenComputerPins are the packages upstream's builder is bundled and run
// with. Upstream locks @opencomputer/sdk 0.9.1, which the npm registry no
// longer serves; 0.12.4 is, and its Snapshots, Image and SSE code is 0.9.1's
// (diffed), but ^0.9.1 does not admit it, so it is pinned here explicitly.
// esbuild is the lowest version upstream's ^0.28.1 admits.
var OpenComputerPins = []string{"@opencomputer/sdk@0.12.4", "esbuild@0.28.1"}

// defaultOCBuilderMemoryMB is upstream's builder's default
// (OPENCOMPUTER_BUILDER_MEMORY_MB).
const defaultOCBuilderMemoryMB = 8192

// OpenComputerSnapshotArgs are the inputs of an OpenComputerSnapshot.
type OpenComputerSnapshotArgs struct {
	Source             string  `pulumi:"source"`
	NamePrefix         string  `pulumi:"namePrefix"`
	APIURL             string  `pulumi:"apiUrl"`
	APIKey             string  `pulumi:"apiKey" provider:"secret"`
	Template           *string `pulumi:"template,optional"`
	BuilderMemoryMB    *int    `pulumi:"builderMemoryMb,optional"`
	GracePeriodSeconds *int    `pulumi:"gracePeriodSeconds,optional"`
	KeepOnDelete       bool    `pulumi:"keepOnDelete,optional"`
}

// OpenComputerSnapshotState is what the provider records.
type OpenComputerSnapshotState struct {
	OpenComputerSnapshotArgs
	// Name is the snapshot sessions boot from: <namePrefix>-<first 16 of
	// digest> (upstream: openinspect-runtime-<16 of its source hash>), or
	// template when given.
	Name        string               `pulumi:"name"`
	Digest      string               `pulumi:"digest"`
	SnapshotID  string               `pulumi:"snapshotId"`
	ContentHash string               `pulumi:"contentHash"`
	Status      string               `pulumi:"status"`
	Built       bool                 `pulumi:"built"`
	Superseded  []SupersededSnapshot `pulumi:"superseded,optional"`
}

var (
	_ infer.ExplicitDependencies[OpenComputerSnapshotArgs, OpenComputerSnapshotState] = (*OpenComputerSnapshot)(nil)
	_ infer.CustomCheck[OpenComputerSnapshotArgs]                                     = (*OpenComputerSnapshot)(nil)
	_ infer.CustomDiff[OpenComputerSnapshotArgs, OpenComputerSnapshotState]           = (*OpenComputerSnapshot)(nil)
	_ infer.CustomUpdate[OpenComputerSnapshotArgs, OpenComputerSnapshotState]         = (*OpenComputerSnapshot)(nil)
	_ infer.CustomRead[OpenComputerSnapshotArgs, OpenComputerSnapshotState]           = (*OpenComputerSnapshot)(nil)
	_ infer.CustomDelete[OpenComputerSnapshotState]                                   = (*OpenComputerSnapshot)(nil)
)

// Annotate documents the resource.
func (o *OpenComputerSnapshot) Annotate(a infer.Annotator) {
	a.Describe(o, "An installation's OpenComputer base snapshot, built by upstream's own builder ("+ocBuilderDir+"/"+ocBuilder+
		", bundled by its package's build script with esbuild and run with Node and @opencomputer/sdk "+
		strings.TrimPrefix(OpenComputerPins[0], "@opencomputer/sdk@")+", in a cached environment) from the checkout. It is named "+
		"<namePrefix>-<digest of everything the build reads>, so a changed builder or runtime builds a new snapshot first "+
		"and the old one keeps serving until its grace period ends; a later up deletes it. The build log is reported as "+
		"progress; a failed build fails with the builder's own message and the next up retries it. With template "+
		"nothing is built.\n\nOn delete, the snapshots this resource built are deleted; another installation's are never "+
		"touched (snapshot names are unique per OpenComputer org, and an installation's names carry its prefix).")
}

// Annotate documents the inputs.
func (a *OpenComputerSnapshotArgs) Annotate(an infer.Annotator) {
	an.Describe(&a.Source, "An Open-Inspect checkout root holding "+ocBuilderDir+" and the sandbox runtime.")
	an.Describe(&a.NamePrefix, "The first part of every snapshot name, unique to the installation (lowercase letters, digits, '-').")
	an.Describe(&a.APIURL, "OpenComputer REST API URL, ending in /api (upstream's opencomputer_api_url).")
	an.Describe(&a.APIKey, "OpenComputer API key.")
	an.Describe(&a.Template, "Use this existing snapshot and build nothing (upstream's opencomputer_template).")
	an.Describe(&a.BuilderMemoryMB, "Memory of the build's builder VM in MB (default 8192).")
	an.Describe(&a.GracePeriodSeconds, "How long a superseded snapshot is kept before a later up deletes it (default 86400, a day).")
	an.Describe(&a.KeepOnDelete, "Keep the snapshots on delete (the installation's Orphan policy) and say what was kept.")
}

// Annotate documents the outputs.
func (s *OpenComputerSnapshotState) Annotate(a infer.Annotator) {
	a.Describe(&s.Name, "The snapshot's name (the control plane's OPENCOMPUTER_TEMPLATE).")
	a.Describe(&s.Digest, "SHA-256 of the builder, its pinned packages, the runtime and the builder memory; empty with template.")
	a.Describe(&s.SnapshotID, "OpenComputer's ID of the snapshot.")
	a.Describe(&s.ContentHash, "The image's content hash (the SDK's cache key) as OpenComputer records it.")
	a.Describe(&s.Status, "The snapshot's status as last seen (ready once built).")
	a.Describe(&s.Built, "Whether this resource built the snapshot (false with template).")
	a.Describe(&s.Superseded, "Replaced snapshots still kept.")
}

// WireDependencies makes the name and digest known in a preview: both come
// from local files.
func (*OpenComputerSnapshot) WireDependencies(f infer.FieldSelector, args *OpenComputerSnapshotArgs, state *OpenComputerSnapshotState) {
	f.OutputField(&state.Name).AlwaysKnown()
	f.OutputField(&state.Digest).AlwaysKnown()
	f.OutputField(state).DependsOn(f.InputField(args))
}

var ocPrefixPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,70}$`)

// Check validates the inputs before any remote call.
func (*OpenComputerSnapshot) Check(ctx context.Context, req infer.CheckRequest) (infer.CheckResponse[OpenComputerSnapshotArgs], error) {
	args, failures, err := infer.DefaultCheck[OpenComputerSnapshotArgs](ctx, req.NewInputs)
	if err != nil {
		return infer.CheckResponse[OpenComputerSnapshotArgs]{}, err
	}
	bad := func(property, format string, a ...any) {
		failures = append(failures, p.CheckFailure{Property: property, Reason: fmt.Sprintf(format, a...)})
	}
	if family.Deref(args.Template, "") == "" && !family.IsUnknown(req.NewInputs, "source") && !family.IsUnknown(req.NewInputs, "template") {
		if _, err := ocBuilderRoot(args.Source); err != nil {
			bad("source", "%v", err)
		}
	}
	if !family.IsUnknown(req.NewInputs, "namePrefix") && !ocPrefixPattern.MatchString(args.NamePrefix) {
		bad("namePrefix", "%q: use lowercase letters, digits and '-' (at most 71), starting with a letter or digit", args.NamePrefix)
	}
	if !family.IsUnknown(req.NewInputs, "apiKey") && strings.TrimSpace(args.APIKey) == "" {
		bad("apiKey", "required: an OpenComputer API key")
	}
	if !family.IsUnknown(req.NewInputs, "apiUrl") {
		if err := opencomputerapi.CheckAPIURL(args.APIURL); err != nil {
			bad("apiUrl", "%v", err)
		}
	}
	if m := args.BuilderMemoryMB; m != nil && *m < 1024 {
		bad("builderMemoryMb", "must be at least 1024, got %d", *m)
	}
	if g := args.GracePeriodSeconds; g != nil && *g < 0 {
		bad("gracePeriodSeconds", "must be 0 or more, got %d", *g)
	}
	// A field computed at a preview decodes as its zero value: not a problem yet.
	return infer.CheckResponse[OpenComputerSnapshotArgs]{Inputs: args, Failures: family.KnownFailures(req.NewInputs, failures)}, nil
}

// ocBuilderRoot is the checkout root holding the builder and the runtime.
func ocBuilderRoot(source string) (string, error) {
	if source == "" {
		return "", errors.New("required: an Open-Inspect checkout")
	}
	root, err := builder.CheckoutRoot(source)
	if err != nil {
		return "", err
	}
	for _, f := range []string{ocBuilderDir + "/package.json", ocBuilderDir + "/" + ocBuilder, ocRuntimeDir + "/src/sandbox_runtime"} {
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(f))); err != nil {
			return "", fmt.Errorf("%s is missing: the OpenComputer build reads upstream's %s", filepath.Join(root, filepath.FromSlash(f)), f)
		}
	}
	return root, nil
}

// ocDigestPatterns are the files the build reads, as upstream's Terraform
// hashes them for its snapshot name (the runtime's sources and project
// file, the builder and its package manifest; the root lockfile is
// replaced here by OpenComputerPins, which the digest covers).
var ocDigestPatterns = []string{
	ocRuntimeDir + "/src/**", ocRuntimeDir + "/pyproject.toml",
	ocBuilderDir + "/src/**", ocBuilderDir + "/package.json",
}

// ocPlan is what a build would make.
type ocPlan struct {
	root, name, digest string
	memoryMB           int
	override           bool
}

func planOCSnapshot(args OpenComputerSnapshotArgs) (ocPlan, error) {
	pl := ocPlan{memoryMB: family.Deref(args.BuilderMemoryMB, defaultOCBuilderMemoryMB)}
	if t := family.Deref(args.Template, ""); t != "" {
		pl.name, pl.override = t, true
		return pl, nil
	}
	root, err := ocBuilderRoot(args.Source)
	if err != nil {
		return pl, fmt.Errorf("source: %w", err)
	}
	files, err := builder.SourceDigest(root, ocDigestPatterns)
	if err != nil {
		return pl, fmt.Errorf("source: %w", err)
	}
	sum := sha256.Sum256([]byte(fmt.Sprintf("files %s\x00pins %s\x00memory %d", files, strings.Join(OpenComputerPins, " "), pl.memoryMB)))
	pl.root, pl.digest = root, hex.EncodeToString(sum[:])
	pl.name = args.NamePrefix + "-" + pl.digest[:16]
	return pl, nil
}

func (o *OpenComputerSnapshot) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

const ocReady = "ready"

var ocKind = imageKind{Label: "opencomputer snapshot", Ready: ocReady, OverrideKey: "template"}

func (s *OpenComputerSnapshotState) record() imageRecord {
	return imageRecord{Name: &s.Name, Digest: &s.Digest, Status: &s.Status, Built: &s.Built, Superseded: &s.Superseded}
}

// Diff decides from state and local files alone (no OpenComputer call).
func (o *OpenComputerSnapshot) Diff(ctx context.Context, req infer.DiffRequest[OpenComputerSnapshotArgs, OpenComputerSnapshotState]) (infer.DiffResponse, error) {
	olds, news := req.State, req.Inputs
	plan, err := planOCSnapshot(news)
	if err != nil {
		return infer.DiffResponse{}, err
	}
	return ocKind.diff(ctx, imageDiff{Name: plan.name, Digest: plan.digest, Override: plan.override,
		OverrideChanged: plan.name != olds.Name, OldName: olds.Name, OldDigest: olds.Digest, OldStatus: olds.Status,
		Superseded: olds.Superseded, Now: o.now(), Grace: graceOf(news.GracePeriodSeconds),
		Changed: map[string]bool{
			"source":             olds.Source != news.Source,
			"apiUrl":             olds.APIURL != news.APIURL,
			"apiKey":             olds.APIKey != news.APIKey,
			"gracePeriodSeconds": family.Deref(olds.GracePeriodSeconds, -1) != family.Deref(news.GracePeriodSeconds, -1),
			"keepOnDelete":       olds.KeepOnDelete != news.KeepOnDelete,
			"namePrefix":         olds.NamePrefix != news.NamePrefix,
		}}), nil
}

// Create builds the snapshot (or takes the override). In a preview it only
// names it.
func (o *OpenComputerSnapshot) Create(ctx context.Context, req infer.CreateRequest[OpenComputerSnapshotArgs]) (infer.CreateResponse[OpenComputerSnapshotState], error) {
	override := family.Deref(req.Inputs.Template, "")
	if req.DryRun && override == "" && (req.Inputs.Source == "" || req.Inputs.NamePrefix == "") {
		return infer.CreateResponse[OpenComputerSnapshotState]{Output: OpenComputerSnapshotState{OpenComputerSnapshotArgs: req.Inputs}}, nil
	}
	plan, err := planOCSnapshot(req.Inputs)
	if err != nil {
		return infer.CreateResponse[OpenComputerSnapshotState]{}, err
	}
	state := OpenComputerSnapshotState{OpenComputerSnapshotArgs: req.Inputs, Name: plan.name, Digest: plan.digest}
	if req.DryRun {
		return infer.CreateResponse[OpenComputerSnapshotState]{ID: plan.name, Output: state}, nil
	}
	if err := o.ensure(ctx, plan, &state); err != nil {
		// Record what exists so the next up retries rather than finding a stranger.
		return infer.CreateResponse[OpenComputerSnapshotState]{ID: plan.name, Output: state},
			initFailed(err)
	}
	return infer.CreateResponse[OpenComputerSnapshotState]{ID: plan.name, Output: state}, nil
}

// ensure makes plan's snapshot exist: the override is looked up; a ready
// snapshot under the digest name (built by an up whose state was lost) is
// taken; anything else is built by the builder.
func (o *OpenComputerSnapshot) ensure(ctx context.Context, plan ocPlan, state *OpenComputerSnapshotState) error {
	client, err := opencomputerapi.New(state.APIURL, state.APIKey)
	if err != nil {
		return err
	}
	snap, found, err := client.Snapshot(ctx, plan.name)
	if err != nil {
		return err
	}
	if plan.override {
		if !found {
			return fmt.Errorf("template: OpenComputer has no snapshot %q", plan.name)
		}
		state.SnapshotID, state.ContentHash, state.Status, state.Built = snap.ID, snap.ContentHash, snap.Status, false
		return nil
	}
	state.Built = true
	if !found || snap.Status != ocReady {
		if found {
			// A failed build under this name: OpenComputer keeps it, the retry replaces it.
			if err := client.DeleteSnapshot(ctx, plan.name); err != nil {
				return err
			}
		}
		state.Status = "building"
		if err := o.runBuilder(ctx, plan, state); err != nil {
			state.Status = "failed"
			return err
		}
		if snap, found, err = client.Snapshot(ctx, plan.name); err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("opencomputer snapshot %q does not exist after build-template succeeded", plan.name)
		}
	}
	state.SnapshotID, state.ContentHash, state.Status = snap.ID, snap.ContentHash, snap.Status
	if snap.Status != ocReady {
		return fmt.Errorf("opencomputer snapshot %q is %s after build-template succeeded", plan.name, snap.Status)
	}
	p.GetLogger(ctx).Infof("opencomputer snapshot %s is ready (%s)", plan.name, snap.ID)
	return nil
}

// runBuilder bundles and runs upstream's build-template.ts as its
// Terraform does: from the checkout root, with the API, key, name and
// builder memory in its environment.
func (o *OpenComputerSnapshot) runBuilder(ctx context.Context, plan ocPlan, state *OpenComputerSnapshotState) error {
	r, err := newRunner(ctx, "opencomputer", "node-builders", state.APIKey, o.Timeout)
	if err != nil {
		return err
	}
	env, err := r.NodeEnvironment(ctx, "", OpenComputerPins)
	if err != nil {
		return err
	}
	p.GetLogger(ctx).InfoStatusf("opencomputer: building snapshot %s", plan.name)
	return r.RunNodeBuilder(ctx, env, builder.NodeBuilder{Name: "node build-template", Script: "build",
		Dir: filepath.Join(plan.root, filepath.FromSlash(ocBuilderDir)), Root: plan.root,
		Env: []string{
			"OPENCOMPUTER_API_URL=" + state.APIURL,
			"OPENCOMPUTER_API_KEY=" + state.APIKey,
			"OPENCOMPUTER_TEMPLATE=" + plan.name,
			"OPENCOMPUTER_BUILDER_MEMORY_MB=" + strconv.Itoa(plan.memoryMB),
			"OPENINSPECT_REPO_ROOT=" + plan.root,
		}})
}

// Update builds the new snapshot when the digest moved (or the last build
// did not finish), retiring the old one only once the new one is ready,
// then deletes what outlived its grace period.
func (o *OpenComputerSnapshot) Update(ctx context.Context, req infer.UpdateRequest[OpenComputerSnapshotArgs, OpenComputerSnapshotState]) (infer.UpdateResponse[OpenComputerSnapshotState], error) {
	plan, err := planOCSnapshot(req.Inputs)
	if err != nil {
		return infer.UpdateResponse[OpenComputerSnapshotState]{}, err
	}
	state := req.State
	state.OpenComputerSnapshotArgs = req.Inputs
	if req.DryRun {
		state.Name, state.Digest = plan.name, plan.digest
		return infer.UpdateResponse[OpenComputerSnapshotState]{Output: state}, nil
	}
	if plan.name != state.Name || state.Status != ocReady {
		err := ocKind.replace(state.record(), plan.name, plan.digest, o.now(), func() error {
			state.SnapshotID, state.ContentHash = "", ""
			return o.ensure(ctx, plan, &state)
		})
		if err != nil {
			return infer.UpdateResponse[OpenComputerSnapshotState]{Output: state}, initFailed(err)
		}
	}
	client, err := opencomputerapi.New(state.APIURL, state.APIKey)
	if err != nil {
		return infer.UpdateResponse[OpenComputerSnapshotState]{Output: state}, err
	}
	err = ocKind.collect(ctx, state.record(), o.now(), graceOf(req.Inputs.GracePeriodSeconds),
		func(name string) error { return client.DeleteSnapshot(ctx, name) })
	return infer.UpdateResponse[OpenComputerSnapshotState]{Output: state}, err
}

// Read refreshes the snapshot's status and forgets superseded ones deleted
// elsewhere; a missing snapshot is rebuilt by the next up.
func (*OpenComputerSnapshot) Read(ctx context.Context, req infer.ReadRequest[OpenComputerSnapshotArgs, OpenComputerSnapshotState]) (infer.ReadResponse[OpenComputerSnapshotArgs, OpenComputerSnapshotState], error) {
	state := req.State
	client, err := opencomputerapi.New(state.APIURL, state.APIKey)
	if err != nil {
		return infer.ReadResponse[OpenComputerSnapshotArgs, OpenComputerSnapshotState]{}, err
	}
	list, err := client.Snapshots(ctx)
	if err != nil {
		return infer.ReadResponse[OpenComputerSnapshotArgs, OpenComputerSnapshotState]{}, err
	}
	byName := map[string]opencomputerapi.Snapshot{}
	for _, s := range list {
		byName[s.Name] = s
	}
	if s, found := byName[state.Name]; found {
		state.SnapshotID, state.ContentHash, state.Status = s.ID, s.ContentHash, s.Status
	} else {
		state.SnapshotID, state.Status = "", "missing"
	}
	state.Superseded = slices.DeleteFunc(slices.Clone(state.Superseded), func(s SupersededSnapshot) bool { _, found := byName[s.Name]; return !found })
	return infer.ReadResponse[OpenComputerSnapshotArgs, OpenComputerSnapshotState]{ID: req.ID, Inputs: req.Inputs, State: state}, nil
}

// Delete deletes the snapshots this resource built (never an override), or
// says what it keeps. Sandboxes are not enumerated: OpenComputer lists only
// running ones, and they stop with their sessions.
func (*OpenComputerSnapshot) Delete(ctx context.Context, req infer.DeleteRequest[OpenComputerSnapshotState]) (infer.DeleteResponse, error) {
	state := req.State
	names := state.record().owned()
	log := p.GetLogger(ctx)
	if len(names) == 0 {
		return infer.DeleteResponse{}, nil
	}
	if state.KeepOnDelete {
		log.Warningf("opencomputer snapshots %s kept (deletion policy Orphan)", strings.Join(names, ", "))
		return infer.DeleteResponse{}, nil
	}
	client, err := opencomputerapi.New(state.APIURL, state.APIKey)
	if err != nil {
		return infer.DeleteResponse{}, err
	}
	for _, name := range names {
		log.InfoStatusf("opencomputer: deleting snapshot %s", name)
		if err := client.DeleteSnapshot(ctx, name); err != nil {
			return infer.DeleteResponse{}, err
		}
	}
	log.Infof("opencomputer: %d snapshots deleted", len(names))
	return infer.DeleteResponse{}, nil
}
