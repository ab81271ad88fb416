// Package opencomputer is the emulator's OpenComputer snapshot API, as the
// TypeScript SDK (@opencomputer/sdk 0.12.4, whose Snapshots and SSE code is
// 0.9.1's, the version upstream locks) and upstream's build-template.ts call
// it: POST /api/snapshots with a declarative image manifest, answered as
// server-sent events (build_log per step, then result, or error) or, without
// `Accept: text/event-stream`, as JSON; a duplicate name is 409; GET of a
// snapshot still building is 404 (the SDK's waitUntilReady reads it so);
// list and delete by name; sandboxes started from a snapshot (create, get,
// list of running ones, hibernate, wake, timeout, delete). The facts are in
// /work/shared/design/sandbox-notes.md, "OpenComputer".
//
// Everything is served under Prefix: OPENCOMPUTER_API_URL is the emulator's
// URL plus APIPrefix. Every route is counted and takes faults through the
// emulator core.
package opencomputer

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// DefaultAPIKey is the key accepted when Options.APIKeys is nil; it is not a
// secret.
const DefaultAPIKey = "oc_emulator_0000000000000000"

// DefaultOrgID is the org DefaultAPIKey belongs to.
const DefaultOrgID = "org-emulator"

// DefaultBuildTime is how long a build takes when Options.BuildTime is zero.
const DefaultBuildTime = 300 * time.Millisecond

// Prefix is where the API is served; fault routes naming an OpenComputer
// route start with it.
const Prefix = "/opencomputer/"

// APIPrefix is the API root, what OPENCOMPUTER_API_URL is set to after the
// emulator's base URL (upstream's control plane requires the /api suffix).
const APIPrefix = "/opencomputer/api"

const (
	stateFileName = "opencomputer.json"
	stateVersion  = 1
)

// Snapshot statuses, as the SDK reads them.
const (
	statusBuilding = "building"
	statusReady    = "ready"
	statusFailed   = "failed"
)

// Options configures a Service.
type Options struct {
	// APIKeys maps each accepted API key to its org. Nil means
	// DefaultAPIKey -> DefaultOrgID.
	APIKeys map[string]string
	// BuildTime is how long a build runs. Zero means DefaultBuildTime.
	BuildTime time.Duration
}

// Service is the API: configuration, state and the core its routes count
// and take faults through. mu guards st and the failure plans; it is never
// held while writing the file or while a build streams.
type Service struct {
	core      *core.Core
	mux       *http.ServeMux
	keys      map[string]string
	buildTime time.Duration
	stateFile *core.StateFile

	failures *core.BuildFailures

	mu sync.Mutex
	st *state
}

type state struct {
	Version   int                   `json:"version"`
	Snapshots map[string]*snapshot  `json:"snapshots"` // by org + "/" + name
	Sandboxes map[string]*ocSandbox `json:"sandboxes"` // by ID
}

// snapshot is one named snapshot and what its build was asked to do.
type snapshot struct {
	ID              string          `json:"id"`
	OrgID           string          `json:"orgId"`
	Name            string          `json:"name"`
	ContentHash     string          `json:"contentHash"`
	CheckpointID    string          `json:"checkpointId"`
	Status          string          `json:"status"`
	Manifest        json.RawMessage `json:"manifest"`
	CreatedAt       time.Time       `json:"createdAt"`
	LastUsedAt      time.Time       `json:"lastUsedAt"`
	Base            string          `json:"base"`
	Steps           []string        `json:"steps"`
	Files           []string        `json:"files,omitempty"`
	BuilderMemoryMB int             `json:"builderMemoryMB,omitempty"`
	Reason          string          `json:"reason,omitempty"`
}

// info is the SDK's SnapshotInfo.
func (s *snapshot) info() map[string]any {
	return map[string]any{
		"id": s.ID, "orgId": s.OrgID, "name": s.Name, "contentHash": s.ContentHash,
		"checkpointId": s.CheckpointID, "status": s.Status, "manifest": s.Manifest,
		"createdAt": s.CreatedAt.Format(time.RFC3339), "lastUsedAt": s.LastUsedAt.Format(time.RFC3339),
	}
}

