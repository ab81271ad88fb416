package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/openinspect/pulumi-openinspect/provider/config"
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
	image[DaytonaSnapshotArgs, DaytonaSnapshotState, snapshotPlan, daytonaImages]
}

// daytonaImages is DaytonaSnapshot's backend of the shared image lifecycle.
type daytonaImages struct{}

// DaytonaSnapshotToken is the DaytonaSnapshot resource's type token.
const DaytonaSnapshotToken = "openinspect:index:DaytonaSnapshot"

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
	ImageInputs
	// APIURL, APIKey and Target are the installation's Daytona settings
	// (the component passes the ones the control plane gets); each falls
	// back to the provider's daytonaApiUrl, daytonaApiKey and daytonaTarget.
	APIURL       string `pulumi:"apiUrl,optional"`
	APIKey       string `pulumi:"apiKey,optional" provider:"secret"`
	Target       string `pulumi:"target,optional"`
	D1DatabaseID string `pulumi:"d1DatabaseId,optional"`
}

// DaytonaSnapshotState is what the provider records.
type DaytonaSnapshotState struct {
	DaytonaSnapshotArgs
	// ImageOutputs' Name is the current snapshot: <namePrefix>-<first 12
	// of digest>.
	ImageOutputs
	SnapshotID string `pulumi:"snapshotId"`
	State      string `pulumi:"state"`
	// SnapshotAPIURL is the API the snapshots were built in, whichever
	// setting named it.
	SnapshotAPIURL string `pulumi:"snapshotApiUrl"`
}

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
	a.ImageInputs.describe(an, "snapshot", imageDocs{
		source:       "An Open-Inspect checkout root holding " + daytonaBuilderDir + " and the sandbox runtime.",
		namePrefix:   "The first part of every snapshot name, unique to the installation.",
		keepOnDelete: "Keep the snapshots and sandboxes on delete (the installation's Orphan policy) and say what was kept."})
	an.Describe(&a.APIURL, "Daytona REST API base URL (default: the provider's daytonaApiUrl, else "+daytonaapi.DefaultAPIURL+").")
	an.Describe(&a.APIKey, "Daytona API key with snapshot read, write and delete and sandbox read and delete (default: the provider's daytonaApiKey).")
	an.Describe(&a.Target, "Daytona target (region) the snapshot is built for (default: the provider's daytonaTarget, else the organization's default).")
	an.Describe(&a.D1DatabaseID, "The installation's D1 database, whose sessions decide which sandboxes are its own on delete. "+
		"Without it no sandbox is deleted.")
}

// Annotate documents the outputs.
func (s *DaytonaSnapshotState) Annotate(a infer.Annotator) {
	s.ImageOutputs.describe(a, imageDocs{name: "The current snapshot's name (the control plane's DAYTONA_BASE_SNAPSHOT).",
		digest:     "SHA-256 of the builder's sources, the runtime, the SDK pin and the target.",
		superseded: "Replaced snapshots still kept."})
	a.Describe(&s.SnapshotID, "The current snapshot's ID.")
	a.Describe(&s.State, "The current snapshot's state as last seen (active once built).")
	a.Describe(&s.SnapshotAPIURL, "The Daytona API the snapshots live in.")
}

