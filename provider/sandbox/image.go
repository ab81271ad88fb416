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
	"strings"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"

	"github.com/openinspect/pulumi-openinspect/provider/config"
	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
	"github.com/openinspect/pulumi-openinspect/provider/internal/sandbox/builder"
)

// The digest-named images built by upstream's builders (DaytonaSnapshot,
// E2bTemplate, OpenComputerSnapshot, VercelSnapshot) share one lifecycle:
// the name comes from a digest of what the build reads, so a change builds
// a new image first; the one it replaces is kept for a grace period and then
// deleted; a build that did not finish is retried; a manual override builds
// nothing. That lifecycle is written once here (image: Check, Diff, Create,
// Update, WireDependencies); each resource embeds it and gives only its
// backend (imageBackend): how it names an image, makes one exist and
// deletes one, plus its own Read and Delete.

// ImageInputs are the inputs every image resource shares. Embedded first in
// each resource's inputs, so the schema lists source and namePrefix first
// among the required ones, as it always has.
type ImageInputs struct {
	Source             string `pulumi:"source"`
	NamePrefix         string `pulumi:"namePrefix"`
	GracePeriodSeconds *int   `pulumi:"gracePeriodSeconds,optional"`
	KeepOnDelete       bool   `pulumi:"keepOnDelete,optional"`
}

func (in ImageInputs) image() ImageInputs { return in }

// ImageOutputs are the outputs every image resource shares, beside its
// inputs.
type ImageOutputs struct {
	Name       string               `pulumi:"name"`
	Digest     string               `pulumi:"digest"`
	Superseded []SupersededSnapshot `pulumi:"superseded,optional"`
}

// SupersededSnapshot is a snapshot a newer build replaced, kept until its
// grace period ends.
type SupersededSnapshot struct {
	Name      string `pulumi:"name"`
	RetiredAt string `pulumi:"retiredAt"`
}

// Annotate documents a superseded snapshot.
func (s *SupersededSnapshot) Annotate(a infer.Annotator) {
	a.Describe(s, "A snapshot or template a newer build replaced, kept for the grace period.")
	a.Describe(&s.Name, "Its name.")
	a.Describe(&s.RetiredAt, "When it was replaced (RFC 3339).")
}

// imageDocs are the descriptions of the shared inputs and outputs that
// differ by resource.
type imageDocs struct {
	source, namePrefix, keepOnDelete string
	name, digest, superseded         string
}

// describe documents the shared inputs. noun names one image ("template").
func (in *ImageInputs) describe(an infer.Annotator, noun string, d imageDocs) {
	an.Describe(&in.Source, d.source)
	an.Describe(&in.NamePrefix, d.namePrefix)
	an.Describe(&in.GracePeriodSeconds, "How long a superseded "+noun+" is kept before a later up deletes it (default 86400, a day).")
	an.Describe(&in.KeepOnDelete, d.keepOnDelete)
}

// describe documents the shared outputs.
func (out *ImageOutputs) describe(an infer.Annotator, d imageDocs) {
	an.Describe(&out.Name, d.name)
	an.Describe(&out.Digest, d.digest)
	an.Describe(&out.Superseded, d.superseded)
}

// imageArgs are a resource's inputs: they embed ImageInputs.
type imageArgs interface{ image() ImageInputs }

// imagePlan is what a build would make, as the shared lifecycle reads it;
// each backend's plan embeds it and adds what its builder needs.
type imagePlan struct {
	root, name, digest string
	// override: an existing image is used and nothing is built; overrideID
	// names it (the image's name, or Vercel's snapshot ID).
	override   bool
	overrideID string
	// in are the inputs planned from.
	in ImageInputs
}

func (pl imagePlan) base() imagePlan { return pl }

// id is the resource's ID: the override's, or the image's name.
func (pl imagePlan) id() string {
	if pl.override {
		return pl.overrideID
	}
	return pl.name
}

