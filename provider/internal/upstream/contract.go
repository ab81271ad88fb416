package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/openinspect/pulumi-openinspect/provider/internal/cron"
	backgroundagents "github.com/openinspect/pulumi-openinspect/third_party/background-agents"
)

// UpstreamCommit is the pinned upstream commit, as recorded in UPSTREAM_COMMIT.
func UpstreamCommit() string { return backgroundagents.Commit() }

// Raw returns a copy of the embedded contract.json.
func Raw() []byte { return backgroundagents.ContractJSON() }

// SchemaVersion is the version of contract.json's format that Parse reads.
const SchemaVersion = 1

// Contract is the whole record. Its JSON form is contract.json.
type Contract struct {
	// SchemaVersion is the version of this file's format (not of upstream).
	SchemaVersion int `json:"schemaVersion"`
	// Upstream identifies the pinned upstream revision.
	Upstream Upstream `json:"upstream"`
	// Conditions are the named predicates every `when` refers to.
	Conditions map[string]Condition `json:"conditions"`
	// Naming describes how resource names are formed.
	Naming Naming `json:"naming"`
	// Compatibility holds the settings shared by every upstream worker.
	Compatibility Compatibility `json:"compatibility"`
	// Inputs are the values the installer supplies.
	Inputs []Input `json:"inputs"`
	// Generated are random secrets made once per installation.
	Generated []Generated `json:"generated"`
	// Derived are values computed from the installation itself.
	Derived []Derived `json:"derived"`
	// D1Databases lists the D1 databases upstream creates.
	D1Databases []D1Database `json:"d1Databases"`
	// KVNamespaces lists the KV namespaces upstream creates.
	KVNamespaces []KVNamespace `json:"kvNamespaces"`
	// R2Buckets lists the R2 buckets upstream creates.
	R2Buckets []R2Bucket `json:"r2Buckets"`
	// Queues lists the queues upstream creates, with their dead-letter pairing.
	Queues []Queue `json:"queues"`
	// Workers lists the Cloudflare Workers upstream deploys.
	Workers []Worker `json:"workers"`
	// Sandbox describes the Modal and Daytona sandbox backends.
	Sandbox Sandbox `json:"sandbox"`
	// D1Migrations records facts about upstream's migration files and ledger.
	D1Migrations D1Migrations `json:"d1Migrations"`
	// Artefacts records what building the pinned commit yields: how it is
	// built, and the digest of every migration file and reference bundle.
	Artefacts Artefacts `json:"artefacts"`
}

// Upstream identifies the pinned upstream revision.
type Upstream struct {
	Repository string `json:"repository"`
	Commit     string `json:"commit"`
	CommitDate string `json:"commitDate"` // RFC 3339
	Notes      string `json:"notes,omitempty"`
}

// Condition is a named predicate. Default says whether it holds when every
// input and derived value has its default; it is absent for conditions that
// depend on the value of the entry they guard (`set`).
type Condition struct {
	Description string `json:"description"`
	Default     *bool  `json:"default,omitempty"`
	Test        Test   `json:"test"`
}

// Test is a condition's definition. Op is one of:
//
//	always              true
//	set                 the guarded entry's own value is non-empty
//	isTrue              the referenced value is "true"
//	nonEmpty            the referenced value is not ""
//	nonBlank            the referenced value is not blank after trimming
//	equals              the referenced value equals Value
//	allOf, anyOf, not   combine the conditions named in Of (not takes one)
//
// The referenced value is Input (declared in inputs) or Derived (declared in
// derived); exactly one of them is set for the value ops.
type Test struct {
	Op      string   `json:"op"`
	Input   string   `json:"input,omitempty"`
	Derived string   `json:"derived,omitempty"`
	Value   string   `json:"value,omitempty"`
	Of      []string `json:"of,omitempty"`
}

// Condition op names.
const (
	OpAlways   = "always"
	OpSet      = "set"
	OpIsTrue   = "isTrue"
	OpNonEmpty = "nonEmpty"
	OpNonBlank = "nonBlank"
	OpEquals   = "equals"
	OpAllOf    = "allOf"
	OpAnyOf    = "anyOf"
	OpNot      = "not"
)

// Naming describes how resource names are formed.
type Naming struct {
	DefaultPrefix string            `json:"defaultPrefix"`
	Pattern       string            `json:"pattern"`
	Notes         string            `json:"notes,omitempty"`
	Exceptions    []NamingException `json:"exceptions"`
}

// NamingException is a resource kind whose name does not follow Pattern as is.
type NamingException struct {
	Kind    string `json:"kind"`
	Pattern string `json:"pattern"`
	Notes   string `json:"notes,omitempty"`
}

// Name applies the general pattern.
func (n Naming) Name(prefix, logical, deploymentName string) string {
	return prefix + "-" + logical + "-" + deploymentName
}

// Exception returns the naming exception for a resource kind, if any.
func (n Naming) Exception(kind string) (NamingException, bool) {
	for _, e := range n.Exceptions {
		if e.Kind == kind {
			return e, true
		}
	}
	return NamingException{}, false
}

// Compatibility holds the settings shared by every upstream worker.
type Compatibility struct {
	Date       string   `json:"date"`
	Flags      []string `json:"flags"`
	WorkersDev bool     `json:"workersDev"`
	// Observability is the Workers Logs setting upstream's worker module
	// gives every worker it creates.
	Observability *Observability `json:"observability,omitempty"`
}

// Observability is a worker's Workers Logs setting, as Cloudflare's script
// settings carry it.
type Observability struct {
	Enabled          bool              `json:"enabled"`
	HeadSamplingRate float64           `json:"headSamplingRate"`
	Logs             ObservabilityLogs `json:"logs"`
}

// ObservabilityLogs are the persisted logs of Observability.
type ObservabilityLogs struct {
	Enabled          bool    `json:"enabled"`
	HeadSamplingRate float64 `json:"headSamplingRate"`
	InvocationLogs   bool    `json:"invocationLogs"`
}

// Input is a value the installer supplies. Type is string, bool or number;
// Default (absent when Required) has the matching JSON type.
type Input struct {
	Name             string `json:"name"`
	Type             string `json:"type"`
	Required         bool   `json:"required,omitempty"`
	Default          any    `json:"default,omitempty"`
	Secret           bool   `json:"secret,omitempty"`
	UpstreamVariable string `json:"upstreamVariable"`
	Description      string `json:"description"`
}

// DefaultString renders the default as a worker would receive it: booleans as
// "true"/"false", numbers in plain decimal. A required input renders as "".
func (i Input) DefaultString() string {
	s, _ := render(i.Default)
	return s
}

// Generated is a random secret created once and shared by every source that
// names it. Alphabet is "alphanumeric" (Length characters from A-Z, a-z, 0-9)
// or "base64Bytes" (Length random bytes, used in standard padded base64).
type Generated struct {
	Name             string `json:"name"`
	Length           int    `json:"length"`
	Alphabet         string `json:"alphabet"`
	UpstreamResource string `json:"upstreamResource"`
	Description      string `json:"description"`
}

// Alphabets of generated secrets.
const (
	AlphabetAlphanumeric = "alphanumeric"
	AlphabetBase64Bytes  = "base64Bytes"
)

// Derived is a value computed from the installation. PerWorker values need
// the worker named in the source.
type Derived struct {
	Name        string   `json:"name"`
	Default     *string  `json:"default,omitempty"`
	Allowed     []string `json:"allowed,omitempty"`
	PerWorker   bool     `json:"perWorker,omitempty"`
	Description string   `json:"description"`
}

// D1Database is a D1 database upstream creates.
type D1Database struct {
	Logical string `json:"logical"`
	When    string `json:"when"`
	Notes   string `json:"notes,omitempty"`
}

// KVNamespace is a KV namespace upstream creates.
type KVNamespace struct {
	Logical string `json:"logical"`
	When    string `json:"when"`
}

