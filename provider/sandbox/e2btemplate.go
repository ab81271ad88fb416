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
	"github.com/openinspect/pulumi-openinspect/provider/internal/sandbox/e2bapi"
)

// E2bTemplate is an installation's E2B sandbox template, built by
// upstream's own builder (packages/e2b-infra/build-template.py, with the
// e2b SDK its uv.lock pins) under a name made from a digest of everything
// that build reads, so a new build never replaces the template running
// sandboxes use.
type E2bTemplate struct {
	image[E2bTemplateArgs, E2bTemplateState, templatePlan, e2bImages]
}

// e2bImages is E2bTemplate's backend of the shared image lifecycle.
type e2bImages struct{}

// E2bTemplateToken is the E2bTemplate resource's type token.
const E2bTemplateToken = "openinspect:index:E2bTemplate"

// E2B template defaults: upstream's e2b_template_cpu and
// e2b_template_memory_mb.
const (
	defaultE2BCPU      = 2
	defaultE2BMemoryMB = 4096
)

// e2bBuilderDir and e2bRuntimeDir are where the build reads, relative to
// a checkout root.
const (
	e2bBuilderDir = "packages/e2b-infra"
	e2bRuntimeDir = "packages/sandbox-runtime/src"
	e2bBuilder    = "build-template.py"
)

// E2bTemplateArgs are the inputs of an E2bTemplate.
type E2bTemplateArgs struct {
	ImageInputs
	APIURL       string  `pulumi:"apiUrl,optional"`
	APIKey       string  `pulumi:"apiKey" provider:"secret"`
	TemplateID   *string `pulumi:"templateId,optional"`
	CPU          *int    `pulumi:"cpu,optional"`
	MemoryMB     *int    `pulumi:"memoryMb,optional"`
	D1DatabaseID string  `pulumi:"d1DatabaseId,optional"`
}

// E2bTemplateState is what the provider records.
type E2bTemplateState struct {
	E2bTemplateArgs
	// ImageOutputs' Name is the template sessions start from:
	// <namePrefix>-<first 12 of digest>, or templateId when given.
	ImageOutputs
	E2bID  string `pulumi:"e2bTemplateId"`
	Status string `pulumi:"status"`
	Built  bool   `pulumi:"built"`
}

// Annotate documents the resource.
func (e *E2bTemplate) Annotate(a infer.Annotator) {
	a.Describe(e, "An installation's E2B sandbox template, built by upstream's own builder ("+e2bBuilderDir+"/"+e2bBuilder+
		", run with the e2b SDK its uv.lock pins, in a cached environment) from the checkout. It is named "+
		"<namePrefix>-<digest of everything the build reads>, so a changed builder or runtime builds a new template first "+
		"and the old one keeps serving until its grace period ends; a later up deletes it. The build log is reported as "+
		"progress; a failed build fails with the builder's own message and the next up retries it. With templateId "+
		"nothing is built.\n\nOn delete, the sandboxes of the installation's templates and of the sessions its D1 "+
		"database records are killed and the templates it built are deleted; another installation's are never touched.")
}

// Annotate documents the inputs.
func (a *E2bTemplateArgs) Annotate(an infer.Annotator) {
	a.ImageInputs.describe(an, "template", imageDocs{
		source:       "An Open-Inspect checkout root holding " + e2bBuilderDir + " and the sandbox runtime.",
		namePrefix:   "The first part of every template name, unique to the installation (lowercase letters, digits, '-', '_').",
		keepOnDelete: "Keep the templates and sandboxes on delete (the installation's Orphan policy) and say what was kept."})
	an.Describe(&a.APIURL, "E2B REST API base URL (default "+e2bapi.DefaultAPIURL+").")
	an.Describe(&a.APIKey, "E2B API key.")
	an.Describe(&a.TemplateID, "Use this existing template and build nothing (upstream's e2b_template_id).")
	an.Describe(&a.CPU, "vCPUs of the template's sandboxes (default 2).")
	an.Describe(&a.MemoryMB, "Memory of the template's sandboxes in MB, an even number (default 4096).")
	an.Describe(&a.D1DatabaseID, "The installation's D1 database, whose sessions' sandboxes are killed on delete.")
}