// planned is a backend's plan: it embeds imagePlan.
type planned interface{ base() imagePlan }

// imageBackend is what one image resource gives the shared lifecycle.
type imageBackend[In imageArgs, Out any, P planned] interface {
	kind() imageKind
	// override is the existing image the inputs name, "" for none.
	override(in In) string
	// check adds the backend's own input failures (the shared inputs are
	// checked by the lifecycle).
	check(in In, known func(key string) bool, bad badFunc)
	// plan names the image from the inputs and local files alone. It fills
	// the shared imagePlan's override and in even when it fails.
	plan(ctx context.Context, in In) (P, error)
	// changed are the backend's own inputs an update applies in place.
	changed(olds Out, news In) map[string]bool
	// state is old with the inputs in.
	state(old Out, in In) Out
	// record points at out's shared fields.
	record(out *Out) imageRecord
	// ensure makes plan's image exist, forgetting what out recorded of the
	// previous one and recording what it saw; each builder step is bounded
	// by timeout.
	ensure(ctx context.Context, timeout time.Duration, plan P, out *Out) error
	// deleter deletes one superseded image.
	deleter(ctx context.Context, out *Out) (func(name string) error, error)
}

// Each image resource's backend, stated once: the compiler checks each
// against imageBackend, and staticcheck's unused check, which cannot follow
// methods called only through a type parameter, sees them used.
var (
	_ imageBackend[DaytonaSnapshotArgs, DaytonaSnapshotState, snapshotPlan]     = daytonaImages{}
	_ imageBackend[E2bTemplateArgs, E2bTemplateState, templatePlan]             = e2bImages{}
	_ imageBackend[OpenComputerSnapshotArgs, OpenComputerSnapshotState, ocPlan] = ocImages{}
	_ imageBackend[VercelSnapshotArgs, VercelSnapshotState, vercelPlan]         = vercelImages{}
)

// imageBinder is a backend whose images belong to one API: bind refuses a
// plan for another and records the plan's API in out, before an update.
type imageBinder[Out any, P planned] interface {
	bind(plan P, out *Out) error
}

type badFunc func(property, format string, a ...any)

// imageResource is what every image resource implements through image.
type imageResource[In, Out any] interface {
	infer.ExplicitDependencies[In, Out]
	infer.CustomCheck[In]
	infer.CustomDiff[In, Out]
	infer.CustomUpdate[In, Out]
	infer.CustomRead[In, Out]
	infer.CustomDelete[Out]
}

var (
	_ imageResource[DaytonaSnapshotArgs, DaytonaSnapshotState]           = (*DaytonaSnapshot)(nil)
	_ imageResource[E2bTemplateArgs, E2bTemplateState]                   = (*E2bTemplate)(nil)
	_ imageResource[OpenComputerSnapshotArgs, OpenComputerSnapshotState] = (*OpenComputerSnapshot)(nil)
	_ imageResource[VercelSnapshotArgs, VercelSnapshotState]             = (*VercelSnapshot)(nil)
)

// image is the shared lifecycle, embedded in each image resource; B is the
// resource's backend, used as its zero value.
type image[In imageArgs, Out any, P planned, B imageBackend[In, Out, P]] struct {
	// Now is the clock superseded images' grace periods are measured with;
	// nil means time.Now.
	Now func() time.Time
	// Timeout bounds each builder step (default builder.DefaultTimeout).
	Timeout time.Duration
}

func (r *image[In, Out, P, B]) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// WireDependencies makes the name and digest known in a preview: both come
// from local files, so the control plane's setting naming the image is
// known before anything is built. The image's name, digest, status, the
// superseded list and the backend's identifiers are never secret: they
// say which image an installation runs, and deriving their secretness
// from the inputs (the API key among them) would hide all of them, and
// every value made from them (the control plane's vars, sandboxStatus).
func (*image[In, Out, P, B]) WireDependencies(f infer.FieldSelector, args *In, state *Out) {
	var b B
	rec := b.record(state)
	f.OutputField(rec.Name).AlwaysKnown()
	f.OutputField(rec.Digest).AlwaysKnown()
	f.OutputField(state).DependsOn(f.InputField(args))
	for _, field := range append([]any{rec.Name, rec.Digest, rec.Status, rec.Superseded}, rec.Public...) {
		f.OutputField(field).NeverSecret()
	}
}

