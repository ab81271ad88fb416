package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/openinspect/pulumi-openinspect/provider/config"
	"github.com/openinspect/pulumi-openinspect/provider/internal/builder"
	"github.com/openinspect/pulumi-openinspect/provider/internal/common"
	"github.com/openinspect/pulumi-openinspect/provider/internal/daytonaapi"
	"github.com/openinspect/pulumi-openinspect/provider/internal/upstream"
)

// DaytonaSnapshot is an installation's Daytona base snapshot, named from a
// digest of its recipe so a new recipe never overwrites the snapshot running
// sandboxes use.
type DaytonaSnapshot struct {
	// Now is the clock superseded snapshots' grace periods are measured
	// with; nil means time.Now.
	Now func() time.Time
}

// DaytonaSnapshotToken is the DaytonaSnapshot resource's type token.
const DaytonaSnapshotToken = "openinspect:index:DaytonaSnapshot"

// defaultGracePeriod is how long a superseded snapshot is kept.
const defaultGracePeriod = 24 * time.Hour

// DaytonaSnapshotArgs are the inputs of a DaytonaSnapshot.
type DaytonaSnapshotArgs struct {
	Source             string `pulumi:"source"`
	NamePrefix         string `pulumi:"namePrefix"`
	GracePeriodSeconds *int   `pulumi:"gracePeriodSeconds,optional"`
	D1DatabaseID       string `pulumi:"d1DatabaseId,optional"`
	KeepOnDelete       bool   `pulumi:"keepOnDelete,optional"`
}

// SupersededSnapshot is a snapshot a newer recipe replaced, kept until its
// grace period ends.
type SupersededSnapshot struct {
	Name      string `pulumi:"name"`
	RetiredAt string `pulumi:"retiredAt"`
}

// DaytonaSnapshotState is what the provider records.
type DaytonaSnapshotState struct {
	DaytonaSnapshotArgs
	// Name is the current snapshot: <namePrefix>-<first 12 of digest>.
	Name       string               `pulumi:"name"`
	Digest     string               `pulumi:"digest"`
	SnapshotID string               `pulumi:"snapshotId"`
	State      string               `pulumi:"state"`
	APIURL     string               `pulumi:"apiUrl"`
	Superseded []SupersededSnapshot `pulumi:"superseded,optional"`
}

var (
	_ infer.ExplicitDependencies[DaytonaSnapshotArgs, DaytonaSnapshotState] = (*DaytonaSnapshot)(nil)
	_ infer.CustomCheck[DaytonaSnapshotArgs]                                = (*DaytonaSnapshot)(nil)
	_ infer.CustomDiff[DaytonaSnapshotArgs, DaytonaSnapshotState]           = (*DaytonaSnapshot)(nil)
	_ infer.CustomUpdate[DaytonaSnapshotArgs, DaytonaSnapshotState]         = (*DaytonaSnapshot)(nil)
	_ infer.CustomRead[DaytonaSnapshotArgs, DaytonaSnapshotState]           = (*DaytonaSnapshot)(nil)
	_ infer.CustomDelete[DaytonaSnapshotState]                              = (*DaytonaSnapshot)(nil)
)

// Annotate documents the resource.
func (d *DaytonaSnapshot) Annotate(a infer.Annotator) {
	a.Describe(d, "An installation's Daytona base snapshot, built through the Daytona API from a recipe: upstream's "+
		"toolchain pins (from the pinned contract) and the sandbox runtime from the checkout. It is named "+
		"<namePrefix>-<digest>, so a changed recipe builds a new snapshot first and the old one keeps serving until its "+
		"grace period ends; a later up collects it. Build logs are reported as progress; a failed build fails with "+
		"its own error and the next up retries it.\n\nOn delete, the installation's sandboxes (those whose session label "+
		"names a session recorded in the installation's own D1 database) and its snapshots are deleted; another "+
		"installation in the same organization is never touched.")
}

