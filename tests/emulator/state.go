package emulator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/d1"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/kv"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/queues"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/r2"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/zones"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/daytona"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/e2b"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/modal"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/opencomputer"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/vercel"
	"net/http"
	"os"
	"sort"
	"time"
)

// stateVersion guards the on-disk format; bump it when the shape changes
// incompatibly so an old DataDir fails loudly instead of loading garbage.
const stateVersion = 1

// state is every piece of metadata the emulator keeps. D1 row data lives in
// the SQLite files, not here.
type state struct {
	Version int `json:"version"`
	// Workers and Queues were added later; state files written before
	// them simply lack the keys, so the version did not change.
	Workers map[string]*workerScript `json:"workers"` // by wkKey(account, name)
	// WorkersSubdomains holds the account subdomains set with PUT
	// workers/subdomain; accounts without one use Options.WorkersSubdomain.
	WorkersSubdomains map[string]string `json:"workers_subdomains"` // by account ID
	// AssetBlobs are the uploaded static asset files (assets.go).
	AssetBlobs map[string]*assetBlob `json:"asset_blobs,omitempty"` // by account + "/" + hash

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

	Assets *scriptAssets `json:"assets,omitempty"` // static assets served (assets.go)

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

type workerCron struct {
	Cron       string    `json:"cron"`
	CreatedOn  time.Time `json:"created_on"`
	ModifiedOn time.Time `json:"modified_on"`
}

func wkKey(account, name string) string { return account + "/" + name }

func newState() *state {
	return &state{
		Version: stateVersion,
		Workers: map[string]*workerScript{},

		WorkersSubdomains: map[string]string{},
	}
}

func loadState(path string) (*state, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return newState(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("emulator: read state: %w", err)
	}
	st := newState()
	if err := json.Unmarshal(b, st); err != nil {
		return nil, fmt.Errorf("emulator: parse %s: %w", path, err)
	}
	if st.Version != stateVersion {
		return nil, fmt.Errorf("emulator: %s has state version %d, this emulator reads %d", path, st.Version, stateVersion)
	}
	// Maps may be null in hand-edited files; handlers assume they are not.
	if st.Workers == nil {
		st.Workers = map[string]*workerScript{}
	}
	if st.WorkersSubdomains == nil {
		st.WorkersSubdomains = map[string]string{}
	}
	for _, ws := range st.Workers {
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
					return nil, fmt.Errorf("emulator: parse %s: binding of worker %s: %w", path, ws.Name, err)
				}
				list[i] = buf.Bytes()
			}
		}
	}
	return st, nil
}

// save persists the metadata after a mutation. The snapshot is taken under mu
// but written outside it, so slow disks never stall other requests; writing
// to a temp file and renaming means a crash leaves either the old or the new
// file, never half of one.
// saveAndRespond ends a mutating handler (called after the lock is released):
// on success it persists the state and answers result; the first error,
// the handler's or the save's, is answered instead.
func (s *Server) saveAndRespond(w http.ResponseWriter, err error, result any) {
	core.SaveAndRespond(w, err, s.save, result)
}

func (s *Server) save() error { return s.stateFile.Save(&s.mu, s.st) }

// Inventory lists everything that exists, across all accounts. Tests use it
// to prove a destroy left nothing behind.
type Inventory struct {
	D1      []D1Entry     `json:"d1_databases"`
	KV      []KVEntry     `json:"kv_namespaces"`
	R2      []R2Entry     `json:"r2_buckets"`
	Workers []WorkerEntry `json:"workers"`
	Queues  []QueueEntry  `json:"queues"`
	// AssetFiles counts the static asset files held, all accounts (assets.go).
	AssetFiles int `json:"asset_files"`
	// Domains and Routes are the Workers custom domains and zone routes
	// (zones.go); the zones themselves are seeded, not deployed, and are
	// not listed.
	Domains []DomainEntry `json:"worker_domains"`
	Routes  []RouteEntry  `json:"worker_routes"`

	// Modal is the Modal side (package modal).
	Modal   modal.Inventory   `json:"modal"`
	Daytona daytona.Inventory `json:"daytona"` // package daytona
	E2B     e2b.Inventory     `json:"e2b"`     // package e2b
	// OpenComputer is the OpenComputer side (package opencomputer).
	OpenComputer opencomputer.Inventory `json:"opencomputer"`
	// Vercel is the Vercel Sandbox side (package vercel).
	Vercel vercel.Inventory `json:"vercel"`
}

