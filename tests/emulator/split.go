package emulator

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/assets"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/d1"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/kv"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/queues"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/r2"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/workers"
	"github.com/openinspect/pulumi-openinspect/tests/emulator/cloudflare/zones"
)

// legacyStateFile is the one file every Cloudflare API shared before each
// had its own.
const legacyStateFile = "state.json"

// legacyKeys says which family's file each top-level key of state.json
// moves to.
var legacyKeys = map[string]string{
	"d1_databases":  d1.StateFileName,
	"kv_namespaces": kv.StateFileName,
	"r2_buckets":    r2.StateFileName,
	"queues":        queues.StateFileName,
	"zones":         zones.StateFileName, "worker_domains": zones.StateFileName, "worker_routes": zones.StateFileName,
	"workers": workers.StateFileName, "workers_subdomains": workers.StateFileName,
	"asset_blobs": assets.StateFileName,
}

// splitLegacyState splits dir's state.json into the families' files, each
// {"version": 1, <its keys>}, and renames it to state.json.split, so a
// DataDir written before the split keeps its contents. It does nothing
// when there is no state.json or any of the files exists already (a split
// or newer DataDir). Keys of no family are dropped, as loading always
// ignored them.
func splitLegacyState(dir string, keys map[string]string) error {
	legacy := filepath.Join(dir, legacyStateFile)
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
	var version int
	if err := json.Unmarshal(top["version"], &version); err != nil || version != stateVersion {
		return fmt.Errorf("emulator: %s has state version %s, this emulator reads %d", legacy, top["version"], stateVersion)
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
			err = writeFileAtomic(filepath.Join(dir, name), out)
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

// writeFileAtomic writes through a temp file and a rename, so a crash
// leaves no half-written file.
func writeFileAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".split-*.json")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(b)
	if err := errors.Join(werr, tmp.Close()); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}
