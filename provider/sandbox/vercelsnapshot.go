package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
	"github.com/openinspect/pulumi-openinspect/provider/internal/sandbox/builder"
	"github.com/openinspect/pulumi-openinspect/provider/internal/sandbox/vercelapi"
)

// VercelSnapshot is an installation's Vercel Sandbox base snapshot, built
// by upstream's own builder (the control plane's
// scripts/build-vercel-base-snapshot.ts, bundled by its package's
// build:vercel-base-snapshot script and run with Node) from a sandbox named
// after a digest of everything that build reads. Upstream's control plane
// finds the snapshot by that sandbox name (VERCEL_BASE_SNAPSHOT_NAME).
type VercelSnapshot struct {
	// Now is the clock superseded snapshots' grace periods are measured
	// with; nil means time.Now.
	Now func() time.Time
	// Timeout bounds each builder step (default builder.DefaultTimeout).
	Timeout time.Duration
}

// VercelSnapshotToken is the VercelSnapshot resource's type token.
const VercelSnapshotToken = "openinspect:index:VercelSnapshot"

// Where the build reads, relative to a checkout root.
const (
	vercelPackage = "packages/control-plane"
	vercelScript  = "build:vercel-base-snapshot"
	vercelBuilder = vercelPackage + "/scripts/build-vercel-base-snapshot.ts"
	// vercelBundle is what the package's script writes: present in a built
	// checkout (and in the release set, built at the pin), it is run as is.
	vercelBundle  = vercelPackage + "/dist/vercel-base-snapshot.js"
	vercelRuntime = "packages/sandbox-runtime"
	// VercelProviderDir holds the client and bootstrap the builder drives.
	VercelProviderDir = vercelPackage + "/src/sandbox/providers/vercel"
	// VercelManifest is the package manifest holding the bundling script.
	VercelManifest = vercelPackage + "/package.json"
	// VercelBuildScript is that script's name.
	VercelBuildScript = vercelScript
)

// VercelBuildStep is the release's build of the bundle, upstream's own
// script, run at the checkout root after the workers' build.
var VercelBuildStep = []string{"npm", "run", vercelScript, "--workspace", vercelPackage}

// VercelReleaseFiles are the single files of the control plane package the
// release set carries beside VercelProviderDir: the builder, its bundle
// (when the release built one) and the manifest, so that an installation
// on Vercel needs no checkout.
var VercelReleaseFiles = []string{vercelBuilder, vercelBundle, VercelManifest}

// VercelPins are the packages upstream's builder is bundled with when the
// checkout holds no bundle and no installed node_modules: esbuild and zod
// (the control plane's client validates answers with it), each the lowest
// version upstream's range (^0.28.1, ^4.4.3) admits.
var VercelPins = []string{"esbuild@0.28.1", "zod@4.4.3"}

// defaultVercelRuntime is upstream's DEFAULT_VERCEL_RUNTIME and the
// contract's vercelSandboxRuntime default.
const defaultVercelRuntime = "node24"

// VercelSnapshotArgs are the inputs of a VercelSnapshot.
type VercelSnapshotArgs struct {
	Source             string  `pulumi:"source"`
	NamePrefix         string  `pulumi:"namePrefix"`
	APIURL             string  `pulumi:"apiUrl,optional"`
	Token              string  `pulumi:"token" provider:"secret"`
	ProjectID          string  `pulumi:"projectId"`
	TeamID             string  `pulumi:"teamId,optional"`
	Runtime            *string `pulumi:"runtime,optional"`
	SnapshotID         *string `pulumi:"snapshotId,optional"`
	GracePeriodSeconds *int    `pulumi:"gracePeriodSeconds,optional"`
	D1DatabaseID       string  `pulumi:"d1DatabaseId,optional"`
	KeepOnDelete       bool    `pulumi:"keepOnDelete,optional"`
}

// VercelSnapshotState is what the provider records.
type VercelSnapshotState struct {
	VercelSnapshotArgs
	// Name is the build sandbox's name, which names the snapshot for the
	// control plane: <namePrefix>-<first 16 of digest> (upstream:
	// openinspect-base-<16 of its source hash>); empty with snapshotId.
	Name             string               `pulumi:"name"`
	Digest           string               `pulumi:"digest"`
	VercelSnapshotID string               `pulumi:"vercelSnapshotId"`
	Status           string               `pulumi:"status"`
	Built            bool                 `pulumi:"built"`
	Superseded       []SupersededSnapshot `pulumi:"superseded,optional"`
}

