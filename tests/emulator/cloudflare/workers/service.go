package workers

// service.go: the Service, its options, its store (workers.json), the
// interfaces through which it reaches the other Cloudflare APIs, and its
// part of the inventory.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/assets"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/workerd"
)

// DefaultSubdomain is the account workers.dev subdomain reported when
// Options.Subdomain is empty and none was set with PUT.
const DefaultSubdomain = "openinspect-emulator"

// stateVersion guards workers.json's format.
const stateVersion = 1

// StateFileName is the service's file in the data directory.
const StateFileName = "workers.json"

// D1 is what the scripts' D1 bindings and the app secrets need of package d1.
type D1 interface {
	Exists(account, id string) bool
	ServeBinding(w http.ResponseWriter, r *http.Request, account, id string)
	// Query runs one statement on the database and returns its rows (app
	// secrets read global_secrets).
	Query(ctx context.Context, account, id, sql string, params ...any) ([][]any, error)
}

// KV is what the scripts' KV bindings need of package kv.
type KV interface {
	Exists(account, id string) bool
	ServeBinding(w http.ResponseWriter, r *http.Request, account, id string)
}

// R2 is what the scripts' R2 bindings need of package r2.
type R2 interface {
	Exists(account, bucket string) bool
	ServeBinding(w http.ResponseWriter, r *http.Request, account, bucket string)
}

// Queues is what queue bindings and script deletion need of package queues.
type Queues interface {
	Exists(account, name string) bool // by queue name
	ServeBinding(w http.ResponseWriter, r *http.Request, account, name string)
	ConsumedBy(account, script string) []string // names of the queues the script consumes, sorted
	RemoveConsumers(account, script string)     // a deleted script's consumers go (persisting)
}

// Zones is what serving by Host and script deletion need of package zones.
type Zones interface {
	// ScriptFor is the script a custom domain or zone route of host (and
	// path) serves; ok reports whether host belongs to a zone at all, so
	// an unserved zone hostname is told apart from the emulator's own.
	ScriptFor(host, escapedPath, rawQuery string) (account, script string, ok bool)
	RemoveScript(account, script string) // a deleted script's custom domains go (persisting)
	// RoutesByScript is the account's zone routes by script (the script
	// list's routes); called without s.mu held.
	RoutesByScript(account string) map[string][]cloudflare.ScriptRoute
}

// Deps are the other APIs New is given by the root. Queues and zones are
// given later, with Wire: they are built with this service as their
// Scripts.
type Deps struct {
	D1     D1
	KV     KV
	R2     R2
	Assets *assets.Service
	// Outbound is where the scripts' fetch() calls go (outbound.go); nil
	// refuses them all (workerd's "internet" service).
	Outbound Outbound
}

// Options configures the Workers service.
type Options struct {
	// Subdomain is every account's workers.dev subdomain until one is set
	// with PUT workers/subdomain. Empty means DefaultSubdomain.
	Subdomain string
	// Limits are the plan limits uploads are refused by; the zero value is
	// Workers Paid (workers_limits.go).
	Limits Limits
	// Workerd is the workerd binary deployed scripts run in (runtime.go);
	// "" finds it as workerd.Find does ($OPENINSPECT_WORKERD, then PATH).
	// Without one, scripts are stored but not run: their requests answer
	// 503 saying so.
	Workerd string
	// RunCrons fires deployed scripts' cron triggers on their schedule
	// (UTC, each minute) from Start. Off, crons run only when asked:
	// POST /__emulator/scheduled/<script>.
	RunCrons bool
	// LocalOrigins serve scripts at the root of loopback ports of their
	// own (local_origins.go): listen address by script name; Start listens.
	LocalOrigins map[string]string
	// BaseURL is the emulator's URL once it listens ("" before), for
	// WorkerURL and the bindings' service addresses.
	BaseURL func() string
	// Logf, when set, receives the runtime's and the crons' lines.
	Logf func(format string, args ...any)
	// ExceptionLogf receives one line per script invocation that ended in
	// an uncaught exception: the script, the request and its Cf-Ray, the
	// exception and the script's log file (tails.go). Nil means Logf.
	ExceptionLogf func(format string, args ...any)
}

