package kv

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// stateVersion guards kv.json's format.
const stateVersion = 1

// StateFileName is the service's file in the data directory.
const StateFileName = "kv.json"

// Options configures the KV service (no knobs yet: the composer's
// one-Options-per-family shape).
type Options struct{}

// Service is the KV API and the KV binding backend. mu guards st; it is
// never held while the file is written.
type Service struct {
	cf   *cloudflare.Accounts
	core *core.Core
	mux  *http.ServeMux

	mu sync.Mutex
	st *store

	stateFile *core.StateFile
}

// store is what kv.json holds.
type store struct {
	Version int                     `json:"version"`
	KV      map[string]*kvNamespace `json:"kv_namespaces"` // by namespace ID
}

type kvNamespace struct {
	ID        string              `json:"id"`
	AccountID string              `json:"account_id"`
	Title     string              `json:"title"`
	CreatedAt time.Time           `json:"created_at"`
	Values    map[string]*kvValue `json:"values"`
}

type kvValue struct {
	Value      []byte          `json:"value"`
	Expiration int64           `json:"expiration,omitempty"` // unix seconds; 0 = never
	Metadata   json.RawMessage `json:"metadata,omitempty"`
}

// New loads kv.json from dataDir when present. Register mounts the routes.
func New(_ Options, dataDir string, c *core.Core, accounts *cloudflare.Accounts) (*Service, error) {
	s := &Service{cf: accounts, core: c, mux: c.Mux(),
		st:        &store{Version: stateVersion, KV: map[string]*kvNamespace{}},
		stateFile: core.NewStateFile(filepath.Join(dataDir, StateFileName), ".kv-*.json", "KV state")}
	if err := core.LoadState(s.stateFile.Path(), "KV state", stateVersion, s.st); err != nil {
		return nil, err
	}
	core.NonNil(&s.st.KV)
	core.DropNil(s.st.KV)
	for _, ns := range s.st.KV {
		core.NonNil(&ns.Values)
	}
	return s, nil
}

// Save writes kv.json (the root's Close persists every family).
func (s *Service) Save() error { return s.stateFile.Save(&s.mu, s.st) }

func (s *Service) save() error { return s.Save() }

func (s *Service) saveAndRespond(w http.ResponseWriter, err error, result any) {
	core.SaveAndRespond(w, err, s.save, result)
}

// Exists reports whether account has the namespace id.
func (s *Service) Exists(account, id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ns, ok := s.st.KV[id]
	return ok && ns.AccountID == account
}

// Entry is one KV namespace in the emulator's inventory.
type Entry struct {
	AccountID string `json:"account_id"`
	ID        string `json:"id"`
	Title     string `json:"title"`
	Keys      int    `json:"keys"`
}

// Inventory lists every namespace with its unexpired keys counted, sorted
// by account, then title.
func (s *Service) Inventory() []Entry {
	now := time.Now()
	s.mu.Lock()
	out := make([]Entry, 0, len(s.st.KV))
	for _, ns := range s.st.KV {
		n := 0
		for _, v := range ns.Values {
			if !v.expired(now) {
				n++
			}
		}
		out = append(out, Entry{AccountID: ns.AccountID, ID: ns.ID, Title: ns.Title, Keys: n})
	}
	s.mu.Unlock()
	sort.Slice(out, func(a, b int) bool {
		return core.Less2(out[a].AccountID, out[a].Title, out[b].AccountID, out[b].Title)
	})
	return out
}