// Annotate documents the outputs.
func (s *E2bTemplateState) Annotate(a infer.Annotator) {
	s.ImageOutputs.describe(a, imageDocs{name: "The template's name (the control plane's E2B_TEMPLATE_ID).",
		digest:     "SHA-256 of the builder, the runtime and the template's size; empty with templateId.",
		superseded: "Replaced templates still kept."})
	a.Describe(&s.E2bID, "E2B's ID of the template.")
	a.Describe(&s.Status, "The template's latest build status as last seen (ready once built).")
	a.Describe(&s.Built, "Whether this resource built the template (false with templateId).")
}

var e2bPrefixPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,80}$`)

const (
	e2bReady    = "ready"
	e2bBuilding = "building"
	e2bWaiting  = "waiting"
)

func (e2bImages) kind() imageKind {
	return imageKind{Label: "e2b template", Ready: e2bReady, OverrideKey: "templateId", Root: e2bBuilderRoot, Prefix: e2bPrefixPattern,
		PrefixRule: "lowercase letters, digits, '_' and '-' (at most 81), starting with a letter or digit"}
}

func (e2bImages) override(in E2bTemplateArgs) string { return family.Deref(in.TemplateID, "") }

func (e2bImages) check(args E2bTemplateArgs, known func(string) bool, bad badFunc) {
	if known("apiKey") && strings.TrimSpace(args.APIKey) == "" {
		bad("apiKey", "required: an E2B API key")
	}
	if known("apiUrl") && args.APIURL != "" {
		if _, err := e2bapi.New(args.APIURL, "x"); err != nil {
			bad("apiUrl", "%q is not an http(s) URL", args.APIURL)
		}
	}
	if c := args.CPU; c != nil && (*c < 1 || *c > 8) {
		bad("cpu", "must be between 1 and 8, got %d", *c)
	}
	if m := args.MemoryMB; m != nil && (*m < 512 || *m%2 != 0) {
		bad("memoryMb", "must be an even number of at least 512, got %d", *m)
	}
}

// e2bBuilderRoot is the checkout root holding the builder and the runtime.
func e2bBuilderRoot(source string) (string, error) {
	root, err := builderCheckout(source)
	if err != nil {
		return "", err
	}
	if err := requireInCheckout(root, "the E2B builder is upstream's", false, e2bBuilderDir+"/"+e2bBuilder, e2bBuilderDir+"/uv.lock"); err != nil {
		return "", err
	}
	return root, requireInCheckout(root, "the sandbox runtime is upstream's", true, e2bRuntimeDir)
}

// e2bDigestPatterns are the files the build reads: the builder's own top
// level (not a .venv, nor the runtime copy upstream's script stages beside
// itself) and the runtime.
var e2bDigestPatterns = []string{
	e2bBuilderDir + "/*.py", e2bBuilderDir + "/*.Dockerfile", e2bBuilderDir + "/*.sh",
	e2bBuilderDir + "/pyproject.toml", e2bBuilderDir + "/uv.lock", e2bRuntimeDir + "/**",
}

// templatePlan is what a build would make.
type templatePlan struct {
	imagePlan
	cpu, memoryMB int
}

// planTemplate names the template: the override, or the prefix and a
// digest of the builder's directory, the runtime and the size.
func planTemplate(args E2bTemplateArgs) (templatePlan, error) {
	pl := templatePlan{imagePlan: imagePlan{in: args.ImageInputs},
		cpu: family.Deref(args.CPU, defaultE2BCPU), memoryMB: family.Deref(args.MemoryMB, defaultE2BMemoryMB)}
	if id := family.Deref(args.TemplateID, ""); id != "" {
		pl.name, pl.override, pl.overrideID = id, true, id
		return pl, nil
	}
	return pl, pl.nameByDigest(e2bBuilderRoot, e2bDigestPatterns, 12, fmt.Sprintf("\x00cpu %d\x00memory %d", pl.cpu, pl.memoryMB))
}

// E2bTemplateName is the name an E2bTemplate with these inputs gives its
// template, from local files alone: the installation hands it to the
// control plane, which is uploaded before the template is built.
func E2bTemplateName(source, namePrefix string, cpu, memoryMB *int) (string, error) {
	pl, err := planTemplate(E2bTemplateArgs{ImageInputs: ImageInputs{Source: source, NamePrefix: namePrefix}, CPU: cpu, MemoryMB: memoryMB})
	return pl.name, err
}

func (e2bImages) plan(_ context.Context, in E2bTemplateArgs) (templatePlan, error) {
	return planTemplate(in)
}

func (e2bImages) changed(olds E2bTemplateState, news E2bTemplateArgs) map[string]bool {
	return map[string]bool{"apiUrl": olds.APIURL != news.APIURL, "apiKey": olds.APIKey != news.APIKey,
		"d1DatabaseId": olds.D1DatabaseID != news.D1DatabaseID}
}

func (e2bImages) state(old E2bTemplateState, in E2bTemplateArgs) E2bTemplateState {
	old.E2bTemplateArgs = in
	return old
}

func (e2bImages) record(s *E2bTemplateState) imageRecord {
	return imageRecord{Inputs: &s.ImageInputs, Name: &s.Name, Digest: &s.Digest, Status: &s.Status, Built: &s.Built,
		Superseded: &s.Superseded, Override: &s.Name, Public: []any{&s.E2bID, &s.Built}}
}

func (e2bImages) deleter(ctx context.Context, s *E2bTemplateState) (func(string) error, error) {
	client, err := e2bapi.New(s.APIURL, s.APIKey)
	if err != nil {
		return nil, err
	}
	return func(name string) error { return client.DeleteTemplate(ctx, name) }, nil
}

// ensure makes plan's template exist: the override is looked up, anything
// else built by the builder; state records what was seen.
func (e2bImages) ensure(ctx context.Context, timeout time.Duration, plan templatePlan, state *E2bTemplateState) error {
	state.E2bID = ""
	client, err := e2bapi.New(state.APIURL, state.APIKey)
	if err != nil {
		return err
	}
	if plan.override {
		t, found, err := client.TemplateByName(ctx, plan.name)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("templateId: E2B has no template %q", plan.name)
		}
		state.E2bID, state.Status, state.Built = t.ID, t.BuildStatus, false
		return nil
	}
	state.Built = true
	log := p.GetLogger(ctx)
	// A ready template under this digest's name is this build, finished by a
	// run that was killed before its state was written (or whose state was
	// lost): adopted, not built again. One still building is that run's
	// build, which E2B goes on with after its builder died: waited for, then
	// adopted when it ends ready. One waiting is a build the killed builder
	// requested and never started (it died uploading the files): E2B keeps
	// it waiting and has no call that deletes one build, so a template of
	// this name that never built is deleted before building anew, leaving
	// one build. An error builds anew beside it.
	t, found, err := client.TemplateByName(ctx, plan.name)
	if err != nil {
		return err
	}
	if found && t.BuildStatus == e2bBuilding {
		if t, err = waitForE2BBuild(ctx, timeout, client, plan.name); err != nil {
			return err
		}
	}
	if found && t.BuildStatus == e2bReady {
		state.E2bID, state.Status = t.ID, t.BuildStatus
		log.Infof("e2b template %s is ready (%s), built by an earlier run: not built again", plan.name, t.ID)
		killLeftoverPrewarm(ctx, client, t)
		return nil
	}
	if found && t.BuildStatus == e2bWaiting {
		if err := deleteUnbuiltTemplate(ctx, client, t, plan.name); err != nil {
			return err
		}
	}
	state.Status = e2bBuilding
	if err := runE2BBuilder(ctx, timeout, plan, state); err != nil {
		state.Status = "error"
		return err
	}
	t, found, err = client.TemplateByName(ctx, plan.name)
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("e2b template %q does not exist after %s succeeded", plan.name, e2bBuilder)
	}
	state.E2bID, state.Status = t.ID, t.BuildStatus
	if t.BuildStatus != e2bReady {
		return fmt.Errorf("e2b template %q is %s after %s succeeded", plan.name, t.BuildStatus, e2bBuilder)
	}
	log.Infof("e2b template %s is ready (%s)", plan.name, t.ID)
	// The builder kills its own pre-warm sandbox, but ignores a failed kill.
	killLeftoverPrewarm(ctx, client, t)
	return nil
}

// deleteUnbuiltTemplate deletes the template whose latest build is
// waiting when none of its builds is ready (nothing can run from it, so
// nothing is lost); with a ready build it is left as it is.
func deleteUnbuiltTemplate(ctx context.Context, client *e2bapi.Client, t e2bapi.Template, name string) error {
	builds, err := client.TemplateBuilds(ctx, t.ID)
	if err != nil {
		return fmt.Errorf("e2b: listing the builds of template %s: %w", name, err)
	}
	for _, b := range builds {
		if b.Status == e2bReady {
			return nil
		}
	}
	if err := client.DeleteTemplate(ctx, t.ID); err != nil {
		return fmt.Errorf("e2b: deleting template %s, whose build an earlier run never started: %w", name, err)
	}
	p.GetLogger(ctx).Infof("e2b template %s (%s): an earlier run requested its build and never started it (waiting); "+
		"deleted with its %d unfinished build(s), then built anew", name, t.ID, len(builds))
	return nil
}

// prewarmMetadata is the label upstream's builder gives the sandbox it
// starts from a fresh build and kills at once (its pre-warm).
var prewarmMetadata = map[string]string{"purpose": "template-prewarm"}

// killLeftoverPrewarm kills the pre-warm sandboxes of template t still
// running: a builder killed while deleting its pre-warm leaves it to run
// out its timeout. Sessions' sandboxes of t are never touched. It only
// warns when E2B refuses: the template is built, and the sandbox ends at
// its timeout (the builder gives it 60 s).
func killLeftoverPrewarm(ctx context.Context, client *e2bapi.Client, t e2bapi.Template) {
	log := p.GetLogger(ctx)
	sandboxes, err := client.Sandboxes(ctx, prewarmMetadata)
	if err != nil {
		log.Warningf("e2b: listing pre-warm sandboxes of template %s: %v", t.ID, err)
		return
	}
	for _, sb := range sandboxes {
		if sb.TemplateID != t.ID {
			continue
		}
		if err := client.KillSandbox(ctx, sb.ID); err != nil {
			log.Warningf("e2b: killing pre-warm sandbox %s of template %s: %v (it ends at its timeout)", sb.ID, t.ID, err)
			continue
		}
		log.Infof("e2b: pre-warm sandbox %s of template %s, left running by an earlier build, killed", sb.ID, t.ID)
	}
}

// waitForE2BBuild waits until the named template's latest build is no
// longer building and returns the template.
func waitForE2BBuild(ctx context.Context, timeout time.Duration, client *e2bapi.Client, name string) (e2bapi.Template, error) {
	var t e2bapi.Template
	err := waitForEarlierBuild(ctx, timeout, "e2b template "+name, func(ctx context.Context) (bool, error) {
		var found bool
		var err error
		if t, found, err = client.TemplateByName(ctx, name); err == nil && !found {
			err = fmt.Errorf("e2b template %q was deleted while an earlier run was building it", name)
		}
		return t.BuildStatus != e2bBuilding, err
	})
	return t, err
}

// runE2BBuilder runs upstream's build-template.py with its locked SDK.
func runE2BBuilder(ctx context.Context, timeout time.Duration, plan templatePlan, state *E2bTemplateState) error {
	r, err := newPythonRunner(ctx, "e2b", "e2b-venvs", state.APIKey, timeout)
	if err != nil {
		return err
	}
	dir := filepath.Join(plan.root, filepath.FromSlash(e2bBuilderDir))
	venv, err := r.Environment(ctx, dir)
	if err != nil {
		return err
	}
	apiURL := state.APIURL
	if apiURL == "" {
		apiURL = e2bapi.DefaultAPIURL
	}
	p.GetLogger(ctx).InfoStatusf("e2b: building template %s", plan.name)
	return r.Run(ctx, builder.Step{Name: "python " + e2bBuilder, Dir: dir, Stream: true,
		Env: append(venv.Env(),
			"E2B_API_URL="+apiURL,
			"E2B_API_KEY="+state.APIKey,
			"E2B_TEMPLATE_ID="+plan.name,
			"E2B_TEMPLATE_CPU="+strconv.Itoa(plan.cpu),
			"E2B_TEMPLATE_MEMORY_MB="+strconv.Itoa(plan.memoryMB),
			"COLUMNS=200",
		),
		Args: []string{venv.Python(), e2bBuilder}})
}

// Read refreshes the template's build status and forgets superseded ones
// deleted elsewhere; a missing template is rebuilt by the next up.
func (*E2bTemplate) Read(ctx context.Context, req infer.ReadRequest[E2bTemplateArgs, E2bTemplateState]) (infer.ReadResponse[E2bTemplateArgs, E2bTemplateState], error) {
	state := req.State
	client, err := e2bapi.New(state.APIURL, state.APIKey)
	if err != nil {
		return infer.ReadResponse[E2bTemplateArgs, E2bTemplateState]{}, err
	}
	list, err := client.Templates(ctx)
	if err != nil {
		return infer.ReadResponse[E2bTemplateArgs, E2bTemplateState]{}, err
	}
	byName := map[string]e2bapi.Template{}
	for _, t := range list {
		for _, n := range t.Names {
			byName[n] = t
		}
	}
	if t, found := byName[state.Name]; found {
		state.E2bID, state.Status = t.ID, t.BuildStatus
	} else {
		state.E2bID, state.Status = "", "missing"
	}
	state.Superseded, _ = keepExisting(state.Superseded, func(name string) (bool, error) { _, found := byName[name]; return found, nil })
	return infer.ReadResponse[E2bTemplateArgs, E2bTemplateState]{ID: req.ID, Inputs: req.Inputs, State: state}, nil
}

// Delete kills the installation's sandboxes and deletes the templates it
// built (never an override), or says what it keeps.
func (*E2bTemplate) Delete(ctx context.Context, req infer.DeleteRequest[E2bTemplateState]) (infer.DeleteResponse, error) {
	state := req.State
	names := e2bImages{}.record(&state).owned()
	log := p.GetLogger(ctx)
	if state.KeepOnDelete {
		log.Warningf("e2b templates %s and the installation's sandboxes kept (deletion policy Orphan)", strings.Join(names, ", "))
		return infer.DeleteResponse{}, nil
	}
	client, err := e2bapi.New(state.APIURL, state.APIKey)
	if err != nil {
		return infer.DeleteResponse{}, err
	}
	sessions := map[string]bool{}
	if state.D1DatabaseID != "" {
		recorded, err := recordedSessions(ctx, state.D1DatabaseID)
		if err != nil {
			return infer.DeleteResponse{}, err
		}
		for _, s := range recorded {
			sessions[s] = true
		}
	}
	list, err := client.Templates(ctx)
	if err != nil {
		return infer.DeleteResponse{}, err
	}
	own := map[string]bool{} // E2B IDs of the templates this installation built
	for _, t := range list {
		for _, n := range t.Names {
			if slices.Contains(names, n) {
				own[t.ID] = true
			}
		}
	}
	sandboxes, err := client.Sandboxes(ctx, nil)
	if err != nil {
		return infer.DeleteResponse{}, err
	}
	killed := 0
	for _, sb := range sandboxes {
		// A sandbox of a template this installation built is its own (the
		// template's name is), and blocks the template's deletion; so is one
		// of a session its database records.
		if !own[sb.TemplateID] && !sessions[sb.Metadata[sessionLabel]] {
			continue
		}
		if err := client.KillSandbox(ctx, sb.ID); err != nil {
			return infer.DeleteResponse{}, err
		}
		killed++
	}
	for _, name := range names {
		log.InfoStatusf("e2b: deleting template %s", name)
		if err := client.DeleteTemplate(ctx, name); err != nil {
			return infer.DeleteResponse{}, err
		}
	}
	log.Infof("e2b: %d sandboxes killed and %d templates deleted", killed, len(names))
	return infer.DeleteResponse{}, nil
}