// R2Bucket is an R2 bucket upstream creates.
type R2Bucket struct {
	Logical      string  `json:"logical"`
	When         string  `json:"when"`
	LocationHint *Source `json:"locationHint,omitempty"`
	NameOverride *Source `json:"nameOverride,omitempty"`
}

// Queue is a queue upstream creates. A main queue names its dead-letter queue
// in DeadLetterQueue; the dead-letter queue names it back in DeadLetterFor.
type Queue struct {
	Logical         string `json:"logical"`
	When            string `json:"when"`
	DeadLetterQueue string `json:"deadLetterQueue,omitempty"`
	DeadLetterFor   string `json:"deadLetterFor,omitempty"`
}

// Worker is a Cloudflare Worker upstream deploys.
type Worker struct {
	Logical string `json:"logical"`
	When    string `json:"when"`
	// Package is the upstream package directory; Build runs there.
	Package string `json:"package"`
	Build   string `json:"build"`
	// Bundle is the built ESM bundle, relative to an upstream checkout.
	Bundle string `json:"bundle"`
	// MainModule is the module name the bundle is uploaded under.
	MainModule string   `json:"mainModule"`
	Bindings   Bindings `json:"bindings"`
	// Vars are plain-text bindings; Secrets are secret-text bindings.
	Vars           []EnvEntry      `json:"vars"`
	Secrets        []EnvEntry      `json:"secrets"`
	Crons          []Cron          `json:"crons"`
	QueueConsumers []QueueConsumer `json:"queueConsumers"`
	// DurableObjectClasses are the classes the worker exports, which its
	// Durable Object bindings name.
	DurableObjectClasses []DurableObjectClass `json:"durableObjectClasses,omitempty"`
}

// DurableObjectClass is a Durable Object class a worker exports. Storage is
// "sqlite": the Worker resource creates classes with new_sqlite_classes
// migrations (free plans refuse others).
type DurableObjectClass struct {
	ClassName string `json:"className"`
	Storage   string `json:"storage"`
}

// Bindings groups a worker's resource bindings. An empty When means always.
type Bindings struct {
	D1             []D1Binding            `json:"d1,omitempty"`
	KV             []KVBinding            `json:"kv,omitempty"`
	R2             []R2Binding            `json:"r2,omitempty"`
	QueueProducers []QueueBinding         `json:"queueProducers,omitempty"`
	Services       []ServiceBinding       `json:"services,omitempty"`
	DurableObjects []DurableObjectBinding `json:"durableObjects,omitempty"`
}

// D1Binding binds a D1 database (logical name) to Binding.
type D1Binding struct {
	Binding  string `json:"binding"`
	Database string `json:"database"`
	When     string `json:"when,omitempty"`
}

// KVBinding binds a KV namespace (logical name) to Binding.
type KVBinding struct {
	Binding   string `json:"binding"`
	Namespace string `json:"namespace"`
	When      string `json:"when,omitempty"`
}

// R2Binding binds an R2 bucket (logical name) to Binding.
type R2Binding struct {
	Binding string `json:"binding"`
	Bucket  string `json:"bucket"`
	When    string `json:"when,omitempty"`
}

// QueueBinding is a queue producer binding (queue by logical name).
type QueueBinding struct {
	Binding string `json:"binding"`
	Queue   string `json:"queue"`
	When    string `json:"when,omitempty"`
}

// ServiceBinding binds another worker (logical name) to Binding.
type ServiceBinding struct {
	Binding string `json:"binding"`
	Worker  string `json:"worker"`
	When    string `json:"when,omitempty"`
}

// DurableObjectBinding binds a Durable Object class of the same worker.
type DurableObjectBinding struct {
	Binding   string `json:"binding"`
	ClassName string `json:"className"`
	When      string `json:"when,omitempty"`
}

// EnvEntry is a named value with its source and condition.
type EnvEntry struct {
	Name   string `json:"name"`
	Source Source `json:"source"`
	When   string `json:"when"`
	Notes  string `json:"notes,omitempty"`
}

// Source says where a value comes from; exactly one kind is set:
//
//	{"value": "<literal>"}                  a fixed string, possibly empty
//	{"input": "<name>"}                     a value the installer supplies (declared in inputs);
//	                                        booleans render as "true"/"false", numbers in plain
//	                                        decimal; with "trim": true it is trimmed first
//	{"generated": "<name>", "length": N}    a random secret made once per installation, shared
//	                                        by every place that names it (declared in generated)
//	{"derived": "<name>"}                   a value computed from the installation (declared in
//	                                        derived); "worker": "<logical>" picks a worker's URL
//	{"firstOf": [<source>, ...]}            the first listed source whose value is non-empty
type Source struct {
	Value     *string  `json:"value,omitempty"`
	Input     string   `json:"input,omitempty"`
	Generated string   `json:"generated,omitempty"`
	Length    int      `json:"length,omitempty"`
	Derived   string   `json:"derived,omitempty"`
	Worker    string   `json:"worker,omitempty"`
	FirstOf   []Source `json:"firstOf,omitempty"`
	Trim      bool     `json:"trim,omitempty"`
}

// Source kinds.
const (
	KindValue     = "value"
	KindInput     = "input"
	KindGenerated = "generated"
	KindDerived   = "derived"
	KindFirstOf   = "firstOf"
)

// Kind reports which kind the source is, or "" when it sets none or several.
func (s Source) Kind() string {
	var kinds []string
	if s.Value != nil {
		kinds = append(kinds, KindValue)
	}
	if s.Input != "" {
		kinds = append(kinds, KindInput)
	}
	if s.Generated != "" {
		kinds = append(kinds, KindGenerated)
	}
	if s.Derived != "" {
		kinds = append(kinds, KindDerived)
	}
	if s.FirstOf != nil {
		kinds = append(kinds, KindFirstOf)
	}
	if len(kinds) != 1 {
		return ""
	}
	return kinds[0]
}

// Cron is a cron trigger with what it is for.
type Cron struct {
	Schedule string `json:"schedule"`
	Purpose  string `json:"purpose"`
}

// QueueConsumer is a worker's consumer settings for a queue.
type QueueConsumer struct {
	Queue             string `json:"queue"`
	DeadLetterQueue   string `json:"deadLetterQueue"`
	MaxBatchSize      int    `json:"maxBatchSize"`
	MaxWaitTimeMs     int    `json:"maxWaitTimeMs"`
	MaxConcurrency    int    `json:"maxConcurrency"`
	MaxRetries        int    `json:"maxRetries"`
	RetryDelaySeconds int    `json:"retryDelaySeconds"`
}

// Sandbox describes the sandbox backends this provider deploys. Which backend
// an installation uses is the derived value sandboxProvider.
type Sandbox struct {
	Modal   Modal          `json:"modal"`
	Daytona Daytona        `json:"daytona"`
	Records SandboxRecords `json:"records"`
}

// ProviderEnv names the control-plane vars and secrets a backend contributes;
// each must exist on the control-plane worker.
type ProviderEnv struct {
	ControlPlaneVars    []string `json:"controlPlaneVars"`
	ControlPlaneSecrets []string `json:"controlPlaneSecrets"`
}

// NamedSource is a name with the source of its value.
type NamedSource struct {
	Name   string `json:"name"`
	Source Source `json:"source"`
}

// Modal describes the Modal backend.
type Modal struct {
	ProviderEnv
	AppName            string         `json:"appName"`
	Package            string         `json:"package"`
	DeployEnv          []NamedSource  `json:"deployEnv"`
	DeploySteps        []string       `json:"deploySteps"`
	ModalClientVersion string         `json:"modalClientVersion"`
	Secrets            []ModalSecret  `json:"secrets"`
	SecretsNotes       string         `json:"secretsNotes"`
	Endpoints          ModalEndpoints `json:"endpoints"`
	Health             ModalHealth    `json:"health"`
	Auth               ModalAuth      `json:"auth"`
	ChangeDetection    []string       `json:"changeDetection"`
	Image              ModalImage     `json:"image"`
}

