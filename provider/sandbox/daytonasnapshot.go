package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/openinspect/pulumi-openinspect/provider/config"
	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
	"github.com/openinspect/pulumi-openinspect/provider/internal/sandbox/builder"
	"github.com/openinspect/pulumi-openinspect/provider/internal/sandbox/daytonaapi"
	"github.com/openinspect/pulumi-openinspect/provider/internal/upstream"
)

// DaytonaSnapshot is an installation's Daytona base snapshot, built by
// upstream's own builder (packages/daytona-infra: `python -m src.bootstrap`,
// with the daytona SDK upstream pins) under a name made from a digest of
// everything that build reads, so a new build never replaces the snapshot
// running sandboxes use.
type DaytonaSnapshot struct {
	// Now is the clock superseded snapshots' grace periods are measured
	// with; nil means time.Now.
	Now func() time.Time
	// Timeout bounds the builder (default builder.DefaultTimeout).
	Timeout time.Duration
}

// DaytonaSnapshotToken is the DaytonaSnapshot resource's type token.
const DaytonaSnapshotToken = "openinspect:index:DaytonaSnapshot"

// defaultGracePeriod is how long a superseded snapshot is kept.
const defaultGracePeriod = 24 * time.Hour

// Where the build reads, relative to a checkout root, and how upstream
// runs it (terraform/modules/daytona-infra/scripts/build-snapshot.sh at the
// pin: from packages/daytona-infra, `python -m src.bootstrap --force`).
const (
	daytonaBuilderDir    = "packages/daytona-infra"
	daytonaBuilderModule = "src.bootstrap"
	daytonaBuilderEntry  = daytonaBuilderDir + "/src/bootstrap.py"
	daytonaRuntimeDir    = "packages/sandbox-runtime/src"
)

// daytonaDigestPatterns are the files the build reads: the builder's
// sources and the runtime it copies into the image.
var daytonaDigestPatterns = []string{daytonaBuilderDir + "/src/**", daytonaRuntimeDir + "/**"}

// DaytonaSnapshotArgs are the inputs of a DaytonaSnapshot.
type DaytonaSnapshotArgs struct {
	Source     string `pulumi:"source"`
	NamePrefix string `pulumi:"namePrefix"`
	// APIURL, APIKey and Target are the installation's Daytona settings
	// (the component passes the ones the control plane gets); each falls
	// back to the provider's daytonaApiUrl, daytonaApiKey and daytonaTarget.
	APIURL             string `pulumi:"apiUrl,optional"`
	APIKey             string `pulumi:"apiKey,optional" provider:"secret"`
	Target             string `pulumi:"target,optional"`
	GracePeriodSeconds *int   `pulumi:"gracePeriodSeconds,optional"`
	D1DatabaseID       string `pulumi:"d1DatabaseId,optional"`
	KeepOnDelete       bool   `pulumi:"keepOnDelete,optional"`
}

// SupersededSnapshot is a snapshot a newer build replaced, kept until its
// grace period ends.
type SupersededSnapshot struct {
	Name      string `pulumi:"name"`
	RetiredAt string `pulumi:"retiredAt"`
}

// DaytonaSnapshotState is what the provider records.
type DaytonaSnapshotState struct {
	DaytonaSnapshotArgs
	// Name is the current snapshot: <namePrefix>-<first 12 of digest>.
	Name       string `pulumi:"name"`
	Digest     string `pulumi:"digest"`
	SnapshotID string `pulumi:"snapshotId"`
	State      string `pulumi:"state"`
	// SnapshotAPIURL is the API the snapshots were built in, whichever
	// setting named it.
	SnapshotAPIURL string               `pulumi:"snapshotApiUrl"`
	Superseded     []SupersededSnapshot `pulumi:"superseded,optional"`
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
	a.Describe(d, "An installation's Daytona base snapshot, built by upstream's own builder ("+daytonaBuilderDir+": python -m "+
		daytonaBuilderModule+", run with the daytona SDK upstream pins, in a cached environment) from the checkout. It is named "+
		"<namePrefix>-<digest of everything the build reads>, so a changed builder or runtime builds a new snapshot first and "+
		"the old one keeps serving until its grace period ends; a later up deletes it. The build log is reported as progress; "+
		"a failed build fails with the builder's own message and the next up retries it.\n\nOn delete, the installation's "+
		"sandboxes (those whose session label names a session recorded in the installation's own D1 database) and its "+
		"snapshots are deleted; another installation in the same organization is never touched.")
}

