package core

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// SplitLegacyState splits dir's legacy file (one JSON object that every
// family once shared) into the families' files, each {"version": N, <its
// keys>}, and renames it to <legacy>.split, so a DataDir written before the
// split keeps its contents. keys says which file each top-level key moves
// to; version is the only legacy version understood. It does nothing when
// there is no legacy file or any family file exists already (a split or
// newer DataDir). Keys of no family are dropped, as loading always ignored
// them.
func SplitLegacyState(dir, legacyName string, keys map[string]string, version int) error {
	legacy := filepath.Join(dir, legacyName)
	b, err := os.ReadFile(legacy)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("emulator: read %s: %w", legacy, err)
	}
	files := map[string]map[string]json.RawMessage{}
	for _, name := range keys {
		if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
			return err // nil: already split
		}
		files[name] = map[string]json.RawMessage{}
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return fmt.Errorf("emulator: parse %s: %w", legacy, err)
	}
	var got int
	if err := json.Unmarshal(top["version"], &got); err != nil || got != version {
		return fmt.Errorf("emulator: %s has state version %s, this emulator reads %d", legacy, top["version"], version)
	}
	for k, raw := range top {
		if name, ok := keys[k]; ok {
			files[name][k] = raw
		}
	}
	for name, part := range files {
		part["version"] = top["version"]
		out, err := json.MarshalIndent(part, "", "  ")
		if err == nil {
			err = writeFileAtomic(filepath.Join(dir, name), ".split-*.json", out)
		}
		if err != nil {
			return fmt.Errorf("emulator: split %s: %w", legacy, err)
		}
	}
	if err := os.Rename(legacy, legacy+".split"); err != nil {
		return fmt.Errorf("emulator: split %s: %w", legacy, err)
	}
	return nil
}

// writeFileAtomic writes through a temp file (named by pattern, beside
// path) and a rename, so a crash leaves either the old file or the new one,
// never half of one.
func writeFileAtomic(path, pattern string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), pattern)
	if err != nil {
		return err
	}
	_, werr := tmp.Write(b)
	if err := errors.Join(werr, tmp.Close()); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	return nil
}
