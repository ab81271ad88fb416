package core

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
)

// StateFile is one family's persisted JSON file (d1.json, modal.json,
// daytona.json). Save snapshots under the family's lock and writes outside
// it, so slow disks never stall other requests; snapshots are numbered so a
// slow writer can never overwrite a newer snapshot with an older one; and
// writing a temp file and renaming means a crash leaves either the old or
// the new file, never half of one.
type StateFile struct {
	path    string
	pattern string // os.CreateTemp pattern of the temp file
	what    string // for errors: "state", "Modal state"...

	seq uint64 // guarded by the lock passed to Save

	writeMu sync.Mutex
	written uint64
}

// NewStateFile describes the file at path; what names it in errors
// ("state", "Modal state") and pattern is its temp files' name pattern.
func NewStateFile(path, pattern, what string) *StateFile {
	return &StateFile{path: path, pattern: pattern, what: what}
}

// Path is where the file lives.
func (f *StateFile) Path() string { return f.path }

// Save encodes v (indented) while holding mu, the lock that guards v, and
// writes it unless a newer snapshot is already on disk.
func (f *StateFile) Save(mu sync.Locker, v any) error {
	mu.Lock()
	b, err := json.MarshalIndent(v, "", "  ")
	f.seq++
	seq := f.seq
	mu.Unlock()
	if err != nil {
		return fmt.Errorf("emulator: encode %s: %w", f.what, err)
	}
	f.writeMu.Lock()
	defer f.writeMu.Unlock()
	if seq <= f.written {
		return nil // a newer snapshot is already on disk
	}
	if err := writeFileAtomic(f.path, f.pattern, b); err != nil {
		return fmt.Errorf("emulator: save %s: %w", f.what, err)
	}
	f.written = seq
	return nil
}

// LoadState fills st from the family file at path when there is one; a
// missing file leaves st as the caller made it (the fresh, empty state).
// The file's "version" must be want, so a DataDir of an incompatible
// emulator fails loudly instead of loading garbage; what names the state in
// errors ("D1 state", "E2B state").
func LoadState(path, what string, want int, st any) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("emulator: read %s: %w", what, err)
	}
	var head struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return fmt.Errorf("emulator: parse %s: %w", path, err)
	}
	if head.Version != want {
		return fmt.Errorf("emulator: %s has %s version %d, this emulator reads %d", path, what, head.Version, want)
	}
	if err := json.Unmarshal(b, st); err != nil {
		return fmt.Errorf("emulator: parse %s: %w", path, err)
	}
	return nil
}

// NonNil makes a map that a hand-edited file left null empty: handlers
// assume the maps exist.
func NonNil[K comparable, V any](m *map[K]V) {
	if *m == nil {
		*m = map[K]V{}
	}
}

// DropNil deletes the null entries a hand-edited file may hold, which
// handlers would otherwise dereference.
func DropNil[K comparable, V any](m map[K]*V) {
	for k, v := range m {
		if v == nil {
			delete(m, k)
		}
	}
}
