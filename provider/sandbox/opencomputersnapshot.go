package sandbox

import (
	"context"
	"fmt"
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
	image[OpenComputerSnapshotArgs, OpenComputerSnapshotState, ocPlan, ocImages]
}

// ocImages is OpenComputerSnapshot's backend of the shared image lifecycle.
type ocImages struct{}

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
	ImageInputs
	APIURL          string  `pulumi:"apiUrl"`
	APIKey          string  `pulumi:"apiKey" provider:"secret"`
	Template        *string `pulumi:"template,optional"`
	BuilderMemoryMB *int    `pulumi:"builderMemoryMb,optional"`
	D1DatabaseID    string  `pulumi:"d1DatabaseId,optional"`
}

// OpenComputerSnapshotState is what the provider records.
type OpenComputerSnapshotState struct {
	OpenComputerSnapshotArgs
	// ImageOutputs' Name is the snapshot sessions boot from:
	// <namePrefix>-<first 16 of digest> (upstream: openinspect-runtime-<16
	// of its source hash>), or template when given.
	ImageOutputs
	SnapshotID  string `pulumi:"snapshotId"`
	ContentHash string `pulumi:"contentHash"`
	Status      string `pulumi:"status"`
	Built       bool   `pulumi:"built"`
}

// Annotate documents the resource.
func (o *OpenComputerSnapshot) Annotate(a infer.Annotator) {
	a.Describe(o, "An installation's OpenComputer base snapshot, built by upstream's own builder ("+ocBuilderDir+"/"+ocBuilder+
		", bundled by its package's build script with esbuild and run with Node and @opencomputer/sdk "+
		strings.TrimPrefix(OpenComputerPins[0], "@opencomputer/sdk@")+", in a cached environment) from the checkout. It is named "+
		"<namePrefix>-<digest of everything the build reads>, so a changed builder or runtime builds a new snapshot first "+
		"and the old one keeps serving until its grace period ends; a later up deletes it. The build log is reported as "+
		"progress; a failed build fails with the builder's own message and the next up retries it. With template "+
		"nothing is built.\n\nOn delete, the running sandboxes of the sessions the installation's D1 records and of the "+
		"snapshots this resource built are deleted, then those snapshots; another installation's are never touched "+
		"(snapshot names are unique per OpenComputer org, and an installation's names carry its prefix). OpenComputer "+
		"lists no hibernated sandbox, so one of those outlives the delete.")
}

// Annotate documents the inputs.
func (a *OpenComputerSnapshotArgs) Annotate(an infer.Annotator) {
	a.ImageInputs.describe(an, "snapshot", imageDocs{
		source:       "An Open-Inspect checkout root holding " + ocBuilderDir + " and the sandbox runtime.",
		namePrefix:   "The first part of every snapshot name, unique to the installation (lowercase letters, digits, '-').",
		keepOnDelete: "Keep the snapshots on delete (the installation's Orphan policy) and say what was kept."})
	an.Describe(&a.APIURL, "OpenComputer REST API URL, ending in /api (upstream's opencomputer_api_url).")
	an.Describe(&a.APIKey, "OpenComputer API key.")
	an.Describe(&a.Template, "Use this existing snapshot and build nothing (upstream's opencomputer_template).")
	an.Describe(&a.BuilderMemoryMB, "Memory of the build's builder VM in MB (default 8192).")
	an.Describe(&a.D1DatabaseID, "The installation's D1 database, whose sessions' running sandboxes (found by their "+sessionLabel+
		" metadata) are deleted on delete.")
}

// Annotate documents the outputs.
func (s *OpenComputerSnapshotState) Annotate(a infer.Annotator) {
	s.ImageOutputs.describe(a, imageDocs{name: "The snapshot's name (the control plane's OPENCOMPUTER_TEMPLATE).",
		digest:     "SHA-256 of the builder, its pinned packages, the runtime and the builder memory; empty with template.",
		superseded: "Replaced snapshots still kept."})
	a.Describe(&s.SnapshotID, "OpenComputer's ID of the snapshot.")
	a.Describe(&s.ContentHash, "The image's content hash (the SDK's cache key) as OpenComputer records it.")
	a.Describe(&s.Status, "The snapshot's status as last seen (ready once built).")
	a.Describe(&s.Built, "Whether this resource built the snapshot (false with template).")
}

var ocPrefixPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,70}$`)

const ocReady = "ready"

func (ocImages) kind() imageKind {
	return imageKind{Label: "opencomputer snapshot", Ready: ocReady, OverrideKey: "template", Root: ocBuilderRoot, Prefix: ocPrefixPattern,
		PrefixRule: "lowercase letters, digits and '-' (at most 71), starting with a letter or digit"}
}

func (ocImages) override(in OpenComputerSnapshotArgs) string { return family.Deref(in.Template, "") }

func (ocImages) check(args OpenComputerSnapshotArgs, known func(string) bool, bad badFunc) {
	if known("apiKey") && strings.TrimSpace(args.APIKey) == "" {
		bad("apiKey", "required: an OpenComputer API key")
	}
	if known("apiUrl") {
		if err := opencomputerapi.CheckAPIURL(args.APIURL); err != nil {
			bad("apiUrl", "%v", err)
		}
	}
	if m := args.BuilderMemoryMB; m != nil && *m < 1024 {
		bad("builderMemoryMb", "must be at least 1024, got %d", *m)
	}
}

// ocBuilderRoot is the checkout root holding the builder and the runtime.
func ocBuilderRoot(source string) (string, error) {
	root, err := builderCheckout(source)
	if err != nil {
		return "", err
	}
	return root, requireInCheckout(root, "the OpenComputer build reads upstream's", false,
		ocBuilderDir+"/package.json", ocBuilderDir+"/"+ocBuilder, ocRuntimeDir+"/src/sandbox_runtime")
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
	imagePlan
	memoryMB int
}

func planOCSnapshot(args OpenComputerSnapshotArgs) (ocPlan, error) {
	pl := ocPlan{imagePlan: imagePlan{in: args.ImageInputs}, memoryMB: family.Deref(args.BuilderMemoryMB, defaultOCBuilderMemoryMB)}
	if t := family.Deref(args.Template, ""); t != "" {
		pl.name, pl.override, pl.overrideID = t, true, t
		return pl, nil
	}
	extra := fmt.Sprintf("\x00pins %s\x00memory %d", strings.Join(OpenComputerPins, " "), pl.memoryMB)
	return pl, pl.nameByDigest(ocBuilderRoot, ocDigestPatterns, 16, extra)
}

func (ocImages) plan(_ context.Context, in OpenComputerSnapshotArgs) (ocPlan, error) {
	return planOCSnapshot(in)
}

func (ocImages) changed(olds OpenComputerSnapshotState, news OpenComputerSnapshotArgs) map[string]bool {
	return map[string]bool{"apiUrl": olds.APIURL != news.APIURL, "apiKey": olds.APIKey != news.APIKey,
		"d1DatabaseId": olds.D1DatabaseID != news.D1DatabaseID}
}

func (ocImages) state(old OpenComputerSnapshotState, in OpenComputerSnapshotArgs) OpenComputerSnapshotState {
	old.OpenComputerSnapshotArgs = in
	return old
}

func (ocImages) record(s *OpenComputerSnapshotState) imageRecord {
	return imageRecord{Inputs: &s.ImageInputs, Name: &s.Name, Digest: &s.Digest, Status: &s.Status, Built: &s.Built,
		Superseded: &s.Superseded, Override: &s.Name, Public: []any{&s.SnapshotID, &s.ContentHash, &s.Built}}
}

func (ocImages) deleter(ctx context.Context, s *OpenComputerSnapshotState) (func(string) error, error) {
	client, err := opencomputerapi.New(s.APIURL, s.APIKey)
	if err != nil {
		return nil, err
	}
	return func(name string) error { return client.DeleteSnapshot(ctx, name) }, nil
}

// ensure makes plan's snapshot exist: the override is looked up; a ready
// snapshot under the digest name (built by an up whose state was lost) is
// taken; one still building (a killed up's) is waited for; anything else is
// built by the builder.
func (ocImages) ensure(ctx context.Context, timeout time.Duration, plan ocPlan, state *OpenComputerSnapshotState) error {
	state.SnapshotID, state.ContentHash = "", ""
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
		if err := runOCBuilder(ctx, timeout, plan, state); err != nil {
			if !buildInProgress(err) {
				state.Status = "failed"
				return err
			}
			// A build of this very name is running (a killed up's, whose
			// builder died but whose build OpenComputer goes on with); it
			// builds what this one would, so wait for it.
			if snap, err = waitForOCBuild(ctx, timeout, client, plan.name); err != nil {
				return err
			}
			if snap.Status != ocReady {
				// That build failed: OpenComputer keeps it, the retry replaces it.
				if err := client.DeleteSnapshot(ctx, plan.name); err != nil {
					return err
				}
				if err := runOCBuilder(ctx, timeout, plan, state); err != nil {
					state.Status = "failed"
					return err
				}
			}
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

// buildInProgress reports whether the builder was refused because a
// snapshot of its name exists: OpenComputer answers a snapshot still
// building 404 on read, so a 409 on create is how it shows.
func buildInProgress(err error) bool {
	return strings.Contains(err.Error(), "Failed to create snapshot: 409")
}

// waitForOCBuild waits until the snapshot name is readable (its build
// ended, ready or failed) and returns it.
func waitForOCBuild(ctx context.Context, timeout time.Duration, client *opencomputerapi.Client, name string) (opencomputerapi.Snapshot, error) {
	var snap opencomputerapi.Snapshot
	err := waitForEarlierBuild(ctx, timeout, "opencomputer snapshot "+name, func(ctx context.Context) (bool, error) {
		var found bool
		var err error
		snap, found, err = client.Snapshot(ctx, name)
		return found, err
	})
	return snap, err
}

// runOCBuilder bundles and runs upstream's build-template.ts as its
// Terraform does: from the checkout root, with the API, key, name and
// builder memory in its environment.
func runOCBuilder(ctx context.Context, timeout time.Duration, plan ocPlan, state *OpenComputerSnapshotState) error {
	r, err := newRunner(ctx, "opencomputer", "node-builders", state.APIKey, timeout)
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
	state.Superseded, _ = keepExisting(state.Superseded, func(name string) (bool, error) { _, found := byName[name]; return found, nil })
	return infer.ReadResponse[OpenComputerSnapshotArgs, OpenComputerSnapshotState]{ID: req.ID, Inputs: req.Inputs, State: state}, nil
}

// Delete deletes the running sandboxes of the installation's recorded
// sessions and of the snapshots this resource built, then those snapshots
// (never an override), or says what it keeps. OpenComputer lists only
// running sandboxes (at most 100), so a hibernated one is not found.
func (*OpenComputerSnapshot) Delete(ctx context.Context, req infer.DeleteRequest[OpenComputerSnapshotState]) (infer.DeleteResponse, error) {
	state := req.State
	names := ocImages{}.record(&state).owned()
	log := p.GetLogger(ctx)
	if state.KeepOnDelete {
		log.Warningf("opencomputer snapshots %s and the installation's session sandboxes kept (deletion policy Orphan)", strings.Join(names, ", "))
		return infer.DeleteResponse{}, nil
	}
	sessions, err := recordedSessions(ctx, state.D1DatabaseID)
	if err != nil {
		return infer.DeleteResponse{}, err
	}
	if len(names) == 0 && len(sessions) == 0 {
		return infer.DeleteResponse{}, nil
	}
	client, err := opencomputerapi.New(state.APIURL, state.APIKey)
	if err != nil {
		return infer.DeleteResponse{}, err
	}
	deleted, err := deleteOCSandboxes(ctx, client, names, sessions)
	if err != nil {
		return infer.DeleteResponse{}, err
	}
	for _, name := range names {
		log.InfoStatusf("opencomputer: deleting snapshot %s", name)
		if err := client.DeleteSnapshot(ctx, name); err != nil {
			return infer.DeleteResponse{}, err
		}
	}
	log.Infof("opencomputer: %d sandboxes and %d snapshots deleted", deleted, len(names))
	return infer.DeleteResponse{}, nil
}

// deleteOCSandboxes deletes the running sandboxes started from one of the
// snapshots or tagged with one of the sessions: the snapshot's name (unique
// to the installation) or the session label is what ties a sandbox to it.
func deleteOCSandboxes(ctx context.Context, client *opencomputerapi.Client, snapshots, sessions []string) (int, error) {
	running, err := client.RunningSandboxes(ctx)
	if err != nil {
		return 0, err
	}
	deleted := 0
	for _, sb := range running {
		if !slices.Contains(snapshots, sb.Snapshot) && !slices.Contains(sessions, sb.Metadata[sessionLabel]) {
			continue
		}
		if err := client.DeleteSandbox(ctx, sb.ID); err != nil {
			return deleted, err
		}
		deleted++
	}
	return deleted, nil
}
