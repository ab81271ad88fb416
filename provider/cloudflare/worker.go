package cloudflare

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/infer"
	"github.com/pulumi/pulumi-go-provider/infer/types"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"

	"github.com/openinspect/pulumi-openinspect/provider/config"
	"github.com/openinspect/pulumi-openinspect/provider/internal/cloudflare/cfapi"
	"github.com/openinspect/pulumi-openinspect/provider/internal/cron"
	"github.com/openinspect/pulumi-openinspect/provider/internal/family"
	"github.com/openinspect/pulumi-openinspect/provider/internal/upstream"
)

// Worker is a Cloudflare Workers script uploaded as ES modules with its
// bindings, Durable Object migrations, cron triggers, workers.dev route and
// queue consumers.
type Worker struct {
	// ServiceTargetWait bounds how long an upload waits for the targets of
	// its service bindings to appear (default 3 minutes). Workers that bind
	// each other are created in parallel by the engine, so the wait normally
	// ends within seconds.
	ServiceTargetWait time.Duration
	// ServiceTargetPoll is how often the targets are looked for (default 1 s).
	ServiceTargetPoll time.Duration

	boardOnce sync.Once
	scripts   *scriptBoard
}

const WorkerToken = "openinspect:index:Worker"

// WorkerArgs are the inputs of a Worker.
type WorkerArgs struct {
	Name               string                 `pulumi:"name" provider:"replaceOnChanges"`
	Content            string                 `pulumi:"content,optional"`
	Script             *types.AssetOrArchive  `pulumi:"script,optional"`
	MainModule         string                 `pulumi:"mainModule,optional"`
	Modules            map[string]string      `pulumi:"modules,optional"`
	CompatibilityDate  string                 `pulumi:"compatibilityDate,optional"`
	CompatibilityFlags []string               `pulumi:"compatibilityFlags,optional"`
	D1Databases        []D1Binding            `pulumi:"d1Databases,optional"`
	KvNamespaces       []KvBinding            `pulumi:"kvNamespaces,optional"`
	R2Buckets          []R2Binding            `pulumi:"r2Buckets,optional"`
	Queues             []QueueBinding         `pulumi:"queues,optional"`
	Services           []ServiceBinding       `pulumi:"services,optional"`
	DurableObjects     []DurableObjectBinding `pulumi:"durableObjects,optional"`
	Vars               map[string]string      `pulumi:"vars,optional"`
	Secrets            map[string]string      `pulumi:"secrets,optional" provider:"secret"`
	Crons              []string               `pulumi:"crons,optional"`
	WorkersDev         *bool                  `pulumi:"workersDev,optional"`
	QueueConsumers     []QueueConsumer        `pulumi:"queueConsumers,optional"`
	Assets             *WorkerAssets          `pulumi:"assets,optional"`
	AdoptExisting      bool                   `pulumi:"adoptExisting,optional"`
	Ownership
	WorkerSettings
}

// QueueConsumer makes the worker the consumer of a queue.
type QueueConsumer struct {
	QueueID           string `pulumi:"queueId"`
	DeadLetterQueue   string `pulumi:"deadLetterQueue,optional"`
	MaxBatchSize      *int   `pulumi:"maxBatchSize,optional"`
	MaxWaitTimeMs     *int   `pulumi:"maxWaitTimeMs,optional"`
	MaxConcurrency    *int   `pulumi:"maxConcurrency,optional"`
	MaxRetries        *int   `pulumi:"maxRetries,optional"`
	RetryDelaySeconds *int   `pulumi:"retryDelaySeconds,optional"`
}

// WorkerState is what the provider records about a Worker.
type WorkerState struct {
	WorkerArgs
	AccountID string `pulumi:"accountId"`
	// Hash covers everything uploaded except secret values; SecretsHash covers
	// those. Equal hashes mean the upload would be identical, so none is made.
	Hash        string `pulumi:"hash"`
	SecretsHash string `pulumi:"secretsHash" provider:"secret"`
	Etag        string `pulumi:"etag"`
	// MigrationTag and DurableObjectClasses are the script's Durable Object
	// migration history as this stack applied it.
	MigrationTag         string            `pulumi:"migrationTag,optional"`
	DurableObjectClasses []string          `pulumi:"durableObjectClasses,optional"`
	URL                  string            `pulumi:"url,optional"`
	ConsumerIDs          map[string]string `pulumi:"consumerIds,optional"`
	Adopted              bool              `pulumi:"adopted"`

	// AssetsManifest (URL path → content key) and AssetsDigest are the
	// static assets the last upload carried (worker_assets.go).
	AssetsManifest map[string]string `pulumi:"assetsManifest,optional"`
	AssetsDigest   string            `pulumi:"assetsDigest,optional"`
	WorkerRouting
}