// Check validates the inputs before any remote call.
func (*image[In, Out, P, B]) Check(ctx context.Context, req infer.CheckRequest) (infer.CheckResponse[In], error) {
	args, failures, err := infer.DefaultCheck[In](ctx, req.NewInputs)
	if err != nil {
		return infer.CheckResponse[In]{}, err
	}
	bad := func(property, format string, a ...any) {
		failures = append(failures, p.CheckFailure{Property: property, Reason: fmt.Sprintf(format, a...)})
	}
	known := func(key string) bool { return !family.IsUnknown(req.NewInputs, key) }
	var b B
	k, in := b.kind(), args.image()
	if b.override(args) == "" && known("source") && (k.OverrideKey == "" || known(k.OverrideKey)) {
		if _, err := k.Root(in.Source); err != nil {
			bad("source", "%v", err)
		}
	}
	if known("namePrefix") && !k.Prefix.MatchString(in.NamePrefix) {
		bad("namePrefix", "%q: use %s", in.NamePrefix, k.PrefixRule)
	}
	b.check(args, known, bad)
	if g := in.GracePeriodSeconds; g != nil && *g < 0 {
		bad("gracePeriodSeconds", "must be 0 or more, got %d", *g)
	}
	// A field computed at a preview decodes as its zero value: not a problem yet.
	return infer.CheckResponse[In]{Inputs: args, Failures: family.KnownFailures(req.NewInputs, failures)}, nil
}

// Diff decides from state and local files alone (no call to the platform):
// a new digest rebuilds, an unfinished build retries, an ended grace period
// collects, and any other changed input updates.
func (r *image[In, Out, P, B]) Diff(ctx context.Context, req infer.DiffRequest[In, Out]) (infer.DiffResponse, error) {
	var b B
	olds := req.State
	plan, err := b.plan(ctx, req.Inputs)
	if err != nil {
		return infer.DiffResponse{}, err
	}
	pl, rec := plan.base(), b.record(&olds)
	old, news := rec.Inputs, pl.in
	changed := b.changed(olds, req.Inputs)
	changed["source"] = old.Source != news.Source
	changed["namePrefix"] = old.NamePrefix != news.NamePrefix
	changed["gracePeriodSeconds"] = family.Deref(old.GracePeriodSeconds, -1) != family.Deref(news.GracePeriodSeconds, -1)
	changed["keepOnDelete"] = old.KeepOnDelete != news.KeepOnDelete
	return b.kind().diff(ctx, imageDiff{Name: pl.name, Digest: pl.digest, Override: pl.override,
		OverrideChanged: rec.Override != nil && pl.overrideID != *rec.Override,
		OldName:         *rec.Name, OldDigest: *rec.Digest, OldStatus: *rec.Status,
		Superseded: *rec.Superseded, Now: r.now(), Grace: graceOf(news.GracePeriodSeconds), Changed: changed}), nil
}

