package sandbox

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/openinspect/pulumi-openinspect/provider/config"
	"github.com/openinspect/pulumi-openinspect/provider/internal/sandbox/builder"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
)

// The digest-named images built by upstream's builders (E2bTemplate,
// VercelSnapshot, OpenComputerSnapshot) share one lifecycle: the name comes
// from a digest of what the build reads, so a change builds a new image
// first; the one it replaces is kept for a grace period and then deleted; a
// build that did not finish is retried; a manual override builds nothing.
// The steps below are that lifecycle, written once; each resource supplies
// its platform's calls.

// imageRecord points at the fields of a resource's state the shared steps
// read and write.
type imageRecord struct {
	Name, Digest, Status *string
	Built                *bool
	Superseded           *[]SupersededSnapshot
}

// imageKind describes one resource's images for logs and diffs.
type imageKind struct {
	// Label names an image in log lines ("e2b template").
	Label string
	// Ready is the status of a finished image.
	Ready string
	// OverrideKey is the input naming an existing image to use.
	OverrideKey string
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