// Service is the Workers API, the runtime in workerd and the serving of
// scripts. mu guards st; it is held while calling d1, kv, r2, queues,
// zones and assets (which never call back), never during a workerd
// dispatch, and never while the file is written.
type Service struct {
	cf      *cloudflare.Accounts
	core    *core.Core
	mux     *http.ServeMux
	dataDir string
	logf    func(format string, args ...any)
	// exceptionLogf is Options.ExceptionLogf, else Logf (tails.go).
	exceptionLogf func(format string, args ...any)
	baseURL       func() string
	opts          Options

	workerLimits     Limits
	workersSubdomain string

	d1     D1
	kv     KV
	r2     R2
	queues Queues
	zones  Zones
	assets *assets.Service

	outbound Outbound

	mu sync.Mutex
	st *store

	stateFile *core.StateFile

	backends map[string]bindingBackend // by binding kind (bindings.go)

	runtime      workersRuntime // the scripts running in workerd (runtime.go)
	tails        tails          // the tail sessions and the log files (tails.go)
	localOrigins []*localOrigin // the scripts' own loopback listeners (Start)
	stopCrons    chan struct{}  // closed by Close when RunCrons started them
	cronsDone    chan struct{}
}

// store is what workers.json holds.
type store struct {
	Version int                      `json:"version"`
	Workers map[string]*workerScript `json:"workers"` // by wkKey(account, name)
	// WorkersSubdomains holds the account subdomains set with PUT
	// workers/subdomain; accounts without one use Options.Subdomain.
	WorkersSubdomains map[string]string `json:"workers_subdomains"` // by account ID
}

// New loads workers.json from dataDir when present and finds workerd.
// Register mounts the routes; Start the local origins and the crons.
func New(opts Options, dataDir string, c *core.Core, accounts *cloudflare.Accounts, deps Deps) (*Service, error) {
	sub := opts.Subdomain
	if sub == "" {
		sub = DefaultSubdomain
	}
	if !cloudflare.DNSLabel.MatchString(sub) {
		return nil, fmt.Errorf("emulator: workers subdomain %q is not a DNS label of [a-z0-9-]", sub)
	}
	s := &Service{cf: accounts, core: c, mux: c.Mux(), dataDir: dataDir, logf: opts.Logf, baseURL: opts.BaseURL, opts: opts,
		workerLimits: opts.Limits.withDefaults(), workersSubdomain: sub,
		d1: deps.D1, kv: deps.KV, r2: deps.R2, assets: deps.Assets, outbound: deps.Outbound,
		st:        &store{Version: stateVersion, Workers: map[string]*workerScript{}, WorkersSubdomains: map[string]string{}},
		stateFile: core.NewStateFile(filepath.Join(dataDir, StateFileName), ".workers-*.json", "Workers state")}
	if s.baseURL == nil {
		s.baseURL = func() string { return "" }
	}
	s.exceptionLogf = opts.ExceptionLogf
	if s.exceptionLogf == nil {
		s.exceptionLogf = opts.Logf
	}
	if err := core.LoadState(s.stateFile.Path(), "Workers state", stateVersion, s.st); err != nil {
		return nil, err
	}
	core.NonNil(&s.st.Workers)
	core.NonNil(&s.st.WorkersSubdomains)
	core.DropNil(s.st.Workers)
	for _, ws := range s.st.Workers {
		ws.adoptHistory()
		// The file is indented; bindings are kept compact, as uploaded.
		lists := [][]json.RawMessage{ws.Bindings}
		for _, v := range ws.Versions {
			lists = append(lists, v.Content.Bindings)
		}
		for _, list := range lists {
			for i, raw := range list {
				var buf bytes.Buffer
				if err := json.Compact(&buf, raw); err != nil {
					return nil, fmt.Errorf("emulator: parse %s: binding of worker %s: %w", s.stateFile.Path(), ws.Name, err)
				}
				list[i] = buf.Bytes()
			}
		}
	}
	if bin, err := workerd.Find(opts.Workerd); err == nil {
		s.runtime.rt = &workerd.Runtime{Binary: bin, Dir: filepath.Join(dataDir, "workerd"), Logf: opts.Logf}
	} else if opts.Workerd != "" || !errors.Is(err, workerd.ErrNoBinary) {
		return nil, fmt.Errorf("emulator: %w", err)
	}
	return s, nil
}