var (
	_ infer.ExplicitDependencies[WorkerArgs, WorkerState] = (*Worker)(nil)
	_ infer.CustomCheck[WorkerArgs]                       = (*Worker)(nil)
	_ infer.CustomDiff[WorkerArgs, WorkerState]           = (*Worker)(nil)
	_ infer.CustomUpdate[WorkerArgs, WorkerState]         = (*Worker)(nil)
	_ infer.CustomRead[WorkerArgs, WorkerState]           = (*Worker)(nil)
	_ infer.CustomDelete[WorkerState]                     = (*Worker)(nil)
)

// Annotate documents the resource.
func (w *Worker) Annotate(a infer.Annotator) {
	a.Describe(w, "A Cloudflare Workers script: one ES main module (optionally more modules) uploaded with "+
		"its bindings (D1, KV, R2, queue producers, services, Durable Objects, plain-text vars and secrets), "+
		"compatibility date and flags, Durable Object migrations, cron triggers, the workers.dev route and queue consumers.\n\n"+
		"A content hash over the script, bindings, vars, secrets and settings gates uploads: an unchanged worker is "+
		"never re-uploaded. Secret values are Pulumi secrets end to end and are sent only as `secret_text` bindings.\n\n"+
		"Durable Object classes declared by this worker get a `new_sqlite_classes` migration the first time they "+
		"appear and a `deleted_classes` step when they go; the tag is kept in state, and a script whose tag moved "+
		"elsewhere (error 10079) is continued from its current tag.\n\n"+
		"Service bindings name the target script, so two workers may bind each other: when a target does not exist "+
		"yet, the worker is first uploaded without that binding, and the binding is added as soon as the target "+
		"appears, within the same `pulumi up`.")
}

// Annotate documents the inputs.
func (a *WorkerArgs) Annotate(an infer.Annotator) {
	an.Describe(&a.Name, "Script name. Changing it creates a new worker.")
	an.Describe(&a.Content, "The main module's source. Exactly one of `content` and `script` is set.")
	an.Describe(&a.Script, "The main module as an asset, e.g. `new FileAsset(\"dist/index.js\")`.")
	an.Describe(&a.MainModule, "File name of the main module.")
	an.SetDefault(&a.MainModule, "index.js")
	an.Describe(&a.Modules, "Additional modules by file name, each the module's source.")
	an.Describe(&a.CompatibilityDate, "Workers compatibility date.")
	an.SetDefault(&a.CompatibilityDate, upstream.CompatibilityDate())
	an.Describe(&a.CompatibilityFlags, "Workers compatibility flags, e.g. nodejs_compat.")
	describeFields(an, a, inputDocs(workerBindingKinds))
	an.Describe(&a.Vars, "Plain-text environment variables.")
	an.Describe(&a.Secrets, "Secret environment variables, uploaded as secret_text bindings.")
	an.Describe(&a.Crons, "Cron triggers, set after the script exists.")
	an.Describe(&a.WorkersDev, "Serve the worker on its workers.dev route. Defaults to true.")
	an.Describe(&a.QueueConsumers, "Queues this worker consumes, with their delivery settings.")
	an.Describe(&a.Assets, "Static assets served at the worker's URL (Workers Assets). A worker with assets and no content or script is assets-only.")
	an.Describe(&a.AdoptExisting, "Take over a script that already exists with this name instead of failing with a conflict.")
}

