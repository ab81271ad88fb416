package opencomputer

import (
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// Sandbox states, as GET /sandboxes/{id} reports them.
const (
	sandboxRunning    = "running"
	sandboxHibernated = "hibernated"
)

// maxListed is how many sandboxes GET /sandboxes answers with at most; it
// lists running ones only, so whoever tears down must know the rest.
const maxListed = 100

// sandboxDomain is where preview URLs would live; nothing serves them.
const sandboxDomain = "workers.opencomputer.emulator.invalid"

// ocSandbox is one sandbox: what it was started from and with. Its env is
// kept by name only (session secrets ride in it).
type ocSandbox struct {
	ID          string            `json:"id"`
	OrgID       string            `json:"orgId"`
	TemplateID  string            `json:"templateID"`
	Snapshot    string            `json:"snapshot,omitempty"`
	Status      string            `json:"status"`
	Metadata    map[string]string `json:"metadata"`
	EnvNames    []string          `json:"envNames,omitempty"`
	SecretStore string            `json:"secretStore,omitempty"`
	Timeout     int               `json:"timeout"`
	CreatedAt   time.Time         `json:"createdAt"`
}

func (sb *ocSandbox) info() map[string]any {
	out := map[string]any{"sandboxID": sb.ID, "status": sb.Status, "templateID": sb.TemplateID,
		"metadata": sb.Metadata, "timeout": sb.Timeout, "sandboxDomain": sandboxDomain,
		"createdAt": sb.CreatedAt.Format(time.RFC3339)}
	if sb.Snapshot != "" {
		out["snapshot"] = sb.Snapshot
	}
	return out
}

func (s *Service) registerSandboxes() {
	s.route("POST /sandboxes", s.createSandbox)
	s.route("GET /sandboxes", s.listSandboxes)
	s.route("GET /sandboxes/{id}", s.getSandbox)
	s.route("DELETE /sandboxes/{id}", s.deleteSandbox)
	s.route("POST /sandboxes/{id}/hibernate", s.hibernateSandbox)
	s.route("POST /sandboxes/{id}/wake", s.wakeSandbox)
	s.route("POST /sandboxes/{id}/timeout", s.setSandboxTimeout)
}

// createSandbox is POST /sandboxes as the SDK's Sandbox.create and
// upstream's control plane send it: {templateID, snapshot, envs, metadata,
// timeout, secretStore}. A snapshot must be one of the org's ready ones
// (404 otherwise). Answered 201 with the sandbox, or as an SSE result event
// when the client asks for a stream (the SDK does whenever a snapshot is
// named).
func (s *Service) createSandbox(w http.ResponseWriter, r *http.Request, org string) {
	var body struct {
		TemplateID  string            `json:"templateID"`
		Snapshot    string            `json:"snapshot"`
		Envs        map[string]string `json:"envs"`
		Metadata    map[string]string `json:"metadata"`
		Timeout     int               `json:"timeout"`
		SecretStore string            `json:"secretStore"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, "invalid JSON body: %v", err)
		return
	}
	if body.Timeout < 0 {
		writeError(w, http.StatusBadRequest, "timeout must not be negative")
		return
	}
	if body.TemplateID == "" {
		body.TemplateID = "base"
	}
	sb := &ocSandbox{ID: newID("sb"), OrgID: org, TemplateID: body.TemplateID, Snapshot: body.Snapshot,
		Status: sandboxRunning, Metadata: map[string]string{}, SecretStore: body.SecretStore,
		Timeout: body.Timeout, CreatedAt: time.Now().UTC()}
	for k, v := range body.Metadata {
		sb.Metadata[k] = v
	}
	for k := range body.Envs {
		sb.EnvNames = append(sb.EnvNames, k)
	}
	sort.Strings(sb.EnvNames)

	s.mu.Lock()
	if body.Snapshot != "" {
		snap, ok := s.st.Snapshots[org+"/"+body.Snapshot]
		if !ok || snap.Status != statusReady {
			s.mu.Unlock()
			writeError(w, http.StatusNotFound, "snapshot %q not found or not ready", body.Snapshot)
			return
		}
		snap.LastUsedAt = sb.CreatedAt
	}
	s.st.Sandboxes[sb.ID] = sb
	info := sb.info()
	s.mu.Unlock()
	if err := s.save(); err != nil {
		writeError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	if strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		event(w, "result", info)
		return
	}
	core.WriteJSON(w, http.StatusCreated, info)
}

// listSandboxes is GET /sandboxes: the org's running sandboxes, oldest
// first, at most maxListed; hibernated ones are not listed.
func (s *Service) listSandboxes(w http.ResponseWriter, _ *http.Request, org string) {
	s.mu.Lock()
	var running []*ocSandbox
	for _, sb := range s.st.Sandboxes {
		if sb.OrgID == org && sb.Status == sandboxRunning {
			running = append(running, sb)
		}
	}
	sortSandboxes(running)
	out := []map[string]any{}
	for i, sb := range running {
		if i == maxListed {
			break
		}
		out = append(out, sb.info())
	}
	s.mu.Unlock()
	core.WriteJSON(w, http.StatusOK, out)
}

func sortSandboxes(list []*ocSandbox) {
	sort.Slice(list, func(i, j int) bool {
		if !list[i].CreatedAt.Equal(list[j].CreatedAt) {
			return list[i].CreatedAt.Before(list[j].CreatedAt)
		}
		return list[i].ID < list[j].ID
	})
}

func (s *Service) getSandbox(w http.ResponseWriter, r *http.Request, org string) {
	s.withSandbox(w, r, org, func(sb *ocSandbox) (int, any, error) { return http.StatusOK, sb.info(), nil })
}

// deleteSandbox kills the sandbox (204); an unknown one is 404.
func (s *Service) deleteSandbox(w http.ResponseWriter, r *http.Request, org string) {
	s.withSandbox(w, r, org, func(sb *ocSandbox) (int, any, error) {
		delete(s.st.Sandboxes, sb.ID)
		return http.StatusNoContent, nil, nil
	})
}

func (s *Service) hibernateSandbox(w http.ResponseWriter, r *http.Request, org string) {
	s.withSandbox(w, r, org, func(sb *ocSandbox) (int, any, error) {
		if sb.Status == sandboxHibernated {
			return 0, nil, httpError{http.StatusConflict, "sandbox is already hibernated"}
		}
		sb.Status = sandboxHibernated
		return http.StatusNoContent, nil, nil
	})
}

// wakeSandbox resumes a hibernated sandbox and answers with it; waking a
// running one answers with it unchanged.
func (s *Service) wakeSandbox(w http.ResponseWriter, r *http.Request, org string) {
	var body struct {
		Timeout *int `json:"timeout"`
	}
	if r.ContentLength != 0 {
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			writeError(w, http.StatusBadRequest, "invalid JSON body: %v", err)
			return
		}
	}
	s.withSandbox(w, r, org, func(sb *ocSandbox) (int, any, error) {
		sb.Status = sandboxRunning
		if body.Timeout != nil {
			sb.Timeout = *body.Timeout
		}
		return http.StatusOK, sb.info(), nil
	})
}

func (s *Service) setSandboxTimeout(w http.ResponseWriter, r *http.Request, org string) {
	var body struct {
		Timeout *int `json:"timeout"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Timeout == nil || *body.Timeout < 0 {
		writeError(w, http.StatusBadRequest, "a body {\"timeout\": seconds} is required")
		return
	}
	s.withSandbox(w, r, org, func(sb *ocSandbox) (int, any, error) {
		sb.Timeout = *body.Timeout
		return http.StatusNoContent, nil, nil
	})
}

type httpError struct {
	status  int
	message string
}

func (e httpError) Error() string { return e.message }

// withSandbox runs change on the org's sandbox under the lock, saves, and
// answers with what it returned (no body for a nil answer); another org's
// sandbox or an unknown one is 404.
func (s *Service) withSandbox(w http.ResponseWriter, r *http.Request, org string, change func(*ocSandbox) (int, any, error)) {
	id := r.PathValue("id")
	s.mu.Lock()
	sb, ok := s.st.Sandboxes[id]
	var status int
	var answer any
	var err error
	if !ok || sb.OrgID != org {
		err = httpError{http.StatusNotFound, "sandbox " + id + " not found"}
	} else {
		status, answer, err = change(sb)
	}
	s.mu.Unlock()
	if err != nil {
		status := http.StatusInternalServerError
		if he, isHTTP := err.(httpError); isHTTP {
			status = he.status
		}
		writeError(w, status, "%s", err.Error())
		return
	}
	if r.Method != http.MethodGet {
		if err := s.save(); err != nil {
			writeError(w, http.StatusInternalServerError, "%v", err)
			return
		}
	}
	if answer == nil {
		w.WriteHeader(status)
		return
	}
	core.WriteJSON(w, status, answer)
}

// SandboxSpec is a sandbox a test adds as a session would have started it.
type SandboxSpec struct {
	OrgID    string            `json:"orgId"` // "" = DefaultOrgID
	Snapshot string            `json:"snapshot"`
	Status   string            `json:"status"` // "" = running
	Metadata map[string]string `json:"metadata"`
}

// CreateSandbox adds a sandbox and returns its ID.
func (s *Service) CreateSandbox(spec SandboxSpec) (string, error) {
	if spec.OrgID == "" {
		spec.OrgID = DefaultOrgID
	}
	if spec.Status == "" {
		spec.Status = sandboxRunning
	}
	if spec.Status != sandboxRunning && spec.Status != sandboxHibernated {
		return "", httpError{http.StatusBadRequest, "emulator: a sandbox is running or hibernated, not " + spec.Status}
	}
	sb := &ocSandbox{ID: newID("sb"), OrgID: spec.OrgID, TemplateID: "base", Snapshot: spec.Snapshot,
		Status: spec.Status, Metadata: map[string]string{}, CreatedAt: time.Now().UTC()}
	for k, v := range spec.Metadata {
		sb.Metadata[k] = v
	}
	s.mu.Lock()
	s.st.Sandboxes[sb.ID] = sb
	s.mu.Unlock()
	return sb.ID, s.save()
}

// registerSandboxAdmin adds POST /__emulator/opencomputer/sandboxes (a
// SandboxSpec, answered {"sandboxID"}).
func (s *Service) registerSandboxAdmin(base string) {
	s.mux.HandleFunc("POST "+base+"/sandboxes", func(w http.ResponseWriter, r *http.Request) {
		var spec SandboxSpec
		if err := core.AdminDecode(w, r, &spec); err != nil {
			core.AdminError(w, http.StatusBadRequest, err)
			return
		}
		id, err := s.CreateSandbox(spec)
		if err != nil {
			core.AdminError(w, http.StatusBadRequest, err)
			return
		}
		core.WriteJSON(w, http.StatusCreated, map[string]string{"sandboxID": id})
	})
}