var snapshotPrefixPattern = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,80}$`)

func (daytonaImages) kind() imageKind {
	return imageKind{Label: "daytona snapshot", Ready: daytonaapi.StateActive, Root: daytonaBuilderRoot, Prefix: snapshotPrefixPattern,
		PrefixRule: "letters, digits, '_', '.' and '-' (at most 81), starting with a letter or digit"}
}

// override: a DaytonaSnapshot always builds (the component's baseSnapshot
// override creates no DaytonaSnapshot at all).
func (daytonaImages) override(DaytonaSnapshotArgs) string { return "" }

func (daytonaImages) check(args DaytonaSnapshotArgs, known func(string) bool, bad badFunc) {
	if known("apiUrl") && args.APIURL != "" {
		if _, err := daytonaapi.New(daytonaapi.Options{APIKey: "x", APIURL: args.APIURL}); err != nil {
			bad("apiUrl", "%q is not an http(s) URL", args.APIURL)
		}
	}
	if known("apiKey") && args.APIKey != "" && strings.TrimSpace(args.APIKey) == "" {
		bad("apiKey", "is blank")
	}
}

// daytonaBuilderRoot is the checkout root holding the builder and the
// runtime.
func daytonaBuilderRoot(source string) (string, error) {
	root, err := builderCheckout(source)
	if err != nil {
		return "", err
	}
	if err := requireInCheckout(root, "the Daytona builder is upstream's", false, daytonaBuilderEntry); err != nil {
		return "", err
	}
	c, err := upstream.Load()
	if err != nil {
		return "", err
	}
	return root, requireInCheckout(root, "the sandbox runtime is upstream's", true, c.Sandbox.Daytona.Snapshot.RuntimeSource)
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
	imagePlan
	sdk string
	// conn is the Daytona the snapshot is built in.
	conn daytonaapi.Options
}

// planSnapshot names the snapshot from a digest of the builder's sources,
// the runtime, the SDK pin and the target (what upstream's Terraform
// rebuilds on, bar the name and the API, which here are the name's prefix
// and the API the state is bound to).
func (daytonaImages) plan(ctx context.Context, args DaytonaSnapshotArgs) (snapshotPlan, error) {
	pl := snapshotPlan{imagePlan: imagePlan{in: args.ImageInputs}, conn: daytonaConn(ctx, args)}
	c, err := upstream.Load()
	if err != nil {
		return pl, err
	}
	pl.sdk = daytonaSDKPin(c)
	return pl, pl.nameByDigest(daytonaBuilderRoot, daytonaDigestPatterns, 12, fmt.Sprintf("\x00sdk %s\x00target %s", pl.sdk, pl.conn.Target))
}

func (daytonaImages) changed(olds DaytonaSnapshotState, news DaytonaSnapshotArgs) map[string]bool {
	return map[string]bool{"apiUrl": olds.APIURL != news.APIURL, "apiKey": olds.APIKey != news.APIKey,
		"target": olds.Target != news.Target, "d1DatabaseId": olds.D1DatabaseID != news.D1DatabaseID}
}

func (daytonaImages) state(old DaytonaSnapshotState, in DaytonaSnapshotArgs) DaytonaSnapshotState {
	old.DaytonaSnapshotArgs = in
	return old
}

// record points the shared image lifecycle at the state; every snapshot a
// DaytonaSnapshot names it built.
func (daytonaImages) record(s *DaytonaSnapshotState) imageRecord {
	built := true
	return imageRecord{Inputs: &s.ImageInputs, Name: &s.Name, Digest: &s.Digest, Status: &s.State, Built: &built, Superseded: &s.Superseded,
		Public: []any{&s.SnapshotID, &s.SnapshotAPIURL}}
}

// bind refuses an API other than the one the snapshots were built in, and
// records the plan's API (a state from before snapshotApiUrl has none).
func (daytonaImages) bind(plan snapshotPlan, s *DaytonaSnapshotState) error {
	if _, err := daytonaClient(plan.conn, *s); err != nil {
		return err
	}
	s.SnapshotAPIURL = plan.conn.APIURL
	return nil
}

func (daytonaImages) deleter(ctx context.Context, s *DaytonaSnapshotState) (func(string) error, error) {
	client, err := daytonaClient(daytonaConn(ctx, s.DaytonaSnapshotArgs), *s)
	if err != nil {
		return nil, err
	}
	return func(name string) error { return client.DeleteSnapshot(ctx, name) }, nil
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
func (daytonaImages) ensure(ctx context.Context, timeout time.Duration, plan snapshotPlan, state *DaytonaSnapshotState) error {
	conn := plan.conn
	state.SnapshotAPIURL = conn.APIURL
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
		if err := runDaytonaBuilder(ctx, timeout, plan); err != nil {
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

// runDaytonaBuilder runs upstream's `python -m src.bootstrap` from the checkout's
// packages/daytona-infra with the pinned SDK, the name and the credentials.
func runDaytonaBuilder(ctx context.Context, timeout time.Duration, plan snapshotPlan) error {
	conn := plan.conn
	r, err := newPythonRunner(ctx, "daytona", "daytona-venvs", conn.APIKey, timeout)
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
	if state.Superseded, err = keepExisting(state.Superseded, func(name string) (bool, error) {
		_, found, err := client.Snapshot(ctx, name)
		return found, err
	}); err != nil {
		return infer.ReadResponse[DaytonaSnapshotArgs, DaytonaSnapshotState]{}, err
	}
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

// plainHTTPSitecustomize lets the Daytona Python SDK upload build contexts
// to object storage over plain HTTP. The SDK (0.161.0) makes its
// obstore S3Store inside a cleared environment and passes no client
// options, and obstore refuses an http:// endpoint unless told
// allow_http, so no setting of ours can reach it. Against a plain-HTTP
// Daytona API (a local stand-in such as the emulator; Daytona itself is
// HTTPS and never gets this) the builder runs with this module on
// PYTHONPATH: it adds allow_http for http:// endpoints only and changes
// nothing else the SDK or the builder does.
const plainHTTPSitecustomize = `# Written by pulumi-openinspect for builds against a plain-HTTP Daytona API.
try:
    import obstore.store as _obstore_store
except ImportError:
    _obstore_store = None

if _obstore_store is not None:
    _S3Store = _obstore_store.S3Store

    def _s3_store_allowing_http(*args, **kwargs):
        if str(kwargs.get("endpoint") or "").startswith("http://"):
            options = dict(kwargs.pop("client_options", None) or {})
            options.setdefault("allow_http", True)
            kwargs["client_options"] = options
        return _S3Store(*args, **kwargs)

    _obstore_store.S3Store = _s3_store_allowing_http
`

// plainHTTPStorage writes plainHTTPSitecustomize under cacheDir and
// returns the directory to put on PYTHONPATH.
func plainHTTPStorage(cacheDir string) (string, error) {
	dir := filepath.Join(cacheDir, "plain-http-object-storage")
	file := filepath.Join(dir, "sitecustomize.py")
	if b, err := os.ReadFile(file); err == nil && bytes.Equal(b, []byte(plainHTTPSitecustomize)) {
		return dir, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("daytona: cache: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".sitecustomize-*.py")
	if err != nil {
		return "", fmt.Errorf("daytona: cache: %w", err)
	}
	_, werr := tmp.WriteString(plainHTTPSitecustomize)
	cerr := tmp.Close()
	if werr != nil || cerr != nil {
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("daytona: cache: %w", errors.Join(werr, cerr))
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("daytona: cache: %w", err)
	}
	return dir, nil
}