// ModalSecret is a named Modal secret and its keys.
type ModalSecret struct {
	Name string        `json:"name"`
	Keys []NamedSource `json:"keys"`
}

// ModalEndpoints describes how Modal endpoint URLs are formed.
type ModalEndpoints struct {
	URLPattern    string   `json:"urlPattern"`
	WorkspaceSlug string   `json:"workspaceSlug"`
	Functions     []string `json:"functions"`
}

// URL forms a Modal endpoint URL for a function.
func (e ModalEndpoints) URL(appName, workspace, webSuffix, function string) string {
	slug := workspace
	if webSuffix != "" {
		slug += "-" + webSuffix
	}
	return "https://" + slug + "--" + appName + "-" + function + ".modal.run"
}

// ModalHealth is the Modal health endpoint and its response.
type ModalHealth struct {
	Function string          `json:"function"`
	Method   string          `json:"method"`
	Body     json.RawMessage `json:"body"`
}

// ModalAuth describes how the control plane authenticates to Modal.
type ModalAuth struct {
	Header          string `json:"header"`
	Format          string `json:"format"`
	ValiditySeconds int    `json:"validitySeconds"`
}

// ModalImage records the Modal sandbox image's pins.
type ModalImage struct {
	Base           string `json:"base"`
	Node           string `json:"node"`
	Pnpm           string `json:"pnpm"`
	Bun            string `json:"bun"`
	OpencodeAI     string `json:"opencodeAi"`
	OpencodePlugin string `json:"opencodePlugin"`
	CodeServer     string `json:"codeServer"`
	AgentBrowser   string `json:"agentBrowser"`
	Ttyd           string `json:"ttyd"`
	RuntimeVersion string `json:"runtimeVersion"`
}

// SandboxRecords says where an installation's D1 database records what it
// created at its sandbox provider, which scopes teardown to its own.
type SandboxRecords struct {
	SessionsTable       string `json:"sessionsTable"`
	SessionIDColumn     string `json:"sessionIdColumn"`
	ImagesTable         string `json:"imagesTable"`
	ImageIDColumn       string `json:"imageIdColumn"`
	ImageProviderColumn string `json:"imageProviderColumn"`
	Notes               string `json:"notes"`
}

// Daytona describes the Daytona backend.
type Daytona struct {
	ProviderEnv
	Package       string           `json:"package"`
	APIKeyNeeds   string           `json:"apiKeyNeeds"`
	Snapshot      DaytonaSnapshot  `json:"snapshot"`
	Toolchain     DaytonaToolchain `json:"toolchain"`
	SandboxLabels SandboxLabels    `json:"sandboxLabels"`
}