var (
	_ infer.ExplicitDependencies[VercelSnapshotArgs, VercelSnapshotState] = (*VercelSnapshot)(nil)
	_ infer.CustomCheck[VercelSnapshotArgs]                               = (*VercelSnapshot)(nil)
	_ infer.CustomDiff[VercelSnapshotArgs, VercelSnapshotState]           = (*VercelSnapshot)(nil)
	_ infer.CustomUpdate[VercelSnapshotArgs, VercelSnapshotState]         = (*VercelSnapshot)(nil)
	_ infer.CustomRead[VercelSnapshotArgs, VercelSnapshotState]           = (*VercelSnapshot)(nil)
	_ infer.CustomDelete[VercelSnapshotState]                             = (*VercelSnapshot)(nil)
)

// Annotate documents the resource.
func (v *VercelSnapshot) Annotate(a infer.Annotator) {
	a.Describe(v, "An installation's Vercel Sandbox base snapshot, built by upstream's own builder ("+vercelBuilder+
		", run with Node: its built bundle "+vercelBundle+" when the checkout has one, else bundled by the package's "+
		vercelScript+" script in a cached environment) from a sandbox named <namePrefix>-<digest of everything the build "+
		"reads>, the name the control plane finds the snapshot by. A changed builder or runtime builds a new snapshot "+
		"first and the old one keeps serving until its grace period ends; a later up deletes it. The build log is "+
		"reported as progress; a failed build fails with the builder's own message and the next up retries it. With "+
		"snapshotId nothing is built.\n\nOn delete, the sandboxes of the sessions its D1 database records (by their "+
		sessionLabel+" tag), the snapshots taken from this resource's build sandboxes and those sandboxes are deleted, "+
		"in its project only; another installation's are never touched.")
}

// Annotate documents the inputs.
func (a *VercelSnapshotArgs) Annotate(an infer.Annotator) {
	an.Describe(&a.Source, "An Open-Inspect checkout root holding "+vercelPackage+" and the sandbox runtime.")
	an.Describe(&a.NamePrefix, "The first part of every build sandbox's name, unique to the installation (lowercase letters, digits, '-').")
	an.Describe(&a.APIURL, "Vercel Sandbox API base URL (default "+vercelapi.DefaultAPIURL+").")
	an.Describe(&a.Token, "Vercel token for the Sandbox API.")
	an.Describe(&a.ProjectID, "The Vercel project every Sandbox API call is scoped by.")
	an.Describe(&a.TeamID, "The Vercel team, when the project belongs to one.")
	an.Describe(&a.Runtime, "The build sandbox's runtime (default node24).")
	an.Describe(&a.SnapshotID, "Use this existing snapshot and build nothing (upstream's vercel_base_snapshot_id).")
	an.Describe(&a.GracePeriodSeconds, "How long a superseded snapshot is kept before a later up deletes it (default 86400, a day).")
	an.Describe(&a.D1DatabaseID, "The installation's D1 database, whose sessions' sandboxes (found by their "+sessionLabel+" tag) are deleted on delete.")
	an.Describe(&a.KeepOnDelete, "Keep the snapshots and sandboxes on delete (the installation's Orphan policy) and say what was kept.")
}

// Annotate documents the outputs.
func (s *VercelSnapshotState) Annotate(a infer.Annotator) {
	a.Describe(&s.Name, "The build sandbox's name (the control plane's VERCEL_BASE_SNAPSHOT_NAME); empty with snapshotId.")
	a.Describe(&s.Digest, "SHA-256 of the builder, its client, the bundle if any, the pins, the runtime and the sandbox runtime; empty with snapshotId.")
	a.Describe(&s.VercelSnapshotID, "Vercel's ID of the snapshot.")
	a.Describe(&s.Status, "The snapshot's status as last seen (created once built).")
	a.Describe(&s.Built, "Whether this resource built the snapshot (false with snapshotId).")
	a.Describe(&s.Superseded, "Replaced build sandboxes whose snapshots are still kept.")
}

