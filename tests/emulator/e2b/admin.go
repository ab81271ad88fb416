package e2b

import (
	"errors"
	"net/http"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// defaultFailure stands for "fail like a RUN step that exits 1".
const defaultFailure = "failed to run command: exit status 1"

// FailNextBuild makes the next build (of any template) fail with reason
// (its status reason and last log entry). Calls queue up: each build
// consumes one. Arranged failures live in memory only.
func (s *Service) FailNextBuild(reason string) {
	if reason == "" {
		reason = defaultFailure
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failNext = append(s.failNext, reason)
}

// FailBuilds makes every build of the template called name fail until
// ClearBuildFailures.
func (s *Service) FailBuilds(name, reason string) {
	if reason == "" {
		reason = defaultFailure
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failNames[name] = reason
}

// ClearBuildFailures forgets every arranged build failure.
func (s *Service) ClearBuildFailures() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failNext = nil
	s.failNames = map[string]string{}
}

// registerAdmin adds the E2B test controls under /__emulator/e2b/ (plain
// JSON, no key, never counted).
func (s *Service) registerAdmin() {
	const base = "/__emulator/e2b"
	s.mux.HandleFunc("POST "+base+"/build-failures", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Name   string `json:"name"`
			Reason string `json:"reason"`
		}
		if err := core.AdminDecode(w, r, &body); err != nil {
			core.AdminError(w, http.StatusBadRequest, err)
			return
		}
		if body.Name == "" {
			s.FailNextBuild(body.Reason)
		} else {
			s.FailBuilds(body.Name, body.Reason)
		}
		w.WriteHeader(http.StatusNoContent)
	})
	s.mux.HandleFunc("DELETE "+base+"/build-failures", func(w http.ResponseWriter, _ *http.Request) {
		s.ClearBuildFailures()
		w.WriteHeader(http.StatusNoContent)
	})
	s.mux.HandleFunc("POST "+base+"/sandboxes", func(w http.ResponseWriter, r *http.Request) {
		var spec SandboxSpec
		if err := core.AdminDecode(w, r, &spec); err != nil {
			core.AdminError(w, http.StatusBadRequest, err)
			return
		}
		id, err := s.CreateSandbox(spec)
		if err != nil {
			status := http.StatusBadRequest
			if errors.Is(err, ErrNoSuchTemplate) {
				status = http.StatusNotFound
			}
			core.AdminError(w, status, err)
			return
		}
		core.WriteJSON(w, http.StatusCreated, map[string]string{"sandboxID": id})
	})
}