// SandboxLabels are the labels the control plane puts on session sandboxes.
type SandboxLabels struct {
	Framework struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"framework"`
	Session string `json:"session"`
}

// DaytonaSnapshot describes the Daytona base snapshot.
type DaytonaSnapshot struct {
	Name            Source     `json:"name"`
	BaseImage       string     `json:"baseImage"`
	RuntimeSource   string     `json:"runtimeSource"`
	RuntimePath     string     `json:"runtimePath"`
	Workdir         string     `json:"workdir"`
	Entrypoint      []string   `json:"entrypoint"`
	SandboxVersion  string     `json:"sandboxVersion"`
	Rebuild         string     `json:"rebuild"`
	RebuildNotes    string     `json:"rebuildNotes"`
	BuilderSDK      PackagePin `json:"builderSdk"`
	ChangeDetection []string   `json:"changeDetection"`
}

// PackagePin is a package at a version.
type PackagePin struct {
	Package string `json:"package"`
	Version string `json:"version"`
}

// DaytonaToolchain records the tool versions baked into the Daytona snapshot.
type DaytonaToolchain struct {
	Python         string `json:"python"`
	Node           string `json:"node"`
	Pnpm           string `json:"pnpm"`
	Bun            string `json:"bun"`
	OpencodeAI     string `json:"opencodeAi"`
	OpencodePlugin string `json:"opencodePlugin"`
	CodeServer     string `json:"codeServer"`
	AgentBrowser   string `json:"agentBrowser"`
	GhCLI          string `json:"ghCli"`
}

// D1Migrations records facts about upstream's migration files and ledger.
type D1Migrations struct {
	Directory         string   `json:"directory"`
	FilePattern       string   `json:"filePattern"`
	NumberWidth       int      `json:"numberWidth"`
	FileCount         int      `json:"fileCount"`
	First             int      `json:"first"`
	Last              int      `json:"last"`
	Gaps              []int    `json:"gaps"`
	FilesWithTriggers []string `json:"filesWithTriggers"`
	FilesWithPragmas  []string `json:"filesWithPragmas"`
	Applier           string   `json:"applier"`
	Ledger            Ledger   `json:"ledger"`
	Rules             []string `json:"rules"`
}

// Ledger is the migration ledger table.
type Ledger struct {
	Table         string         `json:"table"`
	Columns       []LedgerColumn `json:"columns"`
	VersionFormat string         `json:"versionFormat"`
	NameFormat    string         `json:"nameFormat"`
}

// LedgerColumn is one column of the ledger table. Default is an SQL expression.
type LedgerColumn struct {
	Name       string `json:"name"`
	Type       string `json:"type"`
	PrimaryKey bool   `json:"primaryKey"`
	NotNull    bool   `json:"notNull"`
	Default    string `json:"default,omitempty"`
}

// Artefacts records, as facts, what the pinned commit yields when built the
// reproducible way (the release step, provider/cmd/openinspect-release, which
// writes this section with -record and otherwise checks its output against
// it): the command sequence that works at the pin, the toolchain that built
// the reference bundles, and SHA-256 digests of every migration file and of
// each worker's bundle. Supplied artefacts are verified against it.
type Artefacts struct {
	Notes string `json:"notes"`
	// Install is the dependency install that works at the pin, run at the
	// checkout root; BuildSteps adds a --workspace flag per package built.
	Install string `json:"install"`
	// SharedPackage is the package the workers import from its built dist/:
	// it is built first.
	SharedPackage string `json:"sharedPackage"`
	// Toolchain is what built the reference bundles (node, npm).
	Toolchain map[string]string `json:"toolchain"`
	// Migrations are the digests of the files in d1Migrations.directory, by
	// file name.
	Migrations map[string]string `json:"migrations"`
	// Bundles are the reference bundles, by logical worker.
	Bundles map[string]BundleDigest `json:"bundles"`
	// Web is how the web UI's placeholder build is made and what it yields;
	// absent, the release step builds no web.
	Web *WebArtefact `json:"web,omitempty"`
}

// WebArtefact is the web UI's placeholder OpenNext build: upstream's
// build:cloudflare run once at the pin with a placeholder for every value
// upstream inlines at build time, bundled as wrangler bundles it, its
// per-build keys replaced by fixed stand-ins so that two builds are
// byte-identical (each installation gets its own keys when deployed).
type WebArtefact struct {
	// Package is the web's workspace package.
	Package string `json:"package"`
	// Install and Build run at the checkout root (Build with the
	// placeholders in the environment); Bundle runs in Package, wrangler's
	// dry-run deploy of the package's own config, with -outdir appended.
	Install string `json:"install"`
	Build   string `json:"build"`
	Bundle  string `json:"bundle"`
	// Placeholders maps each inlined NEXT_PUBLIC_* variable to the value the
	// build is made with.
	Placeholders map[string]string `json:"placeholders"`
	// Fonts are what next/font/google is given instead of fetching Google
	// Fonts at build time: the npm package holding the same typefaces, and
	// for each stylesheet URL the build asks for, the family and the file of
	// the package it is served from. Google's files change without notice;
	// a pinned package keeps the build reproducible and offline.
	Fonts WebFonts `json:"fonts"`
	// SHA256, Files and Bytes are the recorded result: the SHA-256 of every
	// output path with its content's SHA-256 (webbuild's digest), the file
	// count and the total size.
	SHA256 string `json:"sha256"`
	Files  int    `json:"files"`
	Bytes  int64  `json:"bytes"`
}

// WebFonts are the build's stand-in for Google Fonts.
type WebFonts struct {
	Package     string                 `json:"package"`
	Stylesheets map[string]WebFontFace `json:"stylesheets"`
}

// WebFontFace is one stylesheet's single variable face.
type WebFontFace struct {
	Family string `json:"family"`
	File   string `json:"file"`
	Weight string `json:"weight"`
}

// BundleDigest is a reference bundle's SHA-256 and size.
type BundleDigest struct {
	SHA256 string `json:"sha256"`
	Bytes  int64  `json:"bytes"`
}

// BuildStep is one command of the build, run at the checkout root.
type BuildStep []string

func (s BuildStep) String() string { return strings.Join(s, " ") }

// BuildSteps is the command sequence that builds the bundles of the named
// workers (every upstream worker when none is named) in a checkout at the
// pin: the install that works there, the shared package, then each worker
// with upstream's own build, every step at the checkout root.
func (c *Contract) BuildSteps(workers ...string) []BuildStep {
	if len(workers) == 0 {
		for _, w := range c.Workers {
			workers = append(workers, w.Logical)
		}
	}
	a := c.Artefacts
	install := BuildStep(strings.Fields(a.Install))
	install = append(install, "--workspace", a.SharedPackage)
	var builds []BuildStep
	for _, logical := range workers {
		w := c.Worker(logical)
		if w == nil {
			continue
		}
		install = append(install, "--workspace", w.Package)
		builds = append(builds, append(BuildStep(strings.Fields(w.Build)), "--workspace", w.Package))
	}
	steps := []BuildStep{install, {"npm", "run", "build", "--workspace", a.SharedPackage}}
	return append(steps, builds...)
}

// BuildCommand is BuildSteps as one shell line.
func (c *Contract) BuildCommand(workers ...string) string {
	var parts []string
	for _, s := range c.BuildSteps(workers...) {
		parts = append(parts, s.String())
	}
	return strings.Join(parts, " && ")
}

// Load decodes the embedded contract strictly: unknown fields and trailing
// data are errors. It does not call Validate.
func Load() (*Contract, error) { return Parse(backgroundagents.ContractJSON()) }

// embedded is the embedded contract, decoded once for the accessors below.
var embedded = sync.OnceValue(func() *Contract {
	c, err := Load()
	if err != nil {
		panic(err) // the embedded file is checked by this package's tests
	}
	return c
})

// CompatibilityDate is the Workers compatibility date upstream pins its
// workers to (compatibility.date): the Worker resource's default.
func CompatibilityDate() string { return embedded().Compatibility.Date }

// Parse decodes a contract document strictly, refusing another format version.
func Parse(data []byte) (*Contract, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c Contract
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("contract.json: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("contract.json: trailing data after the top-level object")
	}
	if c.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("contract.json: schemaVersion %d; this loader reads version %d", c.SchemaVersion, SchemaVersion)
	}
	return &c, nil
}

// Worker returns the worker with the logical name, or nil.
func (c *Contract) Worker(logical string) *Worker {
	for i := range c.Workers {
		if c.Workers[i].Logical == logical {
			return &c.Workers[i]
		}
	}
	return nil
}

// Input returns the declared input, or nil.
func (c *Contract) Input(name string) *Input {
	for i := range c.Inputs {
		if c.Inputs[i].Name == name {
			return &c.Inputs[i]
		}
	}
	return nil
}

// GeneratedSecret returns the declared generated secret, or nil.
func (c *Contract) GeneratedSecret(name string) *Generated {
	for i := range c.Generated {
		if c.Generated[i].Name == name {
			return &c.Generated[i]
		}
	}
	return nil
}

// DerivedValue returns the declared derived value, or nil.
func (c *Contract) DerivedValue(name string) *Derived {
	for i := range c.Derived {
		if c.Derived[i].Name == name {
			return &c.Derived[i]
		}
	}
	return nil
}

// Queue returns the queue with the logical name, or nil.
func (c *Contract) Queue(logical string) *Queue {
	for i := range c.Queues {
		if c.Queues[i].Logical == logical {
			return &c.Queues[i]
		}
	}
	return nil
}

// Var returns the worker's plain-text var with the name, or nil.
func (w *Worker) Var(name string) *EnvEntry { return findEntry(w.Vars, name) }

// Secret returns the worker's secret with the name, or nil.
func (w *Worker) Secret(name string) *EnvEntry { return findEntry(w.Secrets, name) }

func findEntry(entries []EnvEntry, name string) *EnvEntry {
	for i := range entries {
		if entries[i].Name == name {
			return &entries[i]
		}
	}
	return nil
}

// Values are the concrete values of one installation, used to evaluate
// conditions and resolve sources. Inputs and Derived hold rendered strings
// (booleans "true"/"false"); a missing entry falls back to its declared
// default, or "". Per-worker derived values are keyed "<name>:<worker>".
// Generated holds the generated secrets by name.
type Values struct {
	Inputs    map[string]string
	Derived   map[string]string
	Generated map[string]string
}

func (c *Contract) inputValue(v Values, name string) (string, error) {
	if s, ok := v.Inputs[name]; ok {
		return s, nil
	}
	in := c.Input(name)
	if in == nil {
		return "", fmt.Errorf("input %q is not declared", name)
	}
	return in.DefaultString(), nil
}

func (c *Contract) derivedValue(v Values, name, worker string) (string, error) {
	d := c.DerivedValue(name)
	if d == nil {
		return "", fmt.Errorf("derived value %q is not declared", name)
	}
	key := name
	if d.PerWorker {
		key = name + ":" + worker
	}
	if s, ok := v.Derived[key]; ok {
		return s, nil
	}
	if d.Default != nil {
		return *d.Default, nil
	}
	return "", nil
}

// Holds evaluates the named condition. own is the value of the entry the
// condition guards (used by `set`).
func (c *Contract) Holds(name string, v Values, own string) (bool, error) {
	return c.holds(name, v, own, map[string]bool{})
}

func (c *Contract) holds(name string, v Values, own string, visiting map[string]bool) (bool, error) {
	cond, ok := c.Conditions[name]
	if !ok {
		return false, fmt.Errorf("condition %q is not declared", name)
	}
	if visiting[name] {
		return false, fmt.Errorf("condition %q refers to itself", name)
	}
	visiting[name] = true
	defer delete(visiting, name)
	t := cond.Test
	ref := func() (string, error) {
		if t.Input != "" {
			return c.inputValue(v, t.Input)
		}
		return c.derivedValue(v, t.Derived, "")
	}
	switch t.Op {
	case OpAlways:
		return true, nil
	case OpSet:
		return own != "", nil
	case OpIsTrue, OpNonEmpty, OpNonBlank, OpEquals:
		s, err := ref()
		if err != nil {
			return false, err
		}
		switch t.Op {
		case OpIsTrue:
			return s == "true", nil
		case OpNonEmpty:
			return s != "", nil
		case OpNonBlank:
			return strings.TrimSpace(s) != "", nil
		default:
			return s == t.Value, nil
		}
	case OpAllOf, OpAnyOf, OpNot:
		results := make([]bool, 0, len(t.Of))
		for _, sub := range t.Of {
			r, err := c.holds(sub, v, own, visiting)
			if err != nil {
				return false, err
			}
			results = append(results, r)
		}
		switch t.Op {
		case OpNot:
			if len(results) != 1 {
				return false, fmt.Errorf("condition %q: not takes exactly one condition", name)
			}
			return !results[0], nil
		case OpAllOf:
			for _, r := range results {
				if !r {
					return false, nil
				}
			}
			return true, nil
		default:
			for _, r := range results {
				if r {
					return true, nil
				}
			}
			return false, nil
		}
	}
	return false, fmt.Errorf("condition %q: unknown op %q", name, t.Op)
}

// Resolve computes a source's value for an installation.
func (c *Contract) Resolve(s Source, v Values) (string, error) {
	var out string
	switch s.Kind() {
	case KindValue:
		out = *s.Value
	case KindInput:
		val, err := c.inputValue(v, s.Input)
		if err != nil {
			return "", err
		}
		out = val
	case KindGenerated:
		if c.GeneratedSecret(s.Generated) == nil {
			return "", fmt.Errorf("generated secret %q is not declared", s.Generated)
		}
		out = v.Generated[s.Generated]
	case KindDerived:
		val, err := c.derivedValue(v, s.Derived, s.Worker)
		if err != nil {
			return "", err
		}
		out = val
	case KindFirstOf:
		for _, alt := range s.FirstOf {
			val, err := c.Resolve(alt, v)
			if err != nil {
				return "", err
			}
			if val != "" {
				return val, nil
			}
		}
		return "", nil
	default:
		return "", errors.New("source must set exactly one kind")
	}
	if s.Trim {
		out = strings.TrimSpace(out)
	}
	return out, nil
}

// Defaults returns Values holding every declared default, the state the
// conditions' Default fields describe.
func (c *Contract) Defaults() Values {
	v := Values{Inputs: map[string]string{}, Derived: map[string]string{}, Generated: map[string]string{}}
	for _, in := range c.Inputs {
		v.Inputs[in.Name] = in.DefaultString()
	}
	for _, d := range c.Derived {
		if d.Default != nil && !d.PerWorker {
			v.Derived[d.Name] = *d.Default
		}
	}
	return v
}

func render(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	}
	return "", fmt.Errorf("unsupported default of type %T", v)
}

// ValidationError lists every inconsistency Validate found.
type ValidationError struct {
	Problems []string
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("contract has %d problem(s):\n  %s", len(e.Problems), strings.Join(e.Problems, "\n  "))
}

type validator struct {
	c        *Contract
	problems []string
	usedGen  map[string]bool
}

func (v *validator) add(format string, args ...any) {
	v.problems = append(v.problems, fmt.Sprintf(format, args...))
}

var (
	commitRE        = regexp.MustCompile(`^[0-9a-f]{40}$`)
	dateRE          = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
	envNameRE       = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
	logicalRE       = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
	migrationFileRE = regexp.MustCompile(`^(\d+)_[A-Za-z0-9_]+\.sql$`)
)

// Validate checks the contract's internal consistency and returns a
// *ValidationError listing every problem, or nil.
func (c *Contract) Validate() error {
	v := &validator{c: c, usedGen: map[string]bool{}}
	v.upstream()
	v.declarations()
	v.conditions()
	v.naming()
	v.compatibility()
	v.resources()
	for i := range c.Workers {
		v.worker(&c.Workers[i])
	}
	v.consumersAndOrder()
	v.sandbox()
	v.migrations()
	v.artefacts()
	for _, g := range c.Generated {
		if !v.usedGen[g.Name] {
			v.add("generated %q: no source names it", g.Name)
		}
	}
	if len(v.problems) == 0 {
		return nil
	}
	return &ValidationError{Problems: v.problems}
}

func (v *validator) upstream() {
	u := v.c.Upstream
	if !commitRE.MatchString(u.Commit) {
		v.add("upstream.commit %q is not a 40-hex commit", u.Commit)
	}
	if u.Commit != UpstreamCommit() {
		v.add("upstream.commit %q differs from UPSTREAM_COMMIT %q", u.Commit, UpstreamCommit())
	}
	if _, err := time.Parse(time.RFC3339, u.CommitDate); err != nil {
		v.add("upstream.commitDate %q is not RFC 3339", u.CommitDate)
	}
	if !strings.HasPrefix(u.Repository, "https://github.com/") {
		v.add("upstream.repository %q is not a GitHub URL", u.Repository)
	}
}

func (v *validator) declarations() {
	seen := map[string]bool{}
	for _, in := range v.c.Inputs {
		where := fmt.Sprintf("inputs %q", in.Name)
		if in.Name == "" || seen[in.Name] {
			v.add("%s: empty or duplicate name", where)
		}
		seen[in.Name] = true
		if in.Description == "" || in.UpstreamVariable == "" {
			v.add("%s: description and upstreamVariable are required", where)
		}
		if in.Required {
			if in.Default != nil {
				v.add("%s: a required input has no default", where)
			}
			continue
		}
		ok := false
		switch in.Type {
		case "string":
			_, ok = in.Default.(string)
		case "bool":
			_, ok = in.Default.(bool)
		case "number":
			_, ok = in.Default.(float64)
		default:
			v.add("%s: type %q is not string, bool or number", where, in.Type)
			continue
		}
		if !ok {
			v.add("%s: default %v does not have type %s", where, in.Default, in.Type)
		}
	}
	seen = map[string]bool{}
	for _, g := range v.c.Generated {
		where := fmt.Sprintf("generated %q", g.Name)
		if g.Name == "" || seen[g.Name] {
			v.add("%s: empty or duplicate name", where)
		}
		seen[g.Name] = true
		if g.Length <= 0 {
			v.add("%s: length must be positive", where)
		}
		if g.Alphabet != AlphabetAlphanumeric && g.Alphabet != AlphabetBase64Bytes {
			v.add("%s: alphabet %q is not %s or %s", where, g.Alphabet, AlphabetAlphanumeric, AlphabetBase64Bytes)
		}
	}
	seen = map[string]bool{}
	for _, d := range v.c.Derived {
		where := fmt.Sprintf("derived %q", d.Name)
		if d.Name == "" || seen[d.Name] {
			v.add("%s: empty or duplicate name", where)
		}
		seen[d.Name] = true
		if d.Default != nil && len(d.Allowed) > 0 && !slices.Contains(d.Allowed, *d.Default) {
			v.add("%s: default %q is not among allowed %v", where, *d.Default, d.Allowed)
		}
	}
}

func (v *validator) conditions() {
	c := v.c
	for _, name := range slices.Sorted(maps.Keys(c.Conditions)) {
		cond := c.Conditions[name]
		where := fmt.Sprintf("conditions %q", name)
		t := cond.Test
		switch t.Op {
		case OpAlways, OpSet:
		case OpIsTrue, OpNonEmpty, OpNonBlank, OpEquals:
			switch {
			case (t.Input == "") == (t.Derived == ""):
				v.add("%s: op %s needs exactly one of input or derived", where, t.Op)
			case t.Input != "" && c.Input(t.Input) == nil:
				v.add("%s: input %q is not declared in inputs", where, t.Input)
			case t.Derived != "" && c.DerivedValue(t.Derived) == nil:
				v.add("%s: derived %q is not declared in derived", where, t.Derived)
			}
			if t.Op == OpIsTrue && t.Input != "" {
				if in := c.Input(t.Input); in != nil && in.Type != "bool" {
					v.add("%s: isTrue on non-bool input %q", where, t.Input)
				}
			}
		case OpAllOf, OpAnyOf, OpNot:
			if len(t.Of) == 0 || (t.Op == OpNot && len(t.Of) != 1) {
				v.add("%s: op %s has the wrong number of conditions", where, t.Op)
			}
			for _, sub := range t.Of {
				if _, ok := c.Conditions[sub]; !ok {
					v.add("%s: refers to undeclared condition %q", where, sub)
				}
			}
		default:
			v.add("%s: unknown op %q", where, t.Op)
			continue
		}
		if cond.Description == "" {
			v.add("%s: description is required", where)
		}
	}
	if _, ok := c.Conditions["always"]; !ok {
		v.add("conditions: %q must be declared", "always")
	}
	if _, ok := c.Conditions["set"]; !ok {
		v.add("conditions: %q must be declared", "set")
	}
	// Defaults must agree with evaluation under declared defaults.
	defaults := c.Defaults()
	for _, name := range slices.Sorted(maps.Keys(c.Conditions)) {
		cond := c.Conditions[name]
		dependsOnOwn, err := c.usesSet(name, map[string]bool{})
		if err != nil {
			v.add("conditions %q: %v", name, err)
			continue
		}
		if dependsOnOwn {
			if cond.Default != nil {
				v.add("conditions %q: depends on the guarded value, so it has no default", name)
			}
			continue
		}
		if cond.Default == nil {
			v.add("conditions %q: default is required", name)
			continue
		}
		got, err := c.Holds(name, defaults, "")
		if err != nil {
			v.add("conditions %q: %v", name, err)
			continue
		}
		if got != *cond.Default {
			v.add("conditions %q: default says %t but evaluates to %t under declared defaults", name, *cond.Default, got)
		}
	}
}

func (c *Contract) usesSet(name string, visiting map[string]bool) (bool, error) {
	cond, ok := c.Conditions[name]
	if !ok {
		return false, fmt.Errorf("undeclared condition %q", name)
	}
	if visiting[name] {
		return false, fmt.Errorf("cycle through condition %q", name)
	}
	visiting[name] = true
	defer delete(visiting, name)
	if cond.Test.Op == OpSet {
		return true, nil
	}
	for _, sub := range cond.Test.Of {
		u, err := c.usesSet(sub, visiting)
		if err != nil || u {
			return u, err
		}
	}
	return false, nil
}

func (v *validator) when(where, when string) {
	if when == "" {
		v.add("%s: when is required", where)
		return
	}
	if _, ok := v.c.Conditions[when]; !ok {
		v.add("%s: when %q is not declared in conditions", where, when)
	}
}

// optWhen checks an optional when (empty means always) and returns its
// effective value.
func (v *validator) optWhen(where, when string) string {
	if when == "" {
		return "always"
	}
	v.when(where, when)
	return when
}

func (v *validator) source(where string, s Source) {
	switch s.Kind() {
	case "":
		v.add("%s: source must set exactly one of value, input, generated, derived, firstOf", where)
		return
	case KindValue:
	case KindInput:
		if v.c.Input(s.Input) == nil {
			v.add("%s: input %q is not declared in inputs", where, s.Input)
		}
	case KindGenerated:
		g := v.c.GeneratedSecret(s.Generated)
		if g == nil {
			v.add("%s: generated %q is not declared in generated", where, s.Generated)
		} else {
			v.usedGen[g.Name] = true
			if s.Length != g.Length {
				v.add("%s: generated %q has length %d, source says %d", where, s.Generated, g.Length, s.Length)
			}
		}
	case KindDerived:
		d := v.c.DerivedValue(s.Derived)
		switch {
		case d == nil:
			v.add("%s: derived %q is not declared in derived", where, s.Derived)
		case d.PerWorker && v.c.Worker(s.Worker) == nil:
			v.add("%s: derived %q needs a declared worker, got %q", where, s.Derived, s.Worker)
		case !d.PerWorker && s.Worker != "":
			v.add("%s: derived %q takes no worker", where, s.Derived)
		}
	case KindFirstOf:
		if len(s.FirstOf) < 2 {
			v.add("%s: firstOf needs at least two sources", where)
		}
		for i, alt := range s.FirstOf {
			v.source(fmt.Sprintf("%s.firstOf[%d]", where, i), alt)
		}
	}
	if s.Length != 0 && s.Kind() != KindGenerated {
		v.add("%s: length only applies to generated sources", where)
	}
	if s.Worker != "" && s.Kind() != KindDerived {
		v.add("%s: worker only applies to derived sources", where)
	}
	if s.Trim && s.Kind() != KindInput {
		v.add("%s: trim only applies to input sources", where)
	}
}

func (v *validator) naming() {
	n := v.c.Naming
	for _, part := range []string{"<prefix>", "<logical>", "<deploymentName>"} {
		if !strings.Contains(n.Pattern, part) {
			v.add("naming.pattern %q lacks %s", n.Pattern, part)
		}
	}
	if !logicalRE.MatchString(n.DefaultPrefix) {
		v.add("naming.defaultPrefix %q is not a lowercase name", n.DefaultPrefix)
	}
	if _, ok := n.Exception("d1Database"); !ok {
		v.add("naming.exceptions: the d1Database exception is missing")
	}
}

func (v *validator) compatibility() {
	cp := v.c.Compatibility
	if !dateRE.MatchString(cp.Date) {
		v.add("compatibility.date %q is not YYYY-MM-DD", cp.Date)
	}
	if o := cp.Observability; o != nil {
		for name, rate := range map[string]float64{"headSamplingRate": o.HeadSamplingRate, "logs.headSamplingRate": o.Logs.HeadSamplingRate} {
			if rate < 0 || rate > 1 {
				v.add("compatibility.observability.%s %v is not between 0 and 1", name, rate)
			}
		}
	}
}

func (v *validator) resources() {
	c := v.c
	check := func(kind, logical, when string, seen map[string]bool) {
		where := fmt.Sprintf("%s %q", kind, logical)
		if !logicalRE.MatchString(logical) || seen[logical] {
			v.add("%s: invalid or duplicate logical name", where)
		}
		seen[logical] = true
		v.when(where, when)
	}
	seen := map[string]bool{}
	for _, d := range c.D1Databases {
		check("d1Databases", d.Logical, d.When, seen)
	}
	seen = map[string]bool{}
	for _, k := range c.KVNamespaces {
		check("kvNamespaces", k.Logical, k.When, seen)
	}
	seen = map[string]bool{}
	for _, b := range c.R2Buckets {
		check("r2Buckets", b.Logical, b.When, seen)
		if b.LocationHint != nil {
			v.source(fmt.Sprintf("r2Buckets %q: locationHint", b.Logical), *b.LocationHint)
		}
		if b.NameOverride != nil {
			v.source(fmt.Sprintf("r2Buckets %q: nameOverride", b.Logical), *b.NameOverride)
		}
	}
	seen = map[string]bool{}
	for _, q := range c.Queues {
		check("queues", q.Logical, q.When, seen)
		where := fmt.Sprintf("queues %q", q.Logical)
		switch {
		case q.DeadLetterQueue != "" && q.DeadLetterFor != "":
			v.add("%s: a queue is either a main queue or a dead-letter queue", where)
		case q.DeadLetterQueue != "":
			dlq := c.Queue(q.DeadLetterQueue)
			if dlq == nil {
				v.add("%s: deadLetterQueue %q is not declared in queues", where, q.DeadLetterQueue)
			} else {
				if dlq.DeadLetterFor != q.Logical {
					v.add("%s: deadLetterQueue %q does not name it back in deadLetterFor", where, q.DeadLetterQueue)
				}
				if dlq.When != q.When {
					v.add("%s: deadLetterQueue %q has when %q, queue has %q", where, dlq.Logical, dlq.When, q.When)
				}
			}
		case q.DeadLetterFor != "":
			main := c.Queue(q.DeadLetterFor)
			if main == nil || main.DeadLetterQueue != q.Logical {
				v.add("%s: deadLetterFor %q does not name it as its deadLetterQueue", where, q.DeadLetterFor)
			}
		}
	}
	seen = map[string]bool{}
	for _, w := range c.Workers {
		if !logicalRE.MatchString(w.Logical) || seen[w.Logical] {
			v.add("workers %q: invalid or duplicate logical name", w.Logical)
		}
		seen[w.Logical] = true
	}
	if c.Worker("control-plane") == nil {
		v.add("workers: %q must be declared", "control-plane")
	}
}

// targetWhen checks that a binding's target exists whenever the binding does:
// the target is unconditional or shares the binding's or the worker's condition.
func (v *validator) targetWhen(where, targetKind, target, targetWhen, bindingWhen, workerWhen string) {
	if targetWhen == "always" || targetWhen == bindingWhen || targetWhen == workerWhen {
		return
	}
	v.add("%s: %s %q exists only when %q, but the binding applies when %q in a worker deployed when %q",
		where, targetKind, target, targetWhen, bindingWhen, workerWhen)
}

func (v *validator) worker(w *Worker) {
	c := v.c
	wn := fmt.Sprintf("worker %q", w.Logical)
	v.when(wn, w.When)
	if w.Bundle == "" || w.MainModule == "" || w.Package == "" || w.Build == "" {
		v.add("%s: package, build, bundle and mainModule are required", wn)
	}
	if w.Package != "" && !strings.HasPrefix(w.Bundle, w.Package+"/") {
		v.add("%s: bundle %q is not inside package %q", wn, w.Bundle, w.Package)
	}
	names := map[string]string{}
	claim := func(field, name string) {
		where := fmt.Sprintf("%s: %s %q", wn, field, name)
		if !envNameRE.MatchString(name) {
			v.add("%s: binding name is not UPPER_SNAKE_CASE", where)
		}
		if prev, dup := names[name]; dup {
			v.add("%s: duplicate binding name (also %s)", where, prev)
			return
		}
		names[name] = field
	}

	b := w.Bindings
	for i, d := range b.D1 {
		field := fmt.Sprintf("bindings.d1[%d]", i)
		claim(field, d.Binding)
		bw := v.optWhen(wn+": "+field, d.When)
		found := false
		for _, db := range c.D1Databases {
			if db.Logical == d.Database {
				found = true
				v.targetWhen(wn+": "+field, "d1 database", db.Logical, db.When, bw, w.When)
			}
		}
		if !found {
			v.add("%s: %s %q: database %q is not declared in d1Databases", wn, field, d.Binding, d.Database)
		}
	}
	for i, k := range b.KV {
		field := fmt.Sprintf("bindings.kv[%d]", i)
		claim(field, k.Binding)
		bw := v.optWhen(wn+": "+field, k.When)
		found := false
		for _, ns := range c.KVNamespaces {
			if ns.Logical == k.Namespace {
				found = true
				v.targetWhen(wn+": "+field, "kv namespace", ns.Logical, ns.When, bw, w.When)
			}
		}
		if !found {
			v.add("%s: %s %q: namespace %q is not declared in kvNamespaces", wn, field, k.Binding, k.Namespace)
		}
	}
	for i, r := range b.R2 {
		field := fmt.Sprintf("bindings.r2[%d]", i)
		claim(field, r.Binding)
		bw := v.optWhen(wn+": "+field, r.When)
		found := false
		for _, bk := range c.R2Buckets {
			if bk.Logical == r.Bucket {
				found = true
				v.targetWhen(wn+": "+field, "r2 bucket", bk.Logical, bk.When, bw, w.When)
			}
		}
		if !found {
			v.add("%s: %s %q: bucket %q is not declared in r2Buckets", wn, field, r.Binding, r.Bucket)
		}
	}
	for i, q := range b.QueueProducers {
		field := fmt.Sprintf("bindings.queueProducers[%d]", i)
		claim(field, q.Binding)
		bw := v.optWhen(wn+": "+field, q.When)
		if tq := c.Queue(q.Queue); tq == nil {
			v.add("%s: %s %q: queue %q is not declared in queues", wn, field, q.Binding, q.Queue)
		} else {
			v.targetWhen(wn+": "+field, "queue", tq.Logical, tq.When, bw, w.When)
		}
	}
	for i, s := range b.Services {
		field := fmt.Sprintf("bindings.services[%d]", i)
		claim(field, s.Binding)
		v.when(fmt.Sprintf("%s: %s %q", wn, field, s.Binding), s.When)
		if s.Worker == w.Logical {
			v.add("%s: %s %q: a worker cannot bind itself", wn, field, s.Binding)
		}
		if tw := c.Worker(s.Worker); tw == nil {
			v.add("%s: %s %q: worker %q is not declared in workers", wn, field, s.Binding, s.Worker)
		} else {
			v.targetWhen(wn+": "+field, "worker", tw.Logical, tw.When, s.When, w.When)
		}
	}
	classes := map[string]bool{}
	for i, dc := range w.DurableObjectClasses {
		where := fmt.Sprintf("%s: durableObjectClasses[%d] %q", wn, i, dc.ClassName)
		if dc.ClassName == "" || classes[dc.ClassName] {
			v.add("%s: empty or duplicate class", where)
		}
		classes[dc.ClassName] = true
		if dc.Storage != "sqlite" {
			v.add("%s: storage %q; only sqlite classes are declared (free plans refuse others)", where, dc.Storage)
		}
	}
	for i, d := range b.DurableObjects {
		field := fmt.Sprintf("bindings.durableObjects[%d]", i)
		claim(field, d.Binding)
		v.optWhen(wn+": "+field, d.When)
		if !classes[d.ClassName] {
			v.add("%s: %s %q: class %q is not in the worker's durableObjectClasses", wn, field, d.Binding, d.ClassName)
		}
	}
	for i, e := range w.Vars {
		field := fmt.Sprintf("vars[%d]", i)
		claim(field, e.Name)
		v.entry(fmt.Sprintf("%s: %s %q", wn, field, e.Name), e)
	}
	for i, e := range w.Secrets {
		field := fmt.Sprintf("secrets[%d]", i)
		claim(field, e.Name)
		v.entry(fmt.Sprintf("%s: %s %q", wn, field, e.Name), e)
	}
	schedules := map[string]bool{}
	for i, cr := range w.Crons {
		where := fmt.Sprintf("%s: crons[%d] %q", wn, i, cr.Schedule)
		if err := cron.Validate(cr.Schedule); err != nil {
			v.add("%s: %v", where, err)
		}
		if schedules[cr.Schedule] {
			v.add("%s: duplicate schedule", where)
		}
		schedules[cr.Schedule] = true
	}
	for i, qc := range w.QueueConsumers {
		v.consumer(fmt.Sprintf("%s: queueConsumers[%d] %q", wn, i, qc.Queue), w, qc)
	}
}

func (v *validator) entry(where string, e EnvEntry) {
	v.when(where, e.When)
	v.source(where+": source", e.Source)
}

func (v *validator) consumer(where string, w *Worker, qc QueueConsumer) {
	q := v.c.Queue(qc.Queue)
	if q == nil {
		v.add("%s: queue %q is not declared in queues", where, qc.Queue)
		return
	}
	if q.DeadLetterFor != "" {
		v.add("%s: consumes a dead-letter queue", where)
	}
	v.targetWhen(where, "queue", q.Logical, q.When, "always", w.When)
	if qc.DeadLetterQueue == "" {
		v.add("%s: deadLetterQueue is required", where)
	} else if v.c.Queue(qc.DeadLetterQueue) == nil {
		v.add("%s: deadLetterQueue %q is not declared in queues", where, qc.DeadLetterQueue)
	} else if qc.DeadLetterQueue != q.DeadLetterQueue {
		v.add("%s: deadLetterQueue %q is not the queue's paired dead-letter queue %q", where, qc.DeadLetterQueue, q.DeadLetterQueue)
	}
	bound := func(field string, n, lo, hi int) {
		if n < lo || n > hi {
			v.add("%s: %s %d is outside %d-%d", where, field, n, lo, hi)
		}
	}
	bound("maxBatchSize", qc.MaxBatchSize, 1, 100)
	bound("maxWaitTimeMs", qc.MaxWaitTimeMs, 0, 60000)
	bound("maxConcurrency", qc.MaxConcurrency, 1, 250)
	bound("maxRetries", qc.MaxRetries, 0, 100)
	bound("retryDelaySeconds", qc.RetryDelaySeconds, 0, 43200)
}

func (v *validator) consumersAndOrder() {
	consumers := map[string]string{}
	for _, w := range v.c.Workers {
		for _, qc := range w.QueueConsumers {
			if prev, ok := consumers[qc.Queue]; ok {
				v.add("worker %q: queueConsumers %q: queue is already consumed by worker %q", w.Logical, qc.Queue, prev)
			}
			consumers[qc.Queue] = w.Logical
		}
	}
}

func (v *validator) providerEnv(where string, pe ProviderEnv) {
	cp := v.c.Worker("control-plane")
	if cp == nil {
		return
	}
	for _, n := range pe.ControlPlaneVars {
		if cp.Var(n) == nil {
			v.add("%s: controlPlaneVars %q is not a var of worker %q", where, n, cp.Logical)
		}
	}
	for _, n := range pe.ControlPlaneSecrets {
		if cp.Secret(n) == nil {
			v.add("%s: controlPlaneSecrets %q is not a secret of worker %q", where, n, cp.Logical)
		}
	}
}

func (v *validator) sandbox() {
	s := v.c.Sandbox
	if d := v.c.DerivedValue("sandboxProvider"); d == nil {
		v.add("derived: sandboxProvider is missing")
	} else {
		if d.Default == nil || !slices.Contains(d.Allowed, *d.Default) {
			v.add("derived sandboxProvider: the default must be among allowed %v", d.Allowed)
		}
		for _, p := range d.Allowed {
			if _, ok := v.c.Conditions[p]; !ok {
				v.add("derived sandboxProvider: no condition named %q", p)
			}
		}
	}
	m := s.Modal
	v.providerEnv("sandbox.modal", m.ProviderEnv)
	v.providerEnv("sandbox.daytona", s.Daytona.ProviderEnv)
	if m.AppName == "" {
		v.add("sandbox.modal.appName is required")
	}
	for i, e := range m.DeployEnv {
		v.source(fmt.Sprintf("sandbox.modal.deployEnv[%d] %q", i, e.Name), e.Source)
	}
	seen := map[string]bool{}
	for i, sec := range m.Secrets {
		where := fmt.Sprintf("sandbox.modal.secrets[%d] %q", i, sec.Name)
		if sec.Name == "" || seen[sec.Name] {
			v.add("%s: empty or duplicate name", where)
		}
		seen[sec.Name] = true
		if len(sec.Keys) == 0 {
			v.add("%s: has no keys", where)
		}
		for j, k := range sec.Keys {
			v.source(fmt.Sprintf("%s: keys[%d] %q", where, j, k.Name), k.Source)
		}
	}
	if !slices.Contains(m.Endpoints.Functions, m.Health.Function) {
		v.add("sandbox.modal.health.function %q is not among endpoints.functions", m.Health.Function)
	}
	var body map[string]any
	if err := json.Unmarshal(m.Health.Body, &body); err != nil || len(body) == 0 {
		v.add("sandbox.modal.health.body must be a non-empty JSON object")
	}
	v.source("sandbox.daytona.snapshot.name", s.Daytona.Snapshot.Name)
	if s.Daytona.Snapshot.BaseImage == "" {
		v.add("sandbox.daytona.snapshot.baseImage is required")
	}
}

func (v *validator) migrations() {
	m := v.c.D1Migrations
	if m.First < 1 || m.Last < m.First {
		v.add("d1Migrations: first %d / last %d are not a range", m.First, m.Last)
		return
	}
	gaps := map[int]bool{}
	prev := m.First
	for _, g := range m.Gaps {
		if g <= prev || g >= m.Last {
			v.add("d1Migrations.gaps: %d is out of order or outside (%d, %d)", g, m.First, m.Last)
		}
		gaps[g] = true
		prev = g
	}
	if want := m.Last - m.First + 1 - len(m.Gaps); want != m.FileCount {
		v.add("d1Migrations.fileCount %d does not match %d..%d minus %d gap(s) = %d", m.FileCount, m.First, m.Last, len(m.Gaps), want)
	}
	for _, f := range slices.Concat(m.FilesWithTriggers, m.FilesWithPragmas) {
		match := migrationFileRE.FindStringSubmatch(f)
		if match == nil || len(match[1]) != m.NumberWidth {
			v.add("d1Migrations: file %q does not match %s", f, m.FilePattern)
			continue
		}
		n, _ := strconv.Atoi(match[1])
		if n < m.First || n > m.Last || gaps[n] {
			v.add("d1Migrations: file %q has a number outside the recorded files", f)
		}
	}
	l := m.Ledger
	if l.Table == "" {
		v.add("d1Migrations.ledger.table is required")
	}
	pk := 0
	cols := map[string]bool{}
	for _, col := range l.Columns {
		if col.Name == "" || cols[col.Name] {
			v.add("d1Migrations.ledger: empty or duplicate column %q", col.Name)
		}
		cols[col.Name] = true
		if col.PrimaryKey {
			pk++
		}
	}
	if pk != 1 {
		v.add("d1Migrations.ledger: %d primary-key columns, want 1", pk)
	}
}

var sha256RE = regexp.MustCompile(`^[0-9a-f]{64}$`)

func (v *validator) artefacts() {
	a, m := v.c.Artefacts, v.c.D1Migrations
	if !strings.HasPrefix(a.Install, "npm ci ") {
		v.add("artefacts.install %q is not an npm ci command", a.Install)
	}
	if !strings.HasPrefix(a.SharedPackage, "packages/") {
		v.add("artefacts.sharedPackage %q is not a package directory", a.SharedPackage)
	}
	for _, tool := range []string{"node", "npm"} {
		if a.Toolchain[tool] == "" {
			v.add("artefacts.toolchain.%s is required: the reference bundles' builder", tool)
		}
	}
	if len(a.Migrations) != m.FileCount {
		v.add("artefacts.migrations: %d files recorded, d1Migrations.fileCount is %d", len(a.Migrations), m.FileCount)
	}
	numbers := map[int]string{}
	for name, sum := range a.Migrations {
		if !sha256RE.MatchString(sum) {
			v.add("artefacts.migrations[%q]: %q is not a SHA-256", name, sum)
		}
		match := migrationFileRE.FindStringSubmatch(name)
		if match == nil || len(match[1]) != m.NumberWidth {
			v.add("artefacts.migrations: file %q does not match %s", name, m.FilePattern)
			continue
		}
		n, _ := strconv.Atoi(match[1])
		if n < m.First || n > m.Last || slices.Contains(m.Gaps, n) {
			v.add("artefacts.migrations: file %q has a number outside d1Migrations' first, last and gaps", name)
		}
		if other, dup := numbers[n]; dup {
			v.add("artefacts.migrations: %q and %q share a number", other, name)
		}
		numbers[n] = name
	}
	for _, f := range slices.Concat(m.FilesWithTriggers, m.FilesWithPragmas) {
		if _, ok := a.Migrations[f]; !ok && len(a.Migrations) > 0 {
			v.add("d1Migrations: %q is not among artefacts.migrations", f)
		}
	}
	for _, w := range v.c.Workers {
		b, ok := a.Bundles[w.Logical]
		switch {
		case !ok:
			v.add("artefacts.bundles: no reference bundle for worker %q", w.Logical)
		case !sha256RE.MatchString(b.SHA256) || b.Bytes <= 0:
			v.add("artefacts.bundles[%q]: needs a SHA-256 and a positive size", w.Logical)
		}
		if !strings.HasPrefix(w.Build, "npm run ") {
			v.add("workers %q: build %q is not an npm script, which BuildSteps runs per workspace", w.Logical, w.Build)
		}
	}
	for logical := range a.Bundles {
		if v.c.Worker(logical) == nil {
			v.add("artefacts.bundles: %q is not a worker", logical)
		}
	}
}