// WireDependencies makes the name and digest known in a preview.
func (*VercelSnapshot) WireDependencies(f infer.FieldSelector, args *VercelSnapshotArgs, state *VercelSnapshotState) {
	f.OutputField(&state.Name).AlwaysKnown()
	f.OutputField(&state.Digest).AlwaysKnown()
	f.OutputField(state).DependsOn(f.InputField(args))
}

// Build sandbox names: upstream's normalisation keeps lowercase letters,
// digits and '-' and cuts at 96; the digest takes 17.
var vercelPrefixPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,78}$`)

// VercelRuntimes are the Sandbox runtimes Vercel offers.
var VercelRuntimes = []string{"node22", "node24", "python3.13"}

// Check validates the inputs before any remote call.
func (*VercelSnapshot) Check(ctx context.Context, req infer.CheckRequest) (infer.CheckResponse[VercelSnapshotArgs], error) {
	args, failures, err := infer.DefaultCheck[VercelSnapshotArgs](ctx, req.NewInputs)
	if err != nil {
		return infer.CheckResponse[VercelSnapshotArgs]{}, err
	}
	bad := func(property, format string, a ...any) {
		failures = append(failures, p.CheckFailure{Property: property, Reason: fmt.Sprintf(format, a...)})
	}
	if family.Deref(args.SnapshotID, "") == "" && !family.IsUnknown(req.NewInputs, "source") && !family.IsUnknown(req.NewInputs, "snapshotId") {
		if _, err := vercelBuilderRoot(args.Source); err != nil {
			bad("source", "%v", err)
		}
	}
	if !family.IsUnknown(req.NewInputs, "namePrefix") && !vercelPrefixPattern.MatchString(args.NamePrefix) {
		bad("namePrefix", "%q: use lowercase letters, digits and '-' (at most 79), starting with a letter or digit", args.NamePrefix)
	}
	if !family.IsUnknown(req.NewInputs, "token") && strings.TrimSpace(args.Token) == "" {
		bad("token", "required: a Vercel token")
	}
	if !family.IsUnknown(req.NewInputs, "projectId") && strings.TrimSpace(args.ProjectID) == "" {
		bad("projectId", "required: the Vercel project the sandboxes belong to")
	}
	if !family.IsUnknown(req.NewInputs, "apiUrl") && args.APIURL != "" {
		if err := vercelapi.CheckAPIURL(args.APIURL); err != nil {
			bad("apiUrl", "%v", err)
		}
	}
	if r := args.Runtime; r != nil && !slices.Contains(VercelRuntimes, *r) {
		bad("runtime", "%q: one of %s", *r, strings.Join(VercelRuntimes, ", "))
	}
	if g := args.GracePeriodSeconds; g != nil && *g < 0 {
		bad("gracePeriodSeconds", "must be 0 or more, got %d", *g)
	}
	// A field computed at a preview decodes as its zero value: not a problem yet.
	return infer.CheckResponse[VercelSnapshotArgs]{Inputs: args, Failures: family.KnownFailures(req.NewInputs, failures)}, nil
}

// vercelBuilderRoot is the checkout root holding the builder (its sources
// or its bundle) and the runtime.
func vercelBuilderRoot(source string) (string, error) {
	if source == "" {
		return "", errors.New("required: an Open-Inspect checkout")
	}
	root, err := builder.CheckoutRoot(source)
	if err != nil {
		return "", err
	}
	at := func(rel string) string { return filepath.Join(root, filepath.FromSlash(rel)) }
	_, bundleErr := os.Stat(at(vercelBundle))
	_, scriptErr := os.Stat(at(vercelBuilder))
	if bundleErr != nil && scriptErr != nil {
		return "", fmt.Errorf("%s is missing (and no built %s): the Vercel build runs upstream's builder", at(vercelBuilder), vercelBundle)
	}
	for _, rel := range []string{vercelRuntime + "/pyproject.toml", vercelRuntime + "/src"} {
		if _, err := os.Stat(at(rel)); err != nil {
			return "", fmt.Errorf("%s is missing: the Vercel build uploads upstream's %s", at(rel), vercelRuntime)
		}
	}
	return root, nil
}

// vercelDigestPatterns are the files the build reads: those upstream's
// Terraform hashes for the snapshot name (the runtime, the builder script
// and the client it drives), the rest of the control plane's Vercel
// provider directory, the bundle when the checkout has one, and the
// package manifest holding the bundling script.
var vercelDigestPatterns = []string{
	vercelRuntime + "/pyproject.toml", vercelRuntime + "/src/**",
	vercelBuilder, VercelProviderDir + "/**", vercelBundle, VercelManifest,
}

// vercelPlan is what a build would make.
type vercelPlan struct {
	root, name, digest, runtime string
	override                    string
}

func planVercelSnapshot(args VercelSnapshotArgs) (vercelPlan, error) {
	pl := vercelPlan{runtime: family.Deref(args.Runtime, defaultVercelRuntime)}
	if id := family.Deref(args.SnapshotID, ""); id != "" {
		pl.override = id
		return pl, nil
	}
	root, err := vercelBuilderRoot(args.Source)
	if err != nil {
		return pl, fmt.Errorf("source: %w", err)
	}
	files, err := builder.SourceDigest(root, vercelDigestPatterns)
	if err != nil {
		return pl, fmt.Errorf("source: %w", err)
	}
	sum := sha256.Sum256([]byte(fmt.Sprintf("files %s\x00pins %s\x00runtime %s", files, strings.Join(VercelPins, " "), pl.runtime)))
	pl.root, pl.digest = root, hex.EncodeToString(sum[:])
	pl.name = args.NamePrefix + "-" + pl.digest[:16]
	return pl, nil
}

func (v *VercelSnapshot) now() time.Time {
	if v.Now != nil {
		return v.Now()
	}
	return time.Now()
}

const vercelCreated = "created"

var vercelKind = imageKind{Label: "vercel snapshot", Ready: vercelCreated, OverrideKey: "snapshotId"}

func (s *VercelSnapshotState) record() imageRecord {
	return imageRecord{Name: &s.Name, Digest: &s.Digest, Status: &s.Status, Built: &s.Built, Superseded: &s.Superseded}
}

// Diff decides from state and local files alone (no Vercel call).
func (v *VercelSnapshot) Diff(ctx context.Context, req infer.DiffRequest[VercelSnapshotArgs, VercelSnapshotState]) (infer.DiffResponse, error) {
	olds, news := req.State, req.Inputs
	plan, err := planVercelSnapshot(news)
	if err != nil {
		return infer.DiffResponse{}, err
	}
	return vercelKind.diff(ctx, imageDiff{Name: plan.name, Digest: plan.digest, Override: plan.override != "",
		OverrideChanged: plan.override != olds.VercelSnapshotID, OldName: olds.Name, OldDigest: olds.Digest, OldStatus: olds.Status,
		Superseded: olds.Superseded, Now: v.now(), Grace: graceOf(news.GracePeriodSeconds),
		Changed: map[string]bool{
			"source":             olds.Source != news.Source,
			"apiUrl":             olds.APIURL != news.APIURL,
			"token":              olds.Token != news.Token,
			"projectId":          olds.ProjectID != news.ProjectID,
			"teamId":             olds.TeamID != news.TeamID,
			"gracePeriodSeconds": family.Deref(olds.GracePeriodSeconds, -1) != family.Deref(news.GracePeriodSeconds, -1),
			"keepOnDelete":       olds.KeepOnDelete != news.KeepOnDelete,
			"namePrefix":         olds.NamePrefix != news.NamePrefix,
		}}), nil
}

// Create builds the snapshot (or takes the override). In a preview it only
// names it.
func (v *VercelSnapshot) Create(ctx context.Context, req infer.CreateRequest[VercelSnapshotArgs]) (infer.CreateResponse[VercelSnapshotState], error) {
	override := family.Deref(req.Inputs.SnapshotID, "")
	if req.DryRun && override == "" && (req.Inputs.Source == "" || req.Inputs.NamePrefix == "") {
		return infer.CreateResponse[VercelSnapshotState]{Output: VercelSnapshotState{VercelSnapshotArgs: req.Inputs}}, nil
	}
	plan, err := planVercelSnapshot(req.Inputs)
	if err != nil {
		return infer.CreateResponse[VercelSnapshotState]{}, err
	}
	state := VercelSnapshotState{VercelSnapshotArgs: req.Inputs, Name: plan.name, Digest: plan.digest}
	id := plan.name
	if override != "" {
		id = override
	}
	if req.DryRun {
		return infer.CreateResponse[VercelSnapshotState]{ID: id, Output: state}, nil
	}
	if err := v.ensure(ctx, plan, &state); err != nil {
		// Record what exists so the next up retries rather than finding a stranger.
		return infer.CreateResponse[VercelSnapshotState]{ID: id, Output: state},
			initFailed(err)
	}
	return infer.CreateResponse[VercelSnapshotState]{ID: id, Output: state}, nil
}

// ensure makes plan's snapshot exist: the override is looked up; a created
// snapshot of the digest-named sandbox (built by an up whose state was
// lost) is taken; anything else is built by the builder.
func (v *VercelSnapshot) ensure(ctx context.Context, plan vercelPlan, state *VercelSnapshotState) error {
	client, err := vercelapi.New(state.APIURL, state.Token, state.ProjectID, state.TeamID)
	if err != nil {
		return err
	}
	if plan.override != "" {
		snaps, err := client.Snapshots(ctx, "")
		if err != nil {
			return err
		}
		i := slices.IndexFunc(snaps, func(s vercelapi.Snapshot) bool { return s.ID == plan.override })
		if i < 0 {
			return fmt.Errorf("snapshotId: project %s has no snapshot %q", state.ProjectID, plan.override)
		}
		state.VercelSnapshotID, state.Status, state.Built = snaps[i].ID, snaps[i].Status, false
		return nil
	}
	state.Built = true
	if snap, found, err := latestCreated(ctx, client, plan.name); err != nil {
		return err
	} else if found {
		state.VercelSnapshotID, state.Status = snap.ID, snap.Status
		p.GetLogger(ctx).Infof("vercel snapshot %s of %s already exists", snap.ID, plan.name)
		return nil
	}
	state.Status = "building"
	id, err := v.runBuilder(ctx, plan, state)
	if err != nil {
		state.Status = "failed"
		return err
	}
	snap, found, err := latestCreated(ctx, client, plan.name)
	if err != nil {
		return err
	}
	if !found || snap.ID != id {
		return fmt.Errorf("vercel: the builder reported snapshot %s, but the newest created snapshot of sandbox %s is %q", id, plan.name, snap.ID)
	}
	state.VercelSnapshotID, state.Status = snap.ID, snap.Status
	p.GetLogger(ctx).Infof("vercel snapshot %s of %s is created", snap.ID, plan.name)
	return nil
}

// latestCreated is the newest created snapshot of a build sandbox, as
// upstream's control plane resolves VERCEL_BASE_SNAPSHOT_NAME.
func latestCreated(ctx context.Context, client *vercelapi.Client, name string) (vercelapi.Snapshot, bool, error) {
	snaps, err := client.Snapshots(ctx, name)
	if err != nil {
		return vercelapi.Snapshot{}, false, err
	}
	var best vercelapi.Snapshot
	found := false
	for _, s := range snaps {
		if s.Status == vercelCreated && (!found || s.CreatedAt > best.CreatedAt) {
			best, found = s, true
		}
	}
	return best, found, nil
}

// runBuilder runs upstream's builder as its Terraform does, from the
// checkout root with the token, project, team, runtime, API and sandbox
// name in its environment, and returns the snapshot ID it wrote.
func (v *VercelSnapshot) runBuilder(ctx context.Context, plan vercelPlan, state *VercelSnapshotState) (string, error) {
	r, err := newRunner(ctx, "vercel", "node-builders", state.Token, v.Timeout)
	if err != nil {
		return "", err
	}
	out, err := os.CreateTemp("", "openinspect-vercel-snapshot-*")
	if err != nil {
		return "", fmt.Errorf("vercel: %w", err)
	}
	out.Close()
	defer os.Remove(out.Name())
	apiURL := state.APIURL
	if apiURL == "" {
		apiURL = vercelapi.DefaultAPIURL
	}
	env := []string{
		"VERCEL_TOKEN=" + state.Token,
		"VERCEL_PROJECT_ID=" + state.ProjectID,
		"VERCEL_TEAM_ID=" + state.TeamID,
		"VERCEL_RUNTIME=" + plan.runtime,
		"VERCEL_SANDBOX_API_BASE_URL=" + apiURL,
		"VERCEL_BASE_SNAPSHOT_NAME=" + plan.name,
		"VERCEL_BASE_SNAPSHOT_SOURCE_VERSION=" + plan.digest,
	}
	args := []string{"--output", out.Name()}
	p.GetLogger(ctx).InfoStatusf("vercel: building the base snapshot of sandbox %s", plan.name)
	if bundle := filepath.Join(plan.root, filepath.FromSlash(vercelBundle)); fileExists(bundle) {
		// Upstream's build output, self-contained: only Node is needed.
		node, lerr := exec.LookPath("node")
		if lerr != nil {
			return "", errors.New("vercel: Node.js is needed to run the builder and is not on PATH")
		}
		err = r.Run(ctx, builder.Step{Name: "node vercel-base-snapshot.js", Dir: plan.root, Stream: true,
			Env: env, Args: append([]string{node, bundle}, args...)})
	} else {
		nodeEnv, nerr := r.NodeEnvironment(ctx, "", VercelPins)
		if nerr != nil {
			return "", nerr
		}
		err = r.RunNodeBuilder(ctx, nodeEnv, builder.NodeBuilder{Name: "node vercel-base-snapshot", Script: vercelScript,
			Dir: filepath.Join(plan.root, filepath.FromSlash(vercelPackage)), Root: plan.root, Env: env, Args: args})
	}
	if err != nil {
		return "", err
	}
	raw, err := os.ReadFile(out.Name())
	if err != nil {
		return "", fmt.Errorf("vercel: reading the builder's output: %w", err)
	}
	id := strings.TrimSpace(string(raw))
	if id == "" {
		return "", errors.New("vercel: the builder succeeded but wrote no snapshot ID to --output")
	}
	return id, nil
}

func fileExists(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// Update builds the new snapshot when the digest moved (or the last build
// did not finish), retiring the old one only once the new one exists, then
// deletes what outlived its grace period.
func (v *VercelSnapshot) Update(ctx context.Context, req infer.UpdateRequest[VercelSnapshotArgs, VercelSnapshotState]) (infer.UpdateResponse[VercelSnapshotState], error) {
	plan, err := planVercelSnapshot(req.Inputs)
	if err != nil {
		return infer.UpdateResponse[VercelSnapshotState]{}, err
	}
	state := req.State
	state.VercelSnapshotArgs = req.Inputs
	if req.DryRun {
		state.Name, state.Digest = plan.name, plan.digest
		return infer.UpdateResponse[VercelSnapshotState]{Output: state}, nil
	}
	rebuild := plan.name != state.Name || state.Status != vercelCreated ||
		(plan.override != "" && plan.override != state.VercelSnapshotID)
	if rebuild {
		err := vercelKind.replace(state.record(), plan.name, plan.digest, v.now(), func() error {
			state.VercelSnapshotID = ""
			return v.ensure(ctx, plan, &state)
		})
		if err != nil {
			return infer.UpdateResponse[VercelSnapshotState]{Output: state}, initFailed(err)
		}
	}
	client, err := vercelapi.New(state.APIURL, state.Token, state.ProjectID, state.TeamID)
	if err != nil {
		return infer.UpdateResponse[VercelSnapshotState]{Output: state}, err
	}
	err = vercelKind.collect(ctx, state.record(), v.now(), graceOf(req.Inputs.GracePeriodSeconds),
		func(name string) error { return deleteBuild(ctx, client, name) })
	return infer.UpdateResponse[VercelSnapshotState]{Output: state}, err
}

// deleteBuild deletes every snapshot taken from a build sandbox, then the
// sandbox.
func deleteBuild(ctx context.Context, client *vercelapi.Client, name string) error {
	snaps, err := client.Snapshots(ctx, name)
	if err != nil {
		return err
	}
	for _, s := range snaps {
		if err := client.DeleteSnapshot(ctx, s.ID); err != nil {
			return err
		}
	}
	return client.DeleteSandbox(ctx, name)
}

// Read refreshes the snapshot's status and forgets superseded builds whose
// snapshots were deleted elsewhere; a missing snapshot is rebuilt by the
// next up.
func (*VercelSnapshot) Read(ctx context.Context, req infer.ReadRequest[VercelSnapshotArgs, VercelSnapshotState]) (infer.ReadResponse[VercelSnapshotArgs, VercelSnapshotState], error) {
	state := req.State
	client, err := vercelapi.New(state.APIURL, state.Token, state.ProjectID, state.TeamID)
	if err != nil {
		return infer.ReadResponse[VercelSnapshotArgs, VercelSnapshotState]{}, err
	}
	snaps, err := client.Snapshots(ctx, "")
	if err != nil {
		return infer.ReadResponse[VercelSnapshotArgs, VercelSnapshotState]{}, err
	}
	if i := slices.IndexFunc(snaps, func(s vercelapi.Snapshot) bool { return s.ID == state.VercelSnapshotID }); i >= 0 {
		state.Status = snaps[i].Status
	} else {
		state.VercelSnapshotID, state.Status = "", "missing"
	}
	var kept []SupersededSnapshot
	for _, s := range state.Superseded {
		if _, found, err := latestCreated(ctx, client, s.Name); err != nil {
			return infer.ReadResponse[VercelSnapshotArgs, VercelSnapshotState]{}, err
		} else if found {
			kept = append(kept, s)
		}
	}
	state.Superseded = kept
	return infer.ReadResponse[VercelSnapshotArgs, VercelSnapshotState]{ID: req.ID, Inputs: req.Inputs, State: state}, nil
}

// Delete deletes the sandboxes of the sessions the installation's D1
// records, then the snapshots of the build sandboxes this resource made
// (never an override's) and those sandboxes, or says what it keeps.
func (*VercelSnapshot) Delete(ctx context.Context, req infer.DeleteRequest[VercelSnapshotState]) (infer.DeleteResponse, error) {
	state := req.State
	names := state.record().owned()
	log := p.GetLogger(ctx)
	if state.KeepOnDelete {
		log.Warningf("vercel snapshots of %s and the installation's session sandboxes kept (deletion policy Orphan)", strings.Join(names, ", "))
		return infer.DeleteResponse{}, nil
	}
	sessions, err := recordedSessions(ctx, state.D1DatabaseID)
	if err != nil {
		return infer.DeleteResponse{}, err
	}
	if len(names) == 0 && len(sessions) == 0 {
		return infer.DeleteResponse{}, nil
	}
	client, err := vercelapi.New(state.APIURL, state.Token, state.ProjectID, state.TeamID)
	if err != nil {
		return infer.DeleteResponse{}, err
	}
	deleted, err := deleteSessionSandboxes(ctx, client, sessions)
	if err != nil {
		return infer.DeleteResponse{}, err
	}
	for _, name := range names {
		log.InfoStatusf("vercel: deleting the snapshots of %s", name)
		if err := deleteBuild(ctx, client, name); err != nil {
			return infer.DeleteResponse{}, err
		}
	}
	log.Infof("vercel: %d session sandboxes deleted, and the snapshots of %d build sandboxes", deleted, len(names))
	return infer.DeleteResponse{}, nil
}

// deleteSessionSandboxes deletes the project's sandboxes tagged with one of
// the sessions; the tag is the only thing that ties a sandbox to an
// installation (upstream names it after the sandbox ID it chose, and the
// framework tag is every installation's).
func deleteSessionSandboxes(ctx context.Context, client *vercelapi.Client, sessions []string) (int, error) {
	deleted := 0
	for _, session := range sessions {
		sandboxes, err := client.SandboxesTagged(ctx, sessionLabel, session)
		if err != nil {
			return deleted, err
		}
		for _, sb := range sandboxes {
			if sb.Tags[sessionLabel] != session {
				continue // the filter is the API's; the tag is checked here too
			}
			if err := client.DeleteSandbox(ctx, sb.Name); err != nil {
				return deleted, err
			}
			deleted++
		}
	}
	return deleted, nil
}