// Annotate documents the inputs.
func (a *DaytonaSnapshotArgs) Annotate(an infer.Annotator) {
	an.Describe(&a.Source, "An Open-Inspect checkout root holding the sandbox runtime at the pinned commit.")
	an.Describe(&a.NamePrefix, "The first part of every snapshot name, unique to the installation.")
	an.Describe(&a.GracePeriodSeconds, "How long a superseded snapshot is kept before a later up deletes it (default 86400, a day).")
	an.Describe(&a.D1DatabaseID, "The installation's D1 database, whose sessions decide which sandboxes are its own on delete. "+
		"Without it no sandbox is deleted.")
	an.Describe(&a.KeepOnDelete, "Keep the snapshots and sandboxes on delete (the installation's Orphan policy) and say what was kept.")
}

// Annotate documents a superseded snapshot.
func (s *SupersededSnapshot) Annotate(a infer.Annotator) {
	a.Describe(s, "A snapshot or template a newer build replaced, kept for the grace period.")
	a.Describe(&s.Name, "Its name.")
	a.Describe(&s.RetiredAt, "When it was replaced (RFC 3339).")
}

// Annotate documents the outputs.
func (s *DaytonaSnapshotState) Annotate(a infer.Annotator) {
	a.Describe(&s.Name, "The current snapshot's name (the control plane's DAYTONA_BASE_SNAPSHOT).")
	a.Describe(&s.Digest, "SHA-256 of the recipe and the runtime's files.")
	a.Describe(&s.SnapshotID, "The current snapshot's ID.")
	a.Describe(&s.State, "The current snapshot's state as last seen (active once built).")
	a.Describe(&s.APIURL, "The Daytona API the snapshots live in.")
	a.Describe(&s.Superseded, "Replaced snapshots still kept.")
}

// WireDependencies makes the snapshot's name and digest known in a preview:
// both are computed from local files, so the control plane's
// DAYTONA_BASE_SNAPSHOT is known before anything is built.
func (*DaytonaSnapshot) WireDependencies(f infer.FieldSelector, args *DaytonaSnapshotArgs, state *DaytonaSnapshotState) {
	f.OutputField(&state.Name).AlwaysKnown()
	f.OutputField(&state.Digest).AlwaysKnown()
	f.OutputField(state).DependsOn(f.InputField(args))
}