// Annotate documents the inputs.
func (a *DaytonaSnapshotArgs) Annotate(an infer.Annotator) {
	an.Describe(&a.Source, "An Open-Inspect checkout root holding "+daytonaBuilderDir+" and the sandbox runtime.")
	an.Describe(&a.NamePrefix, "The first part of every snapshot name, unique to the installation.")
	an.Describe(&a.APIURL, "Daytona REST API base URL (default: the provider's daytonaApiUrl, else "+daytonaapi.DefaultAPIURL+").")
	an.Describe(&a.APIKey, "Daytona API key with snapshot read, write and delete and sandbox read and delete (default: the provider's daytonaApiKey).")
	an.Describe(&a.Target, "Daytona target (region) the snapshot is built for (default: the provider's daytonaTarget, else the organization's default).")
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
	a.Describe(&s.Digest, "SHA-256 of the builder's sources, the runtime, the SDK pin and the target.")
	a.Describe(&s.SnapshotID, "The current snapshot's ID.")
	a.Describe(&s.State, "The current snapshot's state as last seen (active once built).")
	a.Describe(&s.SnapshotAPIURL, "The Daytona API the snapshots live in.")
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
	if !family.IsUnknown(req.NewInputs, "source") {
		if _, err := daytonaBuilderRoot(args.Source); err != nil {
			bad("source", "%v", err)
		}
	}
	if !family.IsUnknown(req.NewInputs, "namePrefix") && !snapshotPrefixPattern.MatchString(args.NamePrefix) {
		bad("namePrefix", "%q: use letters, digits, '_', '.' and '-' (at most 81), starting with a letter or digit", args.NamePrefix)
	}
	if !family.IsUnknown(req.NewInputs, "apiUrl") && args.APIURL != "" {
		if _, err := daytonaapi.New(daytonaapi.Options{APIKey: "x", APIURL: args.APIURL}); err != nil {
			bad("apiUrl", "%q is not an http(s) URL", args.APIURL)
		}
	}
	if !family.IsUnknown(req.NewInputs, "apiKey") && args.APIKey != "" && strings.TrimSpace(args.APIKey) == "" {
		bad("apiKey", "is blank")
	}
	if g := args.GracePeriodSeconds; g != nil && *g < 0 {
		bad("gracePeriodSeconds", "must be 0 or more, got %d", *g)
	}
	// A field computed at a preview decodes as its zero value: not a problem yet.
	return infer.CheckResponse[DaytonaSnapshotArgs]{Inputs: args, Failures: family.KnownFailures(req.NewInputs, failures)}, nil
}

// daytonaBuilderRoot is the checkout root holding the builder and the
// runtime.
func daytonaBuilderRoot(source string) (string, error) {
	if source == "" {
		return "", errors.New("required: an Open-Inspect checkout")
	}
	root, err := builder.CheckoutRoot(source)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(daytonaBuilderEntry))); err != nil {
		return "", fmt.Errorf("%s is missing: the Daytona builder is upstream's %s", filepath.Join(root, filepath.FromSlash(daytonaBuilderEntry)), daytonaBuilderEntry)
	}
	c, err := upstream.Load()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, filepath.FromSlash(c.Sandbox.Daytona.Snapshot.RuntimeSource))
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", fmt.Errorf("%s is missing: the sandbox runtime is upstream's %s", dir, c.Sandbox.Daytona.Snapshot.RuntimeSource)
	}
	return root, nil
}

// daytonaSDKPin is the SDK upstream's build script installs
// ("daytona==0.161.0"), from the contract.
func daytonaSDKPin(c *upstream.Contract) string {
	sdk := c.Sandbox.Daytona.Snapshot.BuilderSDK
	return sdk.Package + "==" + sdk.Version
}