// New loads dataDir/opencomputer.json (if any) and returns a Service whose
// routes Register puts on c's mux.
func New(opts Options, dataDir string, c *core.Core) (*Service, error) {
	keys, err := core.Credentials(opts.APIKeys, DefaultAPIKey, DefaultOrgID, "OpenComputer API keys and orgs")
	if err != nil {
		return nil, err
	}
	bt := opts.BuildTime
	if bt <= 0 {
		bt = DefaultBuildTime
	}
	s := &Service{core: c, mux: c.Mux(), keys: keys, buildTime: bt, failures: core.NewBuildFailures(defaultFailure),
		stateFile: core.NewStateFile(filepath.Join(dataDir, stateFileName), ".opencomputer-*.json", "OpenComputer state")}
	st := &state{Version: stateVersion, Snapshots: map[string]*snapshot{}, Sandboxes: map[string]*ocSandbox{}}
	if err := core.LoadState(s.stateFile.Path(), "OpenComputer state", stateVersion, st); err != nil {
		return nil, err
	}
	core.DropNil(st.Snapshots)
	if st.Sandboxes == nil { // a state file from before sandboxes were served
		st.Sandboxes = map[string]*ocSandbox{}
	}
	core.DropNil(st.Sandboxes)
	s.st = st
	return s, nil
}

func (s *Service) save() error { return s.stateFile.Save(&s.mu, s.st) }

func writeError(w http.ResponseWriter, status int, format string, args ...any) {
	core.WriteJSON(w, status, map[string]any{"error": fmt.Sprintf(format, args...)})
}

func faultAnswers() core.FaultAnswers {
	return core.FaultAnswers{
		RateLimited: func(w http.ResponseWriter, _ *core.Fault) {
			writeError(w, http.StatusTooManyRequests, "rate limit exceeded")
		},
		ServerError: func(w http.ResponseWriter, f *core.Fault) { writeError(w, f.Status, "internal server error") },
	}
}

// route registers an API route ("METHOD /path" below APIPrefix): counted,
// then faults, then the X-API-Key check.
func (s *Service) route(pattern string, h func(w http.ResponseWriter, r *http.Request, org string)) {
	method, path, _ := strings.Cut(pattern, " ")
	full := method + " " + APIPrefix + path
	s.mux.HandleFunc(full, func(w http.ResponseWriter, r *http.Request) {
		s.core.Count(full, false)
		delay, f := s.core.TakeFaults(r.Method, APIPrefix+path)
		if s.core.ServeFault(w, r, delay, f, faultAnswers()) {
			return
		}
		org, known := s.keys[r.Header.Get("X-API-Key")]
		if !known {
			writeError(w, http.StatusUnauthorized, "invalid API key")
			return
		}
		h(w, r, org)
	})
}

// Register adds the API and the admin routes.
func (s *Service) Register() {
	s.route("POST /snapshots", s.create)
	s.route("GET /snapshots", s.list)
	s.route("GET /snapshots/{name}", s.get)
	s.route("DELETE /snapshots/{name}", s.delete)
	s.registerSandboxes()
	s.registerAdmin()
	const other = APIPrefix + "/{path...}"
	s.mux.HandleFunc(other, func(w http.ResponseWriter, r *http.Request) {
		s.core.Count(r.Method+" "+other, false)
		writeError(w, http.StatusNotFound, "no route %s %s", r.Method, strings.TrimPrefix(r.URL.Path, APIPrefix))
	})
}

// Calls is the number of requests made under Prefix, matched or not.
func (s *Service) Calls() int {
	return s.core.CountsWhere(func(k string) bool {
		_, route, ok := strings.Cut(k, " ")
		return ok && strings.HasPrefix(route, Prefix)
	})
}

// manifest is the SDK's ImageManifest.
type manifest struct {
	Base  string `json:"base"`
	Steps []struct {
		Type string          `json:"type"`
		Args json.RawMessage `json:"args"`
	} `json:"steps"`
	BuilderMemoryMB int `json:"builderMemoryMB"`
}

