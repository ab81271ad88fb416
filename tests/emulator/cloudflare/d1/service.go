package d1

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// stateVersion guards d1.json's format; bump it when the shape changes
// incompatibly.
const stateVersion = 1

// StateFileName is the service's file in the data directory; the
// databases' SQLite files are in its d1/ directory.
const StateFileName = "d1.json"

// Options configures the D1 service. D1 has no knobs yet; the struct keeps
// the composer's one-Options-per-family shape.
type Options struct{}

// Service is the D1 API and the D1 binding backend. mu guards st (the
// databases' metadata) and d1open (open SQLite handles); it is never held
// while a SQL batch runs: each database has its own lock.
type Service struct {
	cf      *cloudflare.Accounts
	core    *core.Core
	mux     *http.ServeMux
	dataDir string

	mu     sync.Mutex
	st     *store
	d1open map[string]*sqliteDB
	closed bool

	stateFile *core.StateFile // written outside mu, newest snapshot wins
}

// store is what d1.json holds. Row data lives in the SQLite files.
type store struct {
	Version int                    `json:"version"`
	D1      map[string]*d1Database `json:"d1_databases"` // by UUID

	// d1Imports are the files uploaded for D1 imports, by upload token,
	// and d1Ingests each database's last ingest answer (for poll). Both
	// are in-flight data of one process and are not persisted.
	d1Imports map[string]*d1Upload
	d1Ingests map[string]*d1ImportJSON
	// d1Exports are the finished exports by download token (d1_export.go),
	// in memory too.
	d1Exports map[string]*d1Export
}

type d1Database struct {
	UUID         string    `json:"uuid"`
	AccountID    string    `json:"account_id"`
	Name         string    `json:"name"`
	CreatedAt    time.Time `json:"created_at"`
	LocationHint string    `json:"location_hint,omitempty"`
}

// New loads d1.json from dataDir (when present) and makes the SQLite
// directory. Register mounts the routes.
func New(_ Options, dataDir string, c *core.Core, accounts *cloudflare.Accounts) (*Service, error) {
	if err := os.MkdirAll(filepath.Join(dataDir, "d1"), 0o700); err != nil {
		return nil, fmt.Errorf("emulator: %w", err)
	}
	s := &Service{cf: accounts, core: c, mux: c.Mux(), dataDir: dataDir, d1open: map[string]*sqliteDB{},
		st:        &store{Version: stateVersion, D1: map[string]*d1Database{}},
		stateFile: core.NewStateFile(filepath.Join(dataDir, StateFileName), ".d1-*.json", "D1 state")}
	if err := core.LoadState(s.stateFile.Path(), "D1 state", stateVersion, s.st); err != nil {
		return nil, err
	}
	core.NonNil(&s.st.D1)
	core.DropNil(s.st.D1)
	return s, nil
}

func (s *Service) d1Path(uuid string) string {
	return filepath.Join(s.dataDir, "d1", uuid+".sqlite")
}

// Save writes d1.json (the root's Close persists every family).
func (s *Service) Save() error { return s.stateFile.Save(&s.mu, s.st) }

func (s *Service) save() error { return s.Save() }

// Close closes every SQLite handle, waiting for running batches. Requests
// after Close answer as for a closed database.
func (s *Service) Close() error {
	s.mu.Lock()
	s.closed = true
	open := s.d1open
	s.d1open = map[string]*sqliteDB{}
	s.mu.Unlock()
	var errs []error
	for _, db := range open {
		errs = append(errs, db.close())
	}
	return errors.Join(errs...)
}

// Exists reports whether account has the database id.
func (s *Service) Exists(account, id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	db, ok := s.st.D1[id]
	return ok && db.AccountID == account
}

// Query runs one statement on account's database id and returns its rows
// (what app secrets read global_secrets with).
func (s *Service) Query(ctx context.Context, account, id, sql string, params ...any) ([][]any, error) {
	s.mu.Lock()
	rec, ok := s.st.D1[id]
	var eng *sqliteDB
	var err error
	switch {
	case !ok || rec.AccountID != account:
		err = fmt.Errorf("database %s does not exist", id)
	case s.closed:
		err = errDBClosed
	default:
		eng, err = s.openD1Locked(id)
	}
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	res, err := eng.run(ctx, []sqlItem{{SQL: sql, Params: params}})
	if err != nil || len(res) == 0 {
		return nil, err
	}
	return res[0].Rows, nil
}

// Entry is one D1 database in the emulator's inventory.
type Entry struct {
	AccountID string `json:"account_id"`
	ID        string `json:"id"`
	Name      string `json:"name"`
}

// Inventory lists every database, sorted by account, then name.
func (s *Service) Inventory() []Entry {
	s.mu.Lock()
	out := make([]Entry, 0, len(s.st.D1))
	for _, db := range s.st.D1 {
		out = append(out, Entry{AccountID: db.AccountID, ID: db.UUID, Name: db.Name})
	}
	s.mu.Unlock()
	sort.Slice(out, func(a, b int) bool {
		return core.Less2(out[a].AccountID, out[a].Name, out[b].AccountID, out[b].Name)
	})
	return out
}