// daytonaConn is the installation's Daytona: the resource's own settings,
// each blank one from the provider's configuration.
func daytonaConn(ctx context.Context, args DaytonaSnapshotArgs) daytonaapi.Options {
	configured := config.FromContext(ctx).DaytonaOptions()
	conn := daytonaapi.Options{APIKey: args.APIKey, APIURL: strings.TrimRight(args.APIURL, "/"), Target: args.Target}
	if conn.APIKey == "" {
		conn.APIKey = configured.APIKey
	}
	if conn.APIURL == "" {
		conn.APIURL = strings.TrimRight(configured.APIURL, "/")
	}
	if conn.APIURL == "" {
		conn.APIURL = daytonaapi.DefaultAPIURL
	}
	if conn.Target == "" {
		conn.Target = configured.Target
	}
	return conn
}

// daytonaClient is a client for conn, refusing a missing key and an API
// other than the one the snapshots were built in.
func daytonaClient(conn daytonaapi.Options, state DaytonaSnapshotState) (*daytonaapi.Client, error) {
	bound := state.SnapshotAPIURL
	if bound == "" {
		bound = state.APIURL // a state written before apiUrl was an input recorded the API there
	}
	if bound != "" && strings.TrimRight(bound, "/") != conn.APIURL {
		return nil, fmt.Errorf("daytona snapshot %s lives at %s but this resource is now given %s; "+
			"restore apiUrl (the component's sandbox.daytona.apiUrl) or openinspect:daytonaApiUrl to manage it", state.Name, bound, conn.APIURL)
	}
	if conn.APIKey == "" {
		return nil, errors.New("daytona credentials missing: set apiKey (the component's sandbox.daytona.apiKey) or openinspect:daytonaApiKey (or DAYTONA_API_KEY)")
	}
	return daytonaapi.New(conn)
}

// snapshotPlan is what a build would make.
type snapshotPlan struct {
	root, name, digest, sdk string
}

// planSnapshot names the snapshot from a digest of the builder's sources,
// the runtime, the SDK pin and the target (what upstream's Terraform
// rebuilds on, bar the name and the API, which here are the name's prefix
// and the API the state is bound to).
func planSnapshot(args DaytonaSnapshotArgs, target string) (snapshotPlan, error) {
	c, err := upstream.Load()
	if err != nil {
		return snapshotPlan{}, err
	}
	root, err := daytonaBuilderRoot(args.Source)
	if err != nil {
		return snapshotPlan{}, fmt.Errorf("source: %w", err)
	}
	files, err := builder.SourceDigest(root, daytonaDigestPatterns)
	if err != nil {
		return snapshotPlan{}, fmt.Errorf("source: %w", err)
	}
	sdk := daytonaSDKPin(c)
	sum := sha256.Sum256([]byte(fmt.Sprintf("files %s\x00sdk %s\x00target %s", files, sdk, target)))
	digest := hex.EncodeToString(sum[:])
	return snapshotPlan{root: root, name: args.NamePrefix + "-" + digest[:12], digest: digest, sdk: sdk}, nil
}

func (d *DaytonaSnapshot) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