// describe turns the manifest's steps into one line each and the paths of
// the files it carries (add_file, add_dir), refusing a step the SDK does not
// make.
func describe(m manifest) (steps, files []string, err error) {
	for i, st := range m.Steps {
		var args struct {
			Packages []string          `json:"packages"`
			Commands []string          `json:"commands"`
			Vars     map[string]string `json:"vars"`
			Path     string            `json:"path"`
			Files    []struct {
				Path string `json:"path"`
			} `json:"files"`
		}
		if err := json.Unmarshal(st.Args, &args); err != nil {
			return nil, nil, fmt.Errorf("steps[%d].args: %v", i, err)
		}
		switch st.Type {
		case "apt_install", "pip_install":
			steps = append(steps, st.Type+" "+strings.Join(args.Packages, " "))
		case "run":
			steps = append(steps, "run "+strings.Join(args.Commands, " && "))
		case "env":
			keys := make([]string, 0, len(args.Vars))
			for k := range args.Vars {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			steps = append(steps, "env "+strings.Join(keys, " "))
		case "workdir":
			steps = append(steps, "workdir "+args.Path)
		case "add_file":
			steps = append(steps, "add_file "+args.Path)
			files = append(files, args.Path)
		case "add_dir":
			steps = append(steps, fmt.Sprintf("add_dir %s (%d files)", args.Path, len(args.Files)))
			for _, f := range args.Files {
				files = append(files, strings.TrimSuffix(args.Path, "/")+"/"+strings.TrimPrefix(f.Path, "/"))
			}
		default:
			return nil, nil, fmt.Errorf("steps[%d]: unknown step type %q", i, st.Type)
		}
	}
	return steps, files, nil
}

func (s *Service) create(w http.ResponseWriter, r *http.Request, org string) {
	var body struct {
		Name  string          `json:"name"`
		Image json.RawMessage `json:"image"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, "invalid JSON body: %v", err)
		return
	}
	var m manifest
	if body.Name == "" || len(body.Image) == 0 {
		writeError(w, http.StatusBadRequest, "name and image are required")
		return
	}
	if err := json.Unmarshal(body.Image, &m); err != nil || m.Base == "" {
		writeError(w, http.StatusBadRequest, "image: a manifest with a base is required")
		return
	}
	steps, files, err := describe(m)
	if err != nil {
		writeError(w, http.StatusBadRequest, "image: %v", err)
		return
	}
	// The content hash is the SDK's cacheKey: base and steps, not memory.
	canonical, _ := json.Marshal(map[string]any{"base": m.Base, "steps": m.Steps})
	sum := sha256.Sum256(canonical)
	now := time.Now().UTC()
	snap := &snapshot{ID: newID("snap"), OrgID: org, Name: body.Name, ContentHash: hex.EncodeToString(sum[:]),
		Status: statusBuilding, Manifest: body.Image, CreatedAt: now, LastUsedAt: now, Base: m.Base,
		Steps: steps, Files: files, BuilderMemoryMB: m.BuilderMemoryMB}

	key := org + "/" + body.Name
	s.mu.Lock()
	if old, ok := s.st.Snapshots[key]; ok && old.Status != statusFailed {
		s.mu.Unlock()
		writeError(w, http.StatusConflict, "snapshot %q already exists", body.Name)
		return
	}
	s.st.Snapshots[key] = snap
	s.mu.Unlock()
	reason := s.failures.Take(body.Name)
	if err := s.save(); err != nil {
		writeError(w, http.StatusInternalServerError, "%v", err)
		return
	}

	stream := strings.Contains(r.Header.Get("Accept"), "text/event-stream")
	flusher, _ := w.(http.Flusher)
	if stream {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, ": keepalive\n\n")
	}
	pause := s.buildTime / time.Duration(len(steps)+1)
	for i, line := range steps {
		if reason != "" && i == len(steps)-1 {
			break
		}
		time.Sleep(pause)
		if stream {
			event(w, "build_log", map[string]any{"step": i, "type": strings.Fields(line)[0], "message": fmt.Sprintf("step %d/%d: %s", i+1, len(steps), line)})
			if flusher != nil {
				flusher.Flush()
			}
		}
	}
	time.Sleep(pause)

	s.mu.Lock()
	if reason != "" {
		snap.Status, snap.Reason = statusFailed, reason
	} else {
		snap.Status, snap.CheckpointID = statusReady, newID("ckpt")
	}
	info := snap.info()
	s.mu.Unlock()
	if err := s.save(); err != nil && !stream {
		writeError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	switch {
	case stream && reason != "":
		event(w, "error", map[string]any{"error": reason})
	case stream:
		event(w, "result", info)
	case reason != "":
		writeError(w, http.StatusUnprocessableEntity, "build failed: %s", reason)
	default:
		core.WriteJSON(w, http.StatusCreated, info)
	}
}

func event(w http.ResponseWriter, name string, data any) {
	raw, _ := json.Marshal(data)
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, raw)
}

func (s *Service) list(w http.ResponseWriter, _ *http.Request, org string) {
	s.mu.Lock()
	out := []map[string]any{}
	for _, snap := range s.sortedLocked() {
		if snap.OrgID == org && snap.Status != statusBuilding {
			out = append(out, snap.info())
		}
	}
	s.mu.Unlock()
	core.WriteJSON(w, http.StatusOK, out)
}

// get answers a snapshot by name; one still building is not yet readable
// (404), as the SDK's waitUntilReady expects.
func (s *Service) get(w http.ResponseWriter, r *http.Request, org string) {
	s.mu.Lock()
	snap, ok := s.st.Snapshots[org+"/"+r.PathValue("name")]
	var info map[string]any
	if ok && snap.Status != statusBuilding {
		info = snap.info()
	}
	s.mu.Unlock()
	if info == nil {
		writeError(w, http.StatusNotFound, "snapshot %q not found", r.PathValue("name"))
		return
	}
	core.WriteJSON(w, http.StatusOK, info)
}

func (s *Service) delete(w http.ResponseWriter, r *http.Request, org string) {
	key := org + "/" + r.PathValue("name")
	s.mu.Lock()
	snap, ok := s.st.Snapshots[key]
	building := ok && snap.Status == statusBuilding
	if ok && !building {
		delete(s.st.Snapshots, key)
	}
	s.mu.Unlock()
	switch {
	case !ok:
		writeError(w, http.StatusNotFound, "snapshot %q not found", r.PathValue("name"))
	case building:
		writeError(w, http.StatusConflict, "snapshot %q is still building", r.PathValue("name"))
	default:
		if err := s.save(); err != nil {
			writeError(w, http.StatusInternalServerError, "%v", err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

func (s *Service) sortedLocked() []*snapshot {
	out := make([]*snapshot, 0, len(s.st.Snapshots))
	for _, snap := range s.st.Snapshots {
		out = append(out, snap)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].OrgID != out[j].OrgID {
			return out[i].OrgID < out[j].OrgID
		}
		return out[i].Name < out[j].Name
	})
	return out
}

func newID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}

// Inventory is the OpenComputer side of /__emulator/inventory: every
// snapshot with what its build was asked to do, and every sandbox.
type Inventory struct {
	Snapshots []SnapshotEntry `json:"snapshots"`
	Sandboxes []SandboxEntry  `json:"sandboxes"`
}

// Empty reports whether nothing exists.
func (i Inventory) Empty() bool { return len(i.Snapshots) == 0 && len(i.Sandboxes) == 0 }

// SandboxEntry is one sandbox, running or hibernated; its env by name.
type SandboxEntry struct {
	OrgID    string            `json:"orgId"`
	ID       string            `json:"id"`
	Snapshot string            `json:"snapshot,omitempty"`
	Status   string            `json:"status"`
	Metadata map[string]string `json:"metadata"`
	EnvNames []string          `json:"envNames,omitempty"`
}

// SnapshotEntry is one snapshot.
type SnapshotEntry struct {
	OrgID           string   `json:"orgId"`
	Name            string   `json:"name"`
	Status          string   `json:"status"`
	ContentHash     string   `json:"contentHash"`
	Base            string   `json:"base"`
	Steps           []string `json:"steps"`
	Files           []string `json:"files,omitempty"`
	BuilderMemoryMB int      `json:"builderMemoryMB,omitempty"`
	Reason          string   `json:"reason,omitempty"`
}

// Inventory lists the snapshots, by org and name.
func (s *Service) Inventory() Inventory {
	s.mu.Lock()
	defer s.mu.Unlock()
	inv := Inventory{Snapshots: []SnapshotEntry{}, Sandboxes: []SandboxEntry{}}
	for _, snap := range s.sortedLocked() {
		inv.Snapshots = append(inv.Snapshots, SnapshotEntry{OrgID: snap.OrgID, Name: snap.Name, Status: snap.Status,
			ContentHash: snap.ContentHash, Base: snap.Base, Steps: snap.Steps, Files: snap.Files,
			BuilderMemoryMB: snap.BuilderMemoryMB, Reason: snap.Reason})
	}
	sandboxes := make([]*ocSandbox, 0, len(s.st.Sandboxes))
	for _, sb := range s.st.Sandboxes {
		sandboxes = append(sandboxes, sb)
	}
	sortSandboxes(sandboxes)
	for _, sb := range sandboxes {
		inv.Sandboxes = append(inv.Sandboxes, SandboxEntry{OrgID: sb.OrgID, ID: sb.ID, Snapshot: sb.Snapshot,
			Status: sb.Status, Metadata: sb.Metadata, EnvNames: sb.EnvNames})
	}
	return inv
}