// Wire gives the service the queues and zones (before the first request).
func (s *Service) Wire(q Queues, z Zones) {
	s.queues, s.zones = q, z
	s.backends = s.bindingBackends()
}

// Register mounts the Workers API, the /__workers/ alias and the admin
// routes of scripts (scheduled, runtime, local origins, the test-only
// script and app secret reads).
func (s *Service) Register() {
	s.registerWorkers()
	s.registerWorkerServing()
	s.registerTails()
	s.registerLocalOrigins()
	s.registerAdmin()
}

// Handler wraps next (the mux, behind the root's request log, logged)
// with serving by Host and, in front of everything, the binding backends.
func (s *Service) Handler(next http.Handler, logged func(http.Handler) http.Handler) http.Handler {
	return s.withBindings(logged(s.withHosts(next)))
}

// Start listens on the local origins (their requests logged through
// logged) and, with RunCrons, fires the crons until Close.
func (s *Service) Start(logged func(http.Handler) http.Handler) error {
	if err := s.startLocalOrigins(s.opts.LocalOrigins, logged); err != nil {
		return err
	}
	if s.opts.RunCrons {
		s.stopCrons, s.cronsDone = make(chan struct{}), make(chan struct{})
		go func() {
			defer close(s.cronsDone)
			s.runCrons(s.stopCrons)
		}()
	}
	return nil
}

// Close stops the local origins, the crons and workerd. It does not save:
// the root's Close calls Save for a DataDir it keeps.
func (s *Service) Close() error {
	err := s.closeLocalOrigins()
	if s.stopCrons != nil {
		close(s.stopCrons)
		<-s.cronsDone
		s.stopCrons = nil
	}
	s.closeTails()
	s.stopRuntime(true)
	return err
}

// Save writes workers.json.
func (s *Service) Save() error { return s.stateFile.Save(&s.mu, s.st) }

func (s *Service) save() error { return s.Save() }

// saveAndRespond ends a mutating handler (called after the lock is
// released): on success it persists and answers result.
func (s *Service) saveAndRespond(w http.ResponseWriter, err error, result any) {
	core.SaveAndRespond(w, err, s.save, result)
}

// Exists reports whether account has the script (queues' and zones'
// Scripts).
func (s *Service) Exists(account, name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.st.Workers[wkKey(account, name)]
	return ok
}

// Runnable reports whether the script has code to run (modules deployed).
func (s *Service) Runnable(account, name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ws := s.st.Workers[wkKey(account, name)]
	return ws != nil && len(ws.Modules) > 0
}

// Producers are the account's scripts with a queue binding to queue (by
// name), sorted: what a queue's producers list reports.
func (s *Service) Producers(account, queue string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, key := range core.SortedKeys(s.st.Workers) {
		ws := s.st.Workers[key]
		if ws.AccountID != account {
			continue
		}
		for _, raw := range ws.Bindings {
			var b bindingSpec
			if json.Unmarshal(raw, &b) == nil && b.Type == "queue" && b.QueueName == queue {
				out = append(out, ws.Name)
				break
			}
		}
	}
	return out
}