// D1Entry is one D1 database in an Inventory.
type D1Entry = d1.Entry

// KVEntry is one KV namespace in an Inventory.
type KVEntry = kv.Entry

// R2Entry is one R2 bucket in an Inventory.
type R2Entry = r2.Entry

// WorkerEntry is one Worker script in an Inventory.
type WorkerEntry struct {
	AccountID    string   `json:"account_id"`
	Name         string   `json:"name"`
	Etag         string   `json:"etag"`
	MigrationTag string   `json:"migration_tag"`
	Classes      []string `json:"classes"` // declared Durable Object classes, sorted
	Crons        []string `json:"crons"`
	WorkersDev   bool     `json:"workers_dev"`
	Bindings     int      `json:"bindings"`
	AppSecrets   int      `json:"app_secrets"` // rows of global_secrets in the D1 database bound as DB

	Assets *AssetsEntry `json:"assets,omitempty"` // its static assets
}

// DomainEntry is one custom domain in an Inventory.
type DomainEntry = zones.DomainEntry

// RouteEntry is one zone route in an Inventory.
type RouteEntry = zones.RouteEntry

// QueueEntry is one queue in an Inventory.
type QueueEntry = queues.Entry

// Empty reports whether nothing exists in any account.
func (i Inventory) Empty() bool {
	return len(i.D1) == 0 && len(i.KV) == 0 && len(i.R2) == 0 && len(i.Workers) == 0 && len(i.Queues) == 0 && i.AssetFiles == 0 &&
		len(i.Domains) == 0 && len(i.Routes) == 0 &&
		i.Modal.Empty() && i.Daytona.Empty() && i.E2B.Empty() && i.OpenComputer.Empty() && i.Vercel.Empty()
}

// Inventory returns a snapshot sorted by account, then name.
func (s *Server) Inventory() Inventory {
	// The families' parts first: each has its own lock, not held with s.mu.
	mi := s.modal.Inventory()
	d1s, kvs, r2s, qs := s.d1.Inventory(), s.kv.Inventory(), s.r2.Inventory(), s.queues.Inventory()
	domains, routes := s.zones.Inventory()
	s.mu.Lock()
	defer s.mu.Unlock()
	inv := Inventory{D1: d1s, KV: kvs, R2: r2s, Workers: []WorkerEntry{}, Queues: qs, Domains: domains, Routes: routes, Modal: mi}
	inv.Daytona = s.daytona.Inventory()
	inv.E2B = s.e2b.Inventory()
	inv.OpenComputer = s.opencomputer.Inventory()
	inv.Vercel = s.vercel.Inventory()
	for _, ws := range s.st.Workers {
		crons := make([]string, len(ws.Crons))
		for i, c := range ws.Crons {
			crons[i] = c.Cron
		}
		inv.Workers = append(inv.Workers, WorkerEntry{
			AccountID: ws.AccountID, Name: ws.Name, Etag: ws.Etag, MigrationTag: ws.MigrationTag,
			Classes: append([]string{}, ws.Classes...), Crons: crons, WorkersDev: ws.WorkersDev, Bindings: len(ws.Bindings),
			AppSecrets: s.appSecretCountLocked(ws),
			Assets:     assetsEntry(ws.Assets),
		})
	}
	inv.AssetFiles = len(s.st.AssetBlobs)
	sort.Slice(inv.Workers, func(a, b int) bool {
		return less2(inv.Workers[a].AccountID, inv.Workers[a].Name, inv.Workers[b].AccountID, inv.Workers[b].Name)
	})
	return inv
}

func less2(a1, a2, b1, b2 string) bool {
	if a1 != b1 {
		return a1 < b1
	}
	return a2 < b2
}