var snapshotPrefixPattern = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,80}$`)

// Check validates the inputs before any remote call.
func (*DaytonaSnapshot) Check(ctx context.Context, req infer.CheckRequest) (infer.CheckResponse[DaytonaSnapshotArgs], error) {
	args, failures, err := infer.DefaultCheck[DaytonaSnapshotArgs](ctx, req.NewInputs)
	if err != nil {
		return infer.CheckResponse[DaytonaSnapshotArgs]{}, err
	}
	bad := func(property, format string, a ...any) {
		failures = append(failures, p.CheckFailure{Property: property, Reason: fmt.Sprintf(format, a...)})
	}
	if !common.IsUnknown(req.NewInputs, "source") {
		if _, err := runtimeDir(args.Source); err != nil {
			bad("source", "%v", err)
		}
	}
	if !common.IsUnknown(req.NewInputs, "namePrefix") && !snapshotPrefixPattern.MatchString(args.NamePrefix) {
		bad("namePrefix", "%q: use letters, digits, '_', '.' and '-' (at most 81), starting with a letter or digit", args.NamePrefix)
	}
	if g := args.GracePeriodSeconds; g != nil && *g < 0 {
		bad("gracePeriodSeconds", "must be 0 or more, got %d", *g)
	}
	return infer.CheckResponse[DaytonaSnapshotArgs]{Inputs: args, Failures: failures}, nil
}

// runtimeDir is the sandbox runtime's source directory in a checkout.
func runtimeDir(source string) (string, error) {
	if source == "" {
		return "", errors.New("required: an Open-Inspect checkout")
	}
	root, err := builder.CheckoutRoot(source)
	if err != nil {
		return "", err
	}
	c, err := upstream.Load()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, filepath.FromSlash(c.Sandbox.Daytona.Snapshot.RuntimeSource))
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", fmt.Errorf("%s is missing: the sandbox runtime is upstream's %s", dir, c.Sandbox.Daytona.Snapshot.RuntimeSource)
	}
	return dir, nil
}

// snapshotPlan is the recipe and the name it gives.
type snapshotPlan struct {
	manifest daytonaapi.Manifest
	digest   string
	name     string
	cleanup  func()
}

// planSnapshot stages a clean copy of the runtime (no caches: importing the
// sources writes them) and digests the recipe. cleanup removes the copy.
func planSnapshot(args DaytonaSnapshotArgs) (snapshotPlan, error) {
	c, err := upstream.Load()
	if err != nil {
		return snapshotPlan{}, err
	}
	src, err := runtimeDir(args.Source)
	if err != nil {
		return snapshotPlan{}, fmt.Errorf("source: %w", err)
	}
	staged, err := os.MkdirTemp("", "openinspect-runtime-")
	if err != nil {
		return snapshotPlan{}, err
	}
	cleanup := func() { _ = os.RemoveAll(staged) }
	dst := filepath.Join(staged, filepath.Base(src))
	if err := copyTree(src, dst); err != nil {
		cleanup()
		return snapshotPlan{}, fmt.Errorf("staging the sandbox runtime: %w", err)
	}
	m := recipe(c, dst)
	digest, err := m.Digest()
	if err != nil {
		cleanup()
		return snapshotPlan{}, err
	}
	return snapshotPlan{manifest: m, digest: digest, name: args.NamePrefix + "-" + digest[:12], cleanup: cleanup}, nil
}

// recipe is the base snapshot's manifest from the contract's pins. The
// commands are this project's own; what they install, and at which
// versions, is upstream's toolchain.
func recipe(c *upstream.Contract, runtime string) daytonaapi.Manifest {
	s, tc := c.Sandbox.Daytona.Snapshot, c.Sandbox.Daytona.Toolchain
	return daytonaapi.Manifest{
		BaseImage:   s.BaseImage,
		Env:         map[string]string{"SANDBOX_VERSION": s.SandboxVersion},
		AptPackages: []string{"ca-certificates", "curl", "git", "gnupg", "jq", "ripgrep", "xvfb", "x11vnc", "fluxbox"},
		RunCommands: []string{
			"curl -fsSL https://deb.nodesource.com/setup_" + tc.Node + ".x | bash - && apt-get install -y nodejs",
			"npm install -g pnpm opencode-ai@" + tc.OpencodeAI + " agent-browser@" + tc.AgentBrowser,
			"curl -fsSL https://code-server.dev/install.sh | sh -s -- --version " + tc.CodeServer,
			"curl -fsSL https://bun.sh/install | bash",
		},
		PipPackages: []string{"uv"},
		RuntimeDir:  runtime,
		RuntimePath: s.RuntimePath,
		Workdir:     s.Workdir,
		Entrypoint:  s.Entrypoint,
	}
}

// copyTree copies regular files and directories, leaving out bytecode
// caches.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir() && d.Name() == "__pycache__":
			return filepath.SkipDir
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case strings.HasSuffix(d.Name(), ".pyc"):
			return nil
		case !d.Type().IsRegular():
			return fmt.Errorf("%s is not a regular file (symlinks cannot be part of the build context)", rel)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}

func (d *DaytonaSnapshot) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

func gracePeriod(a DaytonaSnapshotArgs) time.Duration { return graceOf(a.GracePeriodSeconds) }

// graceOf is a grace period in seconds, defaultGracePeriod when unset.
func graceOf(seconds *int) time.Duration {
	if seconds == nil {
		return defaultGracePeriod
	}
	return time.Duration(*seconds) * time.Second
}

// expired are the superseded snapshots whose grace period ended.
func (d *DaytonaSnapshot) expired(state DaytonaSnapshotState, grace time.Duration) []string {
	return expiredAt(state.Superseded, d.now(), grace)
}

// expiredAt are the superseded images whose grace period ended by now.
func expiredAt(list []SupersededSnapshot, now time.Time, grace time.Duration) []string {
	var out []string
	for _, s := range list {
		retired, err := time.Parse(time.RFC3339, s.RetiredAt)
		if err != nil || !now.Before(retired.Add(grace)) {
			out = append(out, s.Name)
		}
	}
	return out
}

// Diff decides from state and local files alone: a new recipe digest
// rebuilds, an ended grace period collects.
func (d *DaytonaSnapshot) Diff(ctx context.Context, req infer.DiffRequest[DaytonaSnapshotArgs, DaytonaSnapshotState]) (infer.DiffResponse, error) {
	olds, news := req.State, req.Inputs
	plan, err := planSnapshot(news)
	if err != nil {
		return infer.DiffResponse{}, err
	}
	defer plan.cleanup()
	log := p.GetLogger(ctx)
	detailed := map[string]p.PropertyDiff{}
	switch {
	case olds.State != daytonaapi.StateActive:
		detailed["source"] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
		log.Infof("daytona snapshot %s: build pending (last seen %q)", plan.name, olds.State)
	case plan.name != olds.Name:
		detailed["source"] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
		log.Infof("daytona snapshot: rebuild as %s: recipe digest %s -> %s; %s is kept for %s", plan.name,
			short(olds.Digest), short(plan.digest), olds.Name, gracePeriod(news))
	case olds.Source != news.Source:
		detailed["source"] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
	}
	if names := d.expired(olds, gracePeriod(news)); len(names) > 0 {
		detailed["superseded"] = p.PropertyDiff{Kind: p.Update}
		log.Infof("daytona snapshot: grace period over, deleting %s", strings.Join(names, ", "))
	}
	for key, changed := range map[string]bool{
		"gracePeriodSeconds": common.Deref(olds.GracePeriodSeconds, -1) != common.Deref(news.GracePeriodSeconds, -1),
		"d1DatabaseId":       olds.D1DatabaseID != news.D1DatabaseID,
		"keepOnDelete":       olds.KeepOnDelete != news.KeepOnDelete,
		"namePrefix":         olds.NamePrefix != news.NamePrefix,
	} {
		if changed {
			detailed[key] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
		}
	}
	return infer.DiffResponse{HasChanges: len(detailed) > 0, DetailedDiff: detailed}, nil
}

// Create builds the snapshot. In a preview it only names it: the name is
// known before anything is built.
func (d *DaytonaSnapshot) Create(ctx context.Context, req infer.CreateRequest[DaytonaSnapshotArgs]) (infer.CreateResponse[DaytonaSnapshotState], error) {
	if req.DryRun && (req.Inputs.Source == "" || req.Inputs.NamePrefix == "") {
		// Inputs not known yet (outputs of other resources): nothing to name.
		return infer.CreateResponse[DaytonaSnapshotState]{Output: DaytonaSnapshotState{DaytonaSnapshotArgs: req.Inputs}}, nil
	}
	plan, err := planSnapshot(req.Inputs)
	if err != nil {
		return infer.CreateResponse[DaytonaSnapshotState]{}, err
	}
	defer plan.cleanup()
	state := DaytonaSnapshotState{DaytonaSnapshotArgs: req.Inputs, Name: plan.name, Digest: plan.digest}
	if req.DryRun {
		return infer.CreateResponse[DaytonaSnapshotState]{ID: plan.name, Output: state}, nil
	}
	cfg := config.FromContext(ctx)
	client, err := cfg.DaytonaClient()
	if err != nil {
		return infer.CreateResponse[DaytonaSnapshotState]{}, err
	}
	state.APIURL = cfg.DaytonaAPI()
	if err := build(ctx, client, plan, &state); err != nil {
		// The snapshot may exist in some state: record it so the next up
		// finishes (or rebuilds) it rather than finding a stranger.
		return infer.CreateResponse[DaytonaSnapshotState]{ID: plan.name, Output: state},
			initFailed(err)
	}
	return infer.CreateResponse[DaytonaSnapshotState]{ID: plan.name, Output: state}, nil
}

// build builds plan's snapshot and records what it saw in state.
func build(ctx context.Context, client *daytonaapi.Client, plan snapshotPlan, state *DaytonaSnapshotState) error {
	log := p.GetLogger(ctx)
	log.InfoStatusf("daytona: building snapshot %s", plan.name)
	snap, err := client.BuildSnapshot(ctx, plan.name, plan.manifest, func(line string) {
		log.InfoStatusf("daytona %s: %s", plan.name, line)
	})
	state.State = snap.State
	if err != nil {
		var buildErr *daytonaapi.BuildError
		if errors.As(err, &buildErr) {
			state.State = buildErr.State
		} else if state.State == "" {
			state.State = "unknown"
		}
		return err
	}
	state.SnapshotID = snap.ID
	log.Infof("daytona snapshot %s is %s", plan.name, snap.State)
	return nil
}

// Update builds a new snapshot when the recipe moved, retiring the old one
// only after the new one is active, then collects what outlived its grace.
func (d *DaytonaSnapshot) Update(ctx context.Context, req infer.UpdateRequest[DaytonaSnapshotArgs, DaytonaSnapshotState]) (infer.UpdateResponse[DaytonaSnapshotState], error) {
	plan, err := planSnapshot(req.Inputs)
	if err != nil {
		return infer.UpdateResponse[DaytonaSnapshotState]{}, err
	}
	defer plan.cleanup()
	state := req.State
	state.DaytonaSnapshotArgs = req.Inputs
	if req.DryRun {
		state.Name, state.Digest = plan.name, plan.digest
		return infer.UpdateResponse[DaytonaSnapshotState]{Output: state}, nil
	}
	cfg := config.FromContext(ctx)
	client, err := guardedDaytona(cfg, req.State)
	if err != nil {
		return infer.UpdateResponse[DaytonaSnapshotState]{}, err
	}
	if plan.name != state.Name || state.State != daytonaapi.StateActive {
		previous, previousActive := state.Name, state.State == daytonaapi.StateActive
		state.Name, state.Digest, state.SnapshotID = plan.name, plan.digest, ""
		if err := build(ctx, client, plan, &state); err != nil {
			if previousActive && previous != plan.name {
				// Sandboxes keep using the old one; keep it recorded for collection.
				state.Superseded = appendSuperseded(state.Superseded, previous, d.now())
			}
			return infer.UpdateResponse[DaytonaSnapshotState]{Output: state},
				initFailed(err)
		}
		if previous != "" && previous != plan.name {
			state.Superseded = appendSuperseded(state.Superseded, previous, d.now())
		}
	}
	for _, name := range d.expired(state, gracePeriod(req.Inputs)) {
		p.GetLogger(ctx).InfoStatusf("daytona: deleting superseded snapshot %s", name)
		if err := client.DeleteSnapshot(ctx, name); err != nil {
			return infer.UpdateResponse[DaytonaSnapshotState]{Output: state}, err
		}
		state.Superseded = slices.DeleteFunc(state.Superseded, func(s SupersededSnapshot) bool { return s.Name == name })
	}
	return infer.UpdateResponse[DaytonaSnapshotState]{Output: state}, nil
}

func appendSuperseded(list []SupersededSnapshot, name string, at time.Time) []SupersededSnapshot {
	if slices.ContainsFunc(list, func(s SupersededSnapshot) bool { return s.Name == name }) {
		return list
	}
	return append(list, SupersededSnapshot{Name: name, RetiredAt: at.UTC().Format(time.RFC3339)})
}

// guardedDaytona refuses a provider configured for another Daytona API than
// the one the snapshots live in.
func guardedDaytona(cfg *config.Config, state DaytonaSnapshotState) (*daytonaapi.Client, error) {
	if configured := cfg.DaytonaAPI(); state.APIURL != "" && configured != state.APIURL {
		return nil, fmt.Errorf("daytona snapshot %s lives at %s but the provider is configured for %s; "+
			"restore openinspect:daytonaApiUrl to manage it", state.Name, state.APIURL, configured)
	}
	return cfg.DaytonaClient()
}

// Read refreshes the current snapshot's state and forgets superseded ones
// deleted elsewhere; a missing current snapshot is rebuilt by the next up.
func (*DaytonaSnapshot) Read(ctx context.Context, req infer.ReadRequest[DaytonaSnapshotArgs, DaytonaSnapshotState]) (infer.ReadResponse[DaytonaSnapshotArgs, DaytonaSnapshotState], error) {
	client, err := guardedDaytona(config.FromContext(ctx), req.State)
	if err != nil {
		return infer.ReadResponse[DaytonaSnapshotArgs, DaytonaSnapshotState]{}, err
	}
	state := req.State
	snap, found, err := client.Snapshot(ctx, state.Name)
	if err != nil {
		return infer.ReadResponse[DaytonaSnapshotArgs, DaytonaSnapshotState]{}, err
	}
	if found {
		state.State, state.SnapshotID = snap.State, snap.ID
	} else {
		state.State, state.SnapshotID = "missing", ""
	}
	var kept []SupersededSnapshot
	for _, s := range state.Superseded {
		if _, found, err := client.Snapshot(ctx, s.Name); err != nil {
			return infer.ReadResponse[DaytonaSnapshotArgs, DaytonaSnapshotState]{}, err
		} else if found {
			kept = append(kept, s)
		}
	}
	state.Superseded = kept
	return infer.ReadResponse[DaytonaSnapshotArgs, DaytonaSnapshotState]{ID: req.ID, Inputs: req.Inputs, State: state}, nil
}

// Delete removes the installation's sandboxes and every snapshot it built,
// or says what it keeps.
func (*DaytonaSnapshot) Delete(ctx context.Context, req infer.DeleteRequest[DaytonaSnapshotState]) (infer.DeleteResponse, error) {
	state := req.State
	names := []string{state.Name}
	for _, s := range state.Superseded {
		names = append(names, s.Name)
	}
	log := p.GetLogger(ctx)
	if state.KeepOnDelete {
		log.Warningf("daytona snapshots %s and the installation's sandboxes kept (deletion policy Orphan)", strings.Join(names, ", "))
		return infer.DeleteResponse{}, nil
	}
	client, err := guardedDaytona(config.FromContext(ctx), state)
	if err != nil {
		return infer.DeleteResponse{}, err
	}
	n, err := deleteOwnSandboxes(ctx, client, state.D1DatabaseID)
	if err != nil {
		return infer.DeleteResponse{}, err
	}
	for _, name := range names {
		log.InfoStatusf("daytona: deleting snapshot %s", name)
		if err := client.DeleteSnapshot(ctx, name); err != nil {
			return infer.DeleteResponse{}, err
		}
	}
	log.Infof("daytona: %d sandboxes and %d snapshots deleted", n, len(names))
	return infer.DeleteResponse{}, nil
}

// deleteOwnSandboxes deletes the sandboxes whose session label names a
// session this installation recorded.
func deleteOwnSandboxes(ctx context.Context, client *daytonaapi.Client, databaseID string) (int, error) {
	if databaseID == "" {
		p.GetLogger(ctx).Warning("daytona: no d1DatabaseId, so the installation's sessions are unknown and no sandbox is deleted")
		return 0, nil
	}
	c, err := upstream.Load()
	if err != nil {
		return 0, err
	}
	sessions, err := recordedSessions(ctx, databaseID)
	if err != nil {
		return 0, err
	}
	own := map[string]bool{}
	for _, s := range sessions {
		own[s] = true
	}
	labels := c.Sandbox.Daytona.SandboxLabels
	sandboxes, err := client.Sandboxes(ctx, map[string]string{labels.Framework.Name: labels.Framework.Value})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, sb := range sandboxes {
		if !own[sb.Labels[labels.Session]] {
			continue
		}
		if err := client.DeleteSandbox(ctx, sb.ID); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