// Annotate documents the outputs.
func (s *WorkerState) Annotate(a infer.Annotator) {
	a.Describe(&s.AccountID, "The Cloudflare account the worker lives in.")
	a.Describe(&s.Hash, "Content hash of the upload, secrets excluded.")
	a.Describe(&s.SecretsHash, "Hash of the secret values.")
	a.Describe(&s.Etag, "The script's etag as Cloudflare reports it.")
	a.Describe(&s.MigrationTag, "The Durable Object migration tag the script is at.")
	a.Describe(&s.DurableObjectClasses, "Durable Object classes this worker declares.")
	a.Describe(&s.URL, "The workers.dev URL, when the route is enabled and the account has a subdomain.")
	a.Describe(&s.ConsumerIDs, "Queue consumer IDs by queue ID.")
	a.Describe(&s.AssetsManifest, "The static assets of the last upload: each URL path's content key.")
	a.Describe(&s.AssetsDigest, "Digest of the static assets' manifest and configuration at the last upload.")
	a.Describe(&s.Adopted, "Whether the script existed before and was adopted rather than created.")
}

// WireDependencies keeps the secrets hash secret: a digest of weak secrets
// could be brute-forced from state.
func (*Worker) WireDependencies(f infer.FieldSelector, _ *WorkerArgs, state *WorkerState) {
	f.OutputField(&state.SecretsHash).AlwaysSecret()
}

// --- validation -------------------------------------------------------------

