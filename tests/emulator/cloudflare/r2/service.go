package r2

import (
	"net/http"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// stateVersion guards r2.json's format.
const stateVersion = 1

// StateFileName is the service's file in the data directory.
const StateFileName = "r2.json"

// Options configures the R2 service (no knobs yet: the composer's
// one-Options-per-family shape).
type Options struct{}

// Service is the R2 API and the R2 binding backend. mu guards st; it is
// never held while the file is written.
type Service struct {
	cf   *cloudflare.Accounts
	core *core.Core
	mux  *http.ServeMux

	mu sync.Mutex
	st *store

	stateFile *core.StateFile
}

// store is what r2.json holds: the buckets and their objects' bodies.
type store struct {
	Version int                  `json:"version"`
	R2      map[string]*r2Bucket `json:"r2_buckets"` // by r2Key(account, name)
}

type r2Bucket struct {
	AccountID    string               `json:"account_id"`
	Name         string               `json:"name"`
	CreationDate time.Time            `json:"creation_date"`
	Location     string               `json:"location"`
	StorageClass string               `json:"storage_class"`
	Objects      map[string]*r2Object `json:"objects"`
	// CORS is the bucket's CORS policy; nil: none was set (r2_config.go).
	CORS []corsRule `json:"cors,omitzero"`
	// Lifecycle are its lifecycle rules; nil: never set, R2's default.
	Lifecycle []lifecycleRule `json:"lifecycle,omitzero"`
}

type r2Object struct {
	Body           []byte            `json:"body"`
	Uploaded       time.Time         `json:"uploaded"`
	ContentType    string            `json:"content_type,omitempty"`
	CustomMetadata map[string]string `json:"custom_metadata,omitempty"` // set through a binding's put
}

func r2Key(account, name string) string { return account + "/" + name }

// New loads r2.json from dataDir when present. Register mounts the routes.
func New(_ Options, dataDir string, c *core.Core, accounts *cloudflare.Accounts) (*Service, error) {
	s := &Service{cf: accounts, core: c, mux: c.Mux(),
		st:        &store{Version: stateVersion, R2: map[string]*r2Bucket{}},
		stateFile: core.NewStateFile(filepath.Join(dataDir, StateFileName), ".r2-*.json", "R2 state")}
	if err := core.LoadState(s.stateFile.Path(), "R2 state", stateVersion, s.st); err != nil {
		return nil, err
	}
	core.NonNil(&s.st.R2)
	core.DropNil(s.st.R2)
	for _, b := range s.st.R2 {
		core.NonNil(&b.Objects)
	}
	return s, nil
}

// Save writes r2.json (the root's Close persists every family).
func (s *Service) Save() error { return s.stateFile.Save(&s.mu, s.st) }

func (s *Service) save() error { return s.Save() }

func (s *Service) saveAndRespond(w http.ResponseWriter, err error, result any) {
	core.SaveAndRespond(w, err, s.save, result)
}

// Exists reports whether account has the bucket.
func (s *Service) Exists(account, bucket string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.st.R2[r2Key(account, bucket)]
	return ok
}

// Entry is one R2 bucket in the emulator's inventory.
type Entry struct {
	AccountID string `json:"account_id"`
	Name      string `json:"name"`
	Objects   int    `json:"objects"`
}

// Inventory lists every bucket with its object count, sorted by account,
// then name.
func (s *Service) Inventory() []Entry {
	s.mu.Lock()
	out := make([]Entry, 0, len(s.st.R2))
	for _, b := range s.st.R2 {
		out = append(out, Entry{AccountID: b.AccountID, Name: b.Name, Objects: len(b.Objects)})
	}
	s.mu.Unlock()
	sort.Slice(out, func(a, b int) bool {
		return core.Less2(out[a].AccountID, out[a].Name, out[b].AccountID, out[b].Name)
	})
	return out
}