// Dispatch runs an event ("queue", "scheduled") in the script in workerd
// and decodes its answer into out.
func (s *Service) Dispatch(ctx context.Context, account, script, event string, body, out any) error {
	return s.dispatch(ctx, account, script, event, body, out)
}

// Entry is one Worker script in the emulator's inventory.
type Entry struct {
	AccountID    string   `json:"account_id"`
	Name         string   `json:"name"`
	Etag         string   `json:"etag"`
	MigrationTag string   `json:"migration_tag"`
	Classes      []string `json:"classes"` // declared Durable Object classes, sorted
	Crons        []string `json:"crons"`
	WorkersDev   bool     `json:"workers_dev"`
	Bindings     int      `json:"bindings"`
	AppSecrets   int      `json:"app_secrets"` // rows of global_secrets in the D1 database bound as DB

	Assets *assets.Entry `json:"assets,omitempty"` // its static assets
}

// WorkersDevHosts are the hosts the scripts answer on under workers.dev's
// local stand-in (<script>.workers.localhost), those whose workers.dev
// route is off left out: what a sandbox's /etc/hosts maps to the emulator.
func (s *Service) WorkersDevHosts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	hosts := make([]string, 0, len(s.st.Workers))
	for _, ws := range s.st.Workers {
		if !ws.WorkersDevOff {
			hosts = append(hosts, ws.Name+"."+workersDevHost)
		}
	}
	slices.Sort(hosts)
	return slices.Compact(hosts)
}

// Inventory lists every script, sorted by account, then name.
func (s *Service) Inventory() []Entry {
	s.mu.Lock()
	out := make([]Entry, 0, len(s.st.Workers))
	dbs := make([]string, 0, len(s.st.Workers)) // each entry's control plane database, "" for none
	for _, ws := range s.st.Workers {
		db, _, err := s.controlPlaneDBLocked(ws)
		if err != nil {
			db = ""
		}
		dbs = append(dbs, db)
		crons := make([]string, len(ws.Crons))
		for i, c := range ws.Crons {
			crons[i] = c.Cron
		}
		out = append(out, Entry{
			AccountID: ws.AccountID, Name: ws.Name, Etag: ws.Etag, MigrationTag: ws.MigrationTag,
			Classes: append([]string{}, ws.Classes...), Crons: crons, WorkersDev: ws.WorkersDev, Bindings: len(ws.Bindings),
			Assets: assets.EntryOf(ws.Assets),
		})
	}
	s.mu.Unlock()
	// The app secrets are read outside mu: no lock is held during SQL.
	for i, db := range dbs {
		if db != "" {
			rows, _ := s.appSecretRows(out[i].AccountID, db)
			out[i].AppSecrets = len(rows)
		}
	}
	sort.Slice(out, func(a, b int) bool {
		return core.Less2(out[a].AccountID, out[a].Name, out[b].AccountID, out[b].Name)
	})
	return out
}

// workerScript is one uploaded Worker. Its workerContent is what the
// current deployment serves (what the settings, content and control-plane
// routes read); Versions and Deployments are its history. Bindings keep
// every uploaded field, secret texts included: only WorkerDetail (Go) ever
// returns those.
type workerScript struct {
	AccountID string `json:"account_id"`
	Name      string `json:"name"`
	workerContent
	Crons           []workerCron `json:"crons,omitempty"`
	WorkersDev      bool         `json:"workers_dev"`
	PreviewsEnabled bool         `json:"previews_enabled"`
	CreatedOn       time.Time    `json:"created_on"`
	ModifiedOn      time.Time    `json:"modified_on"`
	Uploads         int          `json:"uploads"`
	// Tag is the script's stable identifier (services' script.tag).
	Tag string `json:"tag,omitempty"`
	// LastDeployedFrom is "wrangler" or "api" (see uploadSource).
	LastDeployedFrom string `json:"last_deployed_from,omitempty"`
	// APISecrets names the secret_text bindings set through the secrets
	// API; uploads that do not bind those names inherit them.
	APISecrets  []string            `json:"api_secrets,omitempty"`
	Versions    []*workerVersion    `json:"versions,omitempty"`    // oldest first
	Deployments []*workerDeployment `json:"deployments,omitempty"` // oldest first
	// Settings are the non-versioned script settings (logpush,
	// observability, tags, tail_consumers) as last PATCHed.
	Settings map[string]json.RawMessage `json:"script_settings,omitempty"`
	// WorkersDevOff is true once the workers.dev route was turned off
	// (POST .../subdomain with enabled false, or DELETE), until it is
	// turned on again: the <script>.workers.localhost hosts then answer 404,
	// as Cloudflare stops serving the script on workers.dev. A script whose
	// route was never set is served there (see hosts.go).
	WorkersDevOff bool `json:"workers_dev_off,omitempty"`
}