var (
	scriptNamePattern = regexp.MustCompile(`^[a-z0-9_][a-z0-9_-]{0,62}$`)
	datePattern       = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
	bindingPattern    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// declaredBinding is one API binding with the input field that declares it.
type declaredBinding struct {
	path    string // e.g. "d1Databases[0].binding", "vars.DB"
	binding cfapi.Binding
}

// declaredBindings lists every binding in declaration order: the one place
// that maps each input field to its binding type.
func (a WorkerArgs) declaredBindings() []declaredBinding {
	var out []declaredBinding
	add := func(path string, b cfapi.Binding) { out = append(out, declaredBinding{path, b}) }
	for _, k := range workerBindingKinds {
		k.declare(a, add)
	}
	if a.Assets != nil && a.Assets.Binding != "" {
		add("assets.binding", cfapi.Binding{Type: "assets", Name: a.Assets.Binding})
	}
	for _, k := range moreBindingKinds {
		k.declare(a, add)
	}
	for _, k := range slices.Sorted(maps.Keys(a.Vars)) {
		add("vars."+k, cfapi.Binding{Type: "plain_text", Name: k, Text: new(a.Vars[k])})
	}
	for _, k := range slices.Sorted(maps.Keys(a.Secrets)) {
		add("secrets."+k, cfapi.Binding{Type: "secret_text", Name: k, Text: new(a.Secrets[k])})
	}
	return out
}

// ScriptNameProblem says what is wrong with a worker script name, or "". The
// OpenInspect component applies it, and the binding rules below, to the
// workers it plans.
func ScriptNameProblem(name string) string {
	if scriptNamePattern.MatchString(name) {
		return ""
	}
	return fmt.Sprintf("%q is not a valid worker name: use 1-63 lowercase letters, digits, '-' or '_'", name)
}

// BindingNameProblem says what is wrong with a binding name (a var, secret or
// resource binding in the worker's env), or "".
func BindingNameProblem(name string) string {
	if !bindingPattern.MatchString(name) {
		return fmt.Sprintf("%q is not a valid binding name: use letters, digits and '_', not starting with a digit", name)
	}
	if slices.Contains(jsReservedWords, name) {
		return fmt.Sprintf("%q is a JavaScript reserved word: a binding is a property of the Worker's env, and Cloudflare refuses "+
			"reserved words as binding names; pick another name (e.g. %s)", name, strings.ToUpper(name))
	}
	return ""
}

// jsReservedWords are ECMAScript's reserved words (keywords, the literals
// null, true and false, and the words reserved in strict mode, which ES
// modules always are).
var jsReservedWords = []string{"await", "break", "case", "catch", "class", "const", "continue", "debugger", "default", "delete",
	"do", "else", "enum", "export", "extends", "false", "finally", "for", "function", "if", "implements", "import", "in",
	"instanceof", "interface", "let", "new", "null", "package", "private", "protected", "public", "return", "static", "super",
	"switch", "this", "throw", "true", "try", "typeof", "var", "void", "while", "with", "yield"}

// BindingNames are the binding names of one worker, each with where it was
// declared: vars, secrets and resource bindings share one namespace.
type BindingNames map[string]string

// Add declares name at where and says what is wrong with it (invalid, or
// already declared), or "".
func (b BindingNames) Add(where, name string) string {
	if problem := BindingNameProblem(name); problem != "" {
		return problem
	}
	if first, dup := b[name]; dup {
		return fmt.Sprintf("binding name %s is already used by %s", name, first)
	}
	b[name] = where
	return ""
}

// ScriptFileProblem says what is wrong with a file as a worker's main
// module (unreadable, empty), or "".
func ScriptFileProblem(path string) string {
	return scriptProblem(&types.AssetOrArchive{Asset: &resource.Asset{Path: path}})
}

func scriptProblem(s *types.AssetOrArchive) string {
	size, err := scriptSize(s)
	switch {
	case err != nil:
		return err.Error()
	case size == 0:
		return "the script asset is empty"
	}
	return ""
}

// scriptSize is the main module's length, read from the file system for a
// file (the bundle is not read to find it).
func scriptSize(s *types.AssetOrArchive) (int64, error) {
	path, err := scriptPath(s)
	if err != nil || path == "" {
		return int64(len(s.Asset.Text)), err
	}
	info, err := os.Stat(path)
	if err != nil {
		return 0, fmt.Errorf("reading script %s: %w", path, err)
	}
	if info.IsDir() {
		return 0, fmt.Errorf("reading script %s: it is a directory", path)
	}
	return info.Size(), nil
}

// validate returns every problem with the inputs, each naming its field.
// unknown says which fields a preview does not know yet (family.IsUnknown,
// by path): an unknown value decodes as the zero value, so a problem with
// the field it names is not reported, and a check that reads one field and
// reports another guards the field it reads.
func (a WorkerArgs) validate(unknown func(string) bool) []p.CheckFailure {
	var failures []p.CheckFailure
	report := func(field, format string, args ...any) {
		failures = append(failures, p.CheckFailure{Property: field, Reason: fmt.Sprintf(format, args...)})
	}
	fail := knownOnly(unknown, report)
	if problem := ScriptNameProblem(a.Name); problem != "" {
		fail("name", "%s", problem)
	}
	if !unknown("content") && !unknown("script") {
		switch {
		case a.Content != "" && a.Script != nil:
			fail("script", "set either content or script, not both")
		case a.Content == "" && a.Script == nil && a.Assets == nil && !unknown("assets"):
			fail("content", "the worker has no code: set content or script (or assets, for an assets-only worker)")
		case a.Script != nil && (a.Script.Asset == nil || a.Script.Asset.HasContents()):
			if problem := scriptProblem(a.Script); problem != "" {
				fail("script", "%s", problem)
			}
		}
	}
	if !unknown("compatibilityDate") {
		if problem := compatibilityDateProblem(a.CompatibilityDate, time.Now()); problem != "" {
			fail("compatibilityDate", "%s", problem)
		}
	}
	for i, flag := range a.CompatibilityFlags {
		if problem := compatibilityFlagProblem(flag); problem != "" {
			fail(fmt.Sprintf("compatibilityFlags[%d]", i), "%s", problem)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(a.Modules)) {
		if problem := moduleNameProblem(name); problem != "" {
			fail(family.KeyPath("modules", name), "%s", problem)
		}
	}
	if !unknown("mainModule") && a.MainModule != "" {
		if problem := mainModuleProblem(a.MainModule); problem != "" {
			fail("mainModule", "%s", problem)
		}
	}
	consumed := map[string]int{}
	for i, c := range a.QueueConsumers {
		field := fmt.Sprintf("queueConsumers[%d].queueId", i)
		if c.QueueID == "" || unknown(field) {
			continue
		}
		if j, dup := consumed[c.QueueID]; dup {
			fail(field, "the worker already consumes this queue (queueConsumers[%d]): give each queue once", j)
			continue
		}
		consumed[c.QueueID] = i
	}
	seen := BindingNames{}
	for _, d := range a.declaredBindings() {
		// A var's or secret's name is its map key, known even when its value
		// is not; every other binding's name is the value at its path.
		keyed := d.binding.Type == "plain_text" || d.binding.Type == "secret_text"
		if problem := seen.Add(d.path, d.binding.Name); problem != "" {
			if keyed {
				report(d.path, "%s", problem)
			} else {
				fail(d.path, "%s", problem)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(a.Secrets)) {
		// One secret computed by another resource is unknown at a preview
		// and decodes as "": only a known value can be empty.
		if a.Secrets[k] == "" && !unknown(family.KeyPath("secrets", k)) {
			// Cloudflare refuses the whole upload (10021) for one empty secret_text.
			fail("secrets."+k, "secret %s is empty; Cloudflare refuses an empty secret", k)
		}
	}
	for _, k := range workerBindingKinds {
		k.check(a, fail, unknown)
	}
	scheduled := map[string]int{}
	for i, c := range a.Crons {
		field := fmt.Sprintf("crons[%d]", i)
		if err := cron.Validate(c); err != nil {
			fail(field, "%v", err)
			continue
		}
		// Cloudflare takes the expressions as written: a tab or a no-break
		// space pasted between fields is not a separator it documents, and
		// a repeated expression fails the whole schedule update, which
		// replaces every trigger, so the worker would be left with none.
		if canonical := strings.Join(strings.Fields(c), " "); canonical != c {
			fail(field, "%q separates its fields with something other than single spaces (a tab, a no-break space, "+
				"or spaces around it): write %q", c, canonical)
			continue
		}
		if j, dup := scheduled[c]; dup {
			fail(field, "%q repeats crons[%d]: Cloudflare refuses a schedule that lists an expression twice; give each once", c, j)
			continue
		}
		scheduled[c] = i
	}
	for i, c := range a.QueueConsumers {
		field := func(f string) string { return fmt.Sprintf("queueConsumers[%d].%s", i, f) }
		checkRange := func(name string, v *int, lo, hi int) {
			if v != nil && (*v < lo || *v > hi) {
				fail(field(name), "%d is out of range %d-%d", *v, lo, hi)
			}
		}
		checkRange("maxBatchSize", c.MaxBatchSize, 1, 100)
		checkRange("maxWaitTimeMs", c.MaxWaitTimeMs, 0, 60000)
		checkRange("maxConcurrency", c.MaxConcurrency, 1, 250)
		checkRange("maxRetries", c.MaxRetries, 0, 100)
		checkRange("retryDelaySeconds", c.RetryDelaySeconds, 0, 43200)
	}
	a.validateSettings(fail, unknown)
	return failures
}

// knownOnly wraps a failure reporter so that it drops a problem with a field
// a preview does not know yet (unknown by its path): the check saw the zero
// value the unknown decoded as, not the value it will have.
func knownOnly(unknown func(string) bool, report func(field, format string, args ...any)) func(field, format string, args ...any) {
	return func(field, format string, args ...any) {
		if !unknown(field) {
			report(field, format, args...)
		}
	}
}

// Check validates every field before any remote call; messages carry the
// field path.
func (*Worker) Check(ctx context.Context, req infer.CheckRequest) (infer.CheckResponse[WorkerArgs], error) {
	args, failures, err := infer.DefaultCheck[WorkerArgs](ctx, req.NewInputs)
	if err != nil || len(failures) > 0 {
		return infer.CheckResponse[WorkerArgs]{Inputs: args, Failures: failures}, err
	}
	// Paths, not only top-level keys: at a preview one nested field may be
	// computed (assets.directory, one secret, one binding's target).
	unknown := func(path string) bool { return family.IsUnknown(req.NewInputs, path) }
	if !unknown("name") {
		plannedScripts.add(args.Name) // a target other workers of the run may bind
	}
	failures = args.validate(unknown)
	if len(failures) > 0 {
		return infer.CheckResponse[WorkerArgs]{Inputs: args, Failures: failures}, nil
	}
	limits, err := config.FromContext(ctx).WorkerLimits()
	if err != nil {
		return infer.CheckResponse[WorkerArgs]{Inputs: args}, err
	}
	failures = append(args.limitFailures(limits, unknown), args.assetFailures(limits, unknown)...)
	if len(failures) == 0 && !unknown("assets.directory") && !unknown("assets.files") {
		wd, _ := os.Getwd()
		cache, _ := config.FromContext(ctx).CacheRoot() // without one, nothing is exempt
		for _, warning := range append(args.assetPathWarnings(wd, cache), args.assetRuleWarnings()...) {
			p.GetLogger(ctx).Warning(warning)
		}
	}
	return infer.CheckResponse[WorkerArgs]{Inputs: args, Failures: failures}, nil
}

// CheckArgs is the Worker's own Check on inputs already decoded, without
// its assets: what Check refuses before any call. A parent that passes
// values to a Worker (the OpenInspect component) runs it before registering
// any child, so `up --skip-preview` refuses as early as a preview; unknown
// says which fields the parent does not know yet (by path, as in Check).
func CheckArgs(a WorkerArgs, lim config.WorkerLimits, unknown func(string) bool) []p.CheckFailure {
	return append(a.validate(unknown), a.limitFailures(lim, unknown)...)
}

// compatibilityDateProblem: Cloudflare refuses a date that is not a
// calendar date or that is after today (the runtime has no such version
// yet). A day of slack covers the time zones ahead of UTC.
func compatibilityDateProblem(date string, now time.Time) string {
	if !datePattern.MatchString(date) {
		return fmt.Sprintf("%q is not a date of the form YYYY-MM-DD", date)
	}
	d, err := time.Parse(time.DateOnly, date)
	if err != nil {
		return fmt.Sprintf("%q is not a calendar date", date)
	}
	if latest := now.UTC().AddDate(0, 0, 1); d.After(latest) {
		return fmt.Sprintf("%s is in the future: Cloudflare refuses a compatibility date after today; use today's date (%s) or an earlier one",
			date, now.UTC().Format(time.DateOnly))
	}
	return ""
}

// mainModuleProblem: the main module is the JavaScript module the runtime
// starts, named by a relative path inside the upload.
func mainModuleProblem(name string) string {
	switch {
	case moduleNameProblem(name) != "":
		return moduleNameProblem(name)
	case !isJavaScriptModule(name):
		return fmt.Sprintf("%q is not a JavaScript module: the main module must end in .js or .mjs (other files are uploaded as modules beside it)", name)
	}
	return ""
}

// moduleNameProblem: a module's name is a path inside the upload, which
// the runtime resolves imports against; one that climbs out of it or is
// absolute is refused by the runtime only once the installation is built.
func moduleNameProblem(name string) string {
	segments := strings.Split(name, "/")
	if name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, "\\") ||
		slices.Contains(segments, "..") || slices.Contains(segments, ".") || slices.Contains(segments, "") {
		return fmt.Sprintf("%q is not a module name inside the upload: use a relative slash path without '.', '..' "+
			"or empty segments, e.g. lib/util.mjs", name)
	}
	return ""
}

// --- hashing and the upload ---------------------------------------------------

// scriptPath is the file of a file asset, "" for a text asset.
func scriptPath(s *types.AssetOrArchive) (string, error) {
	if s.Asset == nil {
		return "", fmt.Errorf("the script must be an asset (a file or a string), not an archive")
	}
	a := s.Asset
	switch {
	case a.IsText():
		return "", nil
	case a.IsPath():
		return a.Path, nil
	}
	return "", fmt.Errorf("the script asset must be a file or a string, not a remote URI")
}

// scriptText reads the main module from a text or file asset.
func scriptText(s *types.AssetOrArchive) ([]byte, error) {
	path, err := scriptPath(s)
	if err != nil || path == "" {
		return []byte(s.Asset.Text), err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading script %s: %w", path, err)
	}
	return b, nil
}

// uploadModules are modules() as the upload sends them, without a copy: a
// file asset's bundle is named by its path and streamed from disk into the
// request, an inline one is sent from the input's string.
func (a WorkerArgs) uploadModules() ([]cfapi.Module, error) {
	if a.assetsOnly() {
		return nil, nil
	}
	main := cfapi.Module{Name: a.mainModule(), Text: a.Content}
	if a.Script != nil {
		path, err := scriptPath(a.Script)
		if err != nil {
			return nil, err
		}
		main.Text, main.Path = a.Script.Asset.Text, path
	}
	out := []cfapi.Module{main}
	for _, name := range slices.Sorted(maps.Keys(a.Modules)) {
		out = append(out, cfapi.Module{Name: name, Text: a.Modules[name]})
	}
	return out, nil
}

// modules returns the upload's modules, the main module first.
func (a WorkerArgs) modules() ([]cfapi.Module, error) {
	if a.assetsOnly() {
		return nil, nil
	}
	main := []byte(a.Content)
	if a.Script != nil {
		var err error
		if main, err = scriptText(a.Script); err != nil {
			return nil, err
		}
	}
	out := []cfapi.Module{{Name: a.mainModule(), Content: main}}
	for _, name := range slices.Sorted(maps.Keys(a.Modules)) {
		out = append(out, cfapi.Module{Name: name, Content: []byte(a.Modules[name])})
	}
	return out, nil
}

func (a WorkerArgs) mainModule() string {
	if a.MainModule == "" {
		return "index.js"
	}
	return a.MainModule
}

// declaredBy reports whether the binding's class is declared by script
// (no scriptName, or script's own name).
func (d DurableObjectBinding) declaredBy(script string) bool {
	return d.ScriptName == "" || d.ScriptName == script
}

// ownClasses are the Durable Object classes this script declares.
func (a WorkerArgs) ownClasses() []string {
	set := map[string]bool{}
	for _, d := range a.DurableObjects {
		if d.declaredBy(a.Name) {
			set[d.ClassName] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// bindings returns the API bindings; skip names service targets left out of
// this upload because they do not exist yet.
func (a WorkerArgs) bindings(skip map[string]bool) []cfapi.Binding {
	var out []cfapi.Binding
	for _, d := range a.declaredBindings() {
		if d.binding.Type == "service" && skip[d.binding.Service] {
			continue
		}
		out = append(out, d.binding)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// moduleDigests are the sha256 of each module, the main module first. The
// main module's digest is the asset hash the engine computed when there is
// one: in Diff the engine sends assets without their contents.
func (a WorkerArgs) moduleDigests() ([][2]string, error) {
	var main string
	switch {
	case a.Script != nil && a.Script.Asset != nil && a.Script.Asset.Hash != "":
		main = a.Script.Asset.Hash
	case a.Script != nil:
		path, err := scriptPath(a.Script)
		if err != nil {
			return nil, err
		}
		if path == "" {
			main = family.SHA256HexString(a.Script.Asset.Text)
		} else if main, err = family.SHA256HexFile(path); err != nil {
			return nil, err
		}
	default:
		main = family.SHA256HexString(a.Content)
	}
	out := [][2]string{{a.mainModule(), main}}
	for _, name := range slices.Sorted(maps.Keys(a.Modules)) {
		out = append(out, [2]string{name, family.SHA256HexString(a.Modules[name])})
	}
	return out, nil
}

// hashes returns the content hash (secrets excluded) and the secrets hash.
func (a WorkerArgs) hashes() (content, secrets string, err error) {
	modules, err := a.moduleDigests()
	if err != nil {
		return "", "", err
	}
	assets, err := a.assetsDigest()
	if err != nil {
		return "", "", err
	}
	digest := struct {
		MainModule string
		Modules    [][2]string
		Date       string
		Flags      []string
		Bindings   []cfapi.Binding
		Classes    []string
		Tags       []string `json:",omitempty"` // absent without an owner: hashes from before owners stay valid
		Assets     string   `json:",omitempty"` // likewise absent without assets
		// Settings are absent when none is set, for the same reason.
		Settings *cfapi.ScriptConfig `json:",omitempty"`
	}{MainModule: a.mainModule(), Modules: modules, Date: a.CompatibilityDate, Flags: a.CompatibilityFlags, Classes: a.ownClasses(),
		Tags: a.scriptTags(), Assets: assets, Settings: a.settingsDigest()}
	for _, b := range a.bindings(nil) {
		if b.Type != "secret_text" {
			digest.Bindings = append(digest.Bindings, b)
		}
	}
	raw, err := json.Marshal(digest)
	if err != nil {
		return "", "", err
	}
	secretRaw, err := json.Marshal(a.Secrets) // map keys marshal sorted
	if err != nil {
		return "", "", err
	}
	return family.SHA256Hex(raw), family.SHA256Hex(append([]byte("openinspect-secrets\x00"), secretRaw...)), nil
}

// normalizeEmpty treats nil and empty slices and maps alike, as the wire does.
func normalizeEmpty(v reflect.Value) any {
	switch v.Kind() {
	case reflect.Slice, reflect.Map:
		if v.Len() == 0 {
			return nil
		}
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return normalizeEmpty(v.Elem())
	}
	return v.Interface()
}
