package upstream

import "encoding/json"

// The contract's data types: the shape of contract.json, which Parse reads
// strictly (an unknown field is an error).

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

// EnvEntry is a named value with its source and condition.
type EnvEntry struct {
	Name   string `json:"name"`
	Source Source `json:"source"`
	When   string `json:"when"`
	Notes  string `json:"notes,omitempty"`
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
