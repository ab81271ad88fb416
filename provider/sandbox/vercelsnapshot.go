package sandbox

import (
	"context"
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
	image[VercelSnapshotArgs, VercelSnapshotState, vercelPlan, vercelImages]
}

// vercelImages is VercelSnapshot's backend of the shared image lifecycle.
type vercelImages struct{}

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
	ImageInputs
	APIURL       string  `pulumi:"apiUrl,optional"`
	Token        string  `pulumi:"token" provider:"secret"`
	ProjectID    string  `pulumi:"projectId"`
	TeamID       string  `pulumi:"teamId,optional"`
	Runtime      *string `pulumi:"runtime,optional"`
	SnapshotID   *string `pulumi:"snapshotId,optional"`
	D1DatabaseID string  `pulumi:"d1DatabaseId,optional"`
}

// VercelSnapshotState is what the provider records.
type VercelSnapshotState struct {
	VercelSnapshotArgs
	// ImageOutputs' Name is the build sandbox's name, which names the
	// snapshot for the control plane: <namePrefix>-<first 16 of digest>
	// (upstream: openinspect-base-<16 of its source hash>); empty with
	// snapshotId.
	ImageOutputs
	VercelSnapshotID string `pulumi:"vercelSnapshotId"`
	Status           string `pulumi:"status"`
	Built            bool   `pulumi:"built"`
}

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
	a.ImageInputs.describe(an, "snapshot", imageDocs{
		source:       "An Open-Inspect checkout root holding " + vercelPackage + " and the sandbox runtime.",
		namePrefix:   "The first part of every build sandbox's name, unique to the installation (lowercase letters, digits, '-').",
		keepOnDelete: "Keep the snapshots and sandboxes on delete (the installation's Orphan policy) and say what was kept."})
	an.Describe(&a.APIURL, "Vercel Sandbox API base URL (default "+vercelapi.DefaultAPIURL+").")
	an.Describe(&a.Token, "Vercel token for the Sandbox API.")
	an.Describe(&a.ProjectID, "The Vercel project every Sandbox API call is scoped by.")
	an.Describe(&a.TeamID, "The Vercel team, when the project belongs to one.")
	an.Describe(&a.Runtime, "The build sandbox's runtime (default node24).")
	an.Describe(&a.SnapshotID, "Use this existing snapshot and build nothing (upstream's vercel_base_snapshot_id).")
	an.Describe(&a.D1DatabaseID, "The installation's D1 database, whose sessions' sandboxes (found by their "+sessionLabel+" tag) are deleted on delete.")
}

// Annotate documents the outputs.
func (s *VercelSnapshotState) Annotate(a infer.Annotator) {
	s.ImageOutputs.describe(a, imageDocs{name: "The build sandbox's name (the control plane's VERCEL_BASE_SNAPSHOT_NAME); empty with snapshotId.",
		digest:     "SHA-256 of the builder, its client, the bundle if any, the pins, the runtime and the sandbox runtime; empty with snapshotId.",
		superseded: "Replaced build sandboxes whose snapshots are still kept."})
	a.Describe(&s.VercelSnapshotID, "Vercel's ID of the snapshot.")
	a.Describe(&s.Status, "The snapshot's status as last seen (created once built).")
	a.Describe(&s.Built, "Whether this resource built the snapshot (false with snapshotId).")
}