// workerContent is what one version of a script is made of.
type workerContent struct {
	MainModule         string            `json:"main_module"`
	HasModules         bool              `json:"has_modules"`
	Modules            []workerModule    `json:"modules"`
	Metadata           []byte            `json:"metadata"` // the metadata part, byte for byte
	Bindings           []json.RawMessage `json:"bindings"`
	CompatibilityDate  string            `json:"compatibility_date,omitempty"`
	CompatibilityFlags []string          `json:"compatibility_flags,omitempty"`
	MigrationTag       string            `json:"migration_tag,omitempty"`
	Classes            []string          `json:"classes,omitempty"` // declared Durable Object classes, sorted
	Etag               string            `json:"etag"`

	Assets *assets.Assets `json:"assets,omitempty"` // static assets served (assets.go)

	// Placement and Limits are the version's settings (workers_settings.go).
	Placement *placementJSON `json:"placement,omitempty"`
	Limits    *limitsJSON    `json:"limits,omitempty"`
}

// workerVersion is one uploaded version. A deployed version's modules live
// on the script (the versions keep only metadata once a later version is
// deployed, to keep the state file small); a version uploaded with POST
// versions and not yet deployed keeps its own.
type workerVersion struct {
	ID          string        `json:"id"`
	Number      int           `json:"number"`
	CreatedOn   time.Time     `json:"created_on"`
	Source      string        `json:"source"`       // "wrangler", "api"
	TriggeredBy string        `json:"triggered_by"` // "upload", "version_upload", "secret", "create_deployment"...
	Message     string        `json:"message,omitempty"`
	VersionTag  string        `json:"version_tag,omitempty"`
	Content     workerContent `json:"content"`
}

// workerDeployment is one deployment: which versions serve what share.
type workerDeployment struct {
	ID        string          `json:"id"`
	CreatedOn time.Time       `json:"created_on"`
	Source    string          `json:"source"`
	Message   string          `json:"message,omitempty"`
	Versions  []deployedShare `json:"versions"`
}

type deployedShare struct {
	VersionID  string  `json:"version_id"`
	Percentage float64 `json:"percentage"`
}

type workerModule struct {
	Name        string `json:"name"`
	Filename    string `json:"filename,omitempty"`
	ContentType string `json:"content_type,omitempty"`
	Content     []byte `json:"content"`
}

// isSourceMap says the part is a source map (Cloudflare's documented part
// type application/source-map, which wrangler and Alchemy upload beside each
// module): kept with the version and served back, never given to workerd as
// a module.
func (m workerModule) isSourceMap() bool {
	ct, _, _ := strings.Cut(m.ContentType, ";")
	return strings.EqualFold(strings.TrimSpace(ct), "application/source-map")
}

type workerCron struct {
	Cron       string    `json:"cron"`
	CreatedOn  time.Time `json:"created_on"`
	ModifiedOn time.Time `json:"modified_on"`
}

func wkKey(account, name string) string { return account + "/" + name }
