package zones

import (
	"net/http"
	"path/filepath"
	"sync"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// stateVersion guards zones.json's format.
const stateVersion = 1

// StateFileName is the service's file in the data directory.
const StateFileName = "zones.json"

// Scripts is what zones need of the Workers scripts; the composition root
// wires it (package workers implements it). It is called only while s.mu
// is not held.
type Scripts interface {
	Exists(account, name string) bool
}

// Options configures the Zones service.
type Options struct {
	// Seeded are the zones each account has, by account ID; the key "*"
	// covers accounts not listed. Nil means DefaultZone (example.com) for
	// every account. More can be added with AddZone or
	// POST /__emulator/zones.
	Seeded map[string][]string
	// Logf, when set, receives a line when a script's removal could not
	// be persisted.
	Logf func(format string, args ...any)
}

// Service is the zones, the Workers custom domains and zone routes, and the
// host -> script lookup over them. mu guards st.
type Service struct {
	cf      *cloudflare.Accounts
	core    *core.Core
	mux     *http.ServeMux
	logf    func(format string, args ...any)
	scripts Scripts

	mu sync.Mutex
	st *store

	stateFile *core.StateFile
}

// store is what zones.json holds.
type store struct {
	Version       int                      `json:"version"`
	Zones         map[string]*zone         `json:"zones,omitempty"`          // by zone ID
	WorkerDomains map[string]*workerDomain `json:"worker_domains,omitempty"` // by domain ID
	WorkerRoutes  map[string]*workerRoute  `json:"worker_routes,omitempty"`  // by route ID
}

// New loads zones.json from dataDir when present and seeds opts.Seeded.
// Register mounts the routes.
func New(opts Options, dataDir string, c *core.Core, accounts *cloudflare.Accounts, scripts Scripts) (*Service, error) {
	s := &Service{cf: accounts, core: c, mux: c.Mux(), logf: opts.Logf, scripts: scripts,
		st: &store{Version: stateVersion, Zones: map[string]*zone{}, WorkerDomains: map[string]*workerDomain{},
			WorkerRoutes: map[string]*workerRoute{}},
		stateFile: core.NewStateFile(filepath.Join(dataDir, StateFileName), ".zones-*.json", "Zones state")}
	if err := core.LoadState(s.stateFile.Path(), "Zones state", stateVersion, s.st); err != nil {
		return nil, err
	}
	core.NonNil(&s.st.Zones)
	core.NonNil(&s.st.WorkerDomains)
	core.NonNil(&s.st.WorkerRoutes)
	core.DropNil(s.st.Zones)
	core.DropNil(s.st.WorkerDomains)
	core.DropNil(s.st.WorkerRoutes)
	if err := s.seedZones(opts.Seeded); err != nil {
		return nil, err
	}
	return s, nil
}

// Save writes zones.json (the root's Close persists every family).
func (s *Service) Save() error { return s.stateFile.Save(&s.mu, s.st) }

func (s *Service) save() error { return s.Save() }

func (s *Service) saveAndRespond(w http.ResponseWriter, err error, result any) {
	core.SaveAndRespond(w, err, s.save, result)
}