// Create builds the image (or takes the override). In a preview it only
// names it: the name is known before anything is built.
func (r *image[In, Out, P, B]) Create(ctx context.Context, req infer.CreateRequest[In]) (infer.CreateResponse[Out], error) {
	var b B
	var zero Out
	plan, err := b.plan(ctx, req.Inputs)
	if pl := plan.base(); req.DryRun && !pl.override && (pl.in.Source == "" || pl.in.NamePrefix == "") {
		// Inputs not known yet (outputs of other resources): nothing to name.
		return infer.CreateResponse[Out]{Output: b.state(zero, req.Inputs)}, nil
	}
	if err != nil {
		return infer.CreateResponse[Out]{}, err
	}
	pl, state := plan.base(), b.state(zero, req.Inputs)
	rec := b.record(&state)
	*rec.Name, *rec.Digest = pl.name, pl.digest
	if req.DryRun {
		return infer.CreateResponse[Out]{ID: pl.id(), Output: state}, nil
	}
	if err := b.ensure(ctx, r.Timeout, plan, &state); err != nil {
		// The image may exist in some state: record it so the next up
		// retries (or finishes) it rather than finding a stranger.
		return infer.CreateResponse[Out]{ID: pl.id(), Output: state}, initFailed(err)
	}
	return infer.CreateResponse[Out]{ID: pl.id(), Output: state}, nil
}

// Update builds the new image when the digest (or the override) moved, or
// the last build did not finish, retiring the old one only once the new one
// is ready, then deletes what outlived its grace period.
func (r *image[In, Out, P, B]) Update(ctx context.Context, req infer.UpdateRequest[In, Out]) (infer.UpdateResponse[Out], error) {
	var b B
	plan, err := b.plan(ctx, req.Inputs)
	if err != nil {
		return infer.UpdateResponse[Out]{}, err
	}
	pl, state := plan.base(), b.state(req.State, req.Inputs)
	rec := b.record(&state)
	if req.DryRun {
		*rec.Name, *rec.Digest = pl.name, pl.digest
		return infer.UpdateResponse[Out]{Output: state}, nil
	}
	if binder, ok := any(b).(imageBinder[Out, P]); ok {
		if err := binder.bind(plan, &state); err != nil {
			return infer.UpdateResponse[Out]{Output: req.State}, err
		}
	}
	k := b.kind()
	if pl.name != *rec.Name || *rec.Status != k.Ready || (pl.override && rec.Override != nil && pl.overrideID != *rec.Override) {
		err := k.replace(rec, pl.name, pl.digest, r.now(), func() error { return b.ensure(ctx, r.Timeout, plan, &state) })
		if err != nil {
			return infer.UpdateResponse[Out]{Output: state}, initFailed(err)
		}
	}
	del, err := b.deleter(ctx, &state)
	if err != nil {
		return infer.UpdateResponse[Out]{Output: state}, err
	}
	err = k.collect(ctx, rec, r.now(), graceOf(pl.in.GracePeriodSeconds), del)
	return infer.UpdateResponse[Out]{Output: state}, err
}

// imageRecord points at the fields of a resource's state the shared steps
// read and write.
type imageRecord struct {
	Inputs               *ImageInputs
	Name, Digest, Status *string
	Built                *bool
	Superseded           *[]SupersededSnapshot
	// Override is the state's field an override is compared with (nil: the
	// resource takes none).
	Override *string
	// Public are the backend's own outputs that identify or describe the
	// image (its API's ID, built, ...): never secret, like Name and Digest.
	Public []any
}

// imageKind describes one resource's images.
type imageKind struct {
	// Label names an image in log lines ("e2b template").
	Label string
	// Ready is the status of a finished image.
	Ready string
	// OverrideKey is the input naming an existing image to use.
	OverrideKey string
	// Prefix is what namePrefix must match, PrefixRule says it in words.
	Prefix     *regexp.Regexp
	PrefixRule string
	// Root is the checkout root holding the builder and what it reads.
	Root func(source string) (string, error)
}

// imageDiff is what the shared Diff compares.
type imageDiff struct {
	Name, Digest string // the plan's
	// Override: an existing image is used; OverrideChanged: a different one
	// than the state records.
	Override, OverrideChanged bool
	// Old is the state's record.
	OldName, OldDigest, OldStatus string
	Superseded                    []SupersededSnapshot
	Now                           time.Time
	Grace                         time.Duration
	// Changed are the other inputs an update applies, by key.
	Changed map[string]bool
}