// Build sandbox names: upstream's normalisation keeps lowercase letters,
// digits and '-' and cuts at 96; the digest takes 17.
var vercelPrefixPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,78}$`)

// VercelRuntimes are the Sandbox runtimes Vercel offers.
var VercelRuntimes = []string{"node22", "node24", "python3.13"}

const vercelCreated = "created"

func (vercelImages) kind() imageKind {
	return imageKind{Label: "vercel snapshot", Ready: vercelCreated, OverrideKey: "snapshotId", Root: vercelBuilderRoot,
		Prefix: vercelPrefixPattern, PrefixRule: "lowercase letters, digits and '-' (at most 79), starting with a letter or digit"}
}

func (vercelImages) override(in VercelSnapshotArgs) string { return family.Deref(in.SnapshotID, "") }

func (vercelImages) check(args VercelSnapshotArgs, known func(string) bool, bad badFunc) {
	if known("token") && strings.TrimSpace(args.Token) == "" {
		bad("token", "required: a Vercel token")
	}
	if known("projectId") && strings.TrimSpace(args.ProjectID) == "" {
		bad("projectId", "required: the Vercel project the sandboxes belong to")
	}
	if known("apiUrl") && args.APIURL != "" {
		if err := vercelapi.CheckAPIURL(args.APIURL); err != nil {
			bad("apiUrl", "%v", err)
		}
	}
	if r := args.Runtime; r != nil && !slices.Contains(VercelRuntimes, *r) {
		bad("runtime", "%q: one of %s", *r, strings.Join(VercelRuntimes, ", "))
	}
}

// vercelBuilderRoot is the checkout root holding the builder (its sources
// or its bundle) and the runtime.
func vercelBuilderRoot(source string) (string, error) {
	root, err := builderCheckout(source)
	if err != nil {
		return "", err
	}
	at := func(rel string) string { return filepath.Join(root, filepath.FromSlash(rel)) }
	_, bundleErr := os.Stat(at(vercelBundle))
	_, scriptErr := os.Stat(at(vercelBuilder))
	if bundleErr != nil && scriptErr != nil {
		return "", fmt.Errorf("%s is missing (and no built %s): the Vercel build runs upstream's builder", at(vercelBuilder), vercelBundle)
	}
	return root, requireInCheckout(root, "the Vercel build uploads upstream's", false, vercelRuntime+"/pyproject.toml", vercelRuntime+"/src")
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
	imagePlan
	runtime string
}

func planVercelSnapshot(args VercelSnapshotArgs) (vercelPlan, error) {
	pl := vercelPlan{imagePlan: imagePlan{in: args.ImageInputs}, runtime: family.Deref(args.Runtime, defaultVercelRuntime)}
	if id := family.Deref(args.SnapshotID, ""); id != "" {
		pl.override, pl.overrideID = true, id
		return pl, nil
	}
	extra := fmt.Sprintf("\x00pins %s\x00runtime %s", strings.Join(VercelPins, " "), pl.runtime)
	return pl, pl.nameByDigest(vercelBuilderRoot, vercelDigestPatterns, 16, extra)
}

func (vercelImages) plan(_ context.Context, in VercelSnapshotArgs) (vercelPlan, error) {
	return planVercelSnapshot(in)
}

func (vercelImages) changed(olds VercelSnapshotState, news VercelSnapshotArgs) map[string]bool {
	return map[string]bool{"apiUrl": olds.APIURL != news.APIURL, "token": olds.Token != news.Token,
		"projectId": olds.ProjectID != news.ProjectID, "teamId": olds.TeamID != news.TeamID}
}

func (vercelImages) state(old VercelSnapshotState, in VercelSnapshotArgs) VercelSnapshotState {
	old.VercelSnapshotArgs = in
	return old
}

func (vercelImages) record(s *VercelSnapshotState) imageRecord {
	return imageRecord{Inputs: &s.ImageInputs, Name: &s.Name, Digest: &s.Digest, Status: &s.Status, Built: &s.Built,
		Superseded: &s.Superseded, Override: &s.VercelSnapshotID,
		Public: []any{&s.VercelSnapshotID, &s.Built}}
}

// deleter deletes a superseded build: its snapshots and its sandbox.
func (vercelImages) deleter(ctx context.Context, s *VercelSnapshotState) (func(string) error, error) {
	client, err := vercelapi.New(s.APIURL, s.Token, s.ProjectID, s.TeamID)
	if err != nil {
		return nil, err
	}
	return func(name string) error { return deleteBuild(ctx, client, name) }, nil
}

// ensure makes plan's snapshot exist: the override is looked up; a created
// snapshot of the digest-named sandbox (built by an up whose state was
// lost) is taken; anything else is built by the builder.
func (vercelImages) ensure(ctx context.Context, timeout time.Duration, plan vercelPlan, state *VercelSnapshotState) error {
	state.VercelSnapshotID = ""
	client, err := vercelapi.New(state.APIURL, state.Token, state.ProjectID, state.TeamID)
	if err != nil {
		return err
	}
	if plan.override {
		snaps, err := client.Snapshots(ctx, "")
		if err != nil {
			return err
		}
		i := slices.IndexFunc(snaps, func(s vercelapi.Snapshot) bool { return s.ID == plan.overrideID })
		if i < 0 {
			return fmt.Errorf("snapshotId: project %s has no snapshot %q", state.ProjectID, plan.overrideID)
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
	// The build sandbox is named by the digest, so it is this build's alone.
	// One still there is what a killed build left: Vercel keeps its session
	// running until its timeout and refuses a new sandbox of the name (409
	// sandbox_exists), so it is deleted first (its snapshots stay).
	if err := client.DeleteSandbox(ctx, plan.name); err != nil {
		return fmt.Errorf("vercel: removing the build sandbox %s an earlier run left: %w", plan.name, err)
	}
	state.Status = "building"
	id, err := runVercelBuilder(ctx, timeout, plan, state)
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

// runVercelBuilder runs upstream's builder as its Terraform does, from the
// checkout root with the token, project, team, runtime, API and sandbox
// name in its environment, and returns the snapshot ID it wrote.
func runVercelBuilder(ctx context.Context, timeout time.Duration, plan vercelPlan, state *VercelSnapshotState) (string, error) {
	r, err := newRunner(ctx, "vercel", "node-builders", state.Token, timeout)
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
	if state.Superseded, err = keepExisting(state.Superseded, func(name string) (bool, error) {
		_, found, err := latestCreated(ctx, client, name)
		return found, err
	}); err != nil {
		return infer.ReadResponse[VercelSnapshotArgs, VercelSnapshotState]{}, err
	}
	return infer.ReadResponse[VercelSnapshotArgs, VercelSnapshotState]{ID: req.ID, Inputs: req.Inputs, State: state}, nil
}

// Delete deletes the sandboxes of the sessions the installation's D1
// records, then the snapshots of the build sandboxes this resource made
// (never an override's) and those sandboxes, or says what it keeps.
func (*VercelSnapshot) Delete(ctx context.Context, req infer.DeleteRequest[VercelSnapshotState]) (infer.DeleteResponse, error) {
	state := req.State
	names := vercelImages{}.record(&state).owned()
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