// graceOf is a grace period in seconds, defaultGracePeriod when unset.
func graceOf(seconds *int) time.Duration {
	if seconds == nil {
		return defaultGracePeriod
	}
	return time.Duration(*seconds) * time.Second
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

var daytonaKind = imageKind{Label: "daytona snapshot", Ready: daytonaapi.StateActive}

// record points the shared image lifecycle at the state; every snapshot a
// DaytonaSnapshot names it built (the component's baseSnapshot override
// creates no DaytonaSnapshot at all).
func (s *DaytonaSnapshotState) record() imageRecord {
	built := true
	return imageRecord{Name: &s.Name, Digest: &s.Digest, Status: &s.State, Built: &built, Superseded: &s.Superseded}
}

// Diff decides from state and local files alone (no Daytona call): a new
// digest rebuilds, an unfinished build retries, an ended grace period
// collects.
func (d *DaytonaSnapshot) Diff(ctx context.Context, req infer.DiffRequest[DaytonaSnapshotArgs, DaytonaSnapshotState]) (infer.DiffResponse, error) {
	olds, news := req.State, req.Inputs
	conn := daytonaConn(ctx, news)
	plan, err := planSnapshot(news, conn.Target)
	if err != nil {
		return infer.DiffResponse{}, err
	}
	return daytonaKind.diff(ctx, imageDiff{Name: plan.name, Digest: plan.digest, OldName: olds.Name, OldDigest: olds.Digest,
		OldStatus: olds.State, Superseded: olds.Superseded, Now: d.now(), Grace: graceOf(news.GracePeriodSeconds),
		Changed: map[string]bool{
			"source":             olds.Source != news.Source,
			"apiUrl":             olds.APIURL != news.APIURL,
			"apiKey":             olds.APIKey != news.APIKey,
			"target":             olds.Target != news.Target,
			"gracePeriodSeconds": family.Deref(olds.GracePeriodSeconds, -1) != family.Deref(news.GracePeriodSeconds, -1),
			"d1DatabaseId":       olds.D1DatabaseID != news.D1DatabaseID,
			"keepOnDelete":       olds.KeepOnDelete != news.KeepOnDelete,
			"namePrefix":         olds.NamePrefix != news.NamePrefix,
		}}), nil
}

// Create builds the snapshot. In a preview it only names it: the name is
// known before anything is built.
func (d *DaytonaSnapshot) Create(ctx context.Context, req infer.CreateRequest[DaytonaSnapshotArgs]) (infer.CreateResponse[DaytonaSnapshotState], error) {
	if req.DryRun && (req.Inputs.Source == "" || req.Inputs.NamePrefix == "") {
		// Inputs not known yet (outputs of other resources): nothing to name.
		return infer.CreateResponse[DaytonaSnapshotState]{Output: DaytonaSnapshotState{DaytonaSnapshotArgs: req.Inputs}}, nil
	}
	conn := daytonaConn(ctx, req.Inputs)
	plan, err := planSnapshot(req.Inputs, conn.Target)
	if err != nil {
		return infer.CreateResponse[DaytonaSnapshotState]{}, err
	}
	state := DaytonaSnapshotState{DaytonaSnapshotArgs: req.Inputs, Name: plan.name, Digest: plan.digest}
	if req.DryRun {
		return infer.CreateResponse[DaytonaSnapshotState]{ID: plan.name, Output: state}, nil
	}
	state.SnapshotAPIURL = conn.APIURL
	if err := d.ensure(ctx, conn, plan, &state); err != nil {
		// The snapshot may exist in some state: record it so the next up
		// retries (or finishes) it rather than finding a stranger.
		return infer.CreateResponse[DaytonaSnapshotState]{ID: plan.name, Output: state}, initFailed(err)
	}
	return infer.CreateResponse[DaytonaSnapshotState]{ID: plan.name, Output: state}, nil
}

// ensure makes plan's snapshot exist and be active, running upstream's
// builder when Daytona has none of that name; state records what was seen.
//
// The builder runs without --force (upstream passes it): the name is
// unique to what the build reads, so an active snapshot of that name is
// already the build (--force would delete it under the sessions using
// it), and a failed or unfinished one is dealt with here through the API
// first (ClaimName deletes a failed build and waits for one in progress),
// which is all --force would do for a rebuild.
func (d *DaytonaSnapshot) ensure(ctx context.Context, conn daytonaapi.Options, plan snapshotPlan, state *DaytonaSnapshotState) error {
	client, err := daytonaClient(conn, DaytonaSnapshotState{})
	if err != nil {
		return err
	}
	log := p.GetLogger(ctx)
	state.SnapshotID = ""
	snap, exists, err := client.ClaimName(ctx, plan.name, func(line string) { log.InfoStatusf("daytona %s: %s", plan.name, line) })
	if err != nil {
		state.State = "unknown"
		return err
	}
	if !exists {
		state.State = daytonaapi.StateBuilding
		if err := d.runBuilder(ctx, conn, plan); err != nil {
			state.State = daytonaapi.StateError
			if s, found, lerr := client.Snapshot(ctx, plan.name); lerr == nil && found {
				state.State = s.State
			}
			return err
		}
		var found bool
		snap, found, err = client.Snapshot(ctx, plan.name)
		if err != nil {
			return err
		}
		if !found {
			state.State = "missing"
			return fmt.Errorf("daytona snapshot %q does not exist after python -m %s succeeded", plan.name, daytonaBuilderModule)
		}
	}
	state.SnapshotID, state.State = snap.ID, snap.State
	if snap.State != daytonaapi.StateActive {
		return fmt.Errorf("daytona snapshot %q is %s after python -m %s succeeded", plan.name, snap.State, daytonaBuilderModule)
	}
	log.Infof("daytona snapshot %s is active (%s)", plan.name, snap.ID)
	return nil
}

// runBuilder runs upstream's `python -m src.bootstrap` from the checkout's
// packages/daytona-infra with the pinned SDK, the name and the credentials.
func (d *DaytonaSnapshot) runBuilder(ctx context.Context, conn daytonaapi.Options, plan snapshotPlan) error {
	r, err := newPythonRunner(ctx, "daytona", "daytona-venvs", conn.APIKey, d.Timeout)
	if err != nil {
		return err
	}
	venv, err := r.PipEnvironment(ctx, []string{plan.sdk})
	if err != nil {
		return err
	}
	env := append(venv.Env(),
		"DAYTONA_API_KEY="+conn.APIKey,
		"DAYTONA_API_URL="+conn.APIURL,
		"DAYTONA_BASE_SNAPSHOT="+plan.name,
		"OPEN_INSPECT_REPO_ROOT="+plan.root,
	)
	if conn.Target != "" {
		env = append(env, "DAYTONA_TARGET="+conn.Target)
	}
	if u, err := url.Parse(conn.APIURL); err == nil && u.Scheme == "http" {
		dir, err := plainHTTPStorage(r.CacheDir)
		if err != nil {
			return err
		}
		env = append(env, "PYTHONPATH="+dir)
	}
	p.GetLogger(ctx).InfoStatusf("daytona: building snapshot %s", plan.name)
	return r.Run(ctx, builder.Step{Name: "python -m " + daytonaBuilderModule, Dir: filepath.Join(plan.root, filepath.FromSlash(daytonaBuilderDir)),
		Stream: true, Env: env, Args: []string{venv.Python(), "-m", daytonaBuilderModule}})
}

// Update builds the new snapshot when the digest moved (or the last build
// did not finish), retiring the old one only once the new one is active,
// then deletes what outlived its grace period.
func (d *DaytonaSnapshot) Update(ctx context.Context, req infer.UpdateRequest[DaytonaSnapshotArgs, DaytonaSnapshotState]) (infer.UpdateResponse[DaytonaSnapshotState], error) {
	conn := daytonaConn(ctx, req.Inputs)
	plan, err := planSnapshot(req.Inputs, conn.Target)
	if err != nil {
		return infer.UpdateResponse[DaytonaSnapshotState]{}, err
	}
	state := req.State
	state.DaytonaSnapshotArgs = req.Inputs
	if req.DryRun {
		state.Name, state.Digest = plan.name, plan.digest
		return infer.UpdateResponse[DaytonaSnapshotState]{Output: state}, nil
	}
	client, err := daytonaClient(conn, state)
	if err != nil {
		return infer.UpdateResponse[DaytonaSnapshotState]{Output: req.State}, err
	}
	state.SnapshotAPIURL = conn.APIURL
	if plan.name != state.Name || state.State != daytonaapi.StateActive {
		err := daytonaKind.replace(state.record(), plan.name, plan.digest, d.now(), func() error {
			return d.ensure(ctx, conn, plan, &state)
		})
		if err != nil {
			return infer.UpdateResponse[DaytonaSnapshotState]{Output: state}, initFailed(err)
		}
	}
	err = daytonaKind.collect(ctx, state.record(), d.now(), graceOf(req.Inputs.GracePeriodSeconds),
		func(name string) error { return client.DeleteSnapshot(ctx, name) })
	return infer.UpdateResponse[DaytonaSnapshotState]{Output: state}, err
}

func appendSuperseded(list []SupersededSnapshot, name string, at time.Time) []SupersededSnapshot {
	if slices.ContainsFunc(list, func(s SupersededSnapshot) bool { return s.Name == name }) {
		return list
	}
	return append(list, SupersededSnapshot{Name: name, RetiredAt: at.UTC().Format(time.RFC3339)})
}

// Read refreshes the current snapshot's state and forgets superseded ones
// deleted elsewhere; a missing current snapshot is rebuilt by the next up.
func (*DaytonaSnapshot) Read(ctx context.Context, req infer.ReadRequest[DaytonaSnapshotArgs, DaytonaSnapshotState]) (infer.ReadResponse[DaytonaSnapshotArgs, DaytonaSnapshotState], error) {
	client, err := daytonaClient(daytonaConn(ctx, req.Inputs), req.State)
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
	client, err := daytonaClient(daytonaConn(ctx, state.DaytonaSnapshotArgs), state)
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