// diff decides from state and local files alone: a new digest rebuilds, an
// unfinished build retries, an ended grace period collects, and any other
// changed input updates.
func (k imageKind) diff(ctx context.Context, d imageDiff) infer.DiffResponse {
	log := p.GetLogger(ctx)
	detailed := map[string]p.PropertyDiff{}
	switch {
	case d.Override && d.OverrideChanged:
		detailed[k.OverrideKey] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
	case !d.Override && d.Name != d.OldName:
		detailed["source"] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
		log.Infof("%s: rebuild as %s: digest %s -> %s; %s is kept for %s", k.Label, d.Name,
			short(d.OldDigest), short(d.Digest), d.OldName, d.Grace)
	case !d.Override && d.OldStatus != k.Ready:
		detailed["source"] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
		log.Infof("%s %s: build pending (last seen %q)", k.Label, d.Name, d.OldStatus)
	}
	if names := expiredAt(d.Superseded, d.Now, d.Grace); len(names) > 0 {
		detailed["superseded"] = p.PropertyDiff{Kind: p.Update}
		log.Infof("%s: grace period over, deleting %s", k.Label, strings.Join(names, ", "))
	}
	for key, changed := range d.Changed {
		if _, set := detailed[key]; changed && !set {
			detailed[key] = p.PropertyDiff{Kind: p.Update, InputDiff: true}
		}
	}
	return infer.DiffResponse{HasChanges: len(detailed) > 0, DetailedDiff: detailed}
}

// replace makes name (with digest) the record's image through ensure, and
// keeps the image it replaces, when this resource built it, as superseded
// once the new one is ready (or when the old one was ready itself: a
// failed build never strands sessions without an image).
func (k imageKind) replace(rec imageRecord, name, digest string, now time.Time, ensure func() error) error {
	previous, previousReady, previousBuilt := *rec.Name, *rec.Status == k.Ready, *rec.Built
	*rec.Name, *rec.Digest = name, digest
	err := ensure()
	if previous != "" && previous != name && previousBuilt && (err == nil || previousReady) {
		*rec.Superseded = appendSuperseded(*rec.Superseded, previous, now)
	}
	return err
}

// collect deletes the superseded images whose grace period ended, forgetting
// each once deleted, so a failure part-way leaves the rest for the next up.
func (k imageKind) collect(ctx context.Context, rec imageRecord, now time.Time, grace time.Duration, del func(name string) error) error {
	for _, name := range expiredAt(*rec.Superseded, now, grace) {
		p.GetLogger(ctx).InfoStatusf("%s: deleting superseded %s", k.Label, name)
		if err := del(name); err != nil {
			return err
		}
		*rec.Superseded = slices.DeleteFunc(*rec.Superseded, func(s SupersededSnapshot) bool { return s.Name == name })
	}
	return nil
}

// owned are the images a delete removes: the current one when this
// resource built it, and every superseded one.
func (rec imageRecord) owned() []string {
	var names []string
	if *rec.Built && *rec.Name != "" {
		names = append(names, *rec.Name)
	}
	for _, s := range *rec.Superseded {
		names = append(names, s.Name)
	}
	return names
}

// defaultGracePeriod is how long a superseded image is kept.
const defaultGracePeriod = 24 * time.Hour

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

func appendSuperseded(list []SupersededSnapshot, name string, at time.Time) []SupersededSnapshot {
	if slices.ContainsFunc(list, func(s SupersededSnapshot) bool { return s.Name == name }) {
		return list
	}
	return append(list, SupersededSnapshot{Name: name, RetiredAt: at.UTC().Format(time.RFC3339)})
}

// initFailed marks err as a partial create or update, so the engine keeps
// the state returned with it and the next up retries.
func initFailed(err error) error {
	return fmt.Errorf("%w: %w", infer.ResourceInitFailedError{Reasons: []string{err.Error()}}, err)
}

