package e2b

import (
	"errors"
	"net/http"

	"github.com/openinspect/pulumi-openinspect/tests/emulator/core"
)

// defaultFailure stands for "fail like a RUN step that exits 1".
const defaultFailure = "failed to run command: exit status 1"

// FailNextBuild makes the next build (of any template) fail with reason
// (its status reason and last log entry); calls queue up. Arranged failures
// live in memory only.
func (s *Service) FailNextBuild(reason string) { s.failures.FailNext(reason) }

// FailBuilds makes every build of the template called name fail until
// ClearBuildFailures.
func (s *Service) FailBuilds(name, reason string) { s.failures.FailNamed(name, reason) }

// ClearBuildFailures forgets every arranged build failure.
func (s *Service) ClearBuildFailures() { s.failures.Clear() }

// registerAdmin adds the E2B test controls under /__emulator/e2b/ (plain
// JSON, no key, never counted).
func (s *Service) registerAdmin() {
	const base = "/__emulator/e2b"
	s.failures.Register(s.mux, base)
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