// newRunner is the runner an image resource runs upstream's builder with:
// environments cached under the provider's cacheDir in cacheSub, the build
// log reported as progress, the credential masked, each step bounded by
// timeout (0: builder.DefaultTimeout).
func newRunner(ctx context.Context, label, cacheSub, secret string, timeout time.Duration) (*builder.Runner, error) {
	cache, err := config.FromContext(ctx).CacheRoot()
	if err != nil {
		return nil, err
	}
	log := p.GetLogger(ctx)
	return &builder.Runner{Label: label, CacheDir: filepath.Join(cache, cacheSub),
		Progress: func(s string) { log.InfoStatus(s) }, Redact: []string{secret}, Timeout: timeout}, nil
}

// newPythonRunner is newRunner with the Python the provider is configured
// with, for the builders that run in a Python environment.
func newPythonRunner(ctx context.Context, label, cacheSub, secret string, timeout time.Duration) (*builder.Runner, error) {
	python, err := config.FromContext(ctx).Python()
	if err != nil {
		return nil, err
	}
	r, err := newRunner(ctx, label, cacheSub, secret, timeout)
	if err != nil {
		return nil, err
	}
	r.Python = python
	return r, nil
}

// earlierBuildPoll is how often a build a killed up left running is looked at.
var earlierBuildPoll = 2 * time.Second

// waitForEarlierBuild polls ended until it reports the build of what (a
// killed up's, which the backend goes on with) ended, or fails, for as long
// as a build may take (timeout; 0: the builders' default).
func waitForEarlierBuild(ctx context.Context, timeout time.Duration, what string, ended func(context.Context) (bool, error)) error {
	p.GetLogger(ctx).InfoStatusf("%s is being built by an earlier run; waiting for it", what)
	if timeout <= 0 {
		timeout = builder.DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		done, err := ended(ctx)
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s was still building after %s: %w", what, timeout, ctx.Err())
		case <-time.After(earlierBuildPoll):
		}
	}
}

// builderCheckout is the checkout root of source, the Open-Inspect
// checkout every image's builder reads.
func builderCheckout(source string) (string, error) {
	if source == "" {
		return "", errors.New("required: an Open-Inspect checkout")
	}
	return builder.CheckoutRoot(source)
}

// requireInCheckout fails unless each of rels (slash paths below root)
// exists, naming the missing path and why the build needs it ("the E2B
// builder is upstream's"); with dirs, each must be a directory.
func requireInCheckout(root, why string, dirs bool, rels ...string) error {
	for _, rel := range rels {
		path := filepath.Join(root, filepath.FromSlash(rel))
		if st, err := os.Stat(path); err != nil || (dirs && !st.IsDir()) {
			return fmt.Errorf("%s is missing: %s %s", path, why, rel)
		}
	}
	return nil
}

// nameByDigest names the plan's image <namePrefix>-<first n of digest>, the
// digest being SHA-256 of the files matching patterns in the checkout root
// rootOf finds, then the build's other inputs (extra, each as
// "\x00<what> <value>"), so anything the build reads names a new image.
func (pl *imagePlan) nameByDigest(rootOf func(source string) (string, error), patterns []string, n int, extra string) error {
	root, err := rootOf(pl.in.Source)
	if err != nil {
		return fmt.Errorf("source: %w", err)
	}
	files, err := builder.SourceDigest(root, patterns)
	if err != nil {
		return fmt.Errorf("source: %w", err)
	}
	sum := sha256.Sum256([]byte("files " + files + extra))
	pl.root, pl.digest = root, hex.EncodeToString(sum[:])
	pl.name = pl.in.NamePrefix + "-" + pl.digest[:n]
	return nil
}

// keepExisting are the superseded images exists still finds, so a Read
// forgets those deleted elsewhere.
func keepExisting(list []SupersededSnapshot, exists func(name string) (bool, error)) ([]SupersededSnapshot, error) {
	var kept []SupersededSnapshot
	for _, s := range list {
		found, err := exists(s.Name)
		if err != nil {
			return nil, err
		}
		if found {
			kept = append(kept, s)
		}
	}
	return kept, nil
}
